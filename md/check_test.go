package md

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	qt "github.com/frankban/quicktest"
	"golang.org/x/sys/unix"

	"github.com/go-mdraid/mdraid/internal/fixture"
	"github.com/go-mdraid/mdraid/sysfs"
)

// scrubKernel is fakeKernel with the kernel's check behaviour, as
// docs/scrub.md describes it (Linux 6.1 to 7.2):
//   - §2: writing check/repair while a sync runs is EBUSY; otherwise it
//     starts the sync thread: sync_action reads the action.
//   - §3: sync_min writes are EBUSY while a sync runs and rounded down to
//     8 sectors; a check starts at sync_min; on interruption (idle) the
//     kernel sets sync_min to the point reached; on completion it resets
//     sync_min to 0 and sync_max to max.
//   - §4: sync_completed is "done / total" while it runs, none after.
//   - §5: mismatch_cnt is reset to 0 when a check or repair starts.
//   - §6: last_sync_action is set when the thread starts.
//
// advance moves a running check forward (the test's passing time).
type scrubKernel struct {
	*fakeKernel
	running  bool
	done     uint64
	total    uint64
	perStep  uint64 // sectors per advance
	mismatch map[uint64]uint64
}

func (k *scrubKernel) read(array, attr string) string {
	b, _ := os.ReadFile(k.attr(array, attr))
	return strings.TrimSpace(string(b))
}

func (k *scrubKernel) SetSyncMin(array string, sectors uint64) error {
	if err := k.record("SetSyncMin", array, sectors); err != nil {
		return err
	}
	if k.running {
		return &os.PathError{Op: "write", Path: k.attr(array, "sync_min"), Err: unix.EBUSY}
	}
	return k.set(k.attr(array, "sync_min"), fmt.Sprint(sectors/8*8))
}

func (k *scrubKernel) SetSyncAction(array string, act sysfs.SyncAction) error {
	if err := k.record("SetSyncAction", array, act); err != nil {
		return err
	}
	switch {
	case act == sysfs.ActionIdle && k.running: // interrupted: §3
		k.running = false
		k.set(k.attr(array, "sync_min"), fmt.Sprint(k.done))
		k.set(k.attr(array, "sync_completed"), "none")
		return k.set(k.attr(array, "sync_action"), "idle")
	case k.running:
		return &os.PathError{Op: "write", Path: k.attr(array, "sync_action"), Err: unix.EBUSY}
	case act == sysfs.ActionCheck || act == sysfs.ActionRepair:
		min, _ := strconv.ParseUint(k.read(array, "sync_min"), 10, 64)
		kib, _ := strconv.ParseUint(k.read(array, "component_size"), 10, 64)
		k.running, k.done, k.total = true, min, kib*2
		k.set(k.attr(array, "mismatch_cnt"), "0")
		k.set(k.attr(array, "last_sync_action"), string(act))
		k.set(k.attr(array, "sync_completed"), fmt.Sprintf("%d / %d", k.done, k.total))
		return k.set(k.attr(array, "sync_action"), string(act))
	}
	return k.set(k.attr(array, "sync_action"), string(act))
}

// advance moves the check forward by perStep sectors, counting the
// mismatches placed in that range; at the end it completes (§3).
func (k *scrubKernel) advance(array string) {
	if !k.running {
		return
	}
	next := min(k.done+k.perStep, k.total)
	cnt, _ := strconv.ParseUint(k.read(array, "mismatch_cnt"), 10, 64)
	for at, n := range k.mismatch {
		if at >= k.done && at < next {
			cnt += n
		}
	}
	k.set(k.attr(array, "mismatch_cnt"), fmt.Sprint(cnt))
	k.done = next
	if k.done >= k.total {
		k.running = false
		k.set(k.attr(array, "sync_min"), "0")
		k.set(k.attr(array, "sync_max"), "max")
		k.set(k.attr(array, "sync_completed"), "none")
		k.set(k.attr(array, "sync_action"), "idle")
		return
	}
	k.set(k.attr(array, "sync_completed"), fmt.Sprintf("%d / %d", k.done, k.total))
}

// checkRig is a capture with a scrub kernel and a simulated clock: every
// sleep of the check advances the clock and the kernel.
type checkRig struct {
	*replaceRig
	k   *scrubKernel
	now time.Time
}

