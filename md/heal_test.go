package md

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"strings"
	"testing"

	qt "github.com/frankban/quicktest"
	"golang.org/x/sys/unix"

	"github.com/go-mdraid/mdraid/internal/fixture"
	"github.com/go-mdraid/mdraid/sysfs"
)

// recordsOf records the healthy form of arrays.
func recordsOf(t testing.TB, arrays ...Array) *Records {
	t.Helper()
	rs := &Records{}
	for _, a := range arrays {
		r, err := NewRecord(a, recordTime)
		if err != nil {
			t.Fatal(err)
		}
		rs.Put(r)
	}
	return rs
}

// verdict renders a decision compactly: "array slot outcome device: reason".
func verdict(d Decision) string {
	s := fmt.Sprintf("%s %d %s", d.Array, d.Slot, d.Outcome)
	if d.Outcome == "" {
		s = fmt.Sprintf("%s %d try", d.Array, d.Slot)
	}
	if d.Device != "" {
		s += " " + d.Device
	}
	return s
}

func TestDecideHeal(t *testing.T) {
	mirror := recordsOf(t, mirrorHealthy())
	port1 := map[string][]string{byPathOf(0): {"vda"}, byPathOf(1): {"vdc"}}
	raid6 := func() Array {
		a := healthyArray(4)
		a.Level, a.Metadata = "raid6", "1.2"
		a.UUID = "6e0f7a52-9a3c-4d4e-8f1b-0c2d3e4f5a6b"
		return a
	}
	raid6Missing2 := func() Array {
		a := raid6()
		a.Availability, a.Redundancy, a.Degraded = Degraded, NoRedundancy, 2
		a.Slots[1] = Slot{Slot: 1, State: SlotMissing}
		a.Slots[3] = Slot{Slot: 3, State: SlotMissing}
		return a
	}
	faultyInSlot := mirrorFailed()

	tests := []struct {
		name  string
		r     *Report
		rs    *Records
		ports map[string][]string
		want  []string
		err   error // of the first decision
	}{
		{"healthy: nothing to do", report(mirrorHealthy()), mirror, port1,
			[]string{"md127 -1 skipped"}, nil},
		{"blank disk in the recorded port: try it", report(mirrorMissing()), mirror, port1,
			[]string{"md127 1 try vdc"}, nil},
		{"faulty member still in the slot: try the disk in its port", report(faultyInSlot), mirror, port1,
			[]string{"md127 1 try vdc"}, nil},
		{"no record", report(mirrorMissing()), &Records{}, port1,
			[]string{"md127 -1 refused"}, errNoRecord},
		{"record of another array", report(mirrorMissing()), recordsOf(t, raid6()), port1,
			[]string{"md127 -1 refused"}, errNoRecord},
		{"port empty", report(mirrorMissing()), mirror, map[string][]string{byPathOf(0): {"vda"}},
			[]string{"md127 1 refused"}, errPortEmpty},
		{"blank disk only in another port: not used", report(mirrorMissing()), mirror,
			map[string][]string{byPathOf(0): {"vda"}, byPathOf(5): {"vdz"}},
			[]string{"md127 1 refused"}, errPortEmpty},
		{"two devices claim the port", report(mirrorMissing()), mirror,
			map[string][]string{byPathOf(1): {"vdd", "vdc"}},
			[]string{"md127 1 refused"}, errPortAmbiguous},
		{"no port recorded (a record no store would load)", report(mirrorMissing()), func() *Records {
			rs := recordsOf(t, mirrorHealthy())
			rs.Arrays[0].Slots[1].ByPath = ""
			return rs
		}(), port1, []string{"md127 1 refused"}, errNoRecordedPort},
		{"grown since the record: never", report(func() Array {
			a := healthyArray(3)
			a.Availability, a.Degraded = Degraded, 1
			a.Slots[2] = Slot{Slot: 2, State: SlotMissing}
			return a
		}()), mirror, port1, []string{"md127 -1 refused"}, errRecordMismatch},
		{"level changed since the record", report(func() Array {
			a := mirrorMissing()
			a.Level = "raid5"
			return a
		}()), mirror, port1, []string{"md127 -1 refused"}, errRecordMismatch},
		{"recovery running: deferred", report(mirrorRecovering(10)), mirror, port1,
			[]string{"md127 -1 refused"}, ErrHealDeferred},
		{"frozen: deferred", report(withActivity(mirrorMissing(), sysfs.ActionFrozen, 0)), mirror, port1,
			[]string{"md127 -1 refused"}, ErrHealDeferred},
		{"delayed sync: deferred", report(func() Array {
			a := mirrorMissing()
			a.Activity.Pending = "delayed"
			return a
		}()), mirror, port1, []string{"md127 -1 refused"}, ErrHealDeferred},
		{"a spare is waiting: deferred", report(withSpare(mirrorMissing(), "spare")), mirror, port1,
			[]string{"md127 -1 refused"}, ErrHealDeferred},
		{"failed array: never", report(withAvail(mirrorMissing(), Failed)), mirror, port1,
			[]string{"md127 -1 refused"}, errHealState},
		{"inactive array: never", report(withAvail(mirrorMissing(), Inactive)), mirror, port1,
			[]string{"md127 -1 refused"}, errHealState},
		{"unknown state: never", report(withState(withAvail(mirrorMissing(), Unknown), "bogus")), mirror, port1,
			[]string{"md127 -1 refused"}, errUnknownFact},
		{"two missing slots: one at a time", report(raid6Missing2()), recordsOf(t, raid6()),
			map[string][]string{byPathOf(1): {"vdx"}, byPathOf(3): {"vdy"}},
			[]string{"md127 1 try vdx", "md127 3 refused vdy"}, nil},
		{"two missing, first port empty: the second is tried", report(raid6Missing2()), recordsOf(t, raid6()),
			map[string][]string{byPathOf(3): {"vdy"}},
			[]string{"md127 1 refused", "md127 3 try vdy"}, errPortEmpty},
		{"cleared array is ignored", report(withState(mirrorMissing(), "clear")), mirror, port1, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := qt.New(t)
			ds := decideHeal(tt.r, tt.rs, tt.ports, "/dev")
			var got []string
			for _, d := range ds {
				got = append(got, verdict(d))
				c.Check(d.UUID, qt.Equals, tt.r.Arrays[0].UUID)
				if d.Outcome != "" {
					c.Check(d.Reason, qt.Not(qt.Equals), "")
					c.Check(d.Err, qt.Not(qt.IsNil))
				}
				if d.Device != "" {
					c.Check(d.Disk, qt.Equals, "/dev/"+d.Device)
				}
			}
			c.Assert(got, qt.DeepEquals, tt.want)
			if tt.err != nil {
				c.Assert(ds[0].Err, qt.ErrorIs, tt.err)
			}
		})
	}
}

