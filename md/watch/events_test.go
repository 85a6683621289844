package watch

import (
	"encoding/json"
	"strings"
	"testing"

	qt "github.com/frankban/quicktest"

	"github.com/go-mdraid/mdraid/md"
	"github.com/go-mdraid/mdraid/sysfs"
)

func TestDiff(t *testing.T) {
	tests := []struct {
		name   string
		prev   *md.Report // nil: the first snapshot
		cur    *md.Report
		spares map[string]int
		want   []string
	}{
		{"start healthy", nil, report(mirrorHealthy()), nil, []string{}},
		{"start degraded", nil, report(mirrorMissing()), nil, []string{"DegradedArray md127"}},
		{"start missing spare", nil, report(mirrorHealthy()), map[string]int{mirrorHealthy().UUID: 1},
			[]string{"SparesMissing md127 0/1"}},
		{"start enough spares", nil, report(withSpare(mirrorHealthy(), "spare")), map[string]int{mirrorHealthy().UUID: 1}, []string{}},
		{"no change", report(mirrorHealthy()), report(mirrorHealthy()), nil, []string{}},
		{"member fails", report(mirrorHealthy()), report(mirrorFailed()), nil,
			[]string{"Fail md127 vdb slot=1", "DegradedArray md127"}},
		{"failed member leaves its slot", report(mirrorFailed()), report(mirrorUnslotted()), nil, []string{}},
		{"fail and unslot in one step", report(mirrorHealthy()), report(mirrorUnslotted()), nil,
			[]string{"Fail md127 vdb slot=1", "DegradedArray md127"}},
		{"faulty member removed", report(mirrorUnslotted()), report(mirrorMissing()), nil,
			[]string{"MemberRemoved md127 vdb"}},
		{"in-sync member vanishes", report(mirrorHealthy()), report(mirrorMissing()), nil,
			[]string{"Fail md127 vdb slot=1", "MemberRemoved md127 vdb slot=1", "DegradedArray md127"}},
		{"replacement added, recovery starts", report(mirrorMissing()), report(mirrorRecovering(0)), nil,
			[]string{"MemberAdded md127 vdc slot=1", "RebuildStarted md127 recover 0%"}},
		{"progress within a step", report(mirrorRecovering(1)), report(mirrorRecovering(19.9)), nil, []string{}},
		{"progress to 20%", report(mirrorRecovering(19.9)), report(mirrorRecovering(20)), nil,
			[]string{"Rebuild20 md127 recover 20%"}},
		{"progress skips steps: the highest only", report(mirrorRecovering(10)), report(mirrorRecovering(65)), nil,
			[]string{"Rebuild60 md127 recover 60%"}},
		{"no Rebuild100", report(mirrorRecovering(85)), report(mirrorRecovering(100)), nil, []string{}},
		{"recovery finishes", report(mirrorRecovering(90)), report(mirrorRecovered()), nil,
			[]string{"SpareActive md127 vdc slot=1", "RebuildFinished md127 recover"}},
		{"recovery seen started late: no step at once", report(mirrorMissing()), report(mirrorRecovering(45)), nil,
			[]string{"MemberAdded md127 vdc slot=1", "RebuildStarted md127 recover 45%"}},
		{"resync turns into check", report(withActivity(mirrorHealthy(), sysfs.ActionResync, 50)), report(withActivity(mirrorHealthy(), sysfs.ActionCheck, 0)), nil,
			[]string{"RebuildFinished md127 resync", "RebuildStarted md127 check 0%", "CheckStarted md127 check 0%"}},
		{"check starts", report(mirrorHealthy()), report(withActivity(mirrorHealthy(), sysfs.ActionCheck, 0)), nil,
			[]string{"RebuildStarted md127 check 0%", "CheckStarted md127 check 0%"}},
		{"resumed repair starts part-way", report(mirrorHealthy()), report(withActivity(mirrorHealthy(), sysfs.ActionRepair, 42)), nil,
			[]string{"RebuildStarted md127 repair 42%", "CheckStarted md127 repair 42%"}},
		{"check progresses: Rebuild steps only", report(withActivity(mirrorHealthy(), sysfs.ActionCheck, 10)), report(withActivity(mirrorHealthy(), sysfs.ActionCheck, 45)), nil,
			[]string{"Rebuild40 md127 check 40%"}},
		{"check finishes with mismatches", report(withActivity(mirrorHealthy(), sysfs.ActionCheck, 90)), report(withMismatch(mirrorHealthy(), 128)), nil,
			[]string{"RebuildFinished md127 check", "CheckFinished md127 check mismatches=128"}},
		{"repair finishes clean", report(withActivity(mirrorHealthy(), sysfs.ActionRepair, 90)), report(withMismatch(mirrorHealthy(), 0)), nil,
			[]string{"RebuildFinished md127 repair", "CheckFinished md127 repair mismatches=0"}},
		{"check turns into resync: no count (the resync reset it)", report(withActivity(mirrorHealthy(), sysfs.ActionCheck, 50)),
			report(withMismatch(withActivity(mirrorHealthy(), sysfs.ActionResync, 0), 0)), nil,
			[]string{"RebuildFinished md127 check", "CheckFinished md127 check", "RebuildStarted md127 resync 0%"}},
		{"resync finishes: no check event", report(withActivity(mirrorHealthy(), sysfs.ActionResync, 90)), report(withMismatch(mirrorHealthy(), 8)), nil,
			[]string{"RebuildFinished md127 resync"}},
		{"check requested, no progress yet: nothing", report(mirrorHealthy()), report(func() md.Array {
			a := mirrorHealthy()
			a.Activity.Kind = sysfs.ActionCheck
			return a
		}()), nil, []string{}},
		{"recover without progress (no spare to use): no rebuild", report(mirrorFailed()), report(func() md.Array {
			a := mirrorUnslotted()
			a.Activity.Kind = sysfs.ActionRecover
			return a
		}()), nil, []string{}},
		{"recover with progress but nothing to rebuild (seen on 6.1): no rebuild", report(mirrorFailed()),
			report(withActivity(mirrorUnslotted(), sysfs.ActionRecover, 30)), nil, []string{}},
		{"spare fails", report(withSpare(mirrorHealthy(), "spare")), report(withSpare(mirrorHealthy(), "faulty")), nil,
			[]string{"FailSpare md127 vdd"}},
		{"rebuilding member fails", report(mirrorRecovering(30)), report(failRebuilding(mirrorRecovering(30))), nil,
			[]string{"FailSpare md127 vdc slot=1", "RebuildFinished md127 recover"}},
		{"spare added", report(mirrorHealthy()), report(withSpare(mirrorHealthy(), "spare")), nil,
			[]string{"MemberAdded md127 vdd"}},
		{"spare goes missing", report(withSpare(mirrorHealthy(), "spare")), report(mirrorHealthy()), map[string]int{mirrorHealthy().UUID: 1},
			[]string{"MemberRemoved md127 vdd", "SparesMissing md127 0/1"}},
		{"still missing spares: once", report(mirrorHealthy()), report(mirrorHealthy()), map[string]int{mirrorHealthy().UUID: 1}, []string{}},
		{"new array", report(), report(mirrorHealthy()), nil, []string{"NewArray md127"}},
		{"new degraded array", report(mirrorHealthy()), report(mirrorHealthy(), renamed(mirrorMissing(), "md126")), nil,
			[]string{"NewArray md126", "DegradedArray md126"}},
		{"assembled inactive, then started degraded", report(withAvail(mirrorMissing(), md.Inactive)), report(mirrorMissing()), nil,
			[]string{"DegradedArray md127"}},
		{"array stopped", report(mirrorHealthy()), report(), nil, []string{"DeviceDisappeared md127"}},
		{"array stopping: members unbound from an inactive array are no failures", report(mirrorHealthy()),
			report(func() md.Array {
				a := withAvail(mirrorHealthy(), md.Inactive)
				a.State, a.Slots = "inactive", []md.Slot{{Slot: 0, State: md.SlotMissing}, {Slot: 1, State: md.SlotMissing}}
				return a
			}()), nil, []string{}},
		{"array cleared counts as gone", report(mirrorHealthy()), report(withState(mirrorHealthy(), "clear")), nil,
			[]string{"DeviceDisappeared md127"}},
		{"cleared array is not new", report(withState(mirrorHealthy(), "clear")), report(withState(mirrorHealthy(), "clear")), nil, []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := diff(tt.prev, tt.cur, tt.spares)
			qt.Assert(t, brief(got), qt.DeepEquals, tt.want)
			for _, e := range got {
				qt.Check(t, e.Time, qt.Equals, t0)
				qt.Check(t, e.ArrayPath, qt.Equals, "/dev/"+e.Array)
				qt.Check(t, e.UUID, qt.Not(qt.Equals), "")
			}
		})
	}
}