func newCheckRig(t testing.TB, name string) *checkRig {
	t.Helper()
	r := &checkRig{replaceRig: newReplaceRig(t, name), now: time.Date(2026, 3, 1, 1, 0, 0, 0, time.UTC)}
	r.k = &scrubKernel{fakeKernel: r.replaceRig.k, perStep: 16384}
	r.m.ops.k = r.k
	r.m.now = func() time.Time { return r.now }
	r.m.ops.sleep = func(ctx context.Context, d time.Duration) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		r.now = r.now.Add(d)
		r.k.advance(r.name)
		return nil
	}
	return r
}

// setAttr changes a captured attribute.
func (r *checkRig) setAttr(t testing.TB, attr, v string) {
	t.Helper()
	if err := os.WriteFile(r.k.attr(r.name, attr), []byte(v+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// snapshotMD returns every file under the array's md directory.
func (r *checkRig) snapshotMD(t testing.TB) map[string]string {
	t.Helper()
	out := map[string]string{}
	root := r.m.fs.Path("block", r.name, "md")
	dir, err := filepath.EvalSymlinks(root)
	if err != nil {
		t.Fatal(err)
	}
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			b, _ := os.ReadFile(p)
			out[p] = string(b)
		}
		return nil
	})
	return out
}

func TestCheckRefusals(t *testing.T) {
	tests := []struct {
		name     string
		fixture  string
		change   func(t testing.TB, r *checkRig)
		req      CheckRequest
		check    Check
		sentinel error
		// skipAll: with All the array is skipped, not refused
		// (CheckRequest.All): there is nothing a check could do now.
		skipAll bool
	}{
		{name: "raid0", fixture: "raid0", check: CheckRedundant, sentinel: ErrNotCheckable, skipAll: true},
		{name: "linear", fixture: "linear", check: CheckRedundant, sentinel: ErrNotCheckable, skipAll: true},
		{name: "degraded", fixture: "raid1-degraded-missing", check: CheckNotDegraded, sentinel: ErrNotCheckable, skipAll: true},
		{name: "failed member", fixture: "raid1-failed", check: CheckNotDegraded, sentinel: ErrNotCheckable, skipAll: true},
		{name: "recovering", fixture: "raid1-recovering", sentinel: ErrNotCheckable, skipAll: true},
		{name: "raid5 degraded", fixture: "raid5-degraded", check: CheckNotDegraded, sentinel: ErrNotCheckable, skipAll: true},
		{name: "inactive", fixture: "raid5-inactive", sentinel: ErrNotCheckable, skipAll: true},
		{name: "read-auto", fixture: "raid1-v1.2", check: CheckReadWrite, sentinel: ErrNotCheckable, skipAll: true,
			change: func(t testing.TB, r *checkRig) { r.setAttr(t, "array_state", "read-auto") }},
		{name: "readonly", fixture: "raid1-v1.2", check: CheckReadWrite, sentinel: ErrNotCheckable, skipAll: true,
			change: func(t testing.TB, r *checkRig) { r.setAttr(t, "array_state", "readonly") }},
		{name: "frozen", fixture: "raid1-v1.2", check: CheckNotFrozen, sentinel: ErrCheckBusy,
			change: func(t testing.TB, r *checkRig) { r.setAttr(t, "sync_action", "frozen") }},
		{name: "already checking", fixture: "raid1-v1.2", check: CheckSyncIdle, sentinel: ErrCheckBusy, skipAll: true,
			change: func(t testing.TB, r *checkRig) {
				r.setAttr(t, "sync_action", "check")
				r.setAttr(t, "sync_completed", "100 / 129024")
			}},
		{name: "resyncing", fixture: "raid1-v1.2", check: CheckSyncIdle, sentinel: ErrCheckBusy, skipAll: true,
			change: func(t testing.TB, r *checkRig) { r.setAttr(t, "sync_action", "resync") }},
		{name: "pending", fixture: "raid1-v1.2", check: CheckSyncIdle, sentinel: ErrCheckBusy, skipAll: true,
			change: func(t testing.TB, r *checkRig) { r.setAttr(t, "sync_completed", "delayed") }},
		{name: "sync_max set", fixture: "raid1-v1.2", check: CheckSyncMaxIsMax, sentinel: ErrCheckBusy,
			change: func(t testing.TB, r *checkRig) { r.setAttr(t, "sync_max", "4096") }},
		{name: "garbage", fixture: "raid1-v1.2", check: CheckFactsReadable, sentinel: ErrNotCheckable,
			change: func(t testing.TB, r *checkRig) { r.setAttr(t, "degraded", "lots") }},
		{name: "cancel idle", fixture: "raid1-v1.2", req: CheckRequest{Cancel: true}, check: CheckScrubRunning, sentinel: ErrCheckBusy},
		{name: "cancel resync", fixture: "raid1-v1.2", req: CheckRequest{Cancel: true}, check: CheckScrubRunning, sentinel: ErrCheckBusy,
			change: func(t testing.TB, r *checkRig) { r.setAttr(t, "sync_action", "resync") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := qt.New(t)
			r := newCheckRig(t, tt.fixture)
			if tt.change != nil {
				tt.change(t, r)
			}
			before := r.snapshotMD(t)
			req := tt.req
			req.Arrays, req.Wait = []string{r.name}, !req.Cancel
			res, err := r.m.Check(context.Background(), req)
			c.Assert(err, qt.ErrorIs, ErrRefused)
			c.Check(err, qt.ErrorIs, tt.sentinel)
			c.Assert(res, qt.HasLen, 1)
			c.Check(res[0].Result, qt.Equals, CheckRefused)
			var re *RefusedError
			c.Assert(errors.As(res[0].Err, &re), qt.IsTrue)
			c.Check(re.Op, qt.Equals, "check")
			if tt.check != "" {
				c.Check(re.Check, qt.Equals, tt.check, qt.Commentf("%v", re))
			}
			c.Check(r.k.Calls(), qt.HasLen, 0)
			c.Check(r.snapshotMD(t), qt.DeepEquals, before)

			// The dry run refuses as the real run does, writing nothing.
			req.DryRun = true
			res, err = r.m.Check(context.Background(), req)
			c.Check(err, qt.ErrorIs, tt.sentinel)
			c.Assert(res, qt.HasLen, 1)
			c.Check(res[0].Result, qt.Equals, CheckRefused)
			c.Check(r.k.Calls(), qt.HasLen, 0)
			c.Check(r.snapshotMD(t), qt.DeepEquals, before)
			if req.Cancel {
				return
			}

			// Over all arrays, a skip is named with its reason and is no
			// error; every other refusal stays one.
			for _, dry := range []bool{false, true} {
				res, err = r.m.Check(context.Background(), CheckRequest{All: true, Wait: true, DryRun: dry})
				c.Assert(res, qt.HasLen, 1)
				if tt.skipAll {
					c.Check(err, qt.IsNil)
					c.Check(res[0].Result, qt.Equals, CheckSkipped)
					c.Check(res[0].Skipped, qt.Equals, re.Reason)
				} else {
					c.Check(err, qt.ErrorIs, tt.sentinel)
					c.Check(res[0].Result, qt.Equals, CheckRefused)
					c.Check(res[0].Skipped, qt.Equals, "")
				}
				c.Check(r.k.Calls(), qt.HasLen, 0)
				c.Check(r.snapshotMD(t), qt.DeepEquals, before)
			}
		})
	}
}

