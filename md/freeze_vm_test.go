//go:build vmtest

package md

import (
	"context"
	"testing"
	"time"

	qt "github.com/frankban/quicktest"

	"github.com/go-mdraid/mdraid/internal/vmtest/guest"
)

// TestVMReplaceKilledAfterFreeze (issue 10 item 7): a replace killed
// right after it froze recovery leaves the array frozen. Status says who
// froze it and what undoes it, the disk is untouched, and the rerun
// recognises the freeze as its own and converges: the disk rebuilds into
// the slot, recovery is unfrozen and the data verifies.
func TestVMReplaceKilledAfterFreeze(t *testing.T) {
	c := qt.New(t)
	disks := guest.ScratchDisks(t, 3)
	ctx := context.Background()
	md := createArray(c, "/dev/md/frz", []string{"--level=1", "--metadata=1.2", "--bitmap=internal", "--raid-devices=2"}, disks[:2])
	mdDev := "/dev/" + md
	defer guest.Mdadm(c, "--stop", mdDev)
	sum := writeData(c, mdDev)
	m := vmManager(t)
	c.Assert(m.Fail(ctx, md, disks[1].Name), qt.IsNil)
	c.Assert(m.Remove(ctx, md, disks[1].Name), qt.IsNil)
	blank := readDiskState(c, disks[2])

	killedReplace(c, md, disks[2].Path, m.ops.runDir, StepFreeze)
	c.Assert(guest.ReadAttr(c, md, "sync_action"), qt.Equals, "frozen")
	c.Check(changedOutside(c, blank, readDiskState(c, disks[2]), nil), qt.HasLen, 0)

	a, err := m.Status(ctx, md)
	c.Assert(err, qt.IsNil)
	c.Assert(a.Freeze, qt.Not(qt.IsNil))
	c.Check(a.Freeze.ByReplace, qt.IsTrue)
	c.Check(a.Freeze.Stale, qt.IsTrue)
	t.Logf("status hint: %s", a.Freeze.Hint)

	res, err := m.Replace(ctx, ReplaceRequest{Array: md, With: disks[2].Path})
	c.Assert(err, qt.IsNil)
	c.Check(res.Slot, qt.Equals, 1)
	for _, st := range res.Steps {
		c.Check(st.Kind, qt.Not(qt.Equals), StepFreeze)
	}
	a, err = m.WaitReplace(ctx, WaitRequest{Array: md, Member: disks[2].Name, Interval: 200 * time.Millisecond})
	c.Assert(err, qt.IsNil)
	c.Check(a.Availability, qt.Equals, Online)
	c.Check(a.Freeze, qt.IsNil)
	c.Check(guest.ReadAttr(c, md, "sync_action"), qt.Equals, "idle")
	rec, err := readFreeze(m.ops.runDir, a.UUID)
	c.Assert(err, qt.IsNil)
	c.Check(rec, qt.IsNil)
	c.Assert(m.Fail(ctx, md, disks[0].Name), qt.IsNil)
	c.Check(readData(c, mdDev), qt.Equals, sum)
}

// TestVMHealAndWatchThawStaleFreeze (issue 10 item 7): a replace killed
// right after it froze recovery leaves the array frozen. A heal pass
// recognises the freeze as one of ours whose process is gone and undoes
// it (OutcomeUnfrozen); after a second such kill, watch --heal does the
// same and reports an Unfrozen event. Neither writes the candidate.
func TestVMHealAndWatchThawStaleFreeze(t *testing.T) {
	c := qt.New(t)
	disks := guest.ScratchDisks(t, 3)
	ctx := context.Background()
	md := createArray(c, "/dev/md/thaw", []string{"--level=1", "--metadata=1.2", "--raid-devices=2"}, disks[:2])
	mdDev := "/dev/" + md
	defer guest.Mdadm(c, "--stop", mdDev)
	m := vmManager(t)
	store := &memStore{}
	a, err := m.Status(ctx, md)
	c.Assert(err, qt.IsNil)
	rec, err := NewRecord(a, time.Now())
	c.Assert(err, qt.IsNil)
	rs := &Records{}
	rs.Put(rec)
	c.Assert(store.Save(ctx, rs), qt.IsNil)
	c.Assert(m.Fail(ctx, md, disks[1].Name), qt.IsNil)
	c.Assert(m.Remove(ctx, md, disks[1].Name), qt.IsNil)
	blank := readDiskState(c, disks[2])

	killedReplace(c, md, disks[2].Path, m.ops.runDir, StepFreeze)
	c.Assert(guest.ReadAttr(c, md, "sync_action"), qt.Equals, "frozen")
	ds, err := m.Heal(ctx, HealOptions{Store: store})
	c.Assert(err, qt.IsNil)
	unfrozen := 0
	for _, d := range ds {
		t.Logf("heal: %s slot %d %s: %s", d.Array, d.Slot, d.Outcome, d.Reason)
		if d.Outcome == OutcomeUnfrozen {
			unfrozen++
		}
	}
	c.Check(unfrozen, qt.Equals, 1)
	c.Check(guest.ReadAttr(c, md, "sync_action"), qt.Not(qt.Equals), "frozen")
	c.Check(changedOutside(c, blank, readDiskState(c, disks[2]), nil), qt.HasLen, 0)

	killedReplace(c, md, disks[2].Path, m.ops.runDir, StepFreeze)
	c.Assert(guest.ReadAttr(c, md, "sync_action"), qt.Equals, "frozen")
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	ch, err := m.Watch(wctx, &WatchOptions{Store: store, Heal: true})
	c.Assert(err, qt.IsNil)
	var got *Event
	for e := range ch {
		t.Logf("event %s %s: %s", e.Type, e.Array, e.Reason)
		if e.Type == Unfrozen {
			got = &e
			cancel()
		}
	}
	c.Assert(got, qt.Not(qt.IsNil), qt.Commentf("no Unfrozen event within a minute"))
	c.Check(guest.ReadAttr(c, md, "sync_action"), qt.Not(qt.Equals), "frozen")
	c.Check(changedOutside(c, blank, readDiskState(c, disks[2]), nil), qt.HasLen, 0)
}