// TestDiffFixtures walks real captures of md0 as if they were successive
// states of one array: healthy, a member failed, the member removed, a
// replacement recovering, then the replacement gone and an idle spare.
func TestDiffFixtures(t *testing.T) {
	seq := []struct {
		fixture string
		want    []string
	}{
		{"raid1-v1.2", []string{}},
		{"raid1-failed", []string{"Fail md0 vdb slot=1", "DegradedArray md0"}},
		{"raid1-degraded-missing", []string{"MemberRemoved md0 vdb"}},
		{"raid1-recovering", []string{"MemberAdded md0 vdc slot=1", "RebuildStarted md0 recover 25%"}},
		// Here the disk being rebuilt vanished and vdb is back in slot 1
		// with an idle spare beside it.
		{"raid1-removed-spare", []string{"MemberAdded md0 vdb slot=1", "MemberAdded md0 vdd", "MemberRemoved md0 vdc slot=1", "RebuildFinished md0 recover"}},
	}
	var prev *md.Report
	for _, s := range seq {
		a := fixtureArray(t, s.fixture)
		cur := report(a)
		got := diff(prev, cur, nil)
		qt.Assert(t, brief(got), qt.DeepEquals, s.want, qt.Commentf("%s", s.fixture))
		prev = cur
	}
}