// TestCheckDryRun: a dry run plans as the real run does and writes
// nothing, neither to the array nor to the store.
func TestCheckDryRun(t *testing.T) {
	c := qt.New(t)
	r := newCheckRig(t, "raid1-v1.2")
	before := r.snapshotMD(t)
	res, err := r.m.Check(context.Background(), CheckRequest{Arrays: []string{"md0"}, Wait: true, Duration: time.Hour, DryRun: true})
	c.Assert(err, qt.IsNil)
	c.Assert(res, qt.HasLen, 1)
	c.Check(res[0].Result, qt.Equals, CheckWouldStart)
	c.Check(res[0].Action, qt.Equals, sysfs.ActionCheck)
	c.Check(res[0].UUID, qt.Equals, "a0916a09-5d11-e029-f9a1-a21c8170c28d")
	c.Check(r.k.Calls(), qt.HasLen, 0)
	c.Check(r.snapshotMD(t), qt.DeepEquals, before)

	res, err = r.m.Check(context.Background(), CheckRequest{Arrays: []string{"md0"}, Repair: true, DryRun: true})
	c.Assert(err, qt.IsNil)
	c.Check(res[0].Result, qt.Equals, CheckWouldStart)
	c.Check(res[0].Action, qt.Equals, sysfs.ActionRepair)
	c.Check(r.k.Calls(), qt.HasLen, 0)

	r.setAttr(t, "sync_action", "check")
	r.setAttr(t, "sync_completed", "100 / 129024")
	before = r.snapshotMD(t)
	res, err = r.m.Check(context.Background(), CheckRequest{Arrays: []string{"md0"}, Cancel: true, DryRun: true})
	c.Assert(err, qt.IsNil)
	c.Check(res[0].Result, qt.Equals, CheckWouldStop)
	c.Check(res[0].PositionSectors, qt.Equals, uint64(100))
	c.Check(r.k.Calls(), qt.HasLen, 0)
	c.Check(r.snapshotMD(t), qt.DeepEquals, before)
}

