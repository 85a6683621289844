package md

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	qt "github.com/frankban/quicktest"
	"github.com/go-mdraid/mdraid/sysfs"
)

// frozenRig is a degraded raid1 (slot 1 missing) whose recovery reads
// frozen, with a blank candidate vdz.
func frozenRig(t *testing.T) (*replaceRig, string, string) {
	r, path := replaceOn(t, "raid1-degraded-missing")
	c := qt.New(t)
	c.Assert(r.k.set(r.k.attr(r.name, "sync_action"), "frozen"), qt.IsNil)
	uuid := snapshotUUID(r.m.read(r.name))
	c.Assert(uuid, qt.Not(qt.Equals), "")
	return r, path, uuid
}

// deadRecord is what a replace killed after its freeze step leaves.
func deadRecord(r *replaceRig, uuid, cand, candDev string, written bool) freezeRecord {
	return freezeRecord{Array: r.name, UUID: uuid, PID: 999999, Time: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		Candidate: cand, CandDev: candDev, Slot: 1, Written: written}
}

// TestFreezeRecordRoundTrip checks the record is stored and read back
// exactly, and that a missing record is no error.
func TestFreezeRecordRoundTrip(t *testing.T) {
	c := qt.New(t)
	dir := t.TempDir()
	got, err := readFreeze(dir, "u")
	c.Assert(err, qt.IsNil)
	c.Assert(got, qt.IsNil)
	rec := freezeRecord{Array: "md0", UUID: "u", PID: 7, Time: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Candidate: "/dev/vdz", Slot: 1, Written: true}
	c.Assert(writeFreeze(dir, "u", rec), qt.IsNil)
	got, err = readFreeze(dir, "u")
	c.Assert(err, qt.IsNil)
	c.Assert(*got, qt.DeepEquals, rec)
	c.Assert(removeFreeze(dir, "u"), qt.IsNil)
	c.Assert(removeFreeze(dir, "u"), qt.IsNil)
	got, err = readFreeze(dir, "u")
	c.Assert(err, qt.IsNil)
	c.Assert(got, qt.IsNil)

	c.Assert(os.WriteFile(freezePath(dir, "bad"), []byte("{"), 0o644), qt.IsNil)
	_, err = readFreeze(dir, "bad")
	c.Assert(err, qt.ErrorMatches, "md: freeze record .*")
}

// TestExecuteRecordsFreeze checks that the record exists, naming this
// process, from the freeze step until the unfreeze, and is gone after.
func TestExecuteRecordsFreeze(t *testing.T) {
	c := qt.New(t)
	r, path := replaceOn(t, "raid1-degraded-missing")
	uuid := snapshotUUID(r.m.read(r.name))
	seen := map[StepKind]*freezeRecord{}
	r.m.ops.afterStep = func(k StepKind) error {
		rec, err := readFreeze(r.m.ops.runDir, uuid)
		c.Check(err, qt.IsNil)
		seen[k] = rec
		return nil
	}
	_, err := r.m.Replace(context.Background(), ReplaceRequest{Array: r.name, With: path, AllowImageFile: true})
	c.Assert(err, qt.IsNil)
	c.Assert(seen[StepFreeze], qt.Not(qt.IsNil))
	c.Check(seen[StepFreeze].PID, qt.Equals, os.Getpid())
	c.Check(seen[StepFreeze].Written, qt.IsFalse)
	c.Assert(seen[StepWriteSuperblock], qt.Not(qt.IsNil))
	c.Check(seen[StepWriteSuperblock].Written, qt.IsTrue)
	c.Check(seen[StepUnfreeze], qt.IsNil)
	rec, err := readFreeze(r.m.ops.runDir, uuid)
	c.Assert(err, qt.IsNil)
	c.Assert(rec, qt.IsNil)
}