// fakeFiller records what heal asks of the replace machinery: array,
// slot, disk, member and the port the disk must be in (ByPath, which the
// planner and the executor's final plan check again).
type fakeFiller struct {
	refuse  error // returned by planFill
	failing error // returned by executeFill
	planned []string
	done    []string
	execs   int // executeFill calls: each would write the disk
	// reAddPlan and reAddErr are what planReAdd returns (nil, nil: the
	// disk carries no md superblock); reAddFails what reAdd returns.
	reAddPlan  *ReAddPlan
	reAddErr   error
	reAddFails error
	reAdds     []string
}

func (f *fakeFiller) planReAdd(_ context.Context, req ReAddRequest) (*ReAddPlan, error) {
	if f.reAddPlan == nil && f.reAddErr == nil {
		return nil, refuse(reAddOp, req.Array, req.Device, fmt.Errorf("%w: no md superblock", ErrNotMember))
	}
	return f.reAddPlan, f.reAddErr
}

func (f *fakeFiller) reAdd(_ context.Context, req ReAddRequest) (*ReAddResult, error) {
	f.reAdds = append(f.reAdds, req.Array+" "+req.Device)
	if f.reAddFails != nil {
		return nil, f.reAddFails
	}
	return &ReAddResult{Plan: f.reAddPlan, Outcome: ReAdded, Writes: []string{f.reAddPlan.Write}}, nil
}

func (f *fakeFiller) planFill(_ context.Context, req ReplaceRequest) (*Plan, error) {
	f.planned = append(f.planned, fmt.Sprintf("%s/%d/%s/%s@%s", req.Array, *req.Slot, req.With, req.Member, req.ByPath))
	if f.refuse != nil {
		return nil, f.refuse
	}
	return &Plan{Array: req.Array, Slot: *req.Slot}, nil
}

func (f *fakeFiller) executeFill(_ context.Context, p *Plan) error {
	f.execs++
	if f.failing != nil {
		return f.failing
	}
	f.done = append(f.done, fmt.Sprintf("%s/%d", p.Array, p.Slot))
	return nil
}