func TestCheckStartOnly(t *testing.T) {
	c := qt.New(t)
	r := newCheckRig(t, "raid1-v1.2")
	res, err := r.m.Check(context.Background(), CheckRequest{Arrays: []string{"md0"}})
	c.Assert(err, qt.IsNil)
	c.Check(res[0].Result, qt.Equals, CheckStarted)
	c.Check(res[0].UUID, qt.Equals, "a0916a09-5d11-e029-f9a1-a21c8170c28d")
	c.Check(r.k.Calls(), qt.DeepEquals, []string{"SetSyncMax(md0, 4611686018427387904)", "SetSyncAction(md0, check)"})
}

func TestCheckWaitFinds(t *testing.T) {
	for _, tt := range []struct {
		fixture string
		repair  bool
		mism    map[uint64]uint64
		want    CheckOutcome
		meaning string
	}{
		{fixture: "raid1-v1.2", want: CheckClean},
		{fixture: "raid1-v1.2", mism: map[uint64]uint64{4096: 128, 40000: 128}, want: CheckMismatches, meaning: "harmless"},
		{fixture: "raid5", mism: map[uint64]uint64{100: 8}, want: CheckMismatches, meaning: "real inconsistency"},
		{fixture: "raid1-v1.2", repair: true, mism: map[uint64]uint64{4096: 128}, want: CheckRepaired},
	} {
		t.Run(fmt.Sprint(tt.fixture, tt.repair, len(tt.mism)), func(t *testing.T) {
			c := qt.New(t)
			r := newCheckRig(t, tt.fixture)
			r.k.mismatch = tt.mism
			var seen int
			res, err := r.m.Check(context.Background(), CheckRequest{Arrays: []string{"md0"}, Wait: true, Repair: tt.repair,
				Progress: func(CheckProgress) { seen++ }})
			c.Assert(err, qt.IsNil)
			got := res[0]
			c.Check(got.Result, qt.Equals, tt.want)
			c.Check(got.Finished, qt.IsTrue)
			var total uint64
			for _, n := range tt.mism {
				total += n
			}
			c.Check(got.MismatchSectors, qt.Equals, total)
			c.Check(got.PositionSectors, qt.Equals, got.SizeSectors)
			c.Check(strings.Contains(got.Meaning, tt.meaning), qt.IsTrue, qt.Commentf("%q", got.Meaning))
			c.Check(seen > 0, qt.IsTrue)
		})
	}
}

