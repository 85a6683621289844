package md

import (
	"errors"
	"testing"
	"time"

	qt "github.com/frankban/quicktest"

	"github.com/go-mdraid/mdraid/sysfs"
)

var recordTime = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

func TestNewRecordFromFixtures(t *testing.T) {
	c := qt.New(t)
	a := fixtureArray(t, "boot-mirror")
	r, err := NewRecord(a, recordTime)
	c.Assert(err, qt.IsNil)
	c.Assert(r.UUID, qt.Equals, a.UUID)
	c.Assert(r.Name, qt.Equals, "boot")
	c.Assert(r.Metadata, qt.Equals, "1.0")
	c.Assert(r.Level, qt.Equals, "raid1")
	c.Assert(r.RaidDisks, qt.Equals, 2)
	c.Assert(r.Slots, qt.HasLen, 2)
	for i, s := range r.Slots {
		c.Check(s.Slot, qt.Equals, i)
		c.Check(s.ByPath, qt.Equals, []string{"pci-0000:00:10.0", "pci-0000:00:11.0"}[i])
		c.Check(s.Serial, qt.Equals, []string{"mdtest-0", "mdtest-1"}[i])
		c.Check(s.DeviceUUID, qt.Equals, a.Slots[i].Member.DeviceUUID)
		c.Check(s.DeviceUUID, qt.Not(qt.Equals), "")
		c.Check(s.LastHealthy, qt.Equals, recordTime)
	}
	c.Assert(r.validate(), qt.IsNil)

	// Every capture that is not fully healthy, or has no redundancy, is
	// refused with a reason.
	for _, tt := range []struct{ name, reason string }{
		{"raid1-degraded-missing", "it is degraded"},
		{"raid1-failed", "it is degraded"},
		{"raid1-recovering", "it is degraded"},
		{"raid5-degraded", "it is degraded"},
		{"raid5-inactive", "it is inactive"},
		{"raid0", `level "raid0" has no redundancy to heal`},
		{"linear", `level "linear" has no redundancy to heal`},
	} {
		c.Run(tt.name, func(c *qt.C) {
			_, err := NewRecord(fixtureArray(c, tt.name), recordTime)
			c.Assert(err, qt.ErrorIs, errNotRecordable)
			var ne *notRecordableError
			c.Assert(errors.As(err, &ne), qt.IsTrue)
			c.Assert(ne.Reason, qt.Equals, tt.reason)
		})
	}
	for _, name := range []string{"raid1-v0.90", "raid1-v1.1", "raid1-v1.2", "raid1-bitmap", "raid5", "raid6", "raid10"} {
		c.Run(name, func(c *qt.C) {
			r, err := NewRecord(fixtureArray(c, name), recordTime)
			c.Assert(err, qt.IsNil)
			c.Assert(r.validate(), qt.IsNil)
		})
	}
}

// healthyArray is a synthetic healthy raid1 with n members in ports
// pci-0000:00:1X.0.
func healthyArray(n int) Array {
	a := Array{
		Device: "md127", Path: "/dev/md127", UUID: "0b8e5f0c-3c1b-4f7e-9e0a-2d1f3c4b5a69",
		Name: "boot", Metadata: "1.0", Level: "raid1", RaidDisks: n,
		ComponentBytes: 32 << 20, State: "clean",
		Availability: Online, Redundancy: Full, Activity: Activity{Kind: sysfs.ActionIdle},
		Spares: []Member{}, Faulty: []Member{},
	}
	for i := range n {
		dev := string(rune('a' + i))
		a.Slots = append(a.Slots, Slot{Slot: i, State: SlotActive, Member: &Member{
			Device: "vd" + dev, Path: "/dev/vd" + dev, Slot: i, Flags: sysfs.MemberState{"in_sync"},
			ByPath: byPathOf(i), Serial: "mdtest-" + string(rune('0'+i)),
			DeviceUUID: "00000000-0000-4000-8000-00000000000" + string(rune('0'+i)),
			SizeBytes:  64 << 20,
		}})
	}
	return a
}

func byPathOf(slot int) string { return "pci-0000:00:1" + string(rune('0'+slot)) + ".0" }

