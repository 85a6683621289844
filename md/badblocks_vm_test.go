//go:build vmtest

package md

import (
	"context"
	"testing"

	qt "github.com/frankban/quicktest"

	"github.com/go-mdraid/mdraid/internal/vmtest/guest"
)

// TestVMBadBlocksNotYetRecorded: the kernel shows "faulty" for a member
// that has not failed while it has bad blocks not yet written to its log
// (md.c state_show). Writing to dev-*/unacknowledged_bad_blocks makes
// such bad blocks, as a read error being repaired does, and nothing
// writes the superblock of an idle array to acknowledge them. On the real
// kernel: the in-sync member reads "faulty,in_sync,blocked" and the spare
// "faulty,blocked,spare"; status keeps the array healthy, the member in
// its slot and the spare a spare; Fail would still fail the member (it
// is not failed already), Remove refuses it, and a replace that names it
// without a hot replace is refused.
func TestVMBadBlocksNotYetRecorded(t *testing.T) {
	c := qt.New(t)
	disks := guest.ScratchDisks(t, 4)
	ctx := context.Background()
	md := createArray(c, "/dev/md/ubb", []string{"--level=1", "--metadata=1.2", "--raid-devices=2"}, disks[:2])
	defer guest.Mdadm(c, "--stop", "/dev/"+md)
	guest.Mdadm(c, "/dev/"+md, "--add", disks[2].Path)
	active, spare := disks[1].Name, disks[2].Name

	for _, name := range []string{active, spare} {
		guest.WriteAttr(c, md, "dev-"+name+"/unacknowledged_bad_blocks", "1024 8")
	}
	c.Assert(guest.ReadAttr(c, md, "dev-"+active+"/state"), qt.Equals, "faulty,in_sync,blocked")
	c.Assert(guest.ReadAttr(c, md, "dev-"+spare+"/state"), qt.Equals, "faulty,blocked,spare")

	m := vmManager(t)
	a, err := m.Status(ctx, md)
	c.Assert(err, qt.IsNil)
	c.Check(a.Availability, qt.Equals, Online)
	c.Check(a.Degraded, qt.Equals, 0)
	c.Check(a.Counts.Failed, qt.Equals, 0)
	c.Check(a.Faulty, qt.HasLen, 0)
	c.Assert(a.Slots, qt.HasLen, 2)
	c.Check(a.Slots[1].State, qt.Equals, SlotActive)
	c.Assert(a.Slots[1].Member, qt.Not(qt.IsNil))
	c.Check(a.Slots[1].Member.Device, qt.Equals, active)
	c.Assert(a.Spares, qt.HasLen, 1)
	c.Check(a.Spares[0].Device, qt.Equals, spare)

	before := hashDisk(c, disks[3].Path)
	ch := &Change{DryRun: true}
	c.Assert(m.Fail(ctx, md, active, ch), qt.IsNil)
	c.Check(ch.Write, qt.Matches, "SET_DISK_FAULTY .*")
	c.Check(m.Remove(ctx, md, active), qt.ErrorIs, errMemberActive)
	_, err = m.PlanReplace(ctx, ReplaceRequest{Array: md, Member: active, With: disks[3].Path})
	c.Check(err, qt.ErrorIs, ErrRefused)
	c.Check(err, qt.ErrorMatches, `(?s).*not faulty.*`)

	// Nothing was changed by all that: the member is still in its slot,
	// and the candidate is as it was.
	c.Check(guest.ReadAttr(c, md, "dev-"+active+"/state"), qt.Equals, "faulty,in_sync,blocked")
	c.Check(guest.ReadAttr(c, md, "dev-"+active+"/slot"), qt.Equals, "1")
	c.Check(hashDisk(c, disks[3].Path), qt.Equals, before)
}
