//go:build vmtest

package md

import (
	"context"
	"testing"
	"time"

	qt "github.com/frankban/quicktest"

	"github.com/go-mdraid/mdraid/internal/vmtest/guest"
	"github.com/go-mdraid/mdraid/sysfs"
)

// TestVMRecoveryProgressMoves follows a throttled recovery: the activity
// must be "recover" and the checkpoint must move.
func TestVMRecoveryProgressMoves(t *testing.T) {
	c := qt.New(t)
	disks := guest.ScratchDisks(t, 2)
	dev := "/dev/md/rec"
	guest.Mdadm(c, "--create", dev, "--run", "--assume-clean", "--level=1", "--raid-devices=2", disks[0].Path, disks[1].Path)
	md := guest.ArrayName(c, dev)
	guest.Mdadm(c, dev, "--fail", disks[1].Path)
	guest.Mdadm(c, dev, "--remove", disks[1].Path)
	guest.Run(c, "mdadm", "--zero-superblock", disks[1].Path)
	guest.WriteAttr(c, md, "sync_speed_max", "2000")
	guest.Mdadm(c, dev, "--add", disks[1].Path)

	m, err := Open(nil)
	c.Assert(err, qt.IsNil)
	seen := map[uint64]bool{}
	deadline := time.Now().Add(90 * time.Second)
	var last Array
	rebuilding := 0
	for time.Now().Before(deadline) && len(seen) < 3 {
		a, err := m.Status(context.Background(), md)
		c.Assert(err, qt.IsNil)
		last = a
		if a.Activity.Kind == sysfs.ActionRecover && a.Activity.TotalSectors > 0 {
			seen[a.Activity.DoneSectors] = true
			c.Check(a.Availability, qt.Equals, Degraded)
			// On 6.12 (seen in this test) sync_action and
			// sync_completed can report the recovery a moment before
			// the spare is given its slot: then the disk is still a
			// spare and the slot is missing.
			if sl := a.Slots[1]; sl.Member != nil {
				c.Check(sl.State, qt.Equals, SlotRebuilding)
				c.Check(sl.Member.Device, qt.Equals, disks[1].Name)
				rebuilding++
			} else {
				c.Check(sl.State, qt.Equals, SlotMissing)
				c.Check(len(a.Spares) == 1 && a.Spares[0].Device == disks[1].Name, qt.IsTrue, qt.Commentf("spares %+v", a.Spares))
			}
		}
		time.Sleep(500 * time.Millisecond)
	}
	c.Assert(len(seen) >= 3, qt.IsTrue, qt.Commentf("recovery progress seen: %v; last status %+v", seen, last.Activity))
	c.Check(rebuilding > 0, qt.IsTrue, qt.Commentf("slot 1 was never seen rebuilding"))
	guest.WriteAttr(c, md, "sync_speed_max", "system")
	guest.WaitSync(c, md)
	a, err := m.Status(context.Background(), md)
	c.Assert(err, qt.IsNil)
	c.Check(a.Availability, qt.Equals, Online)
	c.Check(a.Redundancy, qt.Equals, Full)
	guest.Mdadm(c, "--stop", dev)
}
