package md

import (
	"time"

	"github.com/go-mdraid/mdraid/sysfs"
)

var t0 = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

// report wraps arrays in a Report.
func report(arrays ...Array) *Report {
	return &Report{Version: SchemaVersion, Time: t0, Arrays: arrays}
}

// Synthetic states of one 2-disk raid1 (md127, vda in slot 0, vdb in slot
// 1) as a member fails, is replaced by vdc and recovers.
func mirrorHealthy() Array { return healthyArray(2) }

func mirrorFailed() Array { // vdb faulty, still in its slot
	a := healthyArray(2)
	a.Availability, a.Redundancy = Degraded, NoRedundancy
	a.Slots[1].State = SlotFaulty
	a.Slots[1].Member.Flags = sysfs.MemberState{"faulty"}
	return a
}

func mirrorUnslotted() Array { // vdb faulty, out of its slot
	a := mirrorFailed()
	m := *a.Slots[1].Member
	m.Slot = -1
	a.Faulty = []Member{m}
	a.Slots[1] = Slot{Slot: 1, State: SlotMissing}
	a.Degraded = 1
	return a
}

func mirrorMissing() Array { // vdb removed
	a := mirrorUnslotted()
	a.Faulty = []Member{}
	return a
}

func mirrorRecovering(pct float64) Array { // vdc rebuilding into slot 1
	a := mirrorMissing()
	a.Slots[1] = Slot{Slot: 1, State: SlotRebuilding, Member: &Member{
		Device: "vdc", Path: "/dev/vdc", Slot: 1, Flags: sysfs.MemberState{"spare"}, ByPath: byPathOf(1)}}
	a.Activity = Activity{Kind: sysfs.ActionRecover, Percent: pct, DoneSectors: uint64(pct * 1000), TotalSectors: 100000}
	return a
}

func withSpare(a Array, flags ...sysfs.MemberFlag) Array {
	a.Spares = append(a.Spares, Member{Device: "vdd", Path: "/dev/vdd", Slot: -1, Flags: flags})
	return a
}

func withActivity(a Array, k sysfs.SyncAction, pct float64) Array {
	a.Activity = Activity{Kind: k, Percent: pct, DoneSectors: uint64(pct * 1000), TotalSectors: 100000}
	return a
}

func withAvail(a Array, av Availability) Array {
	a.Availability = av
	return a
}

func withState(a Array, s string) Array {
	a.State = s
	return a
}
