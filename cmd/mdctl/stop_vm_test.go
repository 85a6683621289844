//go:build vmtest

package main

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	qt "github.com/frankban/quicktest"
	"golang.org/x/sys/unix"

	"github.com/go-mdraid/mdraid/internal/vmtest/guest"
)

// Issue 11's mdctl stop on the real kernel, beside mdadm (the guest has
// no udev: mdadm runs with MDADM_NO_UDEV=1 and makes /dev/md/NAME itself,
// as an absolute link to /dev/mdN, and keeps /run/mdadm/map).

// vmSuperblockAreas hashes, for each member, everything before its data
// area (the 1.2 superblock, its bad-block log, any bitmap), read with
// O_DIRECT: what a refused stop must leave byte-identical.
func vmSuperblockAreas(c *qt.C, disks []guest.Disk) []string {
	c.Helper()
	var out []string
	for _, d := range disks {
		sb := vmMember(c, d)
		c.Assert(sb.DataOffset > 0, qt.IsTrue, qt.Commentf("%s: 1.2 metadata has a data offset", d.Path))
		sum := sha256.Sum256(vmReadDirect(c, d, 0, int(sb.DataOffset*512)))
		out = append(out, fmt.Sprintf("%s %x", d.Name, sum))
	}
	return out
}

// vmMapLine returns the map file's line for the array md, or "".
func vmMapLine(c *qt.C, md string) string {
	c.Helper()
	b, err := os.ReadFile("/run/mdadm/map")
	if errors.Is(err, fs.ErrNotExist) {
		return ""
	}
	c.Assert(err, qt.IsNil)
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, md+" ") {
			return l
		}
	}
	return ""
}

// vmRunning checks that the array md runs.
func vmRunning(c *qt.C, md string) {
	c.Helper()
	s := guest.ReadAttr(c, md, "array_state")
	c.Check(s == "clean" || s == "active", qt.IsTrue, qt.Commentf("%s array_state %q", md, s))
}

// vmQuiet waits until the array's writes are done (sync, then the
// kernel marks it clean after safe_mode_delay), so that its superblocks
// change only if something writes.
func vmQuiet(c *qt.C, md string) {
	c.Helper()
	unix.Sync()
	guest.WaitAttr(c, md, "array_state", "clean", 10*time.Second)
}

