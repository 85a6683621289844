package watch

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	qt "github.com/frankban/quicktest"

	"github.com/go-mdraid/mdraid/internal/mdtest"
	"github.com/go-mdraid/mdraid/md"
	capture "github.com/go-mdraid/mdraid/md/mdtest"
	"github.com/go-mdraid/mdraid/md/store"
	"github.com/go-mdraid/mdraid/sysfs"
)

// openFDs counts this process's open descriptors.
func openFDs(t testing.TB) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd")
	}
	return len(ents)
}

// next waits for the next event.
func next(t testing.TB, ch <-chan Event) Event {
	t.Helper()
	select {
	case e, ok := <-ch:
		if !ok {
			t.Fatal("watch channel closed")
		}
		return e
	case <-time.After(10 * time.Second):
		t.Fatal("no event within 10s")
	}
	return Event{}
}

// scanCounter counts the watcher's snapshots (Options.Snapshot), so that
// a test can wait for rescans to have happened, observably, before it
// asserts that they sent nothing: a wait of so many milliseconds passes
// without a rescan on a loaded host, and proves nothing then.
type scanCounter struct {
	mu      sync.Mutex
	n       int
	changed chan struct{} // closed and replaced at each snapshot
}

func newScanCounter() *scanCounter { return &scanCounter{changed: make(chan struct{})} }

// snapshot is the Options.Snapshot hook.
func (s *scanCounter) snapshot(*md.Report, error) {
	s.mu.Lock()
	s.n++
	close(s.changed)
	s.changed = make(chan struct{})
	s.mu.Unlock()
}

// fullRescans waits until n whole scans that began after the call have
// finished. A scan takes at most three snapshots and sends its events
// before the next scan's first snapshot, so once 3n+1 snapshots were
// taken after the call, the first n scans that began after it have sent
// all they would send.
func (s *scanCounter) fullRescans(t testing.TB, n int) {
	t.Helper()
	s.mu.Lock()
	target := s.n + 3*n + 1
	s.mu.Unlock()
	deadline := time.After(10 * time.Second)
	for {
		s.mu.Lock()
		got, ch := s.n, s.changed
		s.mu.Unlock()
		if got >= target {
			return
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("%d of %d snapshots within 10s", got, target)
		}
	}
}

// TestWatchFixture watches a captured system. A sysfs tree in a test
// directory cannot notify (only kernfs can), so this exercises the rescan
// path, records, the events and the clean stop; the VM tests exercise
// the kernel's notifications.
func TestWatchFixture(t *testing.T) {
	c := qt.New(t)
	sys := capture.Capture(t, "boot-mirror")
	m, err := md.Open(sys.Config())
	c.Assert(err, qt.IsNil)
	before := openFDs(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var st store.Memory
	scans := newScanCounter()
	ch, err := Start(ctx, m, &Options{
		Rescan:   20 * time.Millisecond,
		Mdstat:   filepath.Join(t.TempDir(), "no-mdstat"),
		Store:    &st,
		Heal:     true,
		Logger:   slog.New(slog.NewTextHandler(testWriter{t}, nil)),
		Snapshot: scans.snapshot,
	})
	c.Assert(err, qt.IsNil)

	e := next(t, ch)
	c.Assert(e.Type, qt.Equals, SlotRecorded)
	c.Assert(e.Array, qt.Equals, "md127")
	c.Assert(e.Name, qt.Equals, "boot")
	rs, err := st.Load(ctx)
	c.Assert(err, qt.IsNil)
	c.Assert(rs.Arrays, qt.HasLen, 1)
	c.Assert(rs.Arrays[0].Slots[1].ByPath, qt.Equals, "pci-0000:00:11.0")

	// vdb fails and leaves its slot, as md_error and the recovery thread
	// would show it.
	sys.Fail("vdb")
	e = next(t, ch)
	c.Assert(e.Type, qt.Equals, Fail)
	c.Assert(e.Member, qt.Equals, "vdb")
	c.Assert(*e.Slot, qt.Equals, 1)
	c.Assert(next(t, ch).Type, qt.Equals, DegradedArray)
	// Heal finds the recorded port still holding the failed member's
	// disk; the replace planner refuses it (here already because the
	// captured "disk" is an image file, not a block device).
	e = next(t, ch)
	c.Assert(e.Type, qt.Equals, HealRefused)
	c.Assert(*e.Slot, qt.Equals, 1)
	c.Assert(e.Member, qt.Equals, "vdb")
	c.Assert(e.ByPath, qt.Equals, "pci-0000:00:11.0")
	c.Assert(e.Reason, qt.Matches, "md: refusing to replace in md127: .*")

	// Nothing is repeated on later rescans (two whole ones, seen to
	// have happened); the record stays.
	scans.fullRescans(t, 2)
	select {
	case e := <-ch:
		c.Fatalf("unexpected event %v", e)
	default:
	}
	rs2, err := st.Load(ctx)
	c.Assert(err, qt.IsNil)
	c.Assert(rs2, qt.DeepEquals, rs)

	cancel()
	for range ch {
	}
	c.Assert(openFDs(t), qt.Equals, before)
}

func TestWatchRefusesHealWithoutStore(t *testing.T) {
	m, _ := fixtureSystem(t, "boot-mirror")
	_, err := Start(context.Background(), m, &Options{Heal: true})
	qt.Assert(t, err, qt.ErrorMatches, "md: watch: heal needs a Store of slot records")
}

// testWriter sends log lines to the test log.
type testWriter struct{ t testing.TB }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(string(b))
	return len(b), nil
}

