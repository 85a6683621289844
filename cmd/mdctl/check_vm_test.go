//go:build vmtest

package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	qt "github.com/frankban/quicktest"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/go-mdraid/mdraid/blockdev"
	"github.com/go-mdraid/mdraid/internal/vmtest/guest"
	"github.com/go-mdraid/mdraid/md"
	"github.com/go-mdraid/mdraid/superblock"
)

// Issue 12's proof on the real kernel: mdctl check against mismatches
// injected into members, a time-boxed check resumed from its stored
// cursor, and refusals that must leave sync_action alone. The names of
// the check JSON and of the store's "checks" entries are the ones in the
// issue's shared design (check-design.md); mdctl check itself is not read
// from any package here, so these tests compile without it.

// vmCheckExitMismatches is mdctl check's exit status for a check that
// found mismatches (issue 12; exitRefused is 2).
const vmCheckExitMismatches = 1

// vmCheckResult is one array of `mdctl check --json`: only the fields the
// design promises readers ("array", "result", "mismatch_sectors",
// "finished").
type vmCheckResult struct {
	Array           string `json:"array"`
	Result          string `json:"result"`
	MismatchSectors uint64 `json:"mismatch_sectors"`
	Finished        bool   `json:"finished"`
}

// vmCheck runs `mdctl check --json args...` and returns its exit code, the
// one result for the one array it was given, and its output for messages.
// res is nil when stdout is not the JSON the design names.
func vmCheck(t *testing.T, args ...string) (code int, res *vmCheckResult, out string) {
	t.Helper()
	code, res, out = vmCheckRaw(args...)
	t.Log(out)
	return code, res, out
}

// vmCheckRaw is vmCheck without the test: it runs in a goroutine that
// may outlive a failed test.
func vmCheckRaw(args ...string) (code int, res *vmCheckResult, out string) {
	var stdout, stderr bytes.Buffer
	exited := -1
	code = run(append([]string{"check", "--json"}, args...), &stdout, &stderr, func(c int) {
		if exited < 0 {
			exited = c
		}
	})
	if exited >= 0 {
		code = exited
	}
	out = fmt.Sprintf("mdctl check --json %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, stdout.String(), stderr.String())
	var doc struct {
		Arrays []vmCheckResult `json:"arrays"`
	}
	if json.Unmarshal(stdout.Bytes(), &doc) != nil || len(doc.Arrays) != 1 {
		return code, nil, out
	}
	return code, &doc.Arrays[0], out
}

// vmAttrUint reads a decimal md attribute.
func vmAttrUint(c *qt.C, md, attr string) uint64 {
	c.Helper()
	s := guest.ReadAttr(c, md, attr)
	n, err := strconv.ParseUint(s, 10, 64)
	c.Assert(err, qt.IsNil, qt.Commentf("%s/%s = %q", md, attr, s))
	return n
}

// vmCreate runs mdadm --create dev --run --assume-clean with args and the
// disks, and returns the kernel name. Scratch disks read as zeros, so
// every array made here starts consistent: a first check finds nothing.
func vmCreate(c *qt.C, dev string, disks []guest.Disk, args ...string) string {
	c.Helper()
	a := append([]string{"--create", dev, "--run", "--assume-clean"}, args...)
	for _, d := range disks {
		a = append(a, d.Path)
	}
	guest.Mdadm(c, a...)
	return guest.ArrayName(c, dev)
}

// vmAssemble assembles dev from disks again after mdadm --stop.
func vmAssemble(c *qt.C, dev string, disks []guest.Disk) string {
	c.Helper()
	a := []string{"--assemble", dev}
	for _, d := range disks {
		a = append(a, d.Path)
	}
	guest.Mdadm(c, a...)
	name := guest.ArrayName(c, dev)
	c.Assert(guest.WaitIdle(name, guest.SyncTimeout), qt.IsNil)
	return name
}

// vmMember reads a member's superblock with O_DIRECT (md writes it past
// the page cache) through the project's superblock package.
func vmMember(c *qt.C, d guest.Disk) *superblock.Superblock {
	c.Helper()
	r, err := blockdev.OpenDirect(d.Path)
	c.Assert(err, qt.IsNil)
	defer r.Close()
	res, err := superblock.Probe(r, d.Size)
	c.Assert(err, qt.IsNil, qt.Commentf("%s", d.Path))
	best := res.Best()
	c.Assert(best, qt.Not(qt.IsNil), qt.Commentf("%s: no superblock", d.Path))
	c.Assert(best.Err, qt.IsNil, qt.Commentf("%s", d.Path))
	return best.Superblock
}

// vmReadDirect reads n bytes of a disk at off with O_DIRECT.
func vmReadDirect(c *qt.C, d guest.Disk, off int64, n int) []byte {
	c.Helper()
	r, err := blockdev.OpenDirect(d.Path)
	c.Assert(err, qt.IsNil)
	defer r.Close()
	b := make([]byte, n)
	_, err = r.ReadAt(b, off)
	c.Assert(err, qt.IsNil, qt.Commentf("read %s at %d", d.Path, off))
	return b
}

// vmInject writes pattern over a stopped member's data area, at dataOff
// bytes past the data offset its superblock records, and proves with an
// O_DIRECT read that the disk holds it. It returns the byte offset
// written on the device.
func vmInject(c *qt.C, d guest.Disk, dataOff int64, pattern []byte) int64 {
	c.Helper()
	sb := vmMember(c, d)
	off := int64(sb.DataStart())*512 + dataOff
	c.Assert(uint64(dataOff+int64(len(pattern))) <= sb.Size*512, qt.IsTrue,
		qt.Commentf("%s: %d bytes at %d outside the data the array uses (%d sectors)", d.Path, len(pattern), dataOff, sb.Size))
	c.Assert(vmReadDirect(c, d, off, len(pattern)), qt.Not(qt.DeepEquals), pattern,
		qt.Commentf("%s already holds the pattern at %d: the write would change nothing", d.Path, off))
	f, err := os.OpenFile(d.Path, os.O_WRONLY, 0)
	c.Assert(err, qt.IsNil)
	_, err = f.WriteAt(pattern, off)
	c.Assert(err, qt.IsNil)
	c.Assert(f.Sync(), qt.IsNil)
	c.Assert(f.Close(), qt.IsNil)
	c.Assert(vmReadDirect(c, d, off, len(pattern)), qt.DeepEquals, pattern, qt.Commentf("%s at %d", d.Path, off))
	return off
}

// vmPattern is n bytes that no zeroed disk holds.
func vmPattern(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(0xa5 ^ i*7)
	}
	return b
}