func TestNewRecordRefusals(t *testing.T) {
	tests := []struct {
		name   string
		mod    func(a *Array)
		reason string
	}{
		{"no uuid", func(a *Array) { a.UUID = "" }, "its UUID is unknown"},
		{"external", func(a *Array) { a.Metadata = "external:/md127/0" }, `metadata "external:/md127/0" is not native md metadata`},
		{"failed", func(a *Array) { a.Availability = Failed }, "it is failed"},
		{"degraded count", func(a *Array) { a.Degraded = 1 }, "the kernel counts 1 degraded slot(s)"},
		{"reshape", func(a *Array) { a.Activity.Kind = sysfs.ActionReshape }, "it is reshaping"},
		{"short slots", func(a *Array) { a.Slots = a.Slots[:1] }, "it reports 1 slots for raid_disks 2"},
		{"errors", func(a *Array) { a.Errors = []string{"degraded: EIO"} }, "its status is incomplete: degraded: EIO"},
		{"rebuilding slot", func(a *Array) { a.Slots[1].State = SlotRebuilding }, "slot 1 is rebuilding"},
		{"member error", func(a *Array) { a.Slots[0].Member.Error = "superblock: EIO" }, "member vda of slot 0: superblock: EIO"},
		{"member without port (pulled, md has not noticed yet)", func(a *Array) { a.Slots[1].Member.ByPath = "" },
			"member vdb of slot 1 has no by-path identity (gone, or on a bus without one)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := qt.New(t)
			a := healthyArray(2)
			tt.mod(&a)
			_, err := NewRecord(a, recordTime)
			c.Assert(err, qt.ErrorIs, errNotRecordable)
			c.Assert(err.(*notRecordableError).Reason, qt.Equals, tt.reason)
		})
	}
	// Read-only but complete is healthy enough.
	a := healthyArray(2)
	a.Availability = ReadOnly
	_, err := NewRecord(a, recordTime)
	qt.Assert(t, err, qt.IsNil)
}

func TestRecordsPut(t *testing.T) {
	c := qt.New(t)
	var rs Records
	r, err := NewRecord(healthyArray(2), recordTime)
	c.Assert(err, qt.IsNil)
	c.Assert(rs.Put(r), qt.IsTrue)
	// The same disks later: a refresh, not a change.
	later, err := NewRecord(healthyArray(2), recordTime.Add(time.Hour))
	c.Assert(err, qt.IsNil)
	c.Assert(rs.Put(later), qt.IsFalse)
	got, ok := rs.find(r.UUID)
	c.Assert(ok, qt.IsTrue)
	c.Assert(got.Slots[0].LastHealthy, qt.Equals, recordTime.Add(time.Hour))
	// A new disk in slot 1: a change.
	a := healthyArray(2)
	a.Slots[1].Member.Serial = "new-disk"
	moved, err := NewRecord(a, recordTime)
	c.Assert(err, qt.IsNil)
	c.Assert(rs.Put(moved), qt.IsTrue)
	// Another array sorts by UUID.
	b := healthyArray(3)
	b.UUID = "00000000-1111-2222-3333-444444444444"
	rb, err := NewRecord(b, recordTime)
	c.Assert(err, qt.IsNil)
	c.Assert(rs.Put(rb), qt.IsTrue)
	c.Assert(rs.Arrays, qt.HasLen, 2)
	c.Assert(rs.Arrays[0].UUID, qt.Equals, b.UUID)
	_, ok = rs.find("nope")
	c.Assert(ok, qt.IsFalse)
}

// TestRecordCarriesHomehost: NewRecord keeps the homehost and sameSlots
// sees a change of it (md/store's TestRecordCarriesHomehost: the file
// round-trips it).
func TestRecordCarriesHomehost(t *testing.T) {
	c := qt.New(t)
	a := healthyArray(2)
	a.Homehost = "talos"
	rec, err := NewRecord(a, recordTime)
	c.Assert(err, qt.IsNil)
	c.Assert(rec.Homehost, qt.Equals, "talos")
	other := rec
	other.Homehost = "elsewhere"
	c.Assert(rec.sameSlots(other), qt.IsFalse)
}