// TestHealPass runs heal passes on a real capture (raid1-degraded-missing,
// slot 1 empty, recorded in port pci-0000:00:11.0) with the replace
// machinery faked, and a disk added to the captured sysfs in that port or
// in another one.
func TestHealPass(t *testing.T) {
	fc := fixture.Named(t, "raid1-degraded-missing")
	tests := []struct {
		name    string
		port    string // where a disk "vdc" is plugged; "" for none
		filler  fakeFiller
		dryRun  bool
		want    Outcome
		planned bool
		done    bool
		err     error
	}{
		{name: "disk in the port: healed", port: "0000:00:11.0", want: OutcomeHealed, planned: true, done: true},
		{name: "dry run: planned only", port: "0000:00:11.0", dryRun: true, want: OutcomeWouldHeal, planned: true},
		{name: "planner refuses (not blank)", port: "0000:00:11.0",
			filler: fakeFiller{refuse: &RefusedError{Op: "replace", Array: "md0", Check: CheckBlankDevice, Reason: "vdc holds ext4", Err: ErrNotBlank}},
			want:   OutcomeRefused, planned: true, err: ErrNotBlank},
		{name: "executor fails", port: "0000:00:11.0", filler: fakeFiller{failing: errors.New("EBUSY")},
			want: OutcomeFailed, planned: true},
		{name: "disk in another port: untouched", port: "0000:00:15.0", want: OutcomeRefused, err: errPortEmpty},
		{name: "no disk", want: OutcomeRefused, err: errPortEmpty},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := qt.New(t)
			m, sys := fixtureSystem(t, fc)
			if tt.port != "" {
				plugDisk(t, sys, "vdc", tt.port)
			}
			r, err := m.Discover(context.Background())
			c.Assert(err, qt.IsNil)
			a := r.Arrays[0]
			c.Assert(a.Availability, qt.Equals, Degraded)
			// The record as it was while healthy: vda in slot 0, and a
			// disk in port 00:11.0 in slot 1.
			healthy := healthyArray(2)
			healthy.Device, healthy.Path, healthy.UUID = a.Device, a.Path, a.UUID
			healthy.Metadata, healthy.Name, healthy.Homehost = a.Metadata, a.Name, a.Homehost
			rs := recordsOf(t, healthy)

			var logs strings.Builder
			f := tt.filler
			ds := m.heal(context.Background(), r, rs, healConfig{
				dryRun: tt.dryRun, filler: &f,
				logger: slog.New(slog.NewTextHandler(&logs, nil)),
			})
			c.Assert(ds, qt.HasLen, 1)
			d := ds[0]
			c.Assert(d.Outcome, qt.Equals, tt.want, qt.Commentf("%+v", d))
			c.Assert(d.Slot, qt.Equals, 1)
			c.Assert(d.ByPath, qt.Equals, "pci-0000:00:11.0")
			if tt.err != nil {
				c.Assert(d.Err, qt.ErrorIs, tt.err)
			}
			if tt.planned {
				// The port is part of the request: without it, replace
				// would take a disk that moved to another port meanwhile.
				c.Assert(f.planned, qt.DeepEquals, []string{"md0/1/" + m.devRoot + "/vdc/@pci-0000:00:11.0"})
			} else {
				c.Assert(f.planned, qt.HasLen, 0)
			}
			c.Assert(len(f.done) > 0, qt.Equals, tt.done)
			c.Assert(logs.String(), qt.Contains, "outcome="+string(tt.want))
			c.Assert(logs.String(), qt.Contains, "reason=")
		})
	}
}

func TestHealStore(t *testing.T) {
	c := qt.New(t)
	m, _ := fixtureSystem(t, fixture.Named(t, "raid1-degraded-missing"))
	ctx := context.Background()

	_, err := m.Heal(ctx, HealOptions{})
	c.Assert(err, qt.ErrorMatches, "md: heal needs a Store of slot records")

	var s memStore
	_, err = m.Heal(ctx, HealOptions{Store: &s})
	c.Assert(err, qt.ErrorIs, fs.ErrNotExist)

	// Records the store cannot trust (md/store: a damaged file) are
	// acted on not at all.
	c.Assert(s.Save(ctx, recordsOf(t, mirrorHealthy())), qt.IsNil)
	errCorrupt := errors.New("records are corrupt")
	s.loadErr = fmt.Errorf("loading: %w", errCorrupt)
	ds, err := m.Heal(ctx, HealOptions{Store: &s})
	c.Assert(err, qt.ErrorIs, errCorrupt)
	c.Assert(ds, qt.HasLen, 0)

	s.loadErr = nil
	c.Assert(s.Save(ctx, recordsOf(t, mirrorHealthy())), qt.IsNil)
	ds, err = m.Heal(ctx, HealOptions{Store: &s})
	c.Assert(err, qt.IsNil)
	c.Assert(ds, qt.HasLen, 1)
	c.Assert(ds[0].Err, qt.ErrorIs, errNoRecord)

	_, err = m.Heal(ctx, HealOptions{Store: &s, Array: "md9"})
	c.Assert(err, qt.ErrorIs, ErrNoArray)
}

