//go:build vmtest

package md

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	qt "github.com/frankban/quicktest"

	"github.com/go-mdraid/mdraid/internal/vmtest/guest"
)

// checkAgainstDetail compares our status of the array at devPath with
// mdadm --detail on the live kernel.
func checkAgainstDetail(c *qt.C, m *Manager, devPath string) Array {
	kname := guest.ArrayName(c, devPath)
	a, err := m.Status(context.Background(), kname)
	c.Assert(err, qt.IsNil)
	c.Check(a.Errors, qt.HasLen, 0)
	d := parseDetail(guest.Mdadm(c, "--detail", devPath))
	c.Check(a.Availability, qt.Equals, expectAvailability(d.fields["State"]), qt.Commentf("mdadm State %q", d.fields["State"]))
	if a.Availability == Inactive {
		return a
	}
	c.Check(a.RaidDisks, qt.Equals, atoiField(c, d, "Raid Devices"))
	c.Check(a.Counts.Active, qt.Equals, atoiField(c, d, "Active Devices"))
	c.Check(a.Counts.Working, qt.Equals, atoiField(c, d, "Working Devices"))
	c.Check(a.Counts.Failed, qt.Equals, atoiField(c, d, "Failed Devices"))
	c.Check(a.Counts.Spare, qt.Equals, atoiField(c, d, "Spare Devices"))
	for _, row := range d.rows {
		if row.dev == "" {
			continue
		}
		mem, where := findMember(&a, row.dev)
		if !c.Check(mem, qt.Not(qt.IsNil), qt.Commentf("member %s", row.dev)) {
			continue
		}
		if strings.HasPrefix(row.state, "active sync") {
			c.Check(where, qt.Equals, "slot")
			c.Check(fmt.Sprint(mem.Slot), qt.Equals, row.slot)
		}
		if row.state == "spare" {
			c.Check(where, qt.Equals, "spare")
		}
		c.Check(mem.ByPath, qt.Matches, `pci-0000:00:1[0-9a-f]\.0`)
	}
	return a
}

// TestVMDiscoverAgreesWithMdadm creates arrays of each kind on the real
// kernel and compares Discover with mdadm --detail.
func TestVMDiscoverAgreesWithMdadm(t *testing.T) {
	cases := []struct {
		name string
		args []string
		disk int
		want Availability
		prep func(c *qt.C, dev string, disks []guest.Disk)
	}{
		{name: "raid1-1.0-boot", disk: 2, want: Online,
			args: []string{"--level=1", "--metadata=1.0", "--name=boot", "--homehost=talos", "--raid-devices=2"}},
		{name: "raid1-0.90", disk: 2, want: Online,
			args: []string{"--level=1", "--metadata=0.90", "--raid-devices=2"}},
		{name: "raid5-degraded", disk: 3, want: Degraded,
			args: []string{"--level=5", "--raid-devices=4", "missing"}},
		{name: "raid10", disk: 4, want: Online,
			args: []string{"--level=10", "--raid-devices=4"}},
		{name: "raid1-failed-member", disk: 2, want: Degraded,
			args: []string{"--level=1", "--raid-devices=2"},
			prep: func(c *qt.C, dev string, disks []guest.Disk) {
				guest.Mdadm(c, dev, "--fail", disks[1].Path)
			}},
		{name: "raid0", disk: 2, want: Online,
			args: []string{"--level=0", "--raid-devices=2"}},
	}
	m, err := Open(nil)
	qt.Assert(t, err, qt.IsNil)
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			c := qt.New(t)
			disks := guest.ScratchDisks(t, tt.disk)
			dev := "/dev/md/" + strings.ReplaceAll(tt.name, ".", "")
			args := append([]string{"--create", dev, "--run", "--assume-clean"}, tt.args...)
			for _, d := range disks {
				args = append(args, d.Path)
			}
			guest.Mdadm(c, args...)
			if tt.prep != nil {
				tt.prep(c, dev, disks)
			}
			a := checkAgainstDetail(c, m, dev)
			c.Check(a.Availability, qt.Equals, tt.want)
			if tt.name == "raid1-1.0-boot" {
				c.Check(a.Name, qt.Equals, "boot")
				c.Check(a.Homehost, qt.Equals, "talos")
				c.Check(a.Metadata, qt.Equals, "1.0")
			}
			guest.Mdadm(c, "--stop", dev)
		})
	}
}

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
	for time.Now().Before(deadline) && len(seen) < 3 {
		a, err := m.Status(context.Background(), md)
		c.Assert(err, qt.IsNil)
		last = a
		if a.Activity.Kind == Recover && a.Activity.TotalSectors > 0 {
			seen[a.Activity.DoneSectors] = true
			c.Check(a.Availability, qt.Equals, Degraded)
			c.Check(a.Slots[1].State, qt.Equals, SlotRebuilding)
			c.Check(a.Slots[1].Member.Device, qt.Equals, disks[1].Name)
		}
		time.Sleep(500 * time.Millisecond)
	}
	c.Assert(len(seen) >= 3, qt.IsTrue, qt.Commentf("recovery progress seen: %v; last status %+v", seen, last.Activity))
	guest.WriteAttr(c, md, "sync_speed_max", "system")
	guest.WaitSync(c, md)
	a, err := m.Status(context.Background(), md)
	c.Assert(err, qt.IsNil)
	c.Check(a.Availability, qt.Equals, Online)
	c.Check(a.Redundancy, qt.Equals, Full)
	guest.Mdadm(c, "--stop", dev)
}
