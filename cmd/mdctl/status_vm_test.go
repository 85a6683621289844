//go:build vmtest

package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	qt "github.com/frankban/quicktest"

	"github.com/go-mdraid/mdraid/internal/mdadmtext"
	"github.com/go-mdraid/mdraid/internal/vmtest/guest"
	"github.com/go-mdraid/mdraid/md"
)

// statusCase makes one array on the real kernel; after shapes its state.
type statusCase struct {
	name  string
	disks int
	args  []string
	after func(c *qt.C, dev, md string, disks []guest.Disk)
	want  md.Availability
}

var statusCases = []statusCase{
	{name: "boot-mirror", disks: 2, want: md.Online,
		args: []string{"--level=1", "--metadata=1.0", "--name=boot", "--homehost=talos", "--raid-devices=2"}},
	{name: "raid1-0.90", disks: 2, want: md.Online, args: []string{"--level=1", "--metadata=0.90", "--raid-devices=2"}},
	{name: "raid1-1.1", disks: 2, want: md.Online, args: []string{"--level=1", "--metadata=1.1", "--raid-devices=2"}},
	{name: "raid1-bitmap", disks: 2, want: md.Online, args: []string{"--level=1", "--bitmap=internal", "--raid-devices=2"}},
	{name: "raid1-missing", disks: 1, want: md.Degraded, args: []string{"--level=1", "--raid-devices=2", "missing"}},
	{name: "raid1-failed", disks: 2, want: md.Degraded, args: []string{"--level=1", "--raid-devices=2"},
		after: func(c *qt.C, dev, _ string, d []guest.Disk) { guest.Mdadm(c, dev, "--fail", d[1].Path) }},
	{name: "raid1-removed-spare", disks: 3, want: md.Degraded, args: []string{"--level=1", "--raid-devices=3"},
		after: func(c *qt.C, dev, name string, d []guest.Disk) {
			// Fail and remove one of the three members, then freeze
			// recovery and add a fourth disk, which stays a spare.
			guest.Mdadm(c, dev, "--fail", d[2].Path)
			guest.Mdadm(c, dev, "--remove", d[2].Path)
			guest.WriteAttr(c, name, "sync_action", "frozen")
			all, err := guest.Disks()
			c.Assert(err, qt.IsNil)
			c.Assert(len(all) > 3, qt.IsTrue)
			guest.Mdadm(c, dev, "--add", all[3].Path)
		}},
	{name: "raid5", disks: 4, want: md.Online, args: []string{"--level=5", "--raid-devices=4"}},
	{name: "raid5-degraded", disks: 3, want: md.Degraded, args: []string{"--level=5", "--raid-devices=4", "missing"}},
	{name: "raid6", disks: 4, want: md.Online, args: []string{"--level=6", "--raid-devices=4"}},
	{name: "raid10", disks: 4, want: md.Online, args: []string{"--level=10", "--raid-devices=4"}},
	{name: "raid0", disks: 2, want: md.Online, args: []string{"--level=0", "--raid-devices=2"}},
	{name: "linear", disks: 2, want: md.Online, args: []string{"--level=linear", "--raid-devices=2"}},
}

// TestVMStatusAgreesWithMdadm runs `mdctl status --json` on each kind of
// array on the real kernel and compares it with mdadm --detail there:
// state, raid devices, device counts, and each member's slot and role;
// and the exit code with what mdadm --detail --test returns.
func TestVMStatusAgreesWithMdadm(t *testing.T) {
	for _, tt := range statusCases {
		t.Run(tt.name, func(t *testing.T) {
			guest.RequireLevel(t, tt.args...)
			c := qt.New(t)
			disks := guest.ScratchDisks(t, tt.disks)
			dev := "/dev/md/s" + strings.ReplaceAll(tt.name, ".", "")
			args := append([]string{"--create", dev, "--run", "--assume-clean"}, tt.args...)
			for _, d := range disks {
				args = append(args, d.Path)
			}
			guest.Mdadm(c, args...)
			name := guest.ArrayName(c, dev)
			if tt.after != nil {
				tt.after(c, dev, name, disks)
			}
			out, stderr, code := mdctl(t, "status", "--json", dev)
			var r md.Report
			c.Assert(json.Unmarshal([]byte(out), &r), qt.IsNil, qt.Commentf("stderr: %s", stderr))
			c.Assert(r.Arrays, qt.HasLen, 1)
			a := r.Arrays[0]

			d := mdadmtext.ParseDetail(guest.Mdadm(c, "--detail", dev))
			_, testErr := guest.RunMdadm("--detail", "--test", dev)
			c.Check(code, qt.Equals, d.TestExit(), qt.Commentf("mdadm --detail --test: %v", testErr))
			c.Check(string(a.Availability), qt.Equals, d.Health(), qt.Commentf("mdadm State %q", d.Fields["State"]))
			c.Check(a.Availability, qt.Equals, tt.want)
			c.Check(a.RaidDisks, qt.Equals, d.Int("Raid Devices"))
			c.Check(a.Counts.Active, qt.Equals, d.Int("Active Devices"))
			c.Check(a.Counts.Working, qt.Equals, d.Int("Working Devices"))
			c.Check(a.Counts.Failed, qt.Equals, d.Int("Failed Devices"))
			c.Check(a.Counts.Spare, qt.Equals, d.Int("Spare Devices"))
			c.Check(strings.ReplaceAll(a.UUID, "-", ""), qt.Equals, d.UUID())
			for _, row := range d.Rows {
				if row.Dev == "" { // removed: the slot must show missing
					var n int
					fmt.Sscan(row.Slot, &n)
					c.Check(a.Slots[n].State, qt.Equals, md.SlotMissing, qt.Commentf("slot %d", n))
					continue
				}
				m, where := a.Find(row.Dev)
				if !c.Check(m, qt.Not(qt.IsNil), qt.Commentf("member %s (%s)", row.Dev, row.State)) {
					continue
				}
				switch {
				case strings.HasPrefix(row.State, "active sync"):
					c.Check(where, qt.Equals, "slot")
					c.Check(fmt.Sprint(m.Slot), qt.Equals, row.Slot)
				case row.State == "spare":
					c.Check(where, qt.Equals, "spare")
				case strings.HasPrefix(row.State, "faulty"):
					c.Check(where == "faulty" || where == "slot", qt.IsTrue)
				}
				c.Check(m.ByPath, qt.Matches, `pci-0000:00:1[0-9a-f]\.0`)
				c.Check(m.Error, qt.Equals, "")
			}
			guest.Mdadm(c, "--stop", dev)
		})
	}
}
