package md

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-mdraid/mdraid/sysfs"
)

// CleanOutcome is what WaitClean did about one array.
type CleanOutcome string

// The outcomes of WaitClean.
const (
	// CleanAlready: the array was clean, or in a state that writes
	// nothing (inactive, read-only, read-auto, broken): nothing written.
	CleanAlready CleanOutcome = "already-clean"
	// CleanMade: the array turned clean, and its members' superblocks
	// say so; safe_mode_delay was lowered and is restored.
	CleanMade CleanOutcome = "cleaned"
	// CleanSkipped: external metadata, whose monitor (mdmon) marks it
	// clean: nothing written.
	CleanSkipped CleanOutcome = "skipped"
	// CleanTimedOut: writes kept the array active (or its superblocks
	// unwritten) past the timeout; safe_mode_delay is restored.
	CleanTimedOut CleanOutcome = "timeout"
	// CleanWouldClean: a dry run found the array active; Writes are
	// the writes the real run would make (nothing written).
	CleanWouldClean CleanOutcome = "would-clean"
	// CleanFailed: a fact could not be read (nothing written), or a
	// write failed (Err says exactly what was changed).
	CleanFailed CleanOutcome = "failed"
)

// DefaultCleanTimeout is how long WaitClean waits for an array to turn
// clean when the request sets no timeout: mdadm --wait-clean's 5
// seconds.
const DefaultCleanTimeout = 5 * time.Second

// cleanDelay is the safe_mode_delay WaitClean sets while it waits, as
// mdadm --wait-clean does (sysfs_set_safemode(mdi, 1): one millisecond,
// at least one jiffy in the kernel).
const cleanDelay = "0.001"

// CleanResult is WaitClean's answer for one array.
type CleanResult struct {
	// Array is the kernel name (or, when it matches none, the name as
	// given).
	Array  string       `json:"array"`
	Result CleanOutcome `json:"result"`
	// Before is array_state when WaitClean began, After when it ended.
	Before sysfs.ArrayState `json:"before,omitempty"`
	After  sysfs.ArrayState `json:"after,omitempty"`
	// SafeModeDelay is the delay found, and written back (seconds).
	SafeModeDelay string `json:"safe_mode_delay,omitempty"`
	// Writes is every attribute write, in order ("safe_mode_delay=0.001").
	Writes []string `json:"writes,omitempty"`
	// Superblocks names the members whose superblocks were read after
	// the array turned clean and say clean.
	Superblocks []string `json:"clean_superblocks,omitempty"`
	// Note says what else was found (a pending resync, a member whose
	// superblock could not be read).
	Note string `json:"note,omitempty"`
	// Err is set with CleanFailed; Error is its text (for JSON).
	Err   error  `json:"-"`
	Error string `json:"error,omitempty"`
}

func (r *CleanResult) fail(err error) {
	r.Result, r.Err, r.Error = CleanFailed, err, err.Error()
}

// cleanStates are the array states in which an array writes nothing
// that could leave it dirty: mdadm's clean_states (Monitor.c).
var cleanStates = []sysfs.ArrayState{sysfs.StateClear, sysfs.StateInactive, sysfs.StateReadonly,
	sysfs.StateReadAuto, sysfs.StateClean, sysfs.StateBroken}

// cleanFacts is what WaitClean decides on.
type cleanFacts struct {
	state    sysfs.ArrayState
	metadata sysfs.MetadataVersion
	delay    string
	unread   []string // facts that could not be read
}

func (m *Manager) gatherClean(name string) (cleanFacts, sysfs.Array, error) {
	var f cleanFacts
	a, err := m.fs.Array(name)
	if err != nil {
		return f, a, err
	}
	if f.state, err = a.State(); err != nil {
		f.unread = append(f.unread, fmt.Sprintf("array_state (%v)", err))
	}
	if f.metadata, err = a.MetadataVersion(); err != nil {
		f.unread = append(f.unread, fmt.Sprintf("metadata_version (%v)", err))
	}
	if f.delay, err = a.SafeModeDelay(); err != nil && !slices.Contains(cleanStates, f.state) {
		f.unread = append(f.unread, fmt.Sprintf("safe_mode_delay (%v)", err))
	}
	return f, a, nil
}

