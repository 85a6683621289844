package md

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"sync"
	"time"

	"github.com/go-mdraid/mdraid/sysfs"
)

// SyncWaitRequest says which arrays Wait (and WaitClean) follow.
type SyncWaitRequest struct {
	// Arrays are the arrays to wait for, named as everywhere (md127,
	// /dev/md/boot, boot, a UUID).
	Arrays []string
	// Scan waits for every array instead; Arrays must then be empty.
	Scan bool
	// DryRun, for WaitClean only, plans as the real run does and writes
	// nothing (CleanWouldClean, with the writes it would make).
	DryRun bool
	// Timeout bounds the whole wait (all arrays together); zero waits
	// as long as it takes for Wait, and 5 seconds for WaitClean (as
	// mdadm --wait-clean waits).
	Timeout time.Duration
}

// WaitOutcome is what Wait found on one array.
type WaitOutcome string

// The outcomes of Wait.
const (
	// WaitFinished: a resync, recovery, reshape, check or repair ran
	// and has finished (or was stopped): sync_action reads idle.
	WaitFinished WaitOutcome = "finished"
	// WaitNothing: nothing ran when the wait began: the array was idle,
	// inactive, or of a level without redundancy. mdadm -W counts this
	// as a failure ("it did not wait").
	WaitNothing WaitOutcome = "nothing"
	// WaitFrozen: sync_action read frozen (no sync may start) for longer
	// than the grace mdadm -W gives it (FrozenGrace).
	WaitFrozen WaitOutcome = "frozen"
	// WaitTimedOut: the timeout passed with a sync still running.
	WaitTimedOut WaitOutcome = "timeout"
	// WaitFailed: an attribute could not be read or polled, or the name
	// matches no array (Err says which).
	WaitFailed WaitOutcome = "failed"
)

// FrozenGrace is how long Wait waits for an array whose sync_action
// reads frozen to thaw: mdadm -W reads a frozen array three times, 5
// seconds apart, since something (mdadm --add, mdctl replace) freezes an
// array for a moment before it starts a recovery.
const FrozenGrace = 15 * time.Second

// waitBackstop is how long Wait and WaitClean wait for a notification
// before they read the attribute again anyway (mdadm -W reads mdstat
// every 5 seconds): a notification the kernel does not send (a value
// changed on a path that does not notify) delays an answer, never loses
// it.
const waitBackstop = 5 * time.Second

// WaitResult is Wait's answer for one array.
type WaitResult struct {
	// Array is the kernel name (or, when it matches none, the name as
	// given).
	Array  string      `json:"array"`
	Result WaitOutcome `json:"result"`
	// Waited lists each sync seen running, in the order seen.
	Waited []sysfs.SyncAction `json:"waited,omitempty"`
	// Running is, at a timeout, the sync still running, and Done and
	// Total its progress in sectors (zero when sync_completed does not
	// say).
	Running      sysfs.SyncAction `json:"running,omitempty"`
	DoneSectors  uint64           `json:"done_sectors,omitempty"`
	TotalSectors uint64           `json:"total_sectors,omitempty"`
	// Note says why there was nothing to wait for, or what remains
	// ("a resync is pending: it starts at the first write").
	Note string `json:"note,omitempty"`
	// Err is set with WaitFailed; Error is its text (for JSON).
	Err   error  `json:"-"`
	Error string `json:"error,omitempty"`
}

func (r *WaitResult) fail(err error) {
	r.Result, r.Err, r.Error = WaitFailed, err, err.Error()
}

// running reports whether sync_action act names a sync that runs (or is
// about to): anything but idle and frozen, also a value this code does
// not know yet.
func running(act sysfs.SyncAction) bool {
	return act != sysfs.ActionIdle && act != sysfs.ActionFrozen && act != ""
}

// waitTargets resolves req to kernel names: the named arrays in order
// (one failed result for each name that matches none), or with Scan
// every array that runs or has members, by kernel name.
func (m *Manager) waitTargets(ctx context.Context, req SyncWaitRequest, op string) ([]string, map[int]error, error) {
	if req.Scan == (len(req.Arrays) > 0) {
		return nil, nil, fmt.Errorf("md: %s takes arrays or Scan, not both or neither", op)
	}
	if req.Scan {
		names, err := m.StopOrder(ctx)
		return names, nil, err
	}
	names := make([]string, len(req.Arrays))
	bad := map[int]error{}
	for i, a := range req.Arrays {
		n, err := m.resolve(a)
		if err != nil {
			names[i], bad[i] = a, err
			continue
		}
		names[i] = n
	}
	return names, bad, nil
}

