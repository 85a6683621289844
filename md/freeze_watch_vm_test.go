//go:build vmtest

package md_test

// VM tests of md that use md/watch or md/store, which import md: they
// live in the external test package, with md's VM test helpers exported
// to it by export_vm_test.go.

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	qt "github.com/frankban/quicktest"

	"github.com/go-mdraid/mdraid/internal/vmtest/guest"
	"github.com/go-mdraid/mdraid/md"
	"github.com/go-mdraid/mdraid/md/store"
	"github.com/go-mdraid/mdraid/md/watch"
)

// TestVMHealAndWatchThawStaleFreeze (issue 10 item 7): a replace killed
// right after it froze recovery leaves the array frozen. A heal pass
// recognises the freeze as one of ours whose process is gone and undoes
// it (OutcomeUnfrozen); after a second such kill, watch --heal does the
// same and reports an Unfrozen event. Neither writes the candidate.
func TestVMHealAndWatchThawStaleFreeze(t *testing.T) {
	c := qt.New(t)
	disks := guest.ScratchDisks(t, 3)
	ctx := context.Background()
	array := md.CreateArray(c, "/dev/md/thaw", []string{"--level=1", "--metadata=1.2", "--raid-devices=2"}, disks[:2])
	mdDev := "/dev/" + array
	defer guest.Mdadm(c, "--stop", mdDev)
	m := md.VMManager(t)
	st := store.NewFile(filepath.Join(t.TempDir(), "slots.json"))
	a, err := m.Status(ctx, array)
	c.Assert(err, qt.IsNil)
	rec, err := md.NewRecord(a, time.Now())
	c.Assert(err, qt.IsNil)
	rs := &md.Records{}
	rs.Put(rec)
	c.Assert(st.Save(ctx, rs), qt.IsNil)
	c.Assert(m.Fail(ctx, array, disks[1].Name), qt.IsNil)
	c.Assert(m.Remove(ctx, array, disks[1].Name), qt.IsNil)
	blank := md.ReadDiskState(c, disks[2])

	md.KilledReplace(c, array, disks[2].Path, md.RunDirOf(m), md.StepFreeze)
	c.Assert(guest.ReadAttr(c, array, "sync_action"), qt.Equals, "frozen")
	ds, err := m.Heal(ctx, md.HealOptions{Store: st})
	c.Assert(err, qt.IsNil)
	unfrozen := 0
	for _, d := range ds {
		t.Logf("heal: %s slot %d %s: %s", d.Array, d.Slot, d.Outcome, d.Reason)
		if d.Outcome == md.OutcomeUnfrozen {
			unfrozen++
		}
	}
	c.Check(unfrozen, qt.Equals, 1)
	c.Check(guest.ReadAttr(c, array, "sync_action"), qt.Not(qt.Equals), "frozen")
	c.Check(md.ChangedOutside(c, blank, md.ReadDiskState(c, disks[2]), nil), qt.HasLen, 0)

	md.KilledReplace(c, array, disks[2].Path, md.RunDirOf(m), md.StepFreeze)
	c.Assert(guest.ReadAttr(c, array, "sync_action"), qt.Equals, "frozen")
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	ch, err := watch.Start(wctx, m, &watch.Options{Store: st, Heal: true})
	c.Assert(err, qt.IsNil)
	var got *watch.Event
	for e := range ch {
		t.Logf("event %s %s: %s", e.Type, e.Array, e.Reason)
		if e.Type == watch.Unfrozen {
			got = &e
			cancel()
		}
	}
	c.Assert(got, qt.Not(qt.IsNil), qt.Commentf("no Unfrozen event within a minute"))
	c.Check(guest.ReadAttr(c, array, "sync_action"), qt.Not(qt.Equals), "frozen")
	c.Check(md.ChangedOutside(c, blank, md.ReadDiskState(c, disks[2]), nil), qt.HasLen, 0)
}
