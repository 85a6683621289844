package store

import (
	"fmt"
	"time"

	"github.com/go-mdraid/mdraid/md"
	"github.com/go-mdraid/mdraid/sysfs"
)

// t0 is a time stamped on test records.
var t0 = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

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