// TestCheckTimeBoxResume runs a pass in segments: each stops at the
// deadline with its cursor stored, the next resumes there, and the last
// records the pass's whole mismatch total.
func TestCheckTimeBoxResume(t *testing.T) {
	c := qt.New(t)
	r := newCheckRig(t, "raid1-v1.2") // 129024 sectors per member
	r.k.mismatch = map[uint64]uint64{1000: 128, 70000: 128}
	st := &memStore{}
	// Slot records kept by record must survive the check's saves.
	c.Assert(st.Save(context.Background(), &Records{Arrays: []Record{testRecord()}}), qt.IsNil)
	req := CheckRequest{Arrays: []string{"md0"}, Duration: 3 * time.Second, Store: st}
	res, err := r.m.Check(context.Background(), req)
	c.Assert(err, qt.IsNil)
	c.Check(res[0].Result, qt.Equals, CheckStopped)
	c.Check(res[0].Finished, qt.IsFalse)
	c.Check(res[0].CursorSaved, qt.IsTrue)
	c.Check(res[0].MismatchSectors, qt.Equals, uint64(128))
	rs, err := st.Load(context.Background())
	c.Assert(err, qt.IsNil)
	c.Check(rs.Arrays, qt.HasLen, 1)
	rec, ok := rs.Check("a0916a09-5d11-e029-f9a1-a21c8170c28d")
	c.Assert(ok, qt.IsTrue)
	c.Check(rec.Action, qt.Equals, sysfs.ActionCheck)
	c.Check(rec.Cursor, qt.Equals, uint64(3*16384))
	c.Check(rec.Mismatches, qt.Equals, uint64(128))
	c.Check(r.k.read("md0", "sync_action"), qt.Equals, "idle")

	// A reboot: the kernel forgets sync_min (§3).
	r.setAttr(t, "sync_min", "0")
	r.k.fakeKernel.calls = nil
	res, err = r.m.Check(context.Background(), req)
	c.Assert(err, qt.IsNil)
	c.Check(res[0].ResumedFrom, qt.Equals, uint64(3*16384))
	c.Check(r.k.Calls()[:3], qt.DeepEquals, []string{"SetSyncMin(md0, 49152)", "SetSyncMax(md0, 4611686018427387904)", "SetSyncAction(md0, check)"})
	c.Check(res[0].Result, qt.Equals, CheckStopped)
	// Segments until the pass ends.
	for i := 0; i < 5 && res[0].Result == CheckStopped; i++ {
		res, err = r.m.Check(context.Background(), req)
		c.Assert(err, qt.IsNil)
	}
	c.Check(res[0].Result, qt.Equals, CheckMismatches)
	c.Check(res[0].MismatchSectors, qt.Equals, uint64(256))
	rs, err = st.Load(context.Background())
	c.Assert(err, qt.IsNil)
	c.Check(rs.Arrays, qt.HasLen, 1)
	rec, _ = rs.Check("a0916a09-5d11-e029-f9a1-a21c8170c28d")
	c.Check(rec.Pending(), qt.IsFalse)
	c.Check(rec.Cursor, qt.Equals, uint64(0))
	c.Check(rec.LastAction, qt.Equals, sysfs.ActionCheck)
	c.Check(rec.LastMismatches, qt.Equals, uint64(256))
	c.Check(rec.LastFinished, qt.Equals, r.now)
}

// TestCheckTimeBoxBeforeFirstCheckpoint: a time-boxed check stopped at
// its deadline before the kernel's first position checkpoint leaves
// sync_min at 0, as a finished one does (docs/scrub.md §3). It is
// reported stopped, not finished and clean, and its cursor stays at the
// start of the pass.
func TestCheckTimeBoxBeforeFirstCheckpoint(t *testing.T) {
	c := qt.New(t)
	r := newCheckRig(t, "raid1-v1.2")
	r.k.perStep = 0 // no checkpoint before the deadline
	st := &memStore{}
	res, err := r.m.Check(context.Background(), CheckRequest{Arrays: []string{"md0"}, Duration: 3 * time.Second, Store: st})
	c.Assert(err, qt.IsNil)
	c.Check(r.k.Calls(), qt.DeepEquals, []string{"SetSyncMax(md0, 4611686018427387904)", "SetSyncAction(md0, check)", "SetSyncAction(md0, idle)", "SetSyncMax(md0, max)"})
	c.Check(r.k.read("md0", "sync_max"), qt.Equals, "max")
	c.Check(r.k.read("md0", "sync_min"), qt.Equals, "0")
	c.Check(res[0].Result, qt.Equals, CheckStopped)
	c.Check(res[0].Finished, qt.IsFalse)
	c.Check(res[0].PositionSectors, qt.Equals, uint64(0))
	c.Check(res[0].CursorSaved, qt.IsTrue)
	rs, err := st.Load(context.Background())
	c.Assert(err, qt.IsNil)
	rec, ok := rs.Check(res[0].UUID)
	c.Assert(ok, qt.IsTrue)
	c.Check(rec.Action, qt.Equals, sysfs.ActionCheck)
	c.Check(rec.Pending(), qt.IsTrue)
	c.Check(rec.Cursor, qt.Equals, uint64(0))
	c.Check(rec.LastFinished.IsZero(), qt.IsTrue)
}