// cleanPlan is what WaitClean writes: safe_mode_delay lowered to Lower,
// then back to Restore.
type cleanPlan struct {
	Lower, Restore string
}

// planClean is the decision behind WaitClean: nothing to do for an
// array that writes nothing or that has external metadata; a refusal
// (nothing written) when a fact is unknown, since a delay that was not
// read could not be restored; otherwise lower the delay.
func planClean(f cleanFacts) (*cleanPlan, CleanOutcome, string, error) {
	if len(f.unread) > 0 {
		return nil, CleanFailed, "", fmt.Errorf("%w: could not read %s; nothing written", errUnknownFact, strings.Join(f.unread, ", "))
	}
	if slices.Contains(cleanStates, f.state) {
		return nil, CleanAlready, "", nil
	}
	if f.metadata.Kind == sysfs.MetadataExternal {
		return nil, CleanSkipped, "external metadata: its monitor (mdmon) marks it clean", nil
	}
	return &cleanPlan{Lower: cleanDelay, Restore: f.delay}, CleanMade, "", nil
}

// WaitClean makes the arrays of req clean now, for a shutdown, as mdadm
// --wait-clean does for external metadata (for native metadata mdadm
// leaves it to the kernel at stop, and does nothing): for an active
// array it lowers safe_mode_delay to 1 ms, so that the kernel marks the
// array clean and writes its superblocks as soon as no write is in
// flight, waits (polling array_state) until array_state reads clean and
// every in-sync member's superblock, read with O_DIRECT, says clean, and
// writes the delay it found back. It refuses nothing: an array already
// clean, inactive or read-only, and one with external metadata, are
// reported and left alone. Each array's plan is made from facts read
// once and made again just before the write. req.Timeout bounds the
// wait (DefaultCleanTimeout when zero); req.DryRun plans and writes
// nothing. Every write is in CleanResult.Writes; a failure's message
// says what was changed.
func (m *Manager) WaitClean(ctx context.Context, req SyncWaitRequest) ([]CleanResult, error) {
	names, bad, err := m.waitTargets(ctx, req, "wait-clean")
	if err != nil {
		return nil, err
	}
	timeout := req.Timeout
	if timeout <= 0 {
		timeout = DefaultCleanTimeout
	}
	until := m.now().Add(timeout)
	res := make([]CleanResult, len(names))
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
			m.cleanOne(ctx, n, until, req.DryRun, &res[i])
		}()
	}
	wg.Wait()
	return res, nil
}

// cleanOne plans, re-checks and carries out WaitClean for one array.
func (m *Manager) cleanOne(ctx context.Context, name string, until time.Time, dryRun bool, r *CleanResult) {
	f, a, err := m.gatherClean(name)
	if err != nil {
		r.fail(fmt.Errorf("md: %s: %w", name, err))
		return
	}
	r.Before, r.After, r.SafeModeDelay = f.state, f.state, f.delay
	p, out, note, err := planClean(f)
	if err != nil {
		r.fail(fmt.Errorf("md: %s: %w", name, err))
		return
	}
	r.Result, r.Note = out, note
	if p == nil {
		return
	}
	if dryRun {
		r.Result, r.Writes = CleanWouldClean, []string{"safe_mode_delay=" + p.Lower, "safe_mode_delay=" + p.Restore}
		return
	}
	if err := ctx.Err(); err != nil {
		r.fail(fmt.Errorf("md: %s: %w; nothing written", name, err))
		return
	}
	// The executor: plan again from fresh facts; a changed answer is
	// the answer (an array that turned clean meanwhile needs nothing).
	f2, _, err := m.gatherClean(name)
	if err != nil {
		r.fail(fmt.Errorf("md: %s: %w; nothing written", name, err))
		return
	}
	p2, out2, note2, err := planClean(f2)
	if err != nil {
		r.fail(fmt.Errorf("md: %s: %w", name, err))
		return
	}
	r.Before, r.After, r.SafeModeDelay, r.Result, r.Note = f2.state, f2.state, f2.delay, out2, note2
	if p2 == nil {
		return
	}
	p = p2
	if err := m.ops.k.SetSafeModeDelay(name, p.Lower); err != nil {
		r.fail(fmt.Errorf("md: writing safe_mode_delay=%s to %s failed: %w; nothing changed", p.Lower, name, err))
		return
	}
	r.Writes = append(r.Writes, "safe_mode_delay="+p.Lower)
	changed := fmt.Sprintf("safe_mode_delay of %s was set to %s (it was %s)", name, p.Lower, p.Restore)
	werr := m.awaitClean(ctx, a, until, r)
	// Restore whatever became of the wait.
	if err := m.ops.k.SetSafeModeDelay(name, p.Restore); err != nil {
		msg := fmt.Sprintf("md: %s, and writing %s back failed: %v", changed, p.Restore, err)
		if werr != nil {
			msg += fmt.Sprintf("; the wait had failed: %v", werr)
		}
		r.fail(fmt.Errorf("%s", msg))
		return
	}
	r.Writes = append(r.Writes, "safe_mode_delay="+p.Restore)
	if got, err := a.SafeModeDelay(); err != nil || got != p.Restore {
		r.fail(fmt.Errorf("md: %s and %s was written back, but it reads %q (%v)", changed, p.Restore, got, err))
		return
	}
	if werr != nil {
		r.fail(fmt.Errorf("md: %s: %w (safe_mode_delay was set to %s and written back to %s)", name, werr, p.Lower, p.Restore))
	}
}