func TestEventForms(t *testing.T) {
	c := qt.New(t)
	e := Event{Type: Fail, Time: t0, Array: "md127", ArrayPath: "/dev/md127", UUID: "u", Name: "boot",
		Member: "vdb", MemberPath: "/dev/vdb", Slot: intp(1), ByPath: "pci-0000:00:11.0"}
	c.Assert(e.String(), qt.Equals, "Fail /dev/md127 /dev/vdb slot 1 (pci-0000:00:11.0)")
	c.Assert(e.Args(), qt.DeepEquals, []string{"Fail", "/dev/md127", "/dev/vdb"})
	c.Assert(e.Env(), qt.DeepEquals, []string{
		"MDRAID_EVENT=Fail", "MDRAID_ARRAY=/dev/md127", "MDRAID_TIME=2026-05-01T12:00:00Z",
		"MDRAID_ARRAY_NAME=boot", "MDRAID_UUID=u", "MDRAID_MEMBER=/dev/vdb", "MDRAID_SLOT=1",
		"MDRAID_BY_PATH=pci-0000:00:11.0",
	})
	b, err := json.Marshal(e)
	c.Assert(err, qt.IsNil)
	c.Assert(string(b), qt.Equals, `{"event":"Fail","time":"2026-05-01T12:00:00Z","array":"md127","array_path":"/dev/md127","uuid":"u","name":"boot","member":"vdb","member_path":"/dev/vdb","slot":1,"by_path":"pci-0000:00:11.0"}`)

	r := Event{Type: HealRefused, Time: t0, Array: "md127", ArrayPath: "/dev/md127", Slot: intp(1), ByPath: "pci-0000:00:11.0", Reason: "not blank"}
	c.Assert(r.String(), qt.Equals, "HealRefused /dev/md127 slot 1 (pci-0000:00:11.0): not blank")
	c.Assert(r.Args(), qt.DeepEquals, []string{"HealRefused", "/dev/md127"})
	c.Assert(strings.Join(r.Env(), " "), qt.Contains, "MDRAID_REASON=not blank")

	f := Event{Type: CheckFinished, Time: t0, Array: "md127", ArrayPath: "/dev/md127", Action: "check", MismatchSectors: u64p(128)}
	c.Assert(f.String(), qt.Equals, "CheckFinished /dev/md127 check, mismatches found: 128 sectors")
	c.Assert(f.Args(), qt.DeepEquals, []string{"CheckFinished", "/dev/md127"})
	c.Assert(f.Env(), qt.DeepEquals, []string{
		"MDRAID_EVENT=CheckFinished", "MDRAID_ARRAY=/dev/md127", "MDRAID_TIME=2026-05-01T12:00:00Z",
		"MDRAID_ACTION=check", "MDRAID_MISMATCH_SECTORS=128",
	})
	st := Event{Type: CheckStarted, Time: t0, Array: "md127", ArrayPath: "/dev/md127", Action: "check", Percent: intp(40)}
	c.Assert(st.String(), qt.Equals, "CheckStarted /dev/md127 check at 40%")
}

