//go:build vmtest

package md

import (
	"context"
	"testing"
	"time"

	qt "github.com/frankban/quicktest"

	"github.com/go-mdraid/mdraid/internal/vmtest/guest"
)

// TestVMReplaceKilledAfterFreeze (issue 10 item 7): a replace killed
// right after it froze recovery leaves the array frozen. Status says who
// froze it and what undoes it, the disk is untouched, and the rerun
// recognises the freeze as its own and converges: the disk rebuilds into
// the slot, recovery is unfrozen and the data verifies.
func TestVMReplaceKilledAfterFreeze(t *testing.T) {
	c := qt.New(t)
	disks := guest.ScratchDisks(t, 3)
	ctx := context.Background()
	md := createArray(c, "/dev/md/frz", []string{"--level=1", "--metadata=1.2", "--bitmap=internal", "--raid-devices=2"}, disks[:2])
	mdDev := "/dev/" + md
	defer guest.Mdadm(c, "--stop", mdDev)
	sum := writeData(c, mdDev)
	m := vmManager(t)
	c.Assert(m.Fail(ctx, md, disks[1].Name), qt.IsNil)
	c.Assert(m.Remove(ctx, md, disks[1].Name), qt.IsNil)
	blank := readDiskState(c, disks[2])

	killedReplace(c, md, disks[2].Path, m.ops.runDir, StepFreeze)
	c.Assert(guest.ReadAttr(c, md, "sync_action"), qt.Equals, "frozen")
	c.Check(changedOutside(c, blank, readDiskState(c, disks[2]), nil), qt.HasLen, 0)

	a, err := m.Status(ctx, md)
	c.Assert(err, qt.IsNil)
	c.Assert(a.Freeze, qt.Not(qt.IsNil))
	c.Check(a.Freeze.ByReplace, qt.IsTrue)
	c.Check(a.Freeze.Stale, qt.IsTrue)
	t.Logf("status hint: %s", a.Freeze.Hint)

	res, err := m.Replace(ctx, ReplaceRequest{Array: md, With: disks[2].Path})
	c.Assert(err, qt.IsNil)
	c.Check(res.Slot, qt.Equals, 1)
	for _, st := range res.Steps {
		c.Check(st.Kind, qt.Not(qt.Equals), StepFreeze)
	}
	a, err = m.WaitReplace(ctx, WaitRequest{Array: md, Member: disks[2].Name, Interval: 200 * time.Millisecond})
	c.Assert(err, qt.IsNil)
	c.Check(a.Availability, qt.Equals, Online)
	c.Check(a.Freeze, qt.IsNil)
	c.Check(guest.ReadAttr(c, md, "sync_action"), qt.Equals, "idle")
	rec, err := readFreeze(m.ops.runDir, a.UUID)
	c.Assert(err, qt.IsNil)
	c.Check(rec, qt.IsNil)
	c.Assert(m.Fail(ctx, md, disks[0].Name), qt.IsNil)
	c.Check(readData(c, mdDev), qt.Equals, sum)
}