// TestCheckStoppedBeforeFirstCheckpoint: another program freezes the
// array, or writes idle, while the check waits for its first checkpoint.
// The kernel interrupts the pass and leaves sync_min at 0, as at the end
// of a pass, but leaves sync_max at the guard the check wrote (it resets
// it only on completion, docs/scrub.md §8.5): the check is reported
// stopped, with its cursor at the start, not finished, and sync_max is
// max again. (Mutant: finished := pos == 0 && !stopped, ignoring the
// guard, reports the idle case finished and clean.)
func TestCheckStoppedBeforeFirstCheckpoint(t *testing.T) {
	for _, act := range []sysfs.SyncAction{sysfs.ActionFrozen, sysfs.ActionIdle} {
		t.Run(string(act), func(t *testing.T) {
			c := qt.New(t)
			r := newCheckRig(t, "raid1-v1.2")
			r.k.perStep = 0 // no checkpoint
			r.m.ops.sleep = func(ctx context.Context, d time.Duration) error {
				r.now = r.now.Add(d)
				if r.k.running { // another program stops the pass
					r.k.running = false
					r.k.set(r.k.attr("md0", "sync_min"), fmt.Sprint(r.k.done))
					r.k.set(r.k.attr("md0", "sync_completed"), "none")
					r.k.set(r.k.attr("md0", "sync_action"), string(act))
				}
				return nil
			}
			st := &memStore{}
			res, err := r.m.Check(context.Background(), CheckRequest{Arrays: []string{"md0"}, Wait: true, Store: st})
			c.Assert(err, qt.IsNil)
			c.Check(r.k.Calls(), qt.DeepEquals, []string{"SetSyncMax(md0, 4611686018427387904)", "SetSyncAction(md0, check)", "SetSyncMax(md0, max)"})
			c.Check(r.k.read("md0", "sync_max"), qt.Equals, "max")
			c.Check(res[0].Result, qt.Equals, CheckStopped)
			c.Check(res[0].Finished, qt.IsFalse)
			c.Check(res[0].CursorSaved, qt.IsTrue)
			rs, err := st.Load(context.Background())
			c.Assert(err, qt.IsNil)
			rec, ok := rs.Check(res[0].UUID)
			c.Assert(ok, qt.IsTrue)
			c.Check(rec.Pending(), qt.IsTrue)
			c.Check(rec.Cursor, qt.Equals, uint64(0))
			c.Check(rec.LastFinished.IsZero(), qt.IsTrue)
		})
	}
}

// TestCheckGuardLeftBehind: a guard left in sync_max by an interrupted
// check whose mdctl did not put max back is not someone else's limit:
// the next check runs. Any other sync_max is refused (TestCheckRefusals).
func TestCheckGuardLeftBehind(t *testing.T) {
	c := qt.New(t)
	r := newCheckRig(t, "raid1-v1.2")
	r.setAttr(t, "sync_max", fmt.Sprint(passGuard(0)))
	res, err := r.m.Check(context.Background(), CheckRequest{Arrays: []string{"md0"}, Wait: true})
	c.Assert(err, qt.IsNil)
	c.Check(res[0].Result, qt.Equals, CheckClean)
	c.Check(r.k.read("md0", "sync_max"), qt.Equals, "max")
}

// TestCheckGuardUndone: when the pass cannot start, the guard written to
// sync_max is taken back and the refusal says nothing was changed.
func TestCheckGuardUndone(t *testing.T) {
	c := qt.New(t)
	r := newCheckRig(t, "raid1-v1.2")
	r.k.fail = map[string]error{"SetSyncAction": &os.PathError{Op: "write", Path: "sync_action", Err: unix.EBUSY}}
	res, err := r.m.Check(context.Background(), CheckRequest{Arrays: []string{"md0"}})
	c.Check(err, qt.ErrorIs, ErrRefused)
	c.Check(res[0].Err, qt.ErrorIs, ErrRefused)
	c.Check(res[0].Err, qt.ErrorMatches, `.*\(nothing was changed\).*`)
	c.Check(r.k.Calls(), qt.DeepEquals, []string{"SetSyncMax(md0, 4611686018427387904)", "SetSyncAction(md0, check)", "SetSyncMax(md0, max)"})
	c.Check(r.k.read("md0", "sync_max"), qt.Equals, "max")
}

// TestCheckWithoutStoreFullPass: without a store, a sync_min left by an
// earlier interruption is reset, so that the pass covers everything.
func TestCheckWithoutStoreFullPass(t *testing.T) {
	c := qt.New(t)
	r := newCheckRig(t, "raid1-v1.2")
	r.setAttr(t, "sync_min", "8192")
	_, err := r.m.Check(context.Background(), CheckRequest{Arrays: []string{"md0"}})
	c.Assert(err, qt.IsNil)
	c.Check(r.k.Calls(), qt.DeepEquals, []string{"SetSyncMin(md0, 0)", "SetSyncMax(md0, 4611686018427387904)", "SetSyncAction(md0, check)"})
}

