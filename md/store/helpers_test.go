package store

import (
	"fmt"
	"testing"
	"time"

	"github.com/go-mdraid/mdraid/md"
	"github.com/go-mdraid/mdraid/sysfs"
)

// Times stamped on test records.
var (
	recordTime = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	t0         = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
)

// healthyArray is a synthetic healthy raid1 with n members in ports
// pci-0000:00:1X.0, as md's tests build it.
func healthyArray(n int) md.Array {
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
			ByPath: byPathOf(i), Serial: "mdtest-" + string(rune('0'+i)),
			DeviceUUID: "00000000-0000-4000-8000-00000000000" + string(rune('0'+i)),
			SizeBytes:  64 << 20,
		}})
	}
	return a
}

func byPathOf(slot int) string { return "pci-0000:00:1" + string(rune('0'+slot)) + ".0" }

// hostileArray is a fully healthy two-slot raid1 as md.NewRecord takes
// it, with the disk-chosen strings given.
func hostileArray(name, serial, wwn string) md.Array {
	mem := func(i int, dev string) *md.Member {
		return &md.Member{Device: dev, Path: "/dev/" + dev, ByPath: fmt.Sprintf("pci-0000:00:1%d.0", i),
			Serial: serial, WWN: wwn, Slot: i, Flags: sysfs.MemberState{"in_sync"}, SizeBytes: 64 << 20}
	}
	return md.Array{Device: "md0", Path: "/dev/md0", UUID: "6a1c2f9e-0b7d-4c36-9d0e-51f2a3b4c5d6", Name: name,
		Metadata: "1.2", Level: "raid1", RaidDisks: 2, State: "clean", Availability: md.Online, Redundancy: md.Full,
		Activity: md.Activity{Kind: sysfs.ActionIdle},
		Slots:    []md.Slot{{Slot: 0, State: md.SlotActive, Member: mem(0, "vda")}, {Slot: 1, State: md.SlotActive, Member: mem(1, "vdb")}}}
}

// recordsOf records the given healthy arrays.
func recordsOf(t testing.TB, arrays ...md.Array) *md.Records {
	t.Helper()
	rs := &md.Records{}
	for _, a := range arrays {
		r, err := md.NewRecord(a, recordTime)
		if err != nil {
			t.Fatal(err)
		}
		rs.Put(r)
	}
	return rs
}