// vmGone waits up to 2 s for the kernel to remove the md device (it does
// so once the last reference to a stopped array drops).
func vmGone(md string) bool {
	for range 100 {
		if _, err := os.Stat("/sys/block/" + md); errors.Is(err, fs.ErrNotExist) {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}

// TestVMStop: mdctl stop refuses an array while it is mounted, held by an
// array stacked on it, used as swap or open by a process, naming each,
// with the array still running and its members' superblocks unchanged;
// then stops it, removing mdadm's absolute /dev/md link and its map
// entry; mdadm --assemble --scan assembles it again; and a udev-style
// relative link is left alone.
func TestVMStop(t *testing.T) {
	c := qt.New(t)
	disks := guest.ScratchDisks(t, 2)
	dev := "/dev/md/stopme"
	md := vmCreate(c, dev, disks, "--level=1", "--metadata=1.2", "--name=stopme", "--raid-devices=2")

	// What mdadm --stop leaves without udev (docs/assembly.md §5 item 6),
	// then the link mdadm -A makes without udev (§2.5 item 7).
	guest.Mdadm(c, "--stop", dev)
	_, linkErr := os.Lstat(dev)
	_, nodeErr := os.Lstat("/dev/" + md)
	t.Logf("FACT: after mdadm --stop with MDADM_NO_UDEV=1: lstat %s: %v; lstat /dev/%s: %v; map line %q", dev, linkErr, md, nodeErr, vmMapLine(c, md))
	if linkErr == nil {
		c.Assert(os.Remove(dev), qt.IsNil) // so that the one below is mdadm -A's
	}
	guest.Mdadm(c, "--assemble", dev, disks[0].Path, disks[1].Path)
	md = guest.ArrayName(c, dev)
	target, err := os.Readlink(dev)
	c.Assert(err, qt.IsNil)
	c.Assert(target, qt.Equals, "/dev/"+md, qt.Commentf("mdadm -A without udev links /dev/md/NAME absolutely"))
	mapLine := vmMapLine(c, md)
	t.Logf("FACT: mdadm -A map line: %q", mapLine)
	c.Assert(mapLine, qt.Matches, md+` 1\.2 [0-9a-f:]{35} /dev/md/stopme`)
	mdDev := "/dev/" + md

	refused := func(c *qt.C, says string, args ...string) {
		c.Helper()
		vmQuiet(c, md)
		before := vmSuperblockAreas(c, disks)
		code, out, errOut := runCLI(t, append([]string{"stop"}, append(args, md)...)...)
		t.Logf("mdctl stop %s: exit %d\n%s%s", md, code, out, errOut)
		c.Check(code, qt.Equals, exitRefused)
		c.Check(out, qt.Equals, "")
		c.Check(errOut, qt.Contains, says)
		vmRunning(c, md)
		c.Check(vmSuperblockAreas(c, disks), qt.DeepEquals, before)
		got, err := os.Readlink(dev)
		c.Check(err, qt.IsNil)
		c.Check(got, qt.Equals, mdDev)
		c.Check(vmMapLine(c, md), qt.Equals, mapLine)
	}

	c.Run("mounted", func(c *qt.C) {
		exec.Command("modprobe", "ext4").Run()
		exec.Command("modprobe", "ext2").Run()
		guest.Run(c, "mke2fs", "-q", "-F", mdDev)
		mnt := filepath.Join(c.TempDir(), "mnt point")
		c.Assert(os.Mkdir(mnt, 0o755), qt.IsNil)
		if err := unix.Mount(mdDev, mnt, "ext2", 0, ""); err != nil {
			c.Assert(unix.Mount(mdDev, mnt, "ext4", 0, ""), qt.IsNil, qt.Commentf("ext2: %v", err))
		}
		defer func() { c.Check(unix.Unmount(mnt, 0), qt.IsNil) }()
		refused(c, md+" is mounted on "+mnt)
	})

	c.Run("held by an array stacked on it", func(c *qt.C) {
		guest.Mdadm(c, "--create", "/dev/md/stoptop", "--run", "--assume-clean", "--level=1", "--metadata=1.2",
			"--raid-devices=2", mdDev, "missing")
		top := guest.ArrayName(c, "/dev/md/stoptop")
		defer func() {
			guest.Mdadm(c, "--stop", "/dev/md/stoptop")
			guest.Mdadm(c, "--zero-superblock", mdDev) // or --assemble --scan below would find it
		}()
		refused(c, md+" is held by "+top)
	})

	c.Run("used as swap", func(c *qt.C) {
		guest.Run(c, "mkswap", mdDev)
		guest.Run(c, "swapon", mdDev)
		defer guest.Run(c, "swapoff", mdDev)
		refused(c, md+" is used as swap ("+mdDev+")")
	})

	c.Run("open by a process", func(c *qt.C) {
		f, err := os.Open(mdDev)
		c.Assert(err, qt.IsNil)
		sleep := exec.Command("sleep", "600")
		sleep.Stdin = f
		c.Assert(sleep.Start(), qt.IsNil)
		f.Close()
		defer func() { sleep.Process.Kill(); sleep.Wait() }()
		refused(c, fmt.Sprintf("%s is open by process %d (sleep)", md, sleep.Process.Pid))

		// Without the process scan (an empty process root), the
		// kernel's own answer: O_EXCL succeeds past a plain open, and
		// STOP_ARRAY answers EBUSY 25 times; still a refusal, nothing
		// changed.
		start := time.Now()
		refused(c, "the kernel still reports "+md+" busy after 25 tries 200ms apart (open by another process)", "--proc", c.TempDir())
		c.Check(time.Since(start) > 4*time.Second, qt.IsTrue, qt.Commentf("retried for %v", time.Since(start)))
	})

	c.Run("dry run", func(c *qt.C) {
		code, out, errOut := runCLI(t, "stop", "--dry-run", dev)
		c.Assert(code, qt.Equals, exitOK, qt.Commentf("%s%s", out, errOut))
		c.Check(out, qt.Equals, fmt.Sprintf("mdctl: would stop %s (stopme) (STOP_ARRAY, then remove %s, map entry %s (/run/mdadm/map)); nothing written (dry run)\n", md, dev, md))
		vmRunning(c, md)
		c.Check(vmMapLine(c, md), qt.Equals, mapLine)
	})

	// Stop: the array goes, mdadm's absolute link and the map entry too.
	code, out, errOut := runCLI(t, "stop", dev)
	c.Assert(code, qt.Equals, exitOK, qt.Commentf("%s%s", out, errOut))
	c.Check(out, qt.Equals, fmt.Sprintf("mdctl: stopped %s (stopme)\nmdctl: removed %s\nmdctl: removed map entry %s (/run/mdadm/map)\n", md, dev, md))
	c.Check(guest.MDStat(c), qt.Not(qt.Contains), md+" : active")
	t.Logf("FACT: %s removed from sysfs after STOP_ARRAY: %v", md, vmGone(md))
	_, err = os.Lstat(dev)
	c.Check(err, qt.ErrorIs, fs.ErrNotExist)
	c.Check(vmMapLine(c, md), qt.Equals, "")

	// mdadm assembles it again, and mdctl stops what mdadm assembled;
	// a relative link (as udev makes) is udev's and stays.
	guest.Mdadm(c, "--assemble", "--scan")
	md = guest.ArrayName(c, dev)
	c.Check(vmMapLine(c, md), qt.Matches, md+` 1\.2 .* /dev/md/stopme`)
	c.Assert(os.Remove(dev), qt.IsNil)
	c.Assert(os.Symlink("../"+md, dev), qt.IsNil)
	code, out, errOut = runCLI(t, "stop", md)
	c.Assert(code, qt.Equals, exitOK, qt.Commentf("%s%s", out, errOut))
	c.Check(out, qt.Equals, fmt.Sprintf("mdctl: stopped %s (stopme)\nmdctl: removed map entry %s (/run/mdadm/map)\n", md, md))
	got, err := os.Readlink(dev)
	c.Check(err, qt.IsNil)
	c.Check(got, qt.Equals, "../"+md)
	c.Check(vmMapLine(c, md), qt.Equals, "")
	c.Check(os.Remove(dev), qt.IsNil)

	// Stopped already: no such array, a refusal.
	c.Assert(vmGone(md), qt.IsTrue, qt.Commentf("%s still in sysfs", md))
	code, _, errOut = runCLI(t, "stop", md)
	c.Check(code, qt.Equals, exitRefused)
	c.Check(errOut, qt.Contains, "no such array")
}

// TestVMStopClear: an md device with no array in it (made through
// new_array, array_state clear) is stopped, as mdadm --stop does, and
// the kernel removes it.
func TestVMStopClear(t *testing.T) {
	c := qt.New(t)
	guest.ScratchDisks(t, 0)
	for _, md := range []string{"md200", "md201"} {
		c.Assert(guest.WriteFile("/sys/module/md_mod/parameters/new_array", md), qt.IsNil)
		c.Assert(guest.ReadAttr(c, md, "array_state"), qt.Equals, "clear")
	}
	code, out, errOut := runCLI(t, "stop", "md200")
	c.Assert(code, qt.Equals, exitOK, qt.Commentf("%s%s", out, errOut))
	c.Check(out, qt.Equals, "mdctl: stopped md200\n")
	c.Check(vmGone("md200"), qt.IsTrue)

	mdadmOut, err := guest.RunMdadm("--stop", "/dev/md201")
	t.Logf("FACT: mdadm --stop of a clear md201: %v %q; md201 removed: %v", err, mdadmOut, vmGone("md201"))
}
