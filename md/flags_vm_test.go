//go:build vmtest

package md

import (
	"context"
	"strings"
	"testing"

	qt "github.com/frankban/quicktest"

	"github.com/go-mdraid/mdraid/internal/vmtest/guest"
	"github.com/go-mdraid/mdraid/superblock"
	"github.com/go-mdraid/mdraid/sysfs"
)

// devFlags reads the devflags of a member's superblock.
func devFlags(c *qt.C, path string) superblock.DevFlags {
	return bestSuperblock(c, path).DevFlags
}

// TestVMSetMemberFlag (issue 33) on the real kernel: write-mostly and
// failfast set on a mirror's member show in its state at once, are in
// its superblock's devflags once the array is stopped, and are there
// again after it is assembled; cleared, they are gone from both. A raid5
// member's write-mostly is refused: not in its state, not in its
// superblock.
func TestVMSetMemberFlag(t *testing.T) {
	c := qt.New(t)
	ctx := context.Background()
	disks := guest.ScratchDisks(t, 5)
	md := createArray(c, "/dev/md/fl", []string{"--level=1", "--name=fl", "--raid-devices=2"}, disks[:2])
	m := vmManager(t)
	state := func(array string) string {
		return strings.TrimSpace(guest.ReadAttr(c, array, "dev-"+disks[1].Name+"/state"))
	}
	restart := func() string {
		guest.Mdadm(c, "--stop", "/dev/md/fl")
		flags := devFlags(c, disks[1].Path)
		guest.Mdadm(c, "--assemble", "/dev/md/fl", disks[0].Path, disks[1].Path)
		c.Logf("devflags %v", flags)
		return flags.String()
	}
	var ch Change
	c.Assert(m.SetMemberFlag(ctx, md, disks[1].Name, sysfs.FlagWriteMostly, true, &ch), qt.IsNil)
	c.Check(ch.Write, qt.Equals, "dev-"+disks[1].Name+"/state=writemostly")
	c.Assert(m.SetMemberFlag(ctx, md, disks[1].Path, sysfs.FlagFailFast, true), qt.IsNil)
	c.Check(state(md), qt.Matches, `.*write_mostly.*`)
	c.Check(state(md), qt.Matches, `.*failfast.*`)
	c.Check(restart(), qt.Equals, "write-mostly failfast")
	md = guest.ArrayName(c, "/dev/md/fl")
	c.Check(state(md), qt.Matches, `.*write_mostly.*failfast.*|.*failfast.*write_mostly.*`)

	c.Assert(m.SetMemberFlag(ctx, md, disks[1].Name, sysfs.FlagWriteMostly, false), qt.IsNil)
	c.Assert(m.SetMemberFlag(ctx, md, disks[1].Name, sysfs.FlagFailFast, false), qt.IsNil)
	c.Check(state(md), qt.Not(qt.Matches), `.*(write_mostly|failfast).*`)
	c.Check(restart(), qt.Equals, "")

	r5 := createArray(c, "/dev/md/r5fl", []string{"--level=5", "--name=r5fl", "--raid-devices=3"}, disks[2:5])
	err := m.SetMemberFlag(ctx, r5, disks[2].Name, sysfs.FlagWriteMostly, true)
	c.Check(err, qt.ErrorIs, ErrRefused)
	c.Check(strings.TrimSpace(guest.ReadAttr(c, r5, "dev-"+disks[2].Name+"/state")), qt.Equals, "in_sync")
	guest.Mdadm(c, "--stop", "/dev/md/r5fl")
	c.Check(devFlags(c, disks[2].Path).String(), qt.Equals, "")
}