// vmStatusMismatch returns the "mismatch_sectors" that `mdctl status
// --json` gives the array, and whether it gives one.
func vmStatusMismatch(c *qt.C, t *testing.T, name string) (uint64, bool) {
	c.Helper()
	out, stderr, _ := mdctl(t, "status", "--json", name)
	var doc struct {
		Arrays []map[string]json.RawMessage `json:"arrays"`
	}
	c.Assert(json.Unmarshal([]byte(out), &doc), qt.IsNil, qt.Commentf("stdout:\n%s\nstderr:\n%s", out, stderr))
	for _, a := range doc.Arrays {
		var dev string
		json.Unmarshal(a["device"], &dev)
		if dev != name {
			continue
		}
		raw, ok := a["mismatch_sectors"]
		if !ok {
			return 0, false
		}
		var n uint64
		c.Assert(json.Unmarshal(raw, &n), qt.IsNil, qt.Commentf("mismatch_sectors %s", raw))
		return n, true
	}
	c.Fatalf("status --json has no array %s:\n%s", name, out)
	return 0, false
}

// vmPromMismatch returns mdraid_array_mismatch_sectors{device=name} from
// `mdctl status --format=prometheus`, and whether the series is there.
func vmPromMismatch(c *qt.C, t *testing.T, name string) (float64, bool) {
	c.Helper()
	out, stderr, _ := mdctl(t, "status", "--format=prometheus")
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(strings.NewReader(out))
	c.Assert(err, qt.IsNil, qt.Commentf("%s\n%s", out, stderr))
	for _, m := range mfs["mdraid_array_mismatch_sectors"].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() != "device" || l.GetValue() != name {
				continue
			}
			switch {
			case m.GetGauge() != nil:
				return m.GetGauge().GetValue(), true
			case m.GetUntyped() != nil:
				return m.GetUntyped().GetValue(), true
			}
			c.Fatalf("mdraid_array_mismatch_sectors{device=%q} is neither a gauge nor untyped:\n%s", name, out)
		}
	}
	return 0, false
}

