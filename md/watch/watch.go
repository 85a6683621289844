package watch

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/go-mdraid/mdraid/md"
	"github.com/go-mdraid/mdraid/sysfs"
)

// Options configures Start. A nil *Options, and zero fields, mean the
// defaults.
type Options struct {
	// Rescan is the interval of the full rescan that backs up the
	// kernel's notifications; default one minute.
	Rescan time.Duration
	// Mdstat is the path of /proc/mdstat, whose notification announces
	// arrays that appear and go; default "/proc/mdstat".
	Mdstat string
	// Store, when set, receives the record of every fully healthy array
	// (md.NewRecord): SlotRecorded is reported when a record is new or its
	// disks or ports changed, and the LastHealthy times are refreshed at
	// most every RecordRefresh.
	Store md.Store
	// RecordRefresh is how often an unchanged record's LastHealthy times
	// are rewritten; default one hour.
	RecordRefresh time.Duration
	// Heal runs a heal pass (see md.Manager.Heal) whenever an array is
	// degraded, with the records in Store, which must be set. It also
	// listens for the kernel's block device uevents, so that a disk
	// plugged into a recorded port is seen at once.
	Heal bool
	// ReAdd makes heal also re-add a former member that reappears in its
	// slot's recorded port (md.HealOptions.ReAdd), remembering each
	// re-add in Store; it needs Heal.
	ReAdd bool
	// Spares maps an array UUID to the number of spares it should have;
	// fewer gives SparesMissing (mdadm.conf's spares=).
	Spares map[string]int
	// Logger receives the watcher's decisions and errors; default none.
	Logger *slog.Logger
	// Ready, when set, is called once, from the watcher's goroutine,
	// after the first snapshot is taken and every file it polls is armed
	// (and the first snapshot's events are sent): a change made after it
	// returns is reported. A daemon can use it to signal readiness
	// (sd_notify); tests use it instead of sleeping.
	Ready func()
	// Snapshot, when set, is called from the watcher's goroutine after
	// each snapshot it takes (md.Manager.Discover, or, after a
	// notification on one array's files, that array read again and the
	// others as the last snapshot had them), before the events of that
	// snapshot are sent: with the Report and a nil error, or
	// with a nil Report and the error when the snapshot could not be
	// taken. The watcher never changes a Report after handing it over
	// (records and heal leave it as it was), so the callee may keep it
	// and read it from other goroutines; it must not change it, and it
	// must return quickly, for the watch waits. A metrics endpoint
	// serves the latest one (metrics.Latest.Set) instead of reading
	// sysfs on every scrape. A Fail or FailSpare that a member's state
	// file showed when it notified is sent before the snapshot that
	// shows it (see the package doc, Wake-ups): a consumer that reads
	// the latest snapshot on such an event may see the array as it was
	// just before, for the time one array takes to read.
	Snapshot func(r *md.Report, err error)
	// LastResort, when positive, starts an array that has stayed
	// inactive that long since the watcher first saw it so, with the
	// members it has, when they can serve its data: the decision and
	// the write of md.Manager.Run (mdctl run), array_state=read-auto.
	// Each start is LastResortStarted; an array that cannot be started
	// is LastResortRefused, once per reason, and is never started. It
	// is the last-resort unit of contrib/systemd for systems without
	// systemd.
	LastResort time.Duration
}

func (o *Options) withDefaults() Options {
	var w Options
	if o != nil {
		w = *o
	}
	if w.Rescan <= 0 {
		w.Rescan = time.Minute
	}
	if w.Mdstat == "" {
		w.Mdstat = "/proc/mdstat"
	}
	if w.RecordRefresh <= 0 {
		w.RecordRefresh = time.Hour
	}
	if w.Logger == nil {
		w.Logger = slog.New(slog.DiscardHandler)
	}
	return w
}

// ErrUnsupported is returned by Start on systems other than Linux.
var ErrUnsupported = errors.New("md: watch is only supported on Linux")