// TestHealGivenSnapshot: HealOptions.Records replaces the Store and
// HealOptions.Report the snapshot Heal would take (a watcher passes
// both), and Array filters a given Report without changing it.
func TestHealGivenSnapshot(t *testing.T) {
	c := qt.New(t)
	m, _ := fixtureSystem(t, fixture.Named(t, "raid1-degraded-missing"))
	ctx := context.Background()
	r, err := m.Discover(ctx)
	c.Assert(err, qt.IsNil)

	// No Store: the Records given are used (here none for the array).
	ds, err := m.Heal(ctx, HealOptions{Records: &Records{}})
	c.Assert(err, qt.IsNil)
	c.Assert(ds, qt.HasLen, 1)
	c.Check(ds[0].Err, qt.ErrorIs, errNoRecord)

	// The Report given is decided on, not a fresh snapshot: here the
	// array is shown healthy, so there is nothing to do.
	healthy := *r
	healthy.Arrays = append([]Array(nil), r.Arrays...)
	healthy.Arrays[0].Availability, healthy.Arrays[0].Degraded = Online, 0
	ds, err = m.Heal(ctx, HealOptions{Records: &Records{}, Report: &healthy})
	c.Assert(err, qt.IsNil)
	for _, d := range ds {
		c.Check(d.Outcome, qt.Equals, OutcomeSkipped)
	}

	before := len(r.Arrays)
	ds, err = m.Heal(ctx, HealOptions{Records: &Records{}, Report: r, Array: r.Arrays[0].Device})
	c.Assert(err, qt.IsNil)
	c.Assert(ds, qt.HasLen, 1)
	c.Check(r.Arrays, qt.HasLen, before)
}

// TestHealNotRetried: an attempt whose add keeps failing (ADD_NEW_DISK
// returning EINVAL, after the superblock was written) is made once, not
// on every pass, by the passes that share a HealHistory (a watcher's);
// once the array changes, it is tried again. (md/watch's
// TestHealFailureReportedOnce: its failure is reported once.)
func TestHealNotRetried(t *testing.T) {
	c := qt.New(t)
	m, r, rs := degradedWithRecord(t)
	a := r.Arrays[0]

	addFails := &ExecError{Array: a.Device, Step: StepAdd, Err: fmt.Errorf("ADD_NEW_DISK: %w", unix.EINVAL), State: "the superblock on vdc was written"}
	f := &fakeFiller{failing: addFails}
	var h HealHistory
	h.failed = map[healAttempt]failedAttempt{} // as Manager.Heal makes it
	for i := range 50 {
		ds := m.heal(context.Background(), r, rs, healConfig{filler: f, failed: h.failed})
		c.Assert(ds, qt.HasLen, 1)
		c.Assert(ds[0].Outcome, qt.Equals, OutcomeFailed)
		c.Assert(ds[0].Reason, qt.Contains, "not retried until the disk or the array changes")
		if i > 0 {
			c.Assert(ds[0].Err, qt.ErrorIs, ErrHealNotRetried)
		}
	}
	c.Check(f.execs, qt.Equals, 1, qt.Commentf("the add was attempted on %d passes", f.execs))

	// A single pass (mdctl heal) remembers nothing: it tries.
	m.heal(context.Background(), r, rs, healConfig{filler: f})
	c.Check(f.execs, qt.Equals, 2)

	// The array changed (here: its state): the watcher tries again.
	r2 := *r
	r2.Arrays = append([]Array(nil), r.Arrays...)
	r2.Arrays[0].State = "active"
	if r2.Arrays[0].State == a.State {
		r2.Arrays[0].State = "clean"
	}
	m.heal(context.Background(), &r2, rs, healConfig{filler: f, failed: h.failed})
	c.Check(f.execs, qt.Equals, 3)
}

