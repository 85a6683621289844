//go:build vmtest

package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	qt "github.com/frankban/quicktest"

	"github.com/go-mdraid/mdraid/internal/vmtest/guest"
)

// Issue 34's wait and wait --clean on the real kernel.

// vmRunRaw runs mdctl in this process without a test (for a goroutine)
// and returns its exit code and output.
func vmRunRaw(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	exited := -1
	code = run(args, &out, &errb, func(c int) {
		if exited < 0 {
			exited = c
		}
	})
	if exited >= 0 {
		code = exited
	}
	return code, out.String(), errb.String()
}

// vmOpenBy reports whether this process holds attr of the array md open
// (mdctl wait opens sync_action before its first read, and polls it).
func vmOpenBy(md, attr string) bool {
	fds, _ := os.ReadDir("/proc/self/fd")
	want := "/" + md + "/md/" + attr
	for _, fd := range fds {
		if l, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name())); err == nil && strings.HasSuffix(l, want) {
			return true
		}
	}
	return false
}

// TestVMWait: mdctl wait on a recovery held at sync_max (so that no
// outcome depends on how fast the guest runs): it times out saying so,
// it waits while the recovery is held and returns, exit 0, once it
// finishes; an idle array is "nothing to wait for", exit 1 (as mdadm -W),
// and exit 0 with --scan.
func TestVMWait(t *testing.T) {
	c := qt.New(t)
	disks := guest.ScratchDisks(t, 2)
	md := vmCreate(c, "/dev/md/waitme", disks, "--level=1", "--metadata=1.2", "--bitmap=none", "--raid-devices=2")

	code, out, errOut := runCLI(t, "wait", md)
	c.Check(code, qt.Equals, exitWaitNothing, qt.Commentf("%s%s", out, errOut))
	c.Check(out, qt.Equals, md+": nothing to wait for.\n")
	code, out, errOut = runCLI(t, "wait", "--scan")
	c.Check(code, qt.Equals, exitOK, qt.Commentf("%s%s", out, errOut))

	// A full recovery onto the second disk, held at sector 1024.
	guest.Mdadm(c, "--fail", "/dev/"+md, disks[1].Path)
	guest.Mdadm(c, "--remove", "/dev/"+md, disks[1].Path)
	guest.Mdadm(c, "--zero-superblock", disks[1].Path)
	guest.WriteAttr(c, md, "sync_max", "1024")
	guest.Mdadm(c, "--add", "/dev/"+md, disks[1].Path)
	guest.WaitAttr(c, md, "sync_action", "recover", 30*time.Second)

	code, out, errOut = runCLI(t, "wait", "--timeout=1s", "/dev/md/waitme")
	c.Check(code, qt.Equals, exitWaitTimeout, qt.Commentf("%s%s", out, errOut))
	c.Check(out, qt.Matches, md+`: timed out: the recover still runs at sector [0-9]+ of [0-9]+ \([0-9.]+%\)\.\n`)

	type result struct {
		code     int
		out, err string
	}
	done := make(chan result, 1)
	go func() {
		code, out, errOut := vmRunRaw("wait", "--json", md)
		done <- result{code, out, errOut}
	}()
	// Released only once wait holds sync_action open: it then reads
	// recover (held) before anything can finish.
	for i := 0; !vmOpenBy(md, "sync_action"); i++ {
		select {
		case r := <-done:
			c.Fatalf("wait returned while the recovery was held: exit %d\n%s%s", r.code, r.out, r.err)
		default:
		}
		if i > 6000 {
			c.Fatal("mdctl wait did not open sync_action in 60 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	select {
	case r := <-done:
		c.Fatalf("wait returned while the recovery was held: exit %d\n%s%s", r.code, r.out, r.err)
	default:
	}
	c.Check(guest.ReadAttr(c, md, "sync_action"), qt.Equals, "recover")
	guest.WriteAttr(c, md, "sync_max", "max")
	released := time.Now()
	var r result
	select {
	case r = <-done:
		t.Logf("FACT: mdctl wait returned %v after sync_max was released", time.Since(released).Round(time.Millisecond))
	case <-time.After(guest.SyncTimeout):
		c.Fatalf("mdctl wait did not return %v after the recovery was released\n%s", guest.SyncTimeout, guest.MDStat(c))
	}
	c.Assert(r.code, qt.Equals, exitOK, qt.Commentf("%s%s", r.out, r.err))
	c.Check(r.out, qt.Equals, fmt.Sprintf(`{
  "arrays": [
    {
      "array": %q,
      "result": "finished",
      "waited": [
        "recover"
      ]
    }
  ]
}
`, md))
	// What a user sees after it: idle, both members in sync.
	c.Check(guest.ReadAttr(c, md, "sync_action"), qt.Equals, "idle")
	c.Check(guest.ReadAttr(c, md, "degraded"), qt.Equals, "0")
	for _, m := range guest.Members(c, md) {
		c.Check(m.State, qt.Equals, "in_sync", qt.Commentf("%s", m.Name))
	}
}

// TestVMWaitClean: an array written to (array_state active, superblocks
// dirty) with a 30 s safe_mode_delay: wait --clean leaves array_state
// clean, both members' superblocks clean (read with O_DIRECT), and
// safe_mode_delay as it was; a second run finds it clean and writes
// nothing.
func TestVMWaitClean(t *testing.T) {
	c := qt.New(t)
	disks := guest.ScratchDisks(t, 2)
	md := vmCreate(c, "/dev/md/cleanme", disks, "--level=1", "--metadata=1.2", "--raid-devices=2")
	guest.WriteAttr(c, md, "safe_mode_delay", "30")
	delay := guest.ReadAttr(c, md, "safe_mode_delay")
	t.Logf("FACT: safe_mode_delay after writing 30: %q", delay)

	f, err := os.OpenFile("/dev/"+md, os.O_WRONLY, 0)
	c.Assert(err, qt.IsNil)
	_, err = f.WriteAt(bytes.Repeat([]byte{0x5a}, 4096), 1<<20)
	c.Assert(err, qt.IsNil)
	c.Assert(f.Sync(), qt.IsNil)
	c.Assert(f.Close(), qt.IsNil)
	c.Assert(guest.ReadAttr(c, md, "array_state"), qt.Equals, "active")
	for _, d := range disks {
		c.Assert(vmMember(c, d).Clean(), qt.IsFalse, qt.Commentf("%s: the superblock of an array being written says active", d.Name))
	}

	code, out, errOut := runCLI(t, "wait", "--clean", "--timeout=60s", "/dev/md/cleanme")
	t.Logf("mdctl wait --clean /dev/md/cleanme: exit %d\n%s%s", code, out, errOut)
	c.Assert(code, qt.Equals, exitOK, qt.Commentf("%s%s", out, errOut))
	c.Check(out, qt.Equals, fmt.Sprintf("%s: clean, was active (safe_mode_delay %s, written back); the superblocks of %s, %s say clean.\n", md, delay, disks[0].Name, disks[1].Name))
	c.Check(guest.ReadAttr(c, md, "array_state"), qt.Equals, "clean")
	c.Check(guest.ReadAttr(c, md, "safe_mode_delay"), qt.Equals, delay)
	for _, d := range disks {
		c.Check(vmMember(c, d).Clean(), qt.IsTrue, qt.Commentf("%s: superblock after wait --clean", d.Name))
	}

	code, out, errOut = runCLI(t, "wait", "--clean", "--scan")
	c.Check(code, qt.Equals, exitOK, qt.Commentf("%s%s", out, errOut))
	c.Check(out, qt.Equals, md+": already clean; nothing written.\n")
}