func TestCheckCancelSavesCursor(t *testing.T) {
	c := qt.New(t)
	r := newCheckRig(t, "raid1-v1.2")
	st := &memStore{}
	_, err := r.m.Check(context.Background(), CheckRequest{Arrays: []string{"md0"}, Store: st})
	c.Assert(err, qt.IsNil)
	r.k.advance("md0")
	r.k.advance("md0")
	res, err := r.m.Check(context.Background(), CheckRequest{Arrays: []string{"md0"}, Store: st, Cancel: true})
	c.Assert(err, qt.IsNil)
	c.Check(res[0].Result, qt.Equals, CheckStopped)
	c.Check(res[0].PositionSectors, qt.Equals, uint64(32768))
	rs, _ := st.Load(context.Background())
	rec, _ := rs.Check(res[0].UUID)
	c.Check(rec.Cursor, qt.Equals, uint64(32768))
	c.Check(r.k.read("md0", "sync_action"), qt.Equals, "idle")
}

// TestCheckCtrlC: cancelling the context stops the waiting, never the
// check: no idle is written.
func TestCheckCtrlC(t *testing.T) {
	c := qt.New(t)
	r := newCheckRig(t, "raid1-v1.2")
	ctx, cancel := context.WithCancel(context.Background())
	r.m.ops.sleep = func(ctx context.Context, d time.Duration) error { cancel(); return ctx.Err() }
	res, err := r.m.Check(ctx, CheckRequest{Arrays: []string{"md0"}, Wait: true, Duration: time.Hour})
	c.Assert(err, qt.IsNil)
	c.Check(res[0].Result, qt.Equals, CheckStarted)
	c.Check(r.k.Calls(), qt.DeepEquals, []string{"SetSyncMax(md0, 4611686018427387904)", "SetSyncAction(md0, check)"})
	c.Check(r.k.read("md0", "sync_action"), qt.Equals, "check")
}

// TestCheckCorruptStore: a store that cannot be loaded fails the call
// before anything is written.
func TestCheckCorruptStore(t *testing.T) {
	c := qt.New(t)
	r := newCheckRig(t, "raid1-v1.2")
	bad := errors.New("corrupt")
	before := r.snapshotMD(t)
	_, err := r.m.Check(context.Background(), CheckRequest{Arrays: []string{"md0"}, Store: &memStore{loadErr: bad}})
	c.Check(err, qt.ErrorIs, bad)
	c.Check(r.k.Calls(), qt.HasLen, 0)
	c.Check(r.snapshotMD(t), qt.DeepEquals, before)
}

// TestCheckPlanChanged: the executor's re-read right before the write
// refuses when the array changed since the plan.
func TestCheckPlanChanged(t *testing.T) {
	c := qt.New(t)
	r := newCheckRig(t, "raid1-v1.2")
	f := r.m.gatherCheck("md0")
	p, err := planCheck(f, CheckRequest{}, nil)
	c.Assert(err, qt.IsNil)
	r.setAttr(t, "sync_action", "recover")
	err = r.m.startCheck(p, CheckRequest{}, nil)
	c.Check(err, qt.ErrorIs, ErrPlanChanged)
	c.Check(err, qt.ErrorIs, ErrRefused)
	c.Check(r.k.Calls(), qt.HasLen, 0)
}

// TestCheckPlanDiffers: the executor's plan succeeds but differs from
// the one shown (someone wrote sync_min meanwhile, so the pass would
// start elsewhere): refused, nothing written.
func TestCheckPlanDiffers(t *testing.T) {
	c := qt.New(t)
	r := newCheckRig(t, "raid1-v1.2")
	p, err := planCheck(r.m.gatherCheck("md0"), CheckRequest{}, nil)
	c.Assert(err, qt.IsNil)
	c.Assert(p.SetMin, qt.IsFalse)
	r.setAttr(t, "sync_min", "8192")
	err = r.m.startCheck(p, CheckRequest{}, nil)
	c.Check(err, qt.ErrorIs, ErrPlanChanged)
	c.Check(err, qt.ErrorIs, ErrRefused)
	c.Check(r.k.Calls(), qt.HasLen, 0)
	c.Check(r.k.read("md0", "sync_action"), qt.Equals, "idle")
}