// Wait blocks until no resync, recovery, reshape, check or repair runs
// on the arrays of req, as mdadm -W does, and says per array what it
// waited for (WaitResult). It reads each array's sync_action and waits
// for the kernel to signal its change (poll), never on a timer; the
// arrays are followed at the same time and one failure is that array's
// result. An array whose sync_action reads frozen is given FrozenGrace
// to thaw. A read-auto array's pending resync does not run before its
// first write: Wait reports it (Note) and does not wait for it, where
// mdadm -W would wait until something writes. Wait writes nothing. The
// error is for a request that names no arrays or a system whose arrays
// cannot be listed; a cancelled ctx fails the arrays still running.
func (m *Manager) Wait(ctx context.Context, req SyncWaitRequest) ([]WaitResult, error) {
	names, bad, err := m.waitTargets(ctx, req, "wait")
	if err != nil {
		return nil, err
	}
	var until time.Time
	if req.Timeout > 0 {
		until = m.now().Add(req.Timeout)
	}
	res := make([]WaitResult, len(names))
	var wg sync.WaitGroup
	for i, n := range names {
		res[i].Array = n
		if err := bad[i]; err != nil {
			res[i].fail(err)
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			m.waitOne(ctx, n, until, &res[i])
		}()
	}
	wg.Wait()
	return res, nil
}

// waitOne follows one array's sync_action until it reads idle.
func (m *Manager) waitOne(ctx context.Context, name string, until time.Time, r *WaitResult) {
	a, err := m.fs.Array(name)
	if err != nil {
		r.fail(fmt.Errorf("md: %s: %w", name, err))
		return
	}
	st, err := a.State()
	if err != nil {
		r.fail(fmt.Errorf("md: reading array_state of %s: %w", name, err))
		return
	}
	if st == sysfs.StateInactive || st == sysfs.StateClear {
		r.Result, r.Note = WaitNothing, "inactive: nothing runs"
		return
	}
	w, err := m.watchAttr(a.Path("sync_action"))
	if errors.Is(err, fs.ErrNotExist) {
		r.Result, r.Note = WaitNothing, "no redundancy (no sync_action): nothing runs"
		return
	}
	if err != nil {
		r.fail(fmt.Errorf("md: watching sync_action of %s: %w", name, err))
		return
	}
	defer w.Close()
	var frozenSince time.Time
	for {
		v, err := w.Read()
		if err != nil {
			r.fail(fmt.Errorf("md: reading sync_action of %s: %w", name, err))
			return
		}
		act := sysfs.SyncAction(v)
		now := m.now()
		switch {
		case running(act):
			frozenSince = time.Time{}
			if len(r.Waited) == 0 || r.Waited[len(r.Waited)-1] != act {
				r.Waited = append(r.Waited, act)
			}
		case act == sysfs.ActionFrozen:
			if frozenSince.IsZero() {
				frozenSince = now
			}
			if now.Sub(frozenSince) >= FrozenGrace {
				r.Result, r.Note = WaitFrozen, fmt.Sprintf("sync_action has read frozen for %s: no sync starts until someone writes idle", FrozenGrace)
				return
			}
		default:
			r.Result = WaitNothing
			if len(r.Waited) > 0 {
				r.Result = WaitFinished
			}
			r.Note = pendingNote(a)
			return
		}
		next := now.Add(waitBackstop)
		if !frozenSince.IsZero() {
			next = earlier(next, frozenSince.Add(FrozenGrace))
		}
		if !until.IsZero() {
			if !now.Before(until) {
				r.Result, r.Running = WaitTimedOut, act
				if pr, err := a.SyncCompleted(); err == nil && pr.State == sysfs.ProgressRunning {
					r.DoneSectors, r.TotalSectors = pr.Done, pr.Total
				}
				return
			}
			next = earlier(next, until)
		}
		if _, err := w.Wait(ctx, next); err != nil {
			r.fail(fmt.Errorf("md: waiting for the %s of %s: %w", act, name, err))
			return
		}
	}
}

// pendingNote says, for an idle array, what sync is pending: a
// read-auto array records where its resync resumes (resync_start) but
// starts it only at its first write.
func pendingNote(a sysfs.Array) string {
	st, err := a.State()
	if err != nil || st != sysfs.StateReadAuto {
		return ""
	}
	rs, err := a.ResyncStart()
	if err != nil || !rs.Valid {
		return ""
	}
	return fmt.Sprintf("read-auto: a resync from sector %d is pending and starts at the first write", rs.Value)
}

// earlier is the earlier of two times.
func earlier(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}