// TestHealRefusesRecords (issue 10 item 11): a record whose array now
// names another homehost, and a port claimed by two slot records, are
// refused with the reason, and nothing is offered to the planner.
func TestHealRefusesRecords(t *testing.T) {
	missing := mirrorMissing() // slot 1 empty, recorded in byPathOf(1)
	ports := map[string][]string{byPathOf(1): {"vdc"}}
	homed := func(a Array, h string) Array { a.Homehost = h; return a }
	tests := []struct {
		name    string
		array   Array
		records func(t *testing.T) *Records
		want    error
		reason  string
	}{
		{name: "array moved to another host", array: homed(missing, "other"),
			records: func(t *testing.T) *Records { return recordsOf(t, homed(healthyArray(2), "talos")) },
			want:    errRecordHost, reason: `.*homehost is "other", its record says "talos".*`},
		{name: "homehost gone", array: missing,
			records: func(t *testing.T) *Records { return recordsOf(t, homed(healthyArray(2), "talos")) },
			want:    errRecordHost},
		{name: "port claimed by another array's record", array: missing,
			records: func(t *testing.T) *Records {
				b := healthyArray(2)
				b.UUID = "11111111-2222-4333-8444-555555555555"
				b.Slots[0].Member.ByPath = byPathOf(1) // the same port as our slot 1
				b.Slots[1].Member.ByPath = byPathOf(7)
				return recordsOf(t, healthyArray(2), b)
			},
			want: errPortClaimed, reason: `.*is recorded for array .* slot 1 and array 11111111-2222-4333-8444-555555555555 slot 0`},
		{name: "port claimed twice in one record", array: missing,
			records: func(t *testing.T) *Records {
				h := healthyArray(2)
				h.Slots[0].Member.ByPath = byPathOf(1)
				return recordsOf(t, h)
			},
			want: errPortClaimed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := qt.New(t)
			ds := decideHeal(report(tt.array), tt.records(t), ports, "/dev")
			c.Assert(ds, qt.HasLen, 1)
			d := ds[0]
			c.Check(d.Outcome, qt.Equals, OutcomeRefused)
			c.Check(d.Err, qt.ErrorIs, tt.want)
			if tt.reason != "" {
				c.Check(d.Reason, qt.Matches, tt.reason)
			}
		})
	}
	// The same records without the conflicts: slot 1 is offered.
	c := qt.New(t)
	ds := decideHeal(report(missing), recordsOf(t, healthyArray(2)), ports, "/dev")
	c.Assert(ds, qt.HasLen, 1)
	c.Check(ds[0].Outcome, qt.Equals, Outcome(""))
	c.Check(ds[0].Device, qt.Equals, "vdc")
}

// TestHealRetriesAfterMapLock: a replace that stopped because mdadm's
// map lock stayed held (an assembly running at boot) wrote nothing to
// the disk, so the watcher's next pass tries it again.
func TestHealRetriesAfterMapLock(t *testing.T) {
	c := qt.New(t)
	m, r, rs := degradedWithRecord(t)
	a := r.Arrays[0]

	locked := &ExecError{Array: a.Device, Step: StepWriteSuperblock, Err: &notWrittenError{fmt.Errorf("md: %w: stayed held", errMapLocked)}, State: "nothing was written to /dev/vdc."}
	f := &fakeFiller{failing: locked}
	var h HealHistory
	h.failed = map[healAttempt]failedAttempt{}
	for range 3 {
		ds := m.heal(context.Background(), r, rs, healConfig{filler: f, failed: h.failed})
		c.Assert(ds, qt.HasLen, 1)
		c.Assert(ds[0].Outcome, qt.Equals, OutcomeFailed)
		c.Check(ds[0].Reason, qt.Not(qt.Contains), "not retried")
	}
	c.Check(f.execs, qt.Equals, 3)
}

// degradedWithRecord is the degraded raid1 capture with a blank disk
// plugged into the port its record names for the missing slot.
func degradedWithRecord(t *testing.T) (*Manager, *Report, *Records) {
	t.Helper()
	fc := fixture.Named(t, "raid1-degraded-missing")
	m, sys := fixtureSystem(t, fc)
	plugDisk(t, sys, "vdc", "0000:00:11.0")
	r, err := m.Discover(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	a := r.Arrays[0]
	healthy := healthyArray(2)
	healthy.Device, healthy.Path, healthy.UUID = a.Device, a.Path, a.UUID
	healthy.Metadata, healthy.Name, healthy.Homehost = a.Metadata, a.Name, a.Homehost
	return m, r, recordsOf(t, healthy)
}