// TestRecordKeepsChecks: a recording pass keeps the check records.
func TestRecordKeepsChecks(t *testing.T) {
	c := qt.New(t)
	m := fixtureManager(t, fixture.Named(t, "raid1-v1.2"))
	st := &memStore{}
	chk := CheckRecord{UUID: "a0916a09-5d11-e029-f9a1-a21c8170c28d", LastAction: sysfs.ActionCheck,
		LastFinished: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), LastMismatches: 128}
	c.Assert(st.Save(context.Background(), &Records{Checks: []CheckRecord{chk}}), qt.IsNil)
	res, err := m.Record(context.Background(), RecordOptions{Store: st})
	c.Assert(err, qt.IsNil)
	c.Assert(res.Saved, qt.IsTrue)
	rs, err := st.Load(context.Background())
	c.Assert(err, qt.IsNil)
	c.Check(rs.Arrays, qt.HasLen, 1)
	rs, err = st.Load(context.Background())
	c.Assert(err, qt.IsNil)
	got, ok := rs.Check(chk.UUID)
	c.Assert(ok, qt.IsTrue)
	c.Check(got, qt.DeepEquals, chk)
}

func TestCheckRecordValidate(t *testing.T) {
	u := "a0916a09-5d11-e029-f9a1-a21c8170c28d"
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		name string
		rec  CheckRecord
		ok   bool
	}{
		{"pending", CheckRecord{UUID: u, Action: "check", Cursor: 64, PassStarted: at}, true},
		{"finished", CheckRecord{UUID: u, LastAction: "repair", LastFinished: at}, true},
		{"bad uuid", CheckRecord{UUID: "x"}, false},
		{"cursor without action", CheckRecord{UUID: u, Cursor: 64}, false},
		{"unaligned", CheckRecord{UUID: u, Action: "check", Cursor: 3, PassStarted: at}, false},
		{"bad action", CheckRecord{UUID: u, Action: "resync", PassStarted: at}, false},
		{"no start", CheckRecord{UUID: u, Action: "check"}, false},
		{"last without time", CheckRecord{UUID: u, LastAction: "check"}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := (&Records{Checks: []CheckRecord{tt.rec}}).Validate()
			qt.Check(t, err == nil, qt.Equals, tt.ok, qt.Commentf("%v", err))
		})
	}
	err := (&Records{Checks: []CheckRecord{{UUID: u}, {UUID: u}}}).Validate()
	qt.Check(t, err, qt.IsNotNil)
}

// testRecord is a valid slot record of another array.
func testRecord() Record {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	return Record{UUID: "11111111-2222-3333-4444-555555555555", Metadata: "1.2", Level: "raid1", RaidDisks: 1,
		Slots: []SlotRecord{{Slot: 0, ByPath: "pci-0000:00:10.0", LastHealthy: at}}}
}

// TestCheckContinue: Continue resumes only arrays with a stored cursor;
// the others are skipped with nothing written.
func TestCheckContinue(t *testing.T) {
	c := qt.New(t)
	r := newCheckRig(t, "raid1-v1.2")
	st := &memStore{}
	req := CheckRequest{Arrays: []string{"md0"}, Duration: 2 * time.Second, Store: st, Continue: true}
	res, err := r.m.Check(context.Background(), req)
	c.Assert(err, qt.IsNil)
	c.Check(res[0].Result, qt.Equals, CheckSkipped)
	c.Check(r.k.Calls(), qt.HasLen, 0)

	req.Continue = false
	res, err = r.m.Check(context.Background(), req)
	c.Assert(err, qt.IsNil)
	c.Assert(res[0].Result, qt.Equals, CheckStopped)
	req.Continue = true
	res, err = r.m.Check(context.Background(), req)
	c.Assert(err, qt.IsNil)
	c.Check(res[0].Result, qt.Equals, CheckStopped)
	c.Check(res[0].ResumedFrom, qt.Equals, uint64(2*16384))
	// A repair does not continue a check's pass.
	req.Repair = true
	res, err = r.m.Check(context.Background(), req)
	c.Assert(err, qt.IsNil)
	c.Check(res[0].Result, qt.Equals, CheckSkipped)
}