// TestWatchHealEvents checks how heal decisions become events: refusals
// once per slot and reason, deferrals once per reason unless a sync
// runs.
func TestWatchHealEvents(t *testing.T) {
	c := qt.New(t)
	m, _ := fixtureSystem(t, "boot-mirror")
	w := &watcher{m: m, o: (&Options{}).withDefaults(), refused: map[string]string{}}
	rs := mdtest.RecordsOf(t, mirrorHealthy())
	ctx := context.Background()
	types := func(evs []Event) []string {
		out := []string{}
		for _, e := range evs {
			out = append(out, string(e.Type)+": "+e.Reason)
		}
		return out
	}
	// The recorded port of slot 1 (00:11.0) holds the capture's vdb.
	missing := report(mirrorMissing())
	first := types(w.heal(ctx, missing, rs))
	c.Assert(first, qt.HasLen, 1)
	c.Assert(first[0], qt.Matches, "HealRefused: md: refusing to replace in md127: .*")
	c.Assert(w.heal(ctx, missing, rs), qt.HasLen, 0)
	// A rebuild runs: deferred, not reported.
	c.Assert(types(w.heal(ctx, report(mirrorRecovering(10)), rs)), qt.DeepEquals, []string{})
	// A pass that made no decision for the slot (the deferral above was
	// about the whole array) changed nothing about the refusal: the same
	// refusal is not reported again.
	c.Assert(types(w.heal(ctx, missing, rs)), qt.DeepEquals, []string{})
	// Frozen by someone: deferred and reported once, with the reason.
	frozen := report(mirrorMissing())
	frozen.Arrays[0].Activity = md.Activity{Kind: sysfs.ActionFrozen}
	frozen.Arrays[0].Freeze = &md.Freeze{Hint: "recovery is frozen, not by an mdctl replace"}
	got := types(w.heal(ctx, frozen, rs))
	c.Assert(got, qt.HasLen, 1)
	c.Assert(got[0], qt.Matches, "HealDeferred: md: heal deferred: sync_action is frozen: recovery is frozen, not by an mdctl replace")
	c.Assert(w.heal(ctx, frozen, rs), qt.HasLen, 0)
	// Healthy again: the memory of refusals is dropped, so a new failure
	// is reported again.
	c.Assert(w.heal(ctx, report(mirrorHealthy()), rs), qt.HasLen, 0)
	c.Assert(w.heal(ctx, missing, rs), qt.HasLen, 1)
	// Records that cannot be used: every degraded array is refused once.
	w.storeErrFull = &store.Error{Err: store.ErrCorrupt, Reason: "checksum"}
	bad := types(w.heal(ctx, missing, nil))
	c.Assert(bad, qt.DeepEquals, []string{"HealRefused: md: slot records are corrupt: checksum"})
	c.Assert(w.heal(ctx, missing, nil), qt.HasLen, 0)
}

