package md

import (
	"context"
	"errors"
	"testing"
	"time"

	qt "github.com/frankban/quicktest"
)

// TestHealReAdd: with ReAdd, heal puts a former member found in its
// slot's recorded port back (through Manager.ReAdd), and remembers it in
// the store; when the same disk is missing again, it is not re-added a
// second time, and that holds for a new pass that loads the store again
// (a restarted watch), until an operator clears the slot's marks. A
// blank disk goes to the replace planner as before; a dry run re-adds
// nothing and saves nothing.
func TestHealReAdd(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 12, 5, 16, 0, 0, 0, time.UTC)
	former := func() *ReAddPlan {
		return &ReAddPlan{Array: "md0", Device: "vdc", Slot: 1, DeviceUUID: "0b7ee3c6-4a6e-4a3b-9b44-7d5d2c0c9f10", Events: 10, ArrayEvents: 14, Bitmap: true, Write: "ADD_NEW_DISK 254:32 (re-add: number 1, slot 1, in sync)"}
	}
	pass := func(t *testing.T, m *Manager, r *Report, st *memStore, f *fakeFiller, dry bool) Decision {
		t.Helper()
		rs, err := st.Load(ctx)
		if err != nil {
			t.Fatal(err)
		}
		ds := m.heal(ctx, r, rs, healConfig{filler: f, reAdd: true, store: st, records: rs, dryRun: dry, now: func() time.Time { return now }})
		if len(ds) != 1 {
			t.Fatalf("decisions: %+v", ds)
		}
		return ds[0]
	}
	newStore := func(t *testing.T, rs *Records) *memStore {
		st := &memStore{}
		if err := st.Save(ctx, rs); err != nil {
			t.Fatal(err)
		}
		return st
	}

	t.Run("re-added, then not again", func(t *testing.T) {
		c := qt.New(t)
		m, r, rs := degradedWithRecord(t)
		st := newStore(t, rs)
		f := &fakeFiller{reAddPlan: former()}
		d := pass(t, m, r, st, f, false)
		c.Assert(d.Outcome, qt.Equals, OutcomeHealed, qt.Commentf("%+v", d))
		c.Check(d.Reason, qt.Matches, `re-added .*/vdc into slot 1: md took it back; with the bitmap only what changed is copied .*`)
		c.Check(f.reAdds, qt.HasLen, 1)
		c.Check(f.planned, qt.HasLen, 0, qt.Commentf("the replace planner was asked"))
		saved, err := st.Load(ctx)
		c.Assert(err, qt.IsNil)
		c.Assert(saved.ReAdds, qt.HasLen, 1)
		c.Check(saved.ReAdds[0].Blocked, qt.IsFalse)
		c.Check(saved.ReAdds[0].Slot, qt.Equals, 1)
		c.Check(saved.Arrays, qt.HasLen, 1, qt.Commentf("the slot records were not kept"))

		// Missing again (the same snapshot stands for it), in a new pass
		// that loads the store: a restarted watch.
		f2 := &fakeFiller{reAddPlan: former()}
		d = pass(t, m, r, st, f2, false)
		c.Check(d.Outcome, qt.Equals, OutcomeRefused)
		c.Check(d.Err, qt.ErrorIs, ErrReAddBlocked)
		c.Check(d.Reason, qt.Matches, `.*heal re-added it at 2026-12-05T16:00:00Z and it went missing again; an operator re-adds it with mdctl re-add --store.*`)
		c.Check(f2.reAdds, qt.HasLen, 0)
		saved, err = st.Load(ctx)
		c.Assert(err, qt.IsNil)
		c.Check(saved.ReAdds[0].Blocked, qt.IsTrue)

		f3 := &fakeFiller{reAddPlan: former()}
		d = pass(t, m, r, st, f3, false)
		c.Check(d.Err, qt.ErrorIs, ErrReAddBlocked, qt.Commentf("a third pass re-added it"))
		c.Check(f3.reAdds, qt.HasLen, 0)

		// The operator's word: the slot's marks are cleared.
		c.Check(saved.ForgetReAdds(r.Arrays[0].UUID, 1), qt.IsTrue)
		c.Assert(st.Save(ctx, saved), qt.IsNil)
		f4 := &fakeFiller{reAddPlan: former()}
		d = pass(t, m, r, st, f4, false)
		c.Check(d.Outcome, qt.Equals, OutcomeHealed)
	})
	t.Run("blank disk: replace", func(t *testing.T) {
		c := qt.New(t)
		m, r, rs := degradedWithRecord(t)
		f := &fakeFiller{}
		d := pass(t, m, r, newStore(t, rs), f, false)
		c.Check(d.Outcome, qt.Equals, OutcomeHealed)
		c.Check(f.planned, qt.HasLen, 1)
		c.Check(f.reAdds, qt.HasLen, 0)
	})
	t.Run("refused re-add", func(t *testing.T) {
		c := qt.New(t)
		m, r, rs := degradedWithRecord(t)
		f := &fakeFiller{reAddErr: refuse(reAddOp, "md0", "vdc", ErrSplitBrain)}
		d := pass(t, m, r, newStore(t, rs), f, false)
		c.Check(d.Outcome, qt.Equals, OutcomeRefused)
		c.Check(d.Err, qt.ErrorIs, ErrSplitBrain)
		c.Check(f.planned, qt.HasLen, 0)
	})
	t.Run("another slot", func(t *testing.T) {
		c := qt.New(t)
		m, r, rs := degradedWithRecord(t)
		p := former()
		p.Slot = 0
		d := pass(t, m, r, newStore(t, rs), &fakeFiller{reAddPlan: p}, false)
		c.Check(d.Outcome, qt.Equals, OutcomeRefused)
		c.Check(d.Reason, qt.Matches, `.*names slot 0 in its superblock`)
	})
	t.Run("dry run", func(t *testing.T) {
		c := qt.New(t)
		m, r, rs := degradedWithRecord(t)
		st := newStore(t, rs)
		f := &fakeFiller{reAddPlan: former()}
		d := pass(t, m, r, st, f, true)
		c.Check(d.Outcome, qt.Equals, OutcomeWouldHeal)
		c.Check(f.reAdds, qt.HasLen, 0)
		saved, err := st.Load(ctx)
		c.Assert(err, qt.IsNil)
		c.Check(saved.ReAdds, qt.HasLen, 0)
	})
	t.Run("failed", func(t *testing.T) {
		c := qt.New(t)
		m, r, rs := degradedWithRecord(t)
		st := newStore(t, rs)
		d := pass(t, m, r, st, &fakeFiller{reAddPlan: former(), reAddFails: errors.New("md: re-adding: input/output error")}, false)
		c.Check(d.Outcome, qt.Equals, OutcomeFailed)
		saved, err := st.Load(ctx)
		c.Assert(err, qt.IsNil)
		c.Check(saved.ReAdds, qt.HasLen, 0)
	})
	t.Run("needs a store", func(t *testing.T) {
		c := qt.New(t)
		m, r, rs := degradedWithRecord(t)
		_, err := m.Heal(ctx, HealOptions{Report: r, Records: rs, ReAdd: true})
		c.Check(err, qt.ErrorMatches, `md: heal with ReAdd needs a Store.*`)
	})
}

