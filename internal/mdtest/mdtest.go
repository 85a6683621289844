// Package mdtest holds test helpers for the packages built on md's
// exported API (md/store, md/watch): synthetic arrays and their slot
// records, built as md's own tests build them. Package md's tests keep
// their own copies: they cannot import a package that imports md.
package mdtest

import (
	"testing"
	"time"

	"github.com/go-mdraid/mdraid/md"
	"github.com/go-mdraid/mdraid/sysfs"
)

// RecordTime is the time stamped on the records RecordsOf makes.
var RecordTime = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

// HealthyArray is a synthetic healthy raid1 md127 with n members vda,
// vdb, ... in ports ByPathOf(0), ByPathOf(1), ...
func HealthyArray(n int) md.Array {
	a := md.Array{
		Device: "md127", Path: "/dev/md127", UUID: "0b8e5f0c-3c1b-4f7e-9e0a-2d1f3c4b5a69",
		Name: "boot", Metadata: "1.0", Level: "raid1", RaidDisks: n,
		ComponentBytes: 32 << 20, State: "clean",
		Availability: md.Online, Redundancy: md.Full, Activity: md.Activity{Kind: sysfs.ActionIdle},
		Spares: []md.Member{}, Faulty: []md.Member{},
	}
	for i := range n {
		dev := string(rune('a' + i))
		a.Slots = append(a.Slots, md.Slot{Slot: i, State: md.SlotActive, Member: &md.Member{
			Device: "vd" + dev, Path: "/dev/vd" + dev, Slot: i, Flags: sysfs.MemberState{"in_sync"},
			ByPath: ByPathOf(i), Serial: "mdtest-" + string(rune('0'+i)),
			DeviceUUID: "00000000-0000-4000-8000-00000000000" + string(rune('0'+i)),
			SizeBytes:  64 << 20,
		}})
	}
	return a
}

// ByPathOf is the by-path identity HealthyArray gives slot's member:
// pci-0000:00:1X.0 with X the slot (0 to 9).
func ByPathOf(slot int) string { return "pci-0000:00:1" + string(rune('0'+slot)) + ".0" }

// RecordsOf records the given healthy arrays at RecordTime; a failing
// md.NewRecord fails the test.
func RecordsOf(t testing.TB, arrays ...md.Array) *md.Records {
	t.Helper()
	rs := &md.Records{}
	for _, a := range arrays {
		r, err := md.NewRecord(a, RecordTime)
		if err != nil {
			t.Fatal(err)
		}
		rs.Put(r)
	}
	return rs
}