// TestFreezeFailureUnfreezesAndForgets: a step that fails after the
// freeze unfreezes and removes the record.
func TestFreezeFailureUnfreezesAndForgets(t *testing.T) {
	c := qt.New(t)
	r, path := replaceOn(t, "raid1-degraded-missing")
	uuid := snapshotUUID(r.m.read(r.name))
	r.k.fail = map[string]error{"AddNewDisk": errors.New("boom")}
	_, err := r.m.Replace(context.Background(), ReplaceRequest{Array: r.name, With: path, AllowImageFile: true})
	c.Assert(err, qt.ErrorMatches, ".*Recovery was unfrozen.*")
	rec, err := readFreeze(r.m.ops.runDir, uuid)
	c.Assert(err, qt.IsNil)
	c.Assert(rec, qt.IsNil)
}

// TestRerunAdoptsStaleFreeze (issue 10 item 7): a replace that died after
// its freeze step leaves the array frozen and a record; the rerun must
// recognise the freeze as its own, carry on without freezing again, and
// unfreeze at the end.
func TestRerunAdoptsStaleFreeze(t *testing.T) {
	c := qt.New(t)
	r, path, uuid := frozenRig(t)
	ctx := context.Background()
	req := ReplaceRequest{Array: r.name, With: path, AllowImageFile: true}

	// Without a record: someone else froze it.
	_, err := r.m.PlanReplace(ctx, req)
	c.Assert(err, qt.ErrorIs, errArrayBusy)
	c.Assert(err, qt.ErrorMatches, ".*frozen by someone else.*")

	// A record whose replace still runs (it holds the lock): still busy.
	c.Assert(writeFreeze(r.m.ops.runDir, uuid, deadRecord(r, uuid, path, "", false)), qt.IsNil)
	unlock, err := lockArray(r.m.ops.runDir, uuid)
	c.Assert(err, qt.IsNil)
	_, err = r.m.PlanReplace(ctx, req)
	c.Assert(err, qt.ErrorIs, errArrayBusy)
	unlock()

	// The replace died: the rerun adopts the freeze.
	p, err := r.m.PlanReplace(ctx, req)
	c.Assert(err, qt.IsNil)
	c.Check(steps(p), qt.DeepEquals, []StepKind{StepClaim, StepWriteSuperblock, StepAdd, StepSetSlot, StepUnfreeze, StepVerify})
	res, err := r.m.ExecuteReplace(ctx, p)
	c.Assert(err, qt.IsNil)
	c.Check(res.Slot, qt.Equals, 1)
	calls := r.k.Calls()
	c.Check(calls[len(calls)-1], qt.Equals, "SetSyncAction(md0, idle)")
	for _, call := range calls {
		c.Check(call, qt.Not(qt.Equals), "SetSyncAction(md0, frozen)")
	}
	rec, err := readFreeze(r.m.ops.runDir, uuid)
	c.Assert(err, qt.IsNil)
	c.Assert(rec, qt.IsNil)
}

// TestStaleFreezeWrittenOtherDisk: the interrupted run had started
// writing its superblock on another disk; only that disk is accepted.
func TestStaleFreezeWrittenOtherDisk(t *testing.T) {
	c := qt.New(t)
	r, path, uuid := frozenRig(t)
	c.Assert(writeFreeze(r.m.ops.runDir, uuid, deadRecord(r, uuid, "/dev/vdq", "253:99", true)), qt.IsNil)
	_, err := r.m.PlanReplace(context.Background(), ReplaceRequest{Array: r.name, With: path, AllowImageFile: true})
	c.Assert(err, qt.ErrorIs, errArrayBusy)
	c.Assert(err, qt.ErrorMatches, `.*interrupted replace \(process 999999, .*\) that wrote a spare superblock on /dev/vdq; run that replace again with /dev/vdq to finish it, or, if that disk is gone, run mdctl heal to undo the freeze`)
	c.Assert(r.k.Calls(), qt.HasLen, 0)
}