// TestVMCheckMismatch injects a mismatch into one member of a stopped
// array (bytes written into its data area, at an offset computed from
// its superblock), assembles it again, and checks it with mdctl:
//
//   - before the injection, `check --wait` exits 0 with no mismatches;
//   - after it, `check --wait` exits 1, and its "mismatch_sectors" is
//     the kernel's mismatch_cnt (non-zero), as are status --json's
//     "mismatch_sectors" and the mdraid_array_mismatch_sectors series;
//   - `check --repair --wait` exits 0 ("repaired", its count what it
//     rewrote), and a check after it exits 0 with mismatch_cnt 0.
//
// On the mirror the injected member differs from the other one; on the
// RAID5 the bytes go into the first data chunk of slot 0
// (left-symmetric: row 0's parity is on the last slot).
func TestVMCheckMismatch(t *testing.T) {
	cases := []struct {
		name   string
		dev    string
		disks  int
		args   []string
		target int   // index in disks of the member written
		at     int64 // bytes into its data area
	}{
		{name: "raid1", dev: "/dev/md60", disks: 2, target: 1, at: 1 << 20,
			args: []string{"--level=1", "--metadata=1.2", "--raid-devices=2", "--size=16384"}},
		{name: "raid5", dev: "/dev/md61", disks: 4, target: 0, at: 16 << 10,
			args: []string{"--level=5", "--metadata=1.2", "--raid-devices=4", "--size=16384"}},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			guest.RequireLevel(t, tt.args...)
			c := qt.New(t)
			disks := guest.ScratchDisks(t, tt.disks)
			name := vmCreate(c, tt.dev, disks, tt.args...)

			code, res, out := vmCheck(t, "--wait", name)
			c.Assert(code, qt.Equals, 0, qt.Commentf("%s", out))
			c.Assert(res, qt.Not(qt.IsNil), qt.Commentf("%s", out))
			c.Check(res.Array, qt.Equals, name)
			c.Check(res.Result, qt.Equals, "clean")
			c.Check(res.Finished, qt.IsTrue)
			c.Check(res.MismatchSectors, qt.Equals, uint64(0))
			c.Check(vmAttrUint(c, name, "mismatch_cnt"), qt.Equals, uint64(0))
			// The kernel put back the max over the guard check wrote.
			c.Check(guest.ReadAttr(c, name, "sync_max"), qt.Equals, "max")

			guest.Mdadm(c, "--stop", tt.dev)
			target := disks[tt.target]
			sb := vmMember(c, target)
			pattern := vmPattern(64 << 10)
			if sb.Level == superblock.LevelRAID5 {
				c.Assert(sb.Role(), qt.Equals, superblock.Role(0), qt.Commentf("%s", target.Path))
				c.Assert(sb.Layout, qt.Equals, uint32(2), qt.Commentf("layout %s, want left-symmetric", sb.LayoutName()))
				c.Assert(uint64(tt.at)+uint64(len(pattern)) <= sb.ChunkSize, qt.IsTrue,
					qt.Commentf("chunk %d bytes: the pattern must stay in chunk 0", sb.ChunkSize))
			}
			off := vmInject(c, target, tt.at, pattern)
			if sb.Level == superblock.LevelRAID1 {
				other := disks[1-tt.target]
				osb := vmMember(c, other)
				c.Assert(vmReadDirect(c, other, int64(osb.DataStart())*512+tt.at, len(pattern)), qt.Not(qt.DeepEquals), pattern)
			}
			t.Logf("wrote %d bytes at byte %d of %s (%d into its data area)", len(pattern), off, target.Path, tt.at)
			name = vmAssemble(c, tt.dev, disks)

			code, res, out = vmCheck(t, "--wait", name)
			kernel := vmAttrUint(c, name, "mismatch_cnt")
			c.Check(code, qt.Equals, vmCheckExitMismatches, qt.Commentf("%s", out))
			c.Check(kernel > 0, qt.IsTrue, qt.Commentf("the kernel found no mismatch: the injection missed"))
			if c.Check(res, qt.Not(qt.IsNil), qt.Commentf("%s", out)) {
				c.Check(res.Result, qt.Equals, "mismatches")
				c.Check(res.Finished, qt.IsTrue)
				c.Check(res.MismatchSectors, qt.Equals, kernel)
			}
			c.Check(guest.ReadAttr(c, name, "last_sync_action"), qt.Equals, "check")
			if n, ok := vmStatusMismatch(c, t, name); c.Check(ok, qt.IsTrue, qt.Commentf("status --json has no mismatch_sectors")) {
				c.Check(n, qt.Equals, kernel)
			}
			if v, ok := vmPromMismatch(c, t, name); c.Check(ok, qt.IsTrue, qt.Commentf("no mdraid_array_mismatch_sectors{device=%q}", name)) {
				c.Check(v, qt.Equals, float64(kernel))
			}

			code, res, out = vmCheck(t, "--repair", "--wait", name)
			repaired := vmAttrUint(c, name, "mismatch_cnt")
			c.Check(code, qt.Equals, 0, qt.Commentf("%s", out))
			c.Check(repaired > 0, qt.IsTrue, qt.Commentf("the repair pass found nothing to rewrite"))
			if c.Check(res, qt.Not(qt.IsNil), qt.Commentf("%s", out)) {
				c.Check(res.Result, qt.Equals, "repaired")
				c.Check(res.Finished, qt.IsTrue)
				c.Check(res.MismatchSectors, qt.Equals, repaired)
			}
			c.Check(guest.ReadAttr(c, name, "last_sync_action"), qt.Equals, "repair")

			code, res, out = vmCheck(t, "--wait", name)
			c.Check(code, qt.Equals, 0, qt.Commentf("%s", out))
			c.Check(guest.ReadAttr(c, name, "mismatch_cnt"), qt.Equals, "0")
			if c.Check(res, qt.Not(qt.IsNil), qt.Commentf("%s", out)) {
				c.Check(res.Result, qt.Equals, "clean")
				c.Check(res.MismatchSectors, qt.Equals, uint64(0))
			}
			if sb.Level == superblock.LevelRAID1 {
				// The repair made the mirror's copies equal again.
				a, b := vmMember(c, disks[0]), vmMember(c, disks[1])
				c.Check(vmReadDirect(c, disks[0], int64(a.DataStart())*512+tt.at, len(pattern)), qt.DeepEquals,
					vmReadDirect(c, disks[1], int64(b.DataStart())*512+tt.at, len(pattern)))
			}
			guest.Mdadm(c, "--stop", tt.dev)
		})
	}
}