// TestEventJSON pins the JSON form mdctl watch --json prints: every
// field's name and form, and every event type's string. They are an
// interface (scripts parse them) and must not change.
func TestEventJSON(t *testing.T) {
	c := qt.New(t)
	e := Event{Type: RebuildStarted, Time: t0, Array: "md127", ArrayPath: "/dev/md127", UUID: "u", Name: "boot",
		Member: "vdb", MemberPath: "/dev/vdb", Slot: intp(1), ByPath: "pci-0000:00:11.0", Action: "recover",
		Percent: intp(20), Spares: intp(0), Expected: intp(1), Reason: "why"}
	b, err := json.Marshal(e)
	c.Assert(err, qt.IsNil)
	c.Check(string(b), qt.Equals, `{"event":"RebuildStarted","time":"2026-05-01T12:00:00Z","array":"md127","array_path":"/dev/md127",`+
		`"uuid":"u","name":"boot","member":"vdb","member_path":"/dev/vdb","slot":1,"by_path":"pci-0000:00:11.0",`+
		`"action":"recover","percent":20,"spares":0,"expected":1,"reason":"why"}`)
	// mismatch_sectors (added for CheckFinished) comes last, 0 included.
	b, err = json.Marshal(Event{Type: CheckFinished, Time: t0, Array: "md0", ArrayPath: "/dev/md0", Action: "check", MismatchSectors: u64p(0)})
	c.Assert(err, qt.IsNil)
	c.Check(string(b), qt.Equals, `{"event":"CheckFinished","time":"2026-05-01T12:00:00Z","array":"md0","array_path":"/dev/md0","action":"check","mismatch_sectors":0}`)
	b, err = json.Marshal(Event{Type: DeviceDisappeared, Time: t0, Array: "md0", ArrayPath: "/dev/md0"})
	c.Assert(err, qt.IsNil)
	c.Check(string(b), qt.Equals, `{"event":"DeviceDisappeared","time":"2026-05-01T12:00:00Z","array":"md0","array_path":"/dev/md0"}`)

	types := map[EventType]string{
		NewArray: "NewArray", DegradedArray: "DegradedArray", Fail: "Fail", FailSpare: "FailSpare",
		SpareActive: "SpareActive", RebuildStarted: "RebuildStarted", Rebuild20: "Rebuild20",
		Rebuild40: "Rebuild40", Rebuild60: "Rebuild60", Rebuild80: "Rebuild80",
		RebuildFinished: "RebuildFinished", CheckStarted: "CheckStarted", CheckFinished: "CheckFinished",
		DeviceDisappeared: "DeviceDisappeared", SparesMissing: "SparesMissing",
		MemberAdded: "MemberAdded", MemberRemoved: "MemberRemoved",
		SlotRecorded: "SlotRecorded", HealStarted: "HealStarted", HealRefused: "HealRefused",
		HealFailed: "HealFailed", HealDeferred: "HealDeferred", Unfrozen: "Unfrozen", TestMessage: "TestMessage",
	}
	c.Check(types, qt.HasLen, 24)
	for typ, want := range types {
		b, err := json.Marshal(typ)
		c.Assert(err, qt.IsNil)
		c.Check(string(b), qt.Equals, `"`+want+`"`)
	}
}

// TestTestEvents: one TestMessage per array of the report, in its order,
// naming the array; none for a stopped array lingering as "clear", or
// for no report.
func TestTestEvents(t *testing.T) {
	c := qt.New(t)
	a, b := fixtureArray(t, "raid1-v1.2"), fixtureArray(t, "raid5")
	b.Device, b.Path = "md1", "/dev/md1"
	gone := fixtureArray(t, "raid1-failed")
	gone.Device, gone.State = "md2", "clear"
	evs := TestEvents(&md.Report{Arrays: []md.Array{a, b, gone}}, t0)
	c.Assert(brief(evs), qt.DeepEquals, []string{"TestMessage md0", "TestMessage md1"})
	c.Check(evs[0], qt.DeepEquals, Event{Type: TestMessage, Time: t0, Array: "md0", ArrayPath: a.Path, UUID: a.UUID, Name: a.Name})
	c.Check(evs[1].UUID, qt.Equals, b.UUID)
	c.Check(TestEvents(nil, t0), qt.HasLen, 0)
}