// TestHealMarksIOFailures: a faulty member that still holds its slot
// with read errors is marked in the store as not to be re-added, and
// left to the replace path (which removes it first); when it comes back
// in its port it is not re-added.
func TestHealMarksIOFailures(t *testing.T) {
	c := qt.New(t)
	ctx := context.Background()
	m, r, rs := degradedWithRecord(t)
	a := &r.Arrays[0]
	var slot *Slot
	for i := range a.Slots {
		if a.Slots[i].Slot == 1 {
			slot = &a.Slots[i]
		}
	}
	c.Assert(slot, qt.IsNotNil)
	devUUID := "0b7ee3c6-4a6e-4a3b-9b44-7d5d2c0c9f10"
	slot.State = SlotFaulty
	slot.Member = &Member{Device: "vdb", Slot: 1, ReadErrors: 12, DeviceUUID: devUUID}
	st := &memStore{}
	c.Assert(st.Save(ctx, rs), qt.IsNil)
	f := &fakeFiller{}
	ds := m.heal(ctx, r, rs, healConfig{filler: f, reAdd: true, store: st, records: rs})
	c.Assert(ds, qt.HasLen, 1)
	c.Check(f.planned, qt.HasLen, 1, qt.Commentf("the replace path was not taken"))
	saved, err := st.Load(ctx)
	c.Assert(err, qt.IsNil)
	c.Assert(saved.ReAdds, qt.HasLen, 1)
	c.Check(saved.ReAdds[0].Blocked, qt.IsTrue)
	c.Check(saved.ReAdds[0].Reason, qt.Equals, "failed by the kernel with 12 corrected read errors and 0 bad-block ranges")

	// It comes back in its port, the slot empty.
	slot.State, slot.Member = SlotMissing, nil
	f2 := &fakeFiller{reAddPlan: &ReAddPlan{Array: "md0", Device: "vdc", Slot: 1, DeviceUUID: devUUID}}
	ds = m.heal(ctx, r, saved, healConfig{filler: f2, reAdd: true, store: st, records: saved})
	c.Assert(ds, qt.HasLen, 1)
	c.Check(ds[0].Err, qt.ErrorIs, ErrReAddBlocked)
	c.Check(ds[0].Reason, qt.Contains, "failed by the kernel with 12 corrected read errors")
	c.Check(f2.reAdds, qt.HasLen, 0)
}

// TestHealReAddNotRetried: a re-add that failed is not tried again by the
// next pass of the same watch while neither the disk nor the array
// changed, as a failed replace is not.
func TestHealReAddNotRetried(t *testing.T) {
	c := qt.New(t)
	ctx := context.Background()
	m, r, rs := degradedWithRecord(t)
	st := &memStore{}
	c.Assert(st.Save(ctx, rs), qt.IsNil)
	f := &fakeFiller{reAddPlan: &ReAddPlan{Array: "md0", Device: "vdc", Slot: 1, DeviceUUID: "0b7ee3c6-4a6e-4a3b-9b44-7d5d2c0c9f10"}, reAddFails: errors.New("md: re-adding: input/output error")}
	h := map[healAttempt]failedAttempt{}
	for i := range 3 {
		ds := m.heal(ctx, r, rs, healConfig{filler: f, reAdd: true, store: st, records: rs, failed: h})
		c.Assert(ds, qt.HasLen, 1)
		c.Check(ds[0].Outcome, qt.Equals, OutcomeFailed, qt.Commentf("pass %d", i))
		if i > 0 {
			c.Check(ds[0].Err, qt.ErrorIs, ErrHealNotRetried)
		}
	}
	c.Check(f.reAdds, qt.HasLen, 1)
}