// Start reports changes to the md arrays of m as they happen, until ctx is done;
// then it closes the channel and every file it opened.
//
// It is woken by the kernel, not by a timer: it polls (POLLPRI) each
// array's array_state, sync_action, sync_completed and degraded, each
// member's dev-*/state, and /proc/mdstat, which the kernel notifies when
// arrays start, stop, fail, gain or lose members and start or end a sync
// (md-format.md §7). After each notification it takes a fresh snapshot
// and reports the difference to the previous one as Events: a
// notification on an array's own files reads that array again
// (md.Manager.DiscoverNames), so that a wake-up costs the same however
// many other arrays there are; anything else (/proc/mdstat alone, a
// uevent, arrays that appeared or went) reads every array
// (md.Manager.Discover). A full rescan every Options.Rescan is the
// safety net.
//
// The first snapshot reports what mdadm --monitor reports at start-up:
// degraded arrays and missing spares. With Options.Store, healthy
// arrays are recorded; with Options.Heal, degraded arrays are healed
// from those records (HealStarted, HealRefused, HealFailed).
//
// Start fails at once if ctx is done, Heal is asked for without a Store,
// or the poll set cannot be created; later errors (a snapshot that
// cannot be read, a store that cannot be written) are logged and the
// watch goes on. The channel must be drained: the watch blocks while it is
// full.
func Start(ctx context.Context, m *md.Manager, opts *Options) (<-chan Event, error) {
	o := opts.withDefaults()
	if o.Heal && o.Store == nil {
		return nil, errors.New("md: watch: heal needs a Store of slot records")
	}
	if o.ReAdd && !o.Heal {
		return nil, errors.New("md: watch: ReAdd is part of Heal: set Heal too")
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	w := &watcher{m: m, o: o, refused: map[string]string{}}
	if err := w.open(); err != nil {
		return nil, fmt.Errorf("md: watch: %w", err)
	}
	ch := make(chan Event, 64)
	go w.run(ctx, ch)
	return ch, nil
}

// watcher is the state of one watch.
type watcher struct {
	m            *md.Manager
	o            Options
	prev         *md.Report
	refused      map[string]string // "uuid/slot" -> the HealRefused reason last reported
	storeErr     string            // last store error logged
	storeErrFull error             // the error itself, for HealRefused
	sys          *pollSet
	history      md.HealHistory // heal attempts that failed, not retried until something changes
	// wait, when set (by tests), stands in for the poll set's wait: it
	// sees each timeout the loop chooses and says what woke it (nothing:
	// the timeout passed).
	wait func(timeout time.Duration) (u wakeup, ok bool)
	// clock, when set (by tests), is the time the loop schedules its
	// looks again and rescans by; default time.Now. A wait that
	// returns with nothing woken counts as its whole timeout passed.
	clock func() time.Time
	lr    lastResort // Options.LastResort's memory
}

// scan takes a snapshot, reports its difference to the previous one, and
// then records and heals. With names, only those arrays (kernel names)
// are read again and the others are as the previous snapshot has them
// (see snapshot). It reports whether it read every array (full), and ok
// false when ctx is done.
func (w *watcher) scan(ctx context.Context, ch chan<- Event, names []string) (full, ok bool) {
	// New files are armed before the snapshot that sees them, so a
	// change between the two is not lost: scan again while the set of
	// polled files grows.
	for range 3 {
		r, all, err := w.snapshot(ctx, names)
		if err != nil {
			if ctx.Err() != nil {
				return false, false
			}
			w.o.Logger.Error("snapshot failed", "err", err)
			if w.o.Snapshot != nil {
				w.o.Snapshot(nil, err)
			}
			return true, true
		}
		if all {
			names, full = nil, true
		}
		if w.o.Snapshot != nil {
			w.o.Snapshot(r, nil)
		}
		evs := diff(w.prev, r, w.o.Spares)
		w.prev = r
		if !send(ctx, ch, evs) {
			return full, false
		}
		if !w.sys.reconcile(w.m.FS(), w.o.Logger, names) {
			break
		}
	}
	if !send(ctx, ch, w.lastResortPass(ctx, w.prev)) {
		return full, false
	}
	if w.o.Store == nil {
		return full, true
	}
	rs := w.loadRecords(ctx)
	if rs != nil {
		if !send(ctx, ch, w.record(ctx, w.prev, rs)) {
			return full, false
		}
	}
	if w.o.Heal {
		return full, send(ctx, ch, w.heal(ctx, w.prev, rs))
	}
	return full, true
}

// snapshot takes the next snapshot. With names it reads only those
// arrays (md.Manager.DiscoverNames) and takes the others from the
// previous snapshot, in its order, dated now (the Manager's clock), as if
// Discover had found them unchanged; a notification on an array's own
// files says nothing about the others. Anything that makes that
// unsure reads every array instead (md.Manager.Discover), and all is
// then true: no previous snapshot, arrays that appeared or went since,
// a name that is not one of them, or an error.
func (w *watcher) snapshot(ctx context.Context, names []string) (r *md.Report, all bool, err error) {
	if len(names) > 0 {
		r, err := w.partial(ctx, names)
		if err == nil {
			return r, false, nil
		}
		if ctx.Err() != nil {
			return nil, false, ctx.Err()
		}
		w.o.Logger.Debug("reading every array", "why", err)
	}
	r, err = w.m.Discover(ctx)
	return r, true, err
}

// partial is snapshot for names; an error says why it could not be.
func (w *watcher) partial(ctx context.Context, names []string) (*md.Report, error) {
	prev := w.prev
	if prev == nil || prev.Error != "" {
		return nil, errors.New("no previous snapshot")
	}
	listed, err := w.m.FS().Arrays()
	if err != nil {
		return nil, err
	}
	if len(listed) != len(prev.Arrays) {
		return nil, errors.New("arrays appeared or went")
	}
	for i := range prev.Arrays {
		if _, found := slices.BinarySearch(listed, prev.Arrays[i].Device); !found {
			return nil, errors.New("arrays appeared or went")
		}
	}
	for _, n := range names {
		if _, found := slices.BinarySearch(listed, n); !found {
			return nil, fmt.Errorf("no array %q", n)
		}
	}
	fresh, err := w.m.DiscoverNames(ctx, names...)
	if err != nil {
		return nil, err
	}
	// The previous snapshot is never changed (see Options.Snapshot):
	// this one gets its own list.
	r := &md.Report{Version: fresh.Version, Time: fresh.Time, Arrays: slices.Clone(prev.Arrays)}
	for _, a := range fresh.Arrays {
		i := slices.IndexFunc(r.Arrays, func(b md.Array) bool { return b.Device == a.Device })
		if i < 0 {
			return nil, fmt.Errorf("array %q is not in the previous snapshot", a.Device)
		}
		r.Arrays[i] = a
	}
	return r, nil
}

// early reports the failures (Fail, FailSpare) that the state files read
// when they notified already show, before the scan that
// follows re-reads their arrays: that scan opens and reads every file of
// the array and its members' superblocks, tens of milliseconds in which
// the failure is known. The events come from diff, between the previous
// snapshot and a copy of it with those members' flags as read
// (withStates), which then stands as the previous snapshot, so that the
// scan does not report them again. It returns false when ctx is done.
func (w *watcher) early(ctx context.Context, ch chan<- Event, states map[string]map[string]sysfs.MemberState, now time.Time) bool {
	if len(states) == 0 || w.prev == nil || w.prev.Error != "" {
		return true
	}
	r := withStates(w.prev, states, now)
	if r == nil {
		return true
	}
	evs := diff(w.prev, r, w.o.Spares)
	if len(evs) == 0 {
		return true
	}
	for _, e := range evs {
		if e.Type != Fail && e.Type != FailSpare {
			// Only a failure is worth sending before the re-read: a
			// member that became in sync may have got a slot since
			// the previous snapshot, which only the re-read knows.
			return true
		}
	}
	w.o.Logger.Debug("early", "events", len(evs))
	w.prev = r
	return send(ctx, ch, evs)
}

// withStates returns a copy of r, taken at now, in which the members
// named in states (array -> member -> flags) have those flags, or nil
// when that changes no member. r is not changed: the reports handed to
// Options.Snapshot stay as they were. Only the flags change, which is
// all that diff compares for member events; the rest of each array
// (its health, its slots' states) is the scan's to update.
func withStates(r *md.Report, states map[string]map[string]sysfs.MemberState, now time.Time) *md.Report {
	out := *r
	out.Time = now
	out.Arrays = slices.Clone(r.Arrays)
	changed := false
	for i := range out.Arrays {
		a := &out.Arrays[i]
		st := states[a.Device]
		if st == nil {
			continue
		}
		set := func(m *md.Member) *md.Member {
			f, ok := st[m.Device]
			if !ok {
				// states are keyed by the dev-* name, '!' for '/'.
				f, ok = st[strings.ReplaceAll(m.Device, "/", "!")]
			}
			if !ok || slices.Equal(f, m.Flags) {
				return m
			}
			c := *m
			c.Flags = slices.Clone(f)
			changed = true
			return &c
		}
		a.Slots = slices.Clone(a.Slots)
		for j := range a.Slots {
			if m := a.Slots[j].Member; m != nil {
				a.Slots[j].Member = set(m)
			}
			if m := a.Slots[j].Replacement; m != nil {
				a.Slots[j].Replacement = set(m)
			}
		}
		a.Spares = slices.Clone(a.Spares)
		for j := range a.Spares {
			a.Spares[j] = *set(&a.Spares[j])
		}
		a.Faulty = slices.Clone(a.Faulty)
		for j := range a.Faulty {
			a.Faulty[j] = *set(&a.Faulty[j])
		}
	}
	if !changed {
		return nil
	}
	return &out
}

func send(ctx context.Context, ch chan<- Event, evs []Event) bool {
	for _, e := range evs {
		select {
		case ch <- e:
		case <-ctx.Done():
			return false
		}
	}
	return true
}

// loadRecords loads the store; a store never written counts as empty.
// It returns nil when the records cannot be used, and logs why once.
func (w *watcher) loadRecords(ctx context.Context) *md.Records {
	rs, err := w.o.Store.Load(ctx)
	if errors.Is(err, fs.ErrNotExist) {
		rs, err = &md.Records{}, nil
	}
	if err != nil {
		if msg := err.Error(); msg != w.storeErr {
			w.o.Logger.Error("slot records unusable; not recording or healing until fixed", "err", err)
			w.storeErr = msg
		}
		w.storeErrFull = err
		return nil
	}
	w.storeErr, w.storeErrFull = "", nil
	return rs
}

// record saves the records of healthy arrays in r (md.Manager.Record)
// and reports SlotRecorded for each record that is new or changed.
func (w *watcher) record(ctx context.Context, r *md.Report, rs *md.Records) []Event {
	res, err := w.m.Record(ctx, md.RecordOptions{Store: w.o.Store, Report: r, Records: rs, Refresh: w.o.RecordRefresh})
	if err != nil {
		w.o.Logger.Error("saving slot records", "err", err)
		return nil
	}
	var out []Event
	for i := range res.Arrays {
		if ra := &res.Arrays[i]; ra.Changed {
			w.o.Logger.Info("recording slots", "array", ra.Array.Device, "uuid", ra.Array.UUID)
			out = append(out, arrayEvent(SlotRecorded, &ra.Array, r.Time))
		}
	}
	return out
}

// heal runs a heal pass over the degraded arrays of r and turns its
// decisions into events: HealStarted for a disk added, HealFailed for an
// attempt that failed, HealRefused and HealDeferred (ErrHealDeferred:
// recovery is frozen, a sync is pending, ...) once per slot and reason,
// and Unfrozen when heal undid a freeze an interrupted replace left. A
// deferral because a sync runs is not reported: the Rebuild events are.
func (w *watcher) heal(ctx context.Context, r *md.Report, rs *md.Records) []Event {
	var decisions []md.Decision
	if rs == nil {
		decisions = refuseAll(r, w.storeErrFull)
	} else {
		// Decisions are logged below, once each, not on every pass.
		var err error
		decisions, err = w.m.Heal(ctx, md.HealOptions{Report: r, Records: rs, History: &w.history, ReAdd: w.o.ReAdd, Store: w.o.Store})
		if err != nil {
			w.o.Logger.Error("heal", "err", err)
			return nil
		}
	}
	return w.report(r, decisions)
}

// report turns heal decisions into events, each once per slot and
// reason (see heal).
func (w *watcher) report(r *md.Report, decisions []md.Decision) []Event {
	var out []Event
	live := map[string]bool{}
	for _, d := range decisions {
		key := fmt.Sprintf("%s/%d", d.UUID, d.Slot)
		live[key] = true
		a := findArray(r, d.Array)
		if a == nil {
			continue
		}
		e := arrayEvent("", a, r.Time)
		if d.Slot >= 0 {
			e.Slot = intp(d.Slot)
		}
		e.ByPath, e.MemberPath, e.Reason = d.ByPath, d.Disk, d.Reason
		e.Member = d.Device
		switch d.Outcome {
		case md.OutcomeHealed:
			e.Type = HealStarted
			delete(w.refused, key)
		case md.OutcomeUnfrozen:
			e.Type = Unfrozen
		case md.OutcomeRefused, md.OutcomeFailed:
			// Retried on every pass, but reported once per slot and
			// reason. A deferral (busy: a rebuild runs, often the one
			// heal started, or recovery is frozen) is not a refusal;
			// the next pass decides.
			switch {
			case d.Outcome == md.OutcomeFailed:
				e.Type = HealFailed
			case errors.Is(d.Err, md.ErrHealDeferred) && a.Activity.Kind != sysfs.ActionIdle && a.Activity.Kind != sysfs.ActionFrozen && a.Activity.Kind != "":
				// A sync runs (often the rebuild heal started): the
				// Rebuild events already say so.
				continue
			case errors.Is(d.Err, md.ErrHealDeferred):
				e.Type = HealDeferred
			default:
				e.Type = HealRefused
			}
			if w.refused[key] == string(e.Type)+": "+d.Reason {
				continue
			}
			w.refused[key] = string(e.Type) + ": " + d.Reason
		default:
			continue
		}
		d.Log(w.o.Logger)
		out = append(out, e)
	}
	// A refusal is forgotten only when something about it changed: the
	// array is gone or no longer degraded (a heal started or a failure
	// above replaced the memory already). A pass that happens to make no
	// decision for the slot (a wake-up while the kernel is still unbinding
	// the pulled member, say) is no change: the same refusal after it is
	// not reported again.
	for k := range w.refused {
		if live[k] {
			continue
		}
		uuid, _, _ := strings.Cut(k, "/")
		if a := findUUID(r, uuid); a == nil || a.Availability != md.Degraded {
			delete(w.refused, k)
		}
	}
	return out
}

// findUUID returns the array of r with the given UUID.
func findUUID(r *md.Report, uuid string) *md.Array {
	for i := range r.Arrays {
		if r.Arrays[i].UUID == uuid {
			return &r.Arrays[i]
		}
	}
	return nil
}

// findArray returns the array of r with kernel name dev.
func findArray(r *md.Report, dev string) *md.Array {
	for i := range r.Arrays {
		if r.Arrays[i].Device == dev {
			return &r.Arrays[i]
		}
	}
	return nil
}

// refuseAll refuses every degraded array of r for one reason (records
// that cannot be loaded), as md.Manager.Heal would refuse to start.
func refuseAll(r *md.Report, err error) []md.Decision {
	var ds []md.Decision
	for _, a := range r.Arrays {
		if a.Availability != md.Degraded {
			continue
		}
		ds = append(ds, md.Decision{Array: a.Device, UUID: a.UUID, Slot: -1, Outcome: md.OutcomeRefused, Reason: err.Error(), Err: err})
	}
	return ds
}