// TestStatusShowsFreeze checks the status model's freeze and its hint.
func TestStatusShowsFreeze(t *testing.T) {
	c := qt.New(t)
	r, path, uuid := frozenRig(t)
	ctx := context.Background()
	a, err := r.m.Status(ctx, r.name)
	c.Assert(err, qt.IsNil)
	c.Assert(a.Freeze, qt.Not(qt.IsNil))
	c.Check(a.Freeze.ByReplace, qt.IsFalse)
	c.Check(a.Freeze.Hint, qt.Matches, `recovery is frozen, not by an mdctl replace: .*/sys/block/md0/md/sync_action`)

	c.Assert(writeFreeze(r.m.ops.runDir, uuid, deadRecord(r, uuid, path, "", false)), qt.IsNil)
	a, err = r.m.Status(ctx, r.name)
	c.Assert(err, qt.IsNil)
	c.Assert(a.Freeze, qt.Not(qt.IsNil))
	c.Check(a.Freeze.ByReplace, qt.IsTrue)
	c.Check(a.Freeze.Stale, qt.IsTrue)
	c.Check(a.Freeze.PID, qt.Equals, 999999)
	c.Check(a.Freeze.Hint, qt.Matches, `recovery was left frozen by an interrupted replace \(process 999999\) .*`)

	unlock, err := lockArray(r.m.ops.runDir, uuid)
	c.Assert(err, qt.IsNil)
	defer unlock()
	a, err = r.m.Status(ctx, r.name)
	c.Assert(err, qt.IsNil)
	c.Check(a.Freeze.Stale, qt.IsFalse)
	c.Check(a.Freeze.Hint, qt.Matches, `a replace \(process 999999\) is running.*`)

	c.Assert(r.k.set(r.k.attr(r.name, "sync_action"), "idle"), qt.IsNil)
	a, err = r.m.Status(ctx, r.name)
	c.Assert(err, qt.IsNil)
	c.Check(a.Freeze, qt.IsNil)
}

// TestThawStale checks that heal's thaw pins an unslotted spare of the
// interrupted run to its slot, unfreezes and forgets the record, and
// leaves a live replace alone.
func TestThawStale(t *testing.T) {
	c := qt.New(t)
	r, _, uuid := frozenRig(t)
	rec := deadRecord(r, uuid, "/dev/vdz", "", true)
	rec.Device = "vdz"
	c.Assert(writeFreeze(r.m.ops.runDir, uuid, rec), qt.IsNil)
	c.Assert(r.k.addedMember(r.name, "vdz"), qt.IsNil)

	unlock, err := lockArray(r.m.ops.runDir, uuid)
	c.Assert(err, qt.IsNil)
	did, err := r.m.thawStale(r.name, uuid)
	c.Assert(err, qt.IsNil)
	c.Assert(did, qt.Equals, "")
	unlock()
	c.Assert(r.k.Calls(), qt.HasLen, 0)

	did, err = r.m.thawStale(r.name, uuid)
	c.Assert(err, qt.IsNil)
	c.Check(did, qt.Matches, "pinned vdz to slot 1; unfroze recovery left frozen by an interrupted replace .*")
	c.Check(r.k.Calls(), qt.DeepEquals, []string{"SetSlot(md0, vdz, 1)", "SetSyncAction(md0, idle)"})
	got, err := readFreeze(r.m.ops.runDir, uuid)
	c.Assert(err, qt.IsNil)
	c.Assert(got, qt.IsNil)
}

// TestHealThawsStaleFreeze: heal undoes a stale freeze before deciding,
// and reports it; a dry run does not.
func TestHealThawsStaleFreeze(t *testing.T) {
	c := qt.New(t)
	r, path, uuid := frozenRig(t)
	c.Assert(writeFreeze(r.m.ops.runDir, uuid, deadRecord(r, uuid, path, "", false)), qt.IsNil)
	ctx := context.Background()
	rep, err := r.m.Discover(ctx)
	c.Assert(err, qt.IsNil)

	dry := r.m.heal(ctx, rep, &Records{}, healConfig{dryRun: true})
	c.Assert(r.k.Calls(), qt.HasLen, 0)
	for _, d := range dry {
		c.Check(d.Outcome, qt.Not(qt.Equals), OutcomeUnfrozen)
	}
	c.Check(rep.Arrays[0].Activity.Kind, qt.Equals, sysfs.ActionFrozen)

	ds := r.m.heal(ctx, rep, &Records{}, healConfig{})
	c.Assert(ds, qt.Not(qt.HasLen), 0)
	c.Check(ds[0].Outcome, qt.Equals, OutcomeUnfrozen)
	c.Check(strings.Contains(ds[0].Reason, "unfroze recovery"), qt.IsTrue)
	c.Check(r.k.Calls(), qt.DeepEquals, []string{"SetSyncAction(md0, idle)"})
	c.Check(rep.Arrays[0].Activity.Kind, qt.Not(qt.Equals), sysfs.ActionFrozen)
}