// TestWatchReady: Ready is called once, after the first snapshot's events
// were sent, however many rescans follow.
func TestWatchReady(t *testing.T) {
	c := qt.New(t)
	m, _ := fixtureSystem(t, "boot-mirror")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var st store.Memory
	var calls atomic.Int32
	ready := make(chan struct{})
	scans := newScanCounter()
	ch, err := Start(ctx, m, &Options{
		Rescan: 10 * time.Millisecond,
		Mdstat: filepath.Join(t.TempDir(), "no-mdstat"),
		Store:  &st,
		Ready: func() {
			if calls.Add(1) == 1 {
				close(ready)
			}
		},
		Snapshot: scans.snapshot,
	})
	c.Assert(err, qt.IsNil)
	<-ready
	// The first snapshot's event was sent before Ready: it is waiting.
	select {
	case e := <-ch:
		c.Check(e.Type, qt.Equals, SlotRecorded)
	default:
		c.Fatal("Ready was called before the first snapshot's events were sent")
	}
	scans.fullRescans(t, 3) // several rescans, seen to have happened
	c.Check(calls.Load(), qt.Equals, int32(1))
	cancel()
	for range ch {
	}
}

// TestHealFailureReportedOnce: a heal attempt that keeps failing, not
// retried (md's TestHealNotRetried) but decided on every pass, is
// reported once (HealFailed).
func TestHealFailureReportedOnce(t *testing.T) {
	c := qt.New(t)
	m, _ := fixtureSystem(t, "boot-mirror")
	w := &watcher{m: m, o: (&Options{Heal: true}).withDefaults(), refused: map[string]string{}}
	r := report(mirrorMissing())
	d := md.Decision{Array: "md127", UUID: r.Arrays[0].UUID, Slot: 1, ByPath: mdtest.ByPathOf(1), Device: "vdc", Disk: "/dev/vdc",
		Outcome: md.OutcomeFailed, Reason: "ADD_NEW_DISK: invalid argument; not retried until the disk or the array changes",
		Err: md.ErrHealNotRetried}
	var events []Event
	for range 50 {
		events = append(events, w.report(r, []md.Decision{d})...)
	}
	c.Assert(events, qt.HasLen, 1)
	c.Check(events[0].Type, qt.Equals, HealFailed)
	c.Check(events[0].Reason, qt.Equals, d.Reason)
}

// snapshotCall is one call of Options.Snapshot.
type snapshotCall struct {
	r   *md.Report
	err error
}

// TestWatchSnapshot: Options.Snapshot gets each snapshot before its
// events are sent, and the error when a snapshot cannot be taken (here
// the sysfs tree is moved away), then the next good one.
func TestWatchSnapshot(t *testing.T) {
	c := qt.New(t)
	m, sys := fixtureSystem(t, "boot-mirror")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	calls := make(chan snapshotCall, 1000)
	ch, err := Start(ctx, m, &Options{
		Rescan:   10 * time.Millisecond,
		Mdstat:   filepath.Join(t.TempDir(), "no-mdstat"),
		Store:    &store.Memory{},
		Snapshot: func(r *md.Report, err error) { calls <- snapshotCall{r, err} },
	})
	c.Assert(err, qt.IsNil)
	c.Check(next(t, ch).Type, qt.Equals, SlotRecorded)
	select {
	case s := <-calls:
		c.Assert(s.err, qt.IsNil)
		c.Assert(s.r, qt.Not(qt.IsNil))
		c.Assert(s.r.Arrays, qt.HasLen, 1)
		c.Check(s.r.Arrays[0].Device, qt.Equals, "md127")
	default:
		c.Fatal("the first event was sent before Snapshot was called")
	}
	// wait for one call matching ok, draining the others
	wait := func(what string, ok func(snapshotCall) bool) {
		t.Helper()
		deadline := time.After(10 * time.Second)
		for {
			select {
			case s := <-calls:
				if ok(s) {
					return
				}
			case <-ch:
			case <-deadline:
				t.Fatalf("no snapshot call with %s within 10s", what)
			}
		}
	}
	block := filepath.Join(sys, "block")
	c.Assert(os.Rename(block, block+".away"), qt.IsNil)
	wait("an error", func(s snapshotCall) bool { return s.err != nil && s.r == nil })
	c.Assert(os.Rename(block+".away", block), qt.IsNil)
	wait("a report", func(s snapshotCall) bool { return s.err == nil && s.r != nil && len(s.r.Arrays) == 1 })
	cancel()
	for range ch {
	}
}