// vmSyncAttrs are the attributes a refused check must leave as they were.
var vmSyncAttrs = []string{"array_state", "sync_action", "last_sync_action", "sync_completed",
	"sync_min", "sync_max", "mismatch_cnt", "degraded"}

// vmSnapshot reads attrs of an array; an attribute that does not exist
// (raid0 has no sync_action) reads as "<absent>".
func vmSnapshot(c *qt.C, name string, attrs []string) map[string]string {
	c.Helper()
	m := map[string]string{}
	for _, a := range attrs {
		b, err := os.ReadFile(guest.SysPath(name, a))
		switch {
		case errors.Is(err, fs.ErrNotExist):
			m[a] = "<absent>"
		case err != nil:
			c.Fatalf("%s/%s: %v", name, a, err)
		default:
			m[a] = strings.TrimSpace(string(b))
		}
	}
	return m
}

// TestVMCheckRefusals: mdctl check and check --repair refuse (exit 2) an
// array that is degraded (a mirror created with a "missing" slot),
// read-auto, read-only, frozen, not redundant (raid0) or already checking,
// and leave its sync attributes as they were (vmSyncAttrs; a check that
// runs moves its own). A write of check to sync_action would switch a
// read-auto array to read-write and unfreeze a frozen one (docs/scrub.md
// §2), and start a sync thread, which sets last_sync_action, on the
// others: the refusal must come before any write.
func TestVMCheckRefusals(t *testing.T) {
	cases := []struct {
		name  string
		disks int
		args  []string
		after func(c *qt.C, name string)
		// want checks the state the case made, before mdctl runs.
		want map[string]string
		// moving are attributes that change on their own (a running
		// check's position).
		moving []string
	}{
		{name: "degraded", disks: 2, args: []string{"--level=1", "--raid-devices=3", "missing"},
			want: map[string]string{"degraded": "1", "sync_action": "idle"}},
		{name: "read-auto", disks: 2, args: []string{"--level=1", "--raid-devices=2"},
			after: func(c *qt.C, name string) { guest.WriteAttr(c, name, "array_state", "read-auto") },
			want:  map[string]string{"array_state": "read-auto", "sync_action": "idle"}},
		{name: "readonly", disks: 2, args: []string{"--level=1", "--raid-devices=2"},
			after: func(c *qt.C, name string) { guest.Mdadm(c, "--readonly", "/dev/"+name) },
			want:  map[string]string{"array_state": "readonly", "sync_action": "idle"}},
		{name: "frozen", disks: 2, args: []string{"--level=1", "--raid-devices=2"},
			after: func(c *qt.C, name string) { guest.WriteAttr(c, name, "sync_action", "frozen") },
			want:  map[string]string{"sync_action": "frozen"}},
		{name: "raid0", disks: 2, args: []string{"--level=0", "--raid-devices=2"},
			want: map[string]string{"sync_action": "<absent>"}},
		{name: "checking", disks: 2, args: []string{"--level=1", "--raid-devices=2"},
			after: func(c *qt.C, name string) {
				// A check someone else started, throttled so that it
				// still runs when mdctl looks.
				guest.WriteAttr(c, name, "sync_speed_max", "1000")
				guest.WriteAttr(c, name, "sync_action", "check")
				// The write only requests it: the sync thread sets
				// last_sync_action when it starts (6.1 reads "none"
				// until then). Wait for it, so mdctl meets a check
				// that runs.
				guest.WaitAttr(c, name, "last_sync_action", "check", guest.SyncTimeout)
			},
			want:   map[string]string{"sync_action": "check", "last_sync_action": "check"},
			moving: []string{"sync_completed"}},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			guest.RequireLevel(t, tt.args...)
			c := qt.New(t)
			disks := guest.ScratchDisks(t, tt.disks)
			dev := "/dev/md62"
			name := vmCreate(c, dev, disks, append([]string{"--metadata=1.2"}, tt.args...)...)
			if tt.after != nil {
				tt.after(c, name)
			}
			if tt.want["sync_action"] == "idle" {
				// Right after creating a degraded array md may show
				// "recover" for a moment while it looks for a spare
				// (seen on 6.1): the case is the idle array.
				guest.WaitAttr(c, name, "sync_action", "idle", guest.SyncTimeout)
			}
			var attrs []string
			for _, a := range vmSyncAttrs {
				if !slices.Contains(tt.moving, a) {
					attrs = append(attrs, a)
				}
			}
			before := vmSnapshot(c, name, attrs)
			for k, v := range tt.want {
				c.Assert(before[k], qt.Equals, v, qt.Commentf("set-up: %s (%v)", k, before))
			}
			for _, args := range [][]string{{name}, {"--repair", name}, {"--wait", "--duration", "3s", name}} {
				code, res, out := vmCheck(t, args...)
				c.Check(code, qt.Equals, exitRefused, qt.Commentf("%s", out))
				if c.Check(res, qt.Not(qt.IsNil), qt.Commentf("%s", out)) {
					c.Check(res.Result, qt.Equals, "refused")
				}
				c.Check(vmSnapshot(c, name, attrs), qt.DeepEquals, before, qt.Commentf("after check %v", args))
			}
			if tt.name == "checking" {
				guest.WriteAttr(c, name, "sync_action", "idle")
				c.Assert(guest.WaitIdle(name, guest.SyncTimeout), qt.IsNil)
			}
			guest.Mdadm(c, "--stop", dev)
		})
	}
}