// TestFreezeAcceptedButNotDone: a frozen write the kernel accepts while
// the sync runs on (Linux 6.1 when a signal interrupts action_store) is
// undone with idle, the record removed, and the replace fails before
// anything is written, saying so.
func TestFreezeAcceptedButNotDone(t *testing.T) {
	c := qt.New(t)
	r, path := replaceOn(t, "raid1-degraded-missing")
	uuid := snapshotUUID(r.m.read(r.name))
	before, err := os.ReadFile(path)
	c.Assert(err, qt.IsNil)
	n := 0
	r.k.onCall = func(name string) {
		if name != "SetSyncAction" {
			return
		}
		n++
		if n == 1 {
			r.k.fail = map[string]error{"SetSyncAction": fmt.Errorf("md: %s: frozen written to sync_action 3 times, each accepted by the kernel, and the sync still runs: %w", r.name, errSyncRunsOn)}
		} else {
			r.k.fail = nil
		}
	}
	_, err = r.m.Replace(context.Background(), ReplaceRequest{Array: r.name, With: path, AllowImageFile: true})
	c.Assert(err, qt.ErrorIs, errSyncRunsOn)
	c.Check(err, qt.ErrorMatches, `(?s).*the sync still runs.*idle was written back.*`)
	c.Check(r.k.Calls(), qt.Contains, "SetSyncAction("+r.name+", idle)")
	for _, call := range r.k.Calls() {
		c.Check(strings.HasPrefix(call, "AddNewDisk("), qt.IsFalse, qt.Commentf("%s after a freeze that did not take", call))
	}
	rec, err := readFreeze(r.m.ops.runDir, uuid)
	c.Assert(err, qt.IsNil)
	c.Check(rec, qt.IsNil)
	after, err := os.ReadFile(path)
	c.Assert(err, qt.IsNil)
	c.Check(bytes.Equal(before, after), qt.IsTrue, qt.Commentf("the candidate was written"))
}

// TestSetSyncActionConfirmsTheStop: sysKernel writes frozen again while
// sync_completed still shows a running sync, and gives up after
// stopWrites writes with errSyncRunsOn; a stop that took is one write.
func TestSetSyncActionConfirmsTheStop(t *testing.T) {
	c := qt.New(t)
	sys := t.TempDir()
	md := filepath.Join(sys, "devices", "virtual", "block", "md0", "md")
	c.Assert(os.MkdirAll(md, 0o755), qt.IsNil)
	c.Assert(os.MkdirAll(filepath.Join(sys, "block"), 0o755), qt.IsNil)
	c.Assert(os.Symlink("../devices/virtual/block/md0", filepath.Join(sys, "block", "md0")), qt.IsNil)
	fsys, err := sysfs.NewFS(sys)
	c.Assert(err, qt.IsNil)
	k := sysKernel{fs: fsys}
	write := func(name, v string) { c.Assert(os.WriteFile(filepath.Join(md, name), []byte(v+"\n"), 0o644), qt.IsNil) }

	write("sync_action", "check")
	write("sync_completed", "none")
	c.Check(k.SetSyncAction("md0", sysfs.ActionFrozen), qt.IsNil)

	write("sync_action", "check")
	write("sync_completed", "128 / 65536")
	err = k.SetSyncAction("md0", sysfs.ActionFrozen)
	c.Check(err, qt.ErrorIs, errSyncRunsOn)
	c.Check(err, qt.ErrorMatches, `md: md0: frozen written to sync_action 3 times, each accepted by the kernel, and the sync still runs: .*`)

	// Idle: the sync that runs afterwards is a recovery started again,
	// not the one stopped.
	write("sync_action", "recover")
	c.Check(k.SetSyncAction("md0", sysfs.ActionIdle), qt.IsNil)
}
