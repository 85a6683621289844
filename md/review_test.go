package md

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	qt "github.com/frankban/quicktest"
	"golang.org/x/sys/unix"

	"github.com/go-mdraid/mdraid/superblock"
	"github.com/go-mdraid/mdraid/sysfs"
)

// TestExecuteReplaceLocksTheDisk: two replaces into different arrays must
// not share a disk, so the executor also locks the candidate's device
// number.
func TestExecuteReplaceLocksTheDisk(t *testing.T) {
	c := qt.New(t)
	r, path := replaceOn(t, "raid1-degraded-missing")
	p, err := r.m.PlanReplace(context.Background(), ReplaceRequest{Array: r.name, With: path, AllowImageFile: true})
	c.Assert(err, qt.IsNil)
	p.candDev = sysfs.DevNum{Major: 254, Minor: 99} // as for a block device
	unlock, err := lockArray(r.m.ops.runDir, "disk-254:99")
	c.Assert(err, qt.IsNil)
	defer unlock()
	_, err = r.m.ExecuteReplace(context.Background(), p)
	c.Check(err, qt.ErrorIs, errLocked)
	c.Check(r.k.Calls(), qt.HasLen, 0)
}

// danglingMember makes a member's block link point nowhere, as when its
// disk was pulled: the kernel keeps dev-X, the block device is gone.
func danglingMember(t *testing.T, r *replaceRig, member string) {
	t.Helper()
	link := r.m.fs.Path("block", r.name, "md", "dev-"+member, "block")
	target, err := os.Readlink(link)
	if err != nil {
		t.Fatal(err)
	}
	dir, err := filepath.EvalSymlinks(filepath.Dir(link))
	if err != nil {
		t.Fatal(err)
	}
	gone := filepath.Join(dir, target)
	if _, err := os.Stat(gone); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(gone); err != nil {
		t.Fatal(err)
	}
}

// TestExecuteReplaceRemovesPulledMember: a faulty member whose disk is
// gone has no device number; it is removed through sysfs, never with a
// HOT_REMOVE_DISK of 0:0.
func TestExecuteReplaceRemovesPulledMember(t *testing.T) {
	c := qt.New(t)
	r, path := replaceOn(t, "raid1-failed")
	danglingMember(t, r, "vdb")
	res, err := r.m.Replace(context.Background(), ReplaceRequest{Array: r.name, With: path, Member: "vdb", AllowImageFile: true})
	c.Assert(err, qt.IsNil)
	calls := r.k.Calls()
	c.Assert(len(calls) > 0, qt.IsTrue)
	c.Check(calls[0], qt.Equals, "WriteState(md0, vdb, remove)")
	c.Check(res.Slot, qt.Equals, 1)
}

// TestHotRemoveENXIO: "not a member" counts as removed only when the
// member's directory is really gone.
func TestHotRemoveENXIO(t *testing.T) {
	c := qt.New(t)
	r, _ := replaceOn(t, "raid1-failed")
	r.k.fail = map[string]error{"HotRemove": unix.ENXIO}
	err := hotRemove(r.k, r.m.fs, r.name, &PlanMember{Device: "vdb", dev: sysfs.DevNum{Major: 254, Minor: 16}})
	c.Check(err, qt.ErrorIs, unix.ENXIO)
	c.Assert(os.RemoveAll(r.m.fs.Path("block", r.name, "md", "dev-vdb")), qt.IsNil)
	err = hotRemove(r.k, r.m.fs, r.name, &PlanMember{Device: "vdb", dev: sysfs.DevNum{Major: 254, Minor: 16}})
	c.Check(err, qt.IsNil)
}

// TestPlanRefusesUnknownDevNumber: a member that stays bound but whose
// superblock cannot be read may hold any descriptor number; the planner
// refuses rather than risk a collision after writing.
func TestPlanRefusesUnknownDevNumber(t *testing.T) {
	c := qt.New(t)
	r, path := replaceOn(t, "raid5-degraded")
	c.Assert(os.Remove(filepath.Join(r.dev, "vdb")), qt.IsNil)
	_, err := r.m.PlanReplace(context.Background(), ReplaceRequest{Array: r.name, With: path, AllowImageFile: true})
	c.Check(err, qt.ErrorIs, ErrRefused)
	c.Check(err, qt.ErrorIs, errMemberUnknown)
}

// TestPlanRefusesEmptyDevice: a device with no capacity is refused by
// the planner, before anything is removed or frozen.
func TestPlanRefusesEmptyDevice(t *testing.T) {
	c := qt.New(t)
	r, _ := replaceOn(t, "raid1-failed")
	path := r.candidate(t, "vdy", 0)
	_, err := r.m.Replace(context.Background(), ReplaceRequest{Array: r.name, With: path, Member: "vdb", AllowImageFile: true})
	c.Check(err, qt.ErrorIs, ErrRefused)
	c.Check(r.k.Calls(), qt.HasLen, 0)
}

// TestWriteDeviceChecksTheDevice: the superblock write opens the path and
// checks that it is still the planned device before writing anything.
func TestWriteDeviceChecksTheDevice(t *testing.T) {
	c := qt.New(t)
	path := filepath.Join(t.TempDir(), "disk")
	c.Assert(os.WriteFile(path, make([]byte, 8192), 0o644), qt.IsNil)
	err := sysKernel{}.WriteDevice(deviceWrite{Path: path, Dev: sysfs.DevNum{Major: 254, Minor: 32}, Size: 8192, LBS: 512, MaxLBS: 512, Regions: []region{{What: "sb", Off: 4096, Data: []byte{1, 2, 3}}}})
	c.Check(err, qt.ErrorIs, ErrPlanChanged)
	b, err := os.ReadFile(path)
	c.Assert(err, qt.IsNil)
	c.Check(b, qt.DeepEquals, make([]byte, 8192))
}

// TestPlanPulledFaultyMember: a faulty member whose disk was pulled has no
// readable superblock; its number is one the in-sync members' superblocks
// mark faulty, so the new member's number avoids all of those.
func TestPlanPulledFaultyMember(t *testing.T) {
	c := qt.New(t)
	r, path := replaceOn(t, "raid1-failed")
	c.Assert(os.Remove(filepath.Join(r.dev, "vdb")), qt.IsNil) // the pulled disk
	p, err := r.m.PlanReplace(context.Background(), ReplaceRequest{Array: r.name, With: path, AllowImageFile: true})
	c.Assert(err, qt.IsNil)
	src := cloneSource(r.facts(t, "").s)
	c.Assert(src, qt.Not(qt.IsNil))
	c.Assert(int(p.DevNumber) < len(src.sb.DevRoles) || p.DevNumber >= 2, qt.IsTrue)
	if int(p.DevNumber) < len(src.sb.DevRoles) {
		c.Check(src.sb.DevRoles[p.DevNumber], qt.Not(qt.Equals), superblock.RoleFaulty)
	}
	c.Check(src.sb.DevRoles[1], qt.Equals, superblock.RoleFaulty, qt.Commentf("the capture marks vdb's number faulty"))
}