// awaitClean waits until array_state reads a clean state and the
// superblocks of the array's in-sync members say clean, or until.
func (m *Manager) awaitClean(ctx context.Context, a sysfs.Array, until time.Time, r *CleanResult) error {
	w, err := m.watchAttr(a.Path("array_state"))
	if err != nil {
		return fmt.Errorf("watching array_state: %w", err)
	}
	defer w.Close()
	// array_state may read clean a moment before the superblocks are
	// written (the md thread marks the array in sync, then writes
	// them), and no attribute is known to signal that write: the
	// superblocks are read again after short waits, growing from 10 ms
	// to 500 ms, until the deadline.
	step := 10 * time.Millisecond
	for {
		v, err := w.Read()
		if err != nil {
			return fmt.Errorf("reading array_state: %w", err)
		}
		r.After = sysfs.ArrayState(v)
		next := m.now().Add(waitBackstop)
		if slices.Contains(cleanStates, r.After) {
			done, note := m.superblocksClean(a.Name(), r)
			if done {
				r.Note = note
				return nil
			}
			next = m.now().Add(step)
			step = min(2*step, 500*time.Millisecond)
		}
		if !m.now().Before(until) {
			r.Result = CleanTimedOut
			if slices.Contains(cleanStates, r.After) {
				r.Note = "array_state reads " + string(r.After) + " but a member's superblock does not say clean yet"
			} else {
				r.Note = "writes kept it " + string(r.After)
			}
			return nil
		}
		if _, err := w.Wait(ctx, earlier(next, until)); err != nil {
			return fmt.Errorf("waiting for array_state: %w", err)
		}
	}
}

// superblocksClean reads the superblocks of the array's in-sync members
// (O_DIRECT) and reports whether each says clean. A resync that is still
// due (resync_start) keeps them saying active, which the kernel records
// on purpose: that is reported, not waited for. r.Superblocks is set to
// the members found clean.
func (m *Manager) superblocksClean(name string, r *CleanResult) (bool, string) {
	s := m.read(name)
	r.Superblocks = nil
	var unread []string
	allClean := true
	for _, ms := range s.members {
		if !ms.state.Has(sysfs.FlagInSync) || ms.state.Failed() {
			continue
		}
		if ms.sb == nil {
			unread = append(unread, ms.Device)
			continue
		}
		if ms.sb.Clean() {
			r.Superblocks = append(r.Superblocks, ms.Device)
		} else {
			allClean = false
		}
	}
	var notes []string
	if len(unread) > 0 {
		notes = append(notes, "the superblock of "+strings.Join(unread, ", ")+" could not be read")
	}
	if !allClean {
		if a, err := m.fs.Array(name); err == nil {
			if rs, err := a.ResyncStart(); err == nil && rs.Valid {
				return true, strings.Join(append(notes, fmt.Sprintf("a resync from sector %d is due: the superblocks say active until it finishes", rs.Value)), "; ")
			}
		}
		return false, ""
	}
	return true, strings.Join(notes, "; ")
}