// Store fields read from the "checks" entries of a store file (JSON names
// of md.CheckRecord in check-design.md, snake case as md.Record's).
const (
	vmStoreChecks        = "checks"
	vmStoreUUID          = "uuid"
	vmStoreCursor        = "cursor"
	vmStoreLastFinished  = "last_finished"
	vmStoreLastAction    = "last_action"
	vmStoreLastMismatchs = "last_mismatches"
)

// vmNormUUID lowers a UUID and drops its separators, so that mdadm's
// "a:b:c:d", the dashed form and the store's compare equal.
func vmNormUUID(s string) string {
	return strings.NewReplacer("-", "", ":", "").Replace(strings.ToLower(s))
}

// vmStoreCheck returns the store file's "checks" entry for uuid, or nil.
func vmStoreCheck(c *qt.C, path, uuid string) map[string]any {
	c.Helper()
	b, err := os.ReadFile(path)
	c.Assert(err, qt.IsNil)
	var doc map[string]any
	c.Assert(json.Unmarshal(b, &doc), qt.IsNil, qt.Commentf("%s", b))
	checks, _ := doc[vmStoreChecks].([]any)
	for _, e := range checks {
		m, _ := e.(map[string]any)
		if u, _ := m[vmStoreUUID].(string); vmNormUUID(u) == vmNormUUID(uuid) {
			return m
		}
	}
	c.Logf("store %s:\n%s", path, b)
	return nil
}

// vmStoreUint reads a number of a store entry; an absent field is 0 (the
// store omits empty ones).
func vmStoreUint(c *qt.C, e map[string]any, field string) uint64 {
	c.Helper()
	v, ok := e[field]
	if !ok {
		return 0
	}
	f, ok := v.(float64)
	c.Assert(ok, qt.IsTrue, qt.Commentf("%s = %#v", field, v))
	return uint64(f)
}

// vmArrayUUID is the array's UUID as mdctl status --json reports it.
func vmArrayUUID(c *qt.C, t *testing.T, name string) string {
	c.Helper()
	out, _, _ := mdctl(t, "status", "--json", name)
	var r md.Report
	c.Assert(json.Unmarshal([]byte(out), &r), qt.IsNil)
	c.Assert(r.Arrays, qt.HasLen, 1)
	c.Assert(r.Arrays[0].UUID, qt.Not(qt.Equals), "")
	return r.Arrays[0].UUID
}

