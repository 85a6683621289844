package watch

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/go-mdraid/mdraid/internal/mdtest"
	"github.com/go-mdraid/mdraid/md"
	capture "github.com/go-mdraid/mdraid/md/mdtest"
	"github.com/go-mdraid/mdraid/sysfs"
)

// t0 is the time stamped on test events.
var t0 = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

// fixtureSystem rebuilds the named real capture with md/mdtest and
// returns a Manager on it with the sysfs root.
func fixtureSystem(t testing.TB, name string) (*md.Manager, string) {
	t.Helper()
	sys := capture.Capture(t, name)
	m, err := md.Open(sys.Config())
	if err != nil {
		t.Fatal(err)
	}
	return m, sys.SysRoot()
}

// fixtureArray returns the one array of the named real capture.
func fixtureArray(t testing.TB, name string) md.Array {
	t.Helper()
	m, _ := fixtureSystem(t, name)
	r, err := m.Discover(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Arrays) != 1 {
		t.Fatalf("%s: %d arrays", name, len(r.Arrays))
	}
	return r.Arrays[0]
}

// report wraps arrays in a Report.
func report(arrays ...md.Array) *md.Report {
	return &md.Report{Version: md.SchemaVersion, Time: t0, Arrays: arrays}
}

// brief renders events compactly for comparison: "Type array member slot
// extra".
func brief(evs []Event) []string {
	out := []string{}
	for _, e := range evs {
		s := string(e.Type) + " " + e.Array
		if e.Member != "" {
			s += " " + e.Member
		}
		if e.Slot != nil {
			s += fmt.Sprintf(" slot=%d", *e.Slot)
		}
		if e.Action != "" {
			s += " " + e.Action
		}
		if e.Percent != nil {
			s += fmt.Sprintf(" %d%%", *e.Percent)
		}
		if e.MismatchSectors != nil {
			s += fmt.Sprintf(" mismatches=%d", *e.MismatchSectors)
		}
		if e.Expected != nil {
			s += fmt.Sprintf(" %d/%d", *e.Spares, *e.Expected)
		}
		out = append(out, s)
	}
	return out
}

// Synthetic states of one 2-disk raid1 (md127, vda in slot 0, vdb in slot
// 1) as a member fails, is replaced by vdc and recovers.
func mirrorHealthy() md.Array { return mdtest.HealthyArray(2) }

func mirrorFailed() md.Array { // vdb faulty, still in its slot
	a := mdtest.HealthyArray(2)
	a.Availability, a.Redundancy = md.Degraded, md.NoRedundancy
	a.Slots[1].State = md.SlotFaulty
	a.Slots[1].Member.Flags = sysfs.MemberState{"faulty"}
	return a
}

func mirrorUnslotted() md.Array { // vdb faulty, out of its slot
	a := mirrorFailed()
	m := *a.Slots[1].Member
	m.Slot = -1
	a.Faulty = []md.Member{m}
	a.Slots[1] = md.Slot{Slot: 1, State: md.SlotMissing}
	a.Degraded = 1
	return a
}

func mirrorMissing() md.Array { // vdb removed
	a := mirrorUnslotted()
	a.Faulty = []md.Member{}
	return a
}

func mirrorRecovering(pct float64) md.Array { // vdc rebuilding into slot 1
	a := mirrorMissing()
	a.Slots[1] = md.Slot{Slot: 1, State: md.SlotRebuilding, Member: &md.Member{
		Device: "vdc", Path: "/dev/vdc", Slot: 1, Flags: sysfs.MemberState{"spare"}, ByPath: mdtest.ByPathOf(1)}}
	a.Activity = md.Activity{Kind: sysfs.ActionRecover, Percent: pct, DoneSectors: uint64(pct * 1000), TotalSectors: 100000}
	return a
}

func mirrorRecovered() md.Array {
	a := mdtest.HealthyArray(2)
	a.Slots[1].Member = &md.Member{Device: "vdc", Path: "/dev/vdc", Slot: 1, Flags: sysfs.MemberState{"in_sync"}, ByPath: mdtest.ByPathOf(1)}
	return a
}

func withSpare(a md.Array, flags ...sysfs.MemberFlag) md.Array {
	a.Spares = append(a.Spares, md.Member{Device: "vdd", Path: "/dev/vdd", Slot: -1, Flags: flags})
	return a
}

func renamed(a md.Array, dev string) md.Array {
	a.Device, a.Path = dev, "/dev/"+dev
	return a
}

func withActivity(a md.Array, k sysfs.SyncAction, pct float64) md.Array {
	a.Activity = md.Activity{Kind: k, Percent: pct, DoneSectors: uint64(pct * 1000), TotalSectors: 100000}
	return a
}

// withMismatch is a with the mismatch_cnt n and the sync thread idle, as
// after a check (or resync) ended.
func withMismatch(a md.Array, n uint64) md.Array {
	a.MismatchSectors = &n
	if a.Activity.Kind == "" {
		a.Activity.Kind = sysfs.ActionIdle
	}
	return a
}

func u64p(v uint64) *uint64 { return &v }

func withAvail(a md.Array, av md.Availability) md.Array {
	a.Availability = av
	return a
}

func withState(a md.Array, s string) md.Array {
	a.State = s
	return a
}

func failRebuilding(a md.Array) md.Array {
	m := *a.Slots[1].Member
	m.Flags, m.Slot = sysfs.MemberState{"faulty"}, -1
	a.Faulty = []md.Member{m}
	a.Slots[1] = md.Slot{Slot: 1, State: md.SlotMissing}
	a.Activity = md.Activity{Kind: sysfs.ActionIdle}
	return a
}
