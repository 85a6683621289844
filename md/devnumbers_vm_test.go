//go:build vmtest

package md

import (
	"context"
	"testing"
	"time"

	qt "github.com/frankban/quicktest"

	"github.com/go-mdraid/mdraid/internal/vmtest/guest"
)

// TestVMReplace090FaultyBound (issue 10 item 3): in a 0.90 RAID1 whose
// failed member stays bound, the kernel has renumbered the faulty member
// to raid_disks (2) in memory while its superblock still says 1. A
// replace with a blank disk must pick a number the kernel does not hold
// and succeed, not loop on ADD_NEW_DISK's EBUSY.
func TestVMReplace090FaultyBound(t *testing.T) {
	c := qt.New(t)
	disks := guest.ScratchDisks(t, 3)
	dev := "/dev/md/v090bound"
	md := createArray(c, dev, []string{"--level=1", "--metadata=0.90", "--raid-devices=2"}, disks[:2])
	mdDev := "/dev/" + md
	defer guest.Mdadm(c, "--stop", mdDev)
	sum := writeData(c, mdDev)
	m := vmManager(t)
	ctx := context.Background()

	c.Assert(m.Fail(ctx, md, disks[1].Path), qt.IsNil)
	// The faulty member stays bound: no remove.
	guest.WaitAttr(c, md, "dev-"+disks[1].Name+"/slot", "none", 10*time.Second)

	p, err := m.PlanReplace(ctx, ReplaceRequest{Array: md, With: disks[2].Path})
	c.Assert(err, qt.IsNil)
	c.Check(p.Remove, qt.IsNil)
	c.Check(p.DevNumber >= 3, qt.IsTrue, qt.Commentf("dev_number %d: the faulty member holds 2 in the kernel", p.DevNumber))
	res, err := m.ExecuteReplace(ctx, p)
	c.Assert(err, qt.IsNil)
	c.Check(res.Slot, qt.Equals, 1)
	a, err := m.WaitReplace(ctx, WaitRequest{Array: md, Member: disks[2].Name, Interval: 200 * time.Millisecond})
	c.Assert(err, qt.IsNil)
	c.Check(a.Redundancy, qt.Equals, Full)
	c.Assert(m.Fail(ctx, md, disks[0].Name), qt.IsNil)
	c.Check(readData(c, mdDev), qt.Equals, sum)
}