// vmCheckSectors is the component size of the time-boxed tests' mirror
// (8 MiB, mdadm --size in KiB): at sync_speed_max 1000 KiB/s a pass
// takes about 8 s, so a 3 s box cannot finish it, and the kernel's
// position checkpoints (sync_completed) come every 1/16 of the size.
const (
	vmCheckSizeKiB = 8192
	vmCheckSpeed   = "1000" // KiB/s
)

// vmWaitRunning waits, while mdctl runs (done not closed), until the
// array's check runs (sync_action check, sync_completed a position) and
// returns sync_min read then: the position the pass started at, which
// the kernel does not change until the pass ends. It fails if mdctl
// ended first or the deadline passes.
func vmWaitRunning(c *qt.C, name string, done <-chan struct{}, timeout time.Duration) uint64 {
	c.Helper()
	deadline := time.Now().Add(timeout)
	for {
		select {
		case <-done:
			c.Fatalf("mdctl check ended before its check was seen running (sync_action %q, sync_min %q)",
				guest.ReadAttr(c, name, "sync_action"), guest.ReadAttr(c, name, "sync_min"))
		default:
		}
		if guest.ReadAttr(c, name, "sync_action") == "check" {
			if pos := guest.ReadAttr(c, name, "sync_completed"); pos != "none" && pos != "delayed" {
				return vmAttrUint(c, name, "sync_min")
			}
		}
		if time.Now().After(deadline) {
			c.Fatalf("no check running on %s after %v:\n%s", name, timeout, guest.MDStat(c))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestVMCheckTimeBoxResumes: a check throttled by sync_speed_max, run with
// --duration 3s and a store, returns at the deadline with sync_action idle
// ("stopped", not finished) and its cursor stored (the store's "checks"
// entry for the array's UUID: non-zero, a multiple of 8 sectors, not past
// where the kernel stopped, sync_min). The array is then stopped and
// assembled again, which resets sync_min in the kernel (md_clean), so
// only the store knows the position: the next run starts there (sync_min
// reads the cursor while the check runs), completes ("clean", exit 0),
// and clears the cursor, recording the finished pass. The same across a
// reboot is md/healvm's TestCheckCursorSurvivesReboot.
func TestVMCheckTimeBoxResumes(t *testing.T) {
	c := qt.New(t)
	disks := guest.ScratchDisks(t, 2)
	const dev = "/dev/md63"
	name := vmCreate(c, dev, disks, "--level=1", "--metadata=1.2", "--raid-devices=2", fmt.Sprintf("--size=%d", vmCheckSizeKiB))
	uuid := vmArrayUUID(c, t, name)
	store := filepath.Join(t.TempDir(), "checks.json")
	guest.WriteAttr(c, name, "sync_speed_max", vmCheckSpeed)

	start := time.Now()
	code, res, out := vmCheck(t, "--duration", "3s", "--store", store, name)
	took := time.Since(start)
	c.Assert(code, qt.Equals, 0, qt.Commentf("%s", out))
	c.Check(took >= 3*time.Second, qt.IsTrue, qt.Commentf("returned after %v, before the deadline", took))
	c.Check(took < 30*time.Second, qt.IsTrue, qt.Commentf("returned %v after start, long past the 3 s deadline", took))
	if c.Check(res, qt.Not(qt.IsNil), qt.Commentf("%s", out)) {
		c.Check(res.Result, qt.Equals, "stopped")
		c.Check(res.Finished, qt.IsFalse)
	}
	c.Check(guest.ReadAttr(c, name, "sync_action"), qt.Equals, "idle")
	c.Check(guest.ReadAttr(c, name, "sync_completed"), qt.Equals, "none")
	c.Check(guest.ReadAttr(c, name, "last_sync_action"), qt.Equals, "check")
	stoppedAt := vmAttrUint(c, name, "sync_min") // the kernel's interruption point
	e := vmStoreCheck(c, store, uuid)
	c.Assert(e, qt.Not(qt.IsNil), qt.Commentf("no %q entry for %s", vmStoreChecks, uuid))
	cursor := vmStoreUint(c, e, vmStoreCursor)
	t.Logf("stopped at sector %d (sync_min), cursor %d, entry %v", stoppedAt, cursor, e)
	c.Assert(cursor > 0, qt.IsTrue, qt.Commentf("no cursor stored: %v", e))
	c.Check(cursor%8, qt.Equals, uint64(0))
	c.Check(cursor <= stoppedAt, qt.IsTrue, qt.Commentf("cursor %d past the kernel's position %d", cursor, stoppedAt))
	c.Check(cursor < uint64(vmCheckSizeKiB*2), qt.IsTrue)

	// Stop and assemble: the kernel forgets the position.
	guest.Mdadm(c, "--stop", dev)
	name = vmAssemble(c, dev, disks)
	c.Assert(guest.ReadAttr(c, name, "sync_min"), qt.Equals, "0")
	guest.WriteAttr(c, name, "sync_speed_max", vmCheckSpeed)

	type result struct {
		code int
		res  *vmCheckResult
		out  string
	}
	done := make(chan struct{})
	got := make(chan result, 1)
	go func() {
		defer close(done)
		code, res, out := vmCheckRaw("--wait", "--store", store, name)
		got <- result{code, res, out}
	}()
	resumedAt := vmWaitRunning(c, name, done, time.Minute)
	c.Check(resumedAt, qt.Equals, cursor, qt.Commentf("sync_min while the resumed check runs"))
	// Seen: let the rest of the pass go at full speed.
	guest.WriteAttr(c, name, "sync_speed_max", "system")
	var r result
	select {
	case r = <-got:
	case <-time.After(3 * time.Minute):
		c.Fatalf("mdctl check --wait still running after 3 min:\n%s", guest.MDStat(c))
	}
	t.Log(r.out)
	c.Check(r.code, qt.Equals, 0, qt.Commentf("%s", r.out))
	if c.Check(r.res, qt.Not(qt.IsNil), qt.Commentf("%s", r.out)) {
		c.Check(r.res.Result, qt.Equals, "clean")
		c.Check(r.res.Finished, qt.IsTrue)
		c.Check(r.res.MismatchSectors, qt.Equals, uint64(0))
	}
	c.Check(guest.ReadAttr(c, name, "sync_action"), qt.Equals, "idle")
	c.Check(guest.ReadAttr(c, name, "sync_min"), qt.Equals, "0") // the kernel's reset on completion
	e = vmStoreCheck(c, store, uuid)
	if c.Check(e, qt.Not(qt.IsNil)) {
		c.Check(vmStoreUint(c, e, vmStoreCursor), qt.Equals, uint64(0), qt.Commentf("cursor kept after a finished pass: %v", e))
		c.Check(e[vmStoreLastAction], qt.Equals, "check")
		c.Check(vmStoreUint(c, e, vmStoreLastMismatchs), qt.Equals, uint64(0))
		fin, _ := e[vmStoreLastFinished].(string)
		when, err := time.Parse(time.RFC3339Nano, fin)
		if c.Check(err, qt.IsNil, qt.Commentf("%s = %q", vmStoreLastFinished, fin)) {
			c.Check(when.After(start), qt.IsTrue, qt.Commentf("finished %v, test started %v", when, start))
		}
	}
	b, err := os.ReadFile(store)
	c.Assert(err, qt.IsNil)
	c.Check(bytes.Contains(b, []byte(`"format"`)), qt.IsTrue, qt.Commentf("not a record file:\n%s", b))
	guest.Mdadm(c, "--stop", dev)
}

// TestVMCheckStoppedBeforeFirstCheckpoint: a check throttled to 50 KiB/s
// (its first checkpoint, a sixteenth of 32 MiB, is about 40 s away) is
// frozen, or stopped with idle, by someone else while mdctl check --wait
// follows it, before that checkpoint. The kernel interrupts the pass and
// leaves sync_min at 0 (6.1, 6.12: as after a finished pass) or 3 (7.2),
// and sync_max at the guard mdctl wrote (only a completed pass resets it,
// docs/scrub.md §8.5); mdctl reports it stopped, not finished, with its
// cursor kept at the start, and sync_max is max again.
//
// Whether the stop lands before the first checkpoint is the kernel's
// timing, not the test's: a guest stalled by a loaded host catches up its
// clock and the throttled pass then runs ahead (seen on 6.1 with three
// VM suites on two cores: a checkpoint at 1152 sectors between the read
// of "0 / 16384" and the freeze). What mdctl must report holds either way
// and is checked on every attempt; the case itself is tried up to six
// times, and the test fails when it was never reached.
func TestVMCheckStoppedBeforeFirstCheckpoint(t *testing.T) {
	for i, act := range []string{"frozen", "idle"} {
		t.Run(act, func(t *testing.T) {
			c := qt.New(t)
			disks := guest.ScratchDisks(t, 2)
			dev := fmt.Sprintf("/dev/md%d", 64+i)
			name := vmCreate(c, dev, disks, "--level=1", "--metadata=1.2", "--raid-devices=2", "--size=32768")
			defer guest.Mdadm(c, "--stop", dev)
			uuid := vmArrayUUID(c, t, name)
			// 50 KiB/s. The floor must come down too: below
			// sync_speed_min (1000 KiB/s by default) md does not
			// throttle, and the pass reached the first checkpoint before
			// the freeze on 7.2 (CI, 2026-12-05).
			guest.WriteAttr(c, name, "sync_speed_min", "1")
			guest.WriteAttr(c, name, "sync_speed_max", "50")
			for attempt := 1; ; attempt++ {
				if vmStopBeforeCheckpoint(c, t, name, uuid, act) {
					return
				}
				if attempt == 6 {
					c.Fatalf("the %s never came before the kernel's first checkpoint in %d attempts: the case was not tested", act, attempt)
				}
			}
		})
	}
}

// vmStopBeforeCheckpoint runs one attempt of
// TestVMCheckStoppedBeforeFirstCheckpoint: it checks what mdctl reports
// wherever the kernel stopped, and says whether that was before the
// first checkpoint.
func vmStopBeforeCheckpoint(c *qt.C, t *testing.T, name, uuid, act string) bool {
	store := filepath.Join(t.TempDir(), "checks.json")
	done := make(chan struct{})
	type result struct {
		code int
		res  *vmCheckResult
		out  string
	}
	got := make(chan result, 1)
	start := time.Now()
	go func() {
		defer close(done)
		code, res, out := vmCheckRaw("--wait", "--store", store, name)
		got <- result{code, res, out}
	}()
	vmWaitRunning(c, name, done, time.Minute)
	seen := time.Since(start)
	pos := guest.ReadAttr(c, name, "sync_completed")
	limit := guest.ReadAttr(c, name, "sync_max")
	// Another program stops the check. On Linux 6.1 a stop whose wait
	// for the array lock a signal interrupts is accepted and not done
	// (md.sysKernel.SetSyncAction; seen with this test process as the
	// writer), so the test confirms the stop and writes it again, as
	// mdctl does. It writes from this process, not a shell: a shell's
	// start takes long enough for the kernel to reach its first
	// checkpoint first (seen on 7.2).
	for i := 1; ; i++ {
		c.Assert(guest.WriteFile(guest.SysPath(name, "sync_action"), act), qt.IsNil)
		stopped := func() (bool, string) {
			now := guest.ReadAttr(c, name, "sync_action")
			return guest.ReadAttr(c, name, "sync_completed") == "none" || act == "idle" && now != "check", now
		}
		// As md.sysKernel: a stop that took shows within 500 ms.
		ok, now := stopped()
		for deadline := time.Now().Add(500 * time.Millisecond); !ok && time.Now().Before(deadline); ok, now = stopped() {
			time.Sleep(10 * time.Millisecond)
		}
		if ok {
			break
		}
		t.Logf("%s written (write %d), and the check still runs: sync_action %q", act, i, now)
		if i == 3 {
			c.Fatalf("%s written 3 times and the check still runs:\n%s", act, guest.MDStat(c))
		}
	}
	t.Logf("%s at sync_completed %q, sync_max %q: running after %v, stopped after %v", act, pos, limit,
		seen.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
	c.Check(limit, qt.Not(qt.Equals), "max", qt.Commentf("no guard in sync_max while the check runs"))
	var r result
	select {
	case r = <-got:
	case <-time.After(time.Minute):
		c.Fatalf("mdctl check --wait still running a minute after the %s:\n%s", act, guest.MDStat(c))
	}
	t.Log(r.out)
	min := vmAttrUint(c, name, "sync_min")
	t.Logf("sync_min after the %s: %d", act, min)
	c.Check(guest.ReadAttr(c, name, "sync_max"), qt.Equals, "max")
	c.Check(r.code, qt.Equals, 0, qt.Commentf("%s", r.out))
	if c.Check(r.res, qt.Not(qt.IsNil), qt.Commentf("%s", r.out)) {
		c.Check(r.res.Result, qt.Equals, "stopped")
		c.Check(r.res.Finished, qt.IsFalse)
	}
	e := vmStoreCheck(c, store, uuid)
	if c.Check(e, qt.Not(qt.IsNil), qt.Commentf("no %q entry for %s", vmStoreChecks, uuid)) {
		c.Check(e["action"], qt.Equals, "check", qt.Commentf("no unfinished pass recorded: %v", e))
		c.Check(vmStoreUint(c, e, vmStoreCursor), qt.Equals, min/8*8)
		c.Check(e[vmStoreLastFinished], qt.IsNil, qt.Commentf("a finished pass recorded: %v", e))
	}
	if act == "frozen" {
		guest.WriteAttr(c, name, "sync_action", "idle")
	}
	if !strings.HasPrefix(pos, "0 / ") || min >= 8 {
		t.Logf("the kernel reached its first checkpoint before the %s (sync_completed %q, then sync_min %d): trying again", act, pos, min)
		return false
	}
	return true
}
