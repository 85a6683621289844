package md

// A check (scrub) takes the route of a replace, in three stages, once per
// array (the kernel's behaviour is in docs/scrub.md):
//
//  1. Facts, in one pass: Manager.gatherCheck reads the array's status
//     and the sync attributes (sync_action, sync_completed, sync_min,
//     sync_max, mismatch_cnt, degraded, array_state, reshape_position)
//     into a checkFacts, writing nothing.
//  2. A pure plan: planCheck turns those facts, the request and the
//     array's stored CheckRecord into a checkPlan (the action, where it
//     starts, the mismatches carried over) or a *RefusedError.
//  3. One executor step: Manager.startCheck gathers the facts again and
//     plans again right before writing, refusing with ErrPlanChanged when
//     anything differs, and only then writes sync_min (when it must move)
//     and sync_action. What follows (waiting, the deadline's idle, the
//     cursor) only reads, or writes idle to a check this call started.

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/go-mdraid/mdraid/sysfs"
)

// CheckRequest asks for a check (or repair) of arrays: the kernel reads
// every copy (raid1/10) or the parity (raid4/5/6) and counts the sectors
// that disagree; a repair also rewrites them.
type CheckRequest struct {
	// Arrays names the arrays, as the array commands accept them (a kernel name, a device node, a name or a UUID).
	Arrays []string
	// All checks every array instead. An array that has nothing a check
	// could do now is skipped (Result "skipped", Skipped says why, nothing
	// written): no redundancy (raid0, linear), not running, read-only or
	// read-auto, degraded, or its sync thread busy with a resync,
	// recovery, reshape or another check. Every other refusal (facts that
	// cannot be read, frozen recovery, a sync_max limit, an unknown UUID
	// with a Store) is refused as for a named array: there a check should
	// run and could not. A named array is refused for all of these.
	All bool
	// Repair writes "repair" instead of "check": mismatches are
	// rewritten (from the first copy, or recomputed parity).
	Repair bool
	// Duration, when positive, time-boxes the pass: Check waits until it
	// finishes or the time is up; then it stops the check (idle) and,
	// with a Store, saves where it got to, so that the next call resumes
	// there.
	Duration time.Duration
	// Wait follows the check until it finishes (or the deadline, or ctx).
	Wait bool
	// Cancel stops a running check or repair instead (writes idle); with
	// a Store it saves the position reached.
	Cancel bool
	// Continue only resumes unfinished passes (mdadm's mdcheck
	// --continue): an array without a stored cursor of the same action
	// is skipped (Result "skipped"), nothing written. It needs a Store.
	Continue bool
	// Store keeps the cursors and the results (Records.Checks); nil
	// makes every check one full pass from the start, remembered nowhere.
	Store Store
	// Progress, if set, is called after every read while waiting. It may
	// be called from several goroutines at once, one per array, but never
	// concurrently (calls are serialized).
	Progress func(CheckProgress)
	// Interval between reads while waiting; default one second.
	Interval time.Duration
	// DryRun plans every array as the real run does (the same facts,
	// refusals and skips) and writes nothing: an array that would be
	// started gets Result "would-start" (with Cancel, "would-stop"),
	// with its action and where the pass would start. The Store is read,
	// never written.
	DryRun bool
}

// CheckProgress is a running check as Check sees it while waiting.
type CheckProgress struct {
	// Array is the kernel name, Action "check" or "repair".
	Array  string
	Action sysfs.SyncAction
	// DoneSectors and TotalSectors are sync_completed (component
	// sectors); Pending is "delayed" while the kernel holds it back.
	DoneSectors, TotalSectors uint64
	Pending                   string
	// SpeedKiBs is sync_speed; ETA the remaining time at that speed
	// (zero when unknown).
	SpeedKiBs uint64
	ETA       time.Duration
	// Deadline is when a time-boxed check is stopped; zero for none.
	Deadline time.Time
}

// CheckOutcome is what happened to one array.
type CheckOutcome string

// Check outcomes, as the JSON form names them.
const (
	// CheckClean: a check pass finished without mismatches.
	CheckClean CheckOutcome = "clean"
	// CheckMismatches: a check pass finished with mismatches.
	CheckMismatches CheckOutcome = "mismatches"
	// CheckRepaired: a repair pass finished (its count is what it found
	// and rewrote).
	CheckRepaired CheckOutcome = "repaired"
	// CheckStarted: the check was started (or still runs: the caller
	// stopped waiting).
	CheckStarted CheckOutcome = "started"
	// CheckStopped: the check was stopped before the end (deadline,
	// Cancel, or another program); with a Store its cursor was saved.
	CheckStopped CheckOutcome = "stopped"
	// CheckSkipped: nothing was written, and this is no failure: with
	// Continue the array has no unfinished pass; with All the array has
	// nothing a check could do now (CheckRequest.All). Skipped says why.
	CheckSkipped CheckOutcome = "skipped"
	// CheckRefused: nothing was written; Error says why.
	CheckRefused CheckOutcome = "refused"
	// CheckFailed: something failed; Error says what was changed.
	CheckFailed CheckOutcome = "failed"
	// CheckWouldStart: DryRun: the check would be started (at
	// ResumedFrom); nothing was written.
	CheckWouldStart CheckOutcome = "would-start"
	// CheckWouldStop: DryRun with Cancel: the running check or repair
	// would be stopped; nothing was written.
	CheckWouldStop CheckOutcome = "would-stop"
)

// CheckResult is what Check did with one array.
type CheckResult struct {
	// Array is the kernel name (or the name as given, when it did not
	// resolve); UUID and Level as Array reports them.
	Array string `json:"array"`
	UUID  string `json:"uuid,omitempty"`
	Level string `json:"level,omitempty"`
	// Action is "check" or "repair".
	Action sysfs.SyncAction `json:"action,omitempty"`
	Result CheckOutcome     `json:"result"`
	// MismatchSectors is mismatch_cnt in 512-byte sectors, added up over
	// the pass's segments (see CheckRecord.Mismatches): the size of the
	// regions that differ, not a count of bytes.
	MismatchSectors uint64 `json:"mismatch_sectors"`
	// PositionSectors is where the pass got to (the stored cursor when
	// stopped; SizeSectors when finished), SizeSectors the component size,
	// ResumedFrom where this segment started (0 for a fresh pass), all in
	// component sectors.
	PositionSectors uint64 `json:"position_sectors"`
	SizeSectors     uint64 `json:"size_sectors"`
	ResumedFrom     uint64 `json:"resumed_from"`
	// Finished is true when the pass reached the end.
	Finished bool `json:"finished"`
	// CursorSaved is true when the position was saved in the Store.
	CursorSaved bool `json:"cursor_saved,omitempty"`
	// Meaning says what the mismatches mean for the level (MismatchMeaning);
	// empty without mismatches.
	Meaning string `json:"meaning,omitempty"`
	// Skipped says why an array was skipped (Result "skipped").
	Skipped string `json:"skipped,omitempty"`
	// Error is Err's message.
	Error string `json:"error,omitempty"`
	// Err is a *RefusedError (matching ErrRefused) for a refusal, else
	// the failure; nil when Result is neither refused nor failed.
	Err error `json:"-"`
}

// Errors of check.
var (
	// ErrCheckBusy is matched by the refusal of a check on an array whose
	// sync thread is not idle (a resync, recovery, reshape, frozen, or a
	// check or repair already running) and of a cancel on an array where
	// no check or repair runs.
	ErrCheckBusy = errors.New("md: the array's sync thread is busy")
	// ErrNotCheckable is matched by the refusal of a check on an array
	// that cannot be checked now: not redundant, not running, degraded,
	// read-only or read-auto.
	ErrNotCheckable = errors.New("md: the array cannot be checked")
)

// checkFacts is what the check decision reads about one array.
type checkFacts struct {
	name   string
	array  Array // the status: UUID, level, health
	state  sysfs.ArrayState
	level  sysfs.Level
	action sysfs.SyncAction
	// hasSync is false when sync_action does not exist (not redundant,
	// or not running: docs/scrub.md §1).
	hasSync    bool
	progress   sysfs.Progress
	degraded   uint64
	syncMin    uint64
	syncMax    sysfs.Optional[uint64]
	mismatches uint64
	reshape    sysfs.Optional[uint64]
	chunk      int64  // bytes, 0 for none
	size       uint64 // component sectors
	// errs are the facts that could not be read: a check then refuses.
	errs []string
}

func (f *checkFacts) note(what string, err error) {
	if err != nil {
		f.errs = append(f.errs, fmt.Sprintf("%s: %v", what, err))
	}
}

// gatherCheck reads every fact the check decision needs about the
// array name (a kernel name), writing nothing.
func (m *Manager) gatherCheck(name string) checkFacts {
	f := checkFacts{name: name, array: m.status(m.fs.WithCache(), name)}
	a, err := m.fs.Array(name)
	if err != nil {
		f.note("array", err)
		return f
	}
	f.state, err = a.State()
	f.note("array_state", err)
	f.level, err = a.Level()
	f.note("level", err)
	f.action, err = a.SyncAction()
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return f // not redundant, or not running: nothing else exists
	case err != nil:
		f.note("sync_action", err)
		return f
	}
	f.hasSync = true
	f.progress, err = a.SyncCompleted()
	f.note("sync_completed", err)
	f.degraded, err = a.Degraded()
	f.note("degraded", err)
	f.syncMin, err = a.SyncMin()
	f.note("sync_min", err)
	f.syncMax, err = a.SyncMax()
	f.note("sync_max", err)
	f.mismatches, err = a.MismatchCount()
	f.note("mismatch_cnt", err)
	if f.reshape, err = a.ReshapePosition(); errors.Is(err, fs.ErrNotExist) {
		f.reshape, err = sysfs.Optional[uint64]{}, nil
	}
	f.note("reshape_position", err)
	if c, err := a.ChunkSize(); err == nil {
		f.chunk = c.Current
	} else if !errors.Is(err, fs.ErrNotExist) {
		f.note("chunk_size", err)
	}
	kib, err := a.ComponentSize()
	f.note("component_size", err)
	f.size = kib * 2
	return f
}

// checkPlan is what one array's check will do.
type checkPlan struct {
	Array, UUID, Level string
	Action             sysfs.SyncAction
	// Start is where the pass starts (sync_min); SetMin is set when
	// sync_min must be written first (it reads otherwise).
	Start  uint64
	SetMin bool
	// Carried are the mismatches of the pass's earlier segments; Started
	// the pass's start time (zero for a fresh pass: now).
	Carried uint64
	Started time.Time
	Size    uint64
	// Chunk is the alignment of a cursor, in sectors (at least 8).
	Chunk uint64
}

// passGuard is the sync_max a check writes before it starts, in sectors:
// far beyond any array, so it limits nothing (the kernel's pass never
// waits for it), and a multiple of the chunk (sync_max must be one on
// striped levels). Its only use is what the kernel does with it at the
// end: a completed pass resets sync_max to max, an interrupted one leaves
// it (md_do_sync, Linux 6.1 to 7.2, docs/scrub.md §8.5). That tells a
// pass stopped before its first checkpoint, where sync_min reads 0 as
// after the end, from a finished one.
func passGuard(chunk uint64) uint64 {
	chunk = max(chunk, 8)
	return (1 << 62) / chunk * chunk
}

// alignCursor rounds pos down to the chunk (in sectors, at least 8).
func alignCursor(pos, chunk uint64) uint64 {
	if chunk < 8 {
		chunk = 8
	}
	return pos / chunk * chunk
}

// planCheck decides, from f alone, whether the array may be checked and
// how: it refuses (a *RefusedError matching ErrRefused, nothing written)
// an array that is not redundant or not running, read-only or read-auto
// (a sync_action write would switch it to read-write: docs/scrub.md §2),
// degraded, resyncing, recovering, reshaping, frozen (a check write
// unfreezes), already checking or repairing, with a sync_max limit, or
// whose facts could not all be read. rec is the array's stored record,
// if any: a pending pass of the same action resumes at its cursor.
func planCheck(f checkFacts, req CheckRequest, rec *CheckRecord) (*checkPlan, error) {
	refuse := func(check Check, sentinel error, format string, args ...any) (*checkPlan, error) {
		return nil, &RefusedError{Op: "check", Array: f.name, Check: check,
			Reason: fmt.Sprintf(format, args...), Err: sentinel}
	}
	act := sysfs.ActionCheck
	if req.Repair {
		act = sysfs.ActionRepair
	}
	switch {
	case f.level != "" && !f.level.Redundant():
		return refuse(CheckRedundant, ErrNotCheckable, "level %s has no redundancy to check", f.level)
	case !f.hasSync && len(f.errs) == 0:
		return refuse(CheckRedundant, ErrNotCheckable, "it has no sync_action (not running, or no redundancy)")
	case len(f.errs) > 0:
		return refuse(CheckFactsReadable, ErrNotCheckable, "cannot read %s", strings.Join(f.errs, "; "))
	}
	switch f.state {
	case sysfs.StateClean, sysfs.StateActive, sysfs.StateActiveIdle:
	case sysfs.StateReadAuto:
		return refuse(CheckReadWrite, ErrNotCheckable, "it is read-auto, and writing sync_action would switch it to read-write")
	case sysfs.StateReadonly:
		return refuse(CheckReadWrite, ErrNotCheckable, "it is read-only")
	default:
		return refuse(CheckReadWrite, ErrNotCheckable, "array_state is %q", f.state)
	}
	if f.degraded != 0 || f.array.Redundancy != Full {
		return refuse(CheckNotDegraded, ErrNotCheckable, "it is degraded (degraded %d, redundancy %s): recover it first", f.degraded, f.array.Redundancy)
	}
	switch f.action {
	case sysfs.ActionIdle:
	case sysfs.ActionCheck, sysfs.ActionRepair:
		return refuse(CheckSyncIdle, ErrCheckBusy, "a %s is already running", f.action)
	case sysfs.ActionFrozen:
		return refuse(CheckNotFrozen, ErrCheckBusy, "recovery is frozen (a replace may be under way), and writing %s would unfreeze it", act)
	case sysfs.ActionResync:
		return refuse(CheckSyncIdle, ErrCheckBusy, "it is resyncing")
	case sysfs.ActionRecover:
		return refuse(CheckSyncIdle, ErrCheckBusy, "it is recovering")
	case sysfs.ActionReshape:
		return refuse(CheckSyncIdle, ErrCheckBusy, "it is reshaping")
	default:
		return refuse(CheckSyncActionKnown, ErrCheckBusy, "sync_action is %q", f.action)
	}
	switch {
	case f.progress.State != sysfs.ProgressNone:
		return refuse(CheckSyncIdle, ErrCheckBusy, "sync_completed is %s: a sync is pending", f.progress.State)
	case f.reshape.Valid:
		return refuse(CheckSyncIdle, ErrCheckBusy, "it is reshaping (reshape_position %d)", f.reshape.Value)
	case f.syncMax.Valid && f.syncMax.Value != passGuard(uint64(f.chunk/512)):
		return refuse(CheckSyncMaxIsMax, ErrCheckBusy, "sync_max is %d, not max: someone limits where syncs stop", f.syncMax.Value)
	case req.Store != nil && f.array.UUID == "":
		return refuse(CheckUUIDKnown, ErrNotCheckable, "its UUID is unknown, so no cursor can be kept")
	}
	p := &checkPlan{Array: f.name, UUID: f.array.UUID, Level: f.array.Level, Action: act, Size: f.size,
		Chunk: max(uint64(f.chunk/512), 8)}
	if rec != nil && rec.Action == act && rec.Cursor < f.size {
		p.Start = alignCursor(rec.Cursor, p.Chunk)
		p.Carried, p.Started = rec.Mismatches, rec.PassStarted
	}
	// Without a stored cursor a pass starts at 0: the kernel leaves
	// sync_min where an earlier interruption stopped (docs/scrub.md §3).
	p.SetMin = f.syncMin != p.Start
	return p, nil
}

// checkDiff says what differs between two plans, or "".
func checkDiff(p, q *checkPlan) string {
	if *p != *q {
		return fmt.Sprintf("the plan was %+v, it is now %+v", *p, *q)
	}
	return ""
}

// Check checks (or repairs, or with Cancel stops the check of) the
// named arrays, or every array with All, and returns one result per
// array, in the order named (All: by kernel name).
//
// Before it writes, it refuses (Result "refused", a *RefusedError
// matching ErrRefused and ErrNotCheckable or ErrCheckBusy, nothing
// written) every array that planCheck refuses, and it gathers the facts
// again right before the write, refusing with ErrPlanChanged when they
// changed. A check writes sync_min (only when it must move: to the stored
// cursor, or back to 0), a guard to sync_max that limits nothing (the
// kernel resets it to max only when the pass completes, so that an
// interruption, even before the first checkpoint, is told from the end;
// docs/scrub.md §8.5), and then "check" or "repair" to sync_action.
//
// Without Wait or Duration it returns once the check is started. With
// them it follows the check, calling Progress, until the kernel is idle
// again, then reads mismatch_cnt; with Duration it writes idle at the
// deadline, waits for the kernel to stop, and reads the position it
// stopped at (the kernel sets sync_min there). Cancelling ctx stops the
// waiting, never the check: the result is then "started".
//
// With a Store, a pass resumes at the array's stored cursor (same
// action), a stopped pass saves its cursor and mismatches so far, and a
// finished pass clears the cursor and records its finish time, action and
// mismatch total. The Store is loaded before anything is written: one
// that cannot be loaded (store.ErrCorrupt, ErrVersion) fails the whole
// call with nothing written, and is never overwritten. Each save loads
// the store again and changes only the array's CheckRecord, so the slot
// records (Arrays) are kept.
//
// The error joins every array's Err (errors.Is(err, ErrRefused) works),
// and is the only result when the request itself cannot be carried out.
func (m *Manager) Check(ctx context.Context, req CheckRequest) ([]CheckResult, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	switch {
	case req.All && len(req.Arrays) > 0:
		return nil, errors.New("md: check takes array names or All, not both")
	case !req.All && len(req.Arrays) == 0:
		return nil, errors.New("md: check needs array names or All")
	case req.Cancel && (req.Repair || req.Wait || req.Duration > 0 || req.Continue):
		return nil, errors.New("md: cancel takes no repair, wait, duration or continue")
	case req.Continue && req.Store == nil:
		return nil, errors.New("md: continue needs a Store with the cursors")
	}
	var rs *Records
	if req.Store != nil {
		var err error
		if rs, err = loadRecords(ctx, req.Store); err != nil {
			return nil, err
		}
	}
	names := req.Arrays
	if req.All {
		arrays, err := m.fs.Arrays()
		if err != nil {
			return nil, fmt.Errorf("md: listing arrays: %w", err)
		}
		sort.Slice(arrays, func(i, j int) bool { return lessDevice(arrays[i], arrays[j]) })
		names = arrays
	}
	c := &checkRun{m: m, req: req, rs: rs, start: m.now()}
	if req.Duration > 0 {
		c.deadline = c.start.Add(req.Duration)
	}
	res := make([]CheckResult, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		res[i] = CheckResult{Array: name}
		kname, err := m.resolve(name)
		if err != nil {
			res[i].setErr(refuseLookup("check", name, "", err))
			continue
		}
		res[i].Array = kname
		if req.Cancel {
			c.cancel(ctx, &res[i])
			continue
		}
		if !c.begin(ctx, &res[i]) || (!req.Wait && req.Duration <= 0) {
			continue
		}
		wg.Add(1)
		go func(r *CheckResult) {
			defer wg.Done()
			c.follow(ctx, r)
		}(&res[i])
	}
	wg.Wait()
	var errs []error
	for _, r := range res {
		if r.Err != nil {
			errs = append(errs, r.Err)
		}
	}
	return res, errors.Join(errs...)
}

// loadRecords loads a store; one never written is empty.
func loadRecords(ctx context.Context, s Store) (*Records, error) {
	rs, err := s.Load(ctx)
	if errors.Is(err, fs.ErrNotExist) {
		return &Records{}, nil
	}
	return rs, err
}

// checkRun is one call of Check.
type checkRun struct {
	m               *Manager
	req             CheckRequest
	rs              *Records // as loaded; nil without a store
	start, deadline time.Time
	mu              sync.Mutex // serializes Progress, store saves and started
	// started are the plans of the checks begin started, by array.
	started map[string]*checkPlan
}

func (r *CheckResult) setErr(err error) {
	r.Err, r.Error = err, err.Error()
	r.Result = CheckFailed
	if errors.Is(err, ErrRefused) {
		r.Result = CheckRefused
	}
}

// record returns the stored check record of uuid, if any.
func (c *checkRun) record(uuid string) *CheckRecord {
	if rec, ok := c.rs.Check(uuid); ok && uuid != "" {
		return &rec
	}
	return nil
}

// begin plans the check of r.Array and starts it; it reports whether the
// check runs.
func (c *checkRun) begin(ctx context.Context, r *CheckResult) bool {
	f := c.m.gatherCheck(r.Array)
	r.UUID, r.Level = f.array.UUID, f.array.Level
	if c.req.Continue {
		act := sysfs.ActionCheck
		if c.req.Repair {
			act = sysfs.ActionRepair
		}
		if rec := c.record(f.array.UUID); rec == nil || rec.Action != act {
			r.Result, r.Skipped = CheckSkipped, "no unfinished pass to continue"
			return false
		}
	}
	p, err := planCheck(f, c.req, c.record(f.array.UUID))
	if err != nil {
		if why, ok := skippable(err); ok && c.req.All {
			r.Result, r.Skipped = CheckSkipped, why
			return false
		}
		r.setErr(err)
		return false
	}
	r.Action, r.SizeSectors, r.ResumedFrom, r.PositionSectors = p.Action, p.Size, p.Start, p.Start
	if c.req.DryRun {
		r.Result = CheckWouldStart
		return false
	}
	if err := c.m.startCheck(p, c.req, c.record(p.UUID)); err != nil {
		r.setErr(err)
		return false
	}
	r.Result = CheckStarted
	if c.req.Store != nil {
		started := p.Started
		if started.IsZero() {
			started = c.start.UTC()
		}
		err := c.save(ctx, p.UUID, func(rec *CheckRecord) {
			rec.Action, rec.Cursor, rec.Mismatches, rec.PassStarted = p.Action, p.Start, p.Carried, started
		})
		if err != nil {
			r.setErr(fmt.Errorf("md: the %s of %s was started, but saving its record failed: %w", p.Action, p.Array, err))
			r.Result = CheckFailed
			return false
		}
	}
	c.mu.Lock()
	c.plans(r.Array, p)
	c.mu.Unlock()
	return true
}

// skippable reports whether a refusal of planCheck means the array has
// nothing a check could do now (the skips of CheckRequest.All), and
// gives the reason. Facts that cannot be read, frozen recovery, a
// sync_max limit and an unknown UUID are not: there a check should run.
func skippable(err error) (string, bool) {
	var re *RefusedError
	if !errors.As(err, &re) {
		return "", false
	}
	switch re.Check {
	case CheckRedundant, CheckReadWrite, CheckNotDegraded, CheckSyncIdle:
		// CheckSyncIdle: the kernel's own resync, recovery or reshape, or a
		// check already running (frozen recovery and an unknown
		// sync_action have checks of their own).
		return re.Reason, true
	}
	return "", false
}

// plans remembers the plan of each started array (for follow).
func (c *checkRun) plans(name string, p *checkPlan) {
	if c.started == nil {
		c.started = map[string]*checkPlan{}
	}
	c.started[name] = p
}

// startCheck is the executor step: under fresh facts and the same plan,
// it writes sync_min (when it must move) and sync_action. A refusal here
// wrote nothing.
func (m *Manager) startCheck(p *checkPlan, req CheckRequest, rec *CheckRecord) error {
	f := m.gatherCheck(p.Array)
	q, err := planCheck(f, req, rec)
	if err != nil {
		return refuse("check", p.Array, "", fmt.Errorf("%w: %w", ErrPlanChanged, err))
	}
	if d := checkDiff(p, q); d != "" {
		return refuse("check", p.Array, "", fmt.Errorf("%w: %s", ErrPlanChanged, d))
	}
	if q.SetMin {
		if err := m.ops.k.SetSyncMin(q.Array, q.Start); err != nil {
			// EBUSY: a sync started since the re-read; nothing changed.
			return refuse("check", q.Array, "", fmt.Errorf("md: writing sync_min %d to %s: %w (nothing was changed)", q.Start, q.Array, err))
		}
	}
	changed := "nothing was changed"
	if q.SetMin {
		changed = fmt.Sprintf("sync_min of %s was set to %d, which only moves where the next check or repair starts", q.Array, q.Start)
	}
	guard := passGuard(q.Chunk)
	if err := m.ops.k.SetSyncMax(q.Array, sysfs.Some(guard)); err != nil {
		err = fmt.Errorf("md: writing sync_max %d to %s: %w (%s)", guard, q.Array, err, changed)
		if !q.SetMin {
			return refuse("check", q.Array, "", err)
		}
		return err
	}
	if err := m.ops.k.SetSyncAction(q.Array, q.Action); err != nil {
		err = fmt.Errorf("md: writing %s to sync_action of %s: %w (%s)", q.Action, q.Array, err, m.undoGuard(q.Array, guard, changed))
		if !q.SetMin && errors.Is(err, unix.EBUSY) {
			return refuse("check", q.Array, "", err)
		}
		return err
	}
	return nil
}

// undoGuard writes max back to sync_max of array after a pass did not
// start, and says what changed, given what changed before the guard.
func (m *Manager) undoGuard(array string, guard uint64, changed string) string {
	if err := m.ops.k.SetSyncMax(array, sysfs.Optional[uint64]{}); err != nil {
		return fmt.Sprintf("sync_max of %s was set to %d, which limits nothing, and writing max back failed: %v; %s", array, guard, err, changed)
	}
	return changed
}

// sleep waits d or until ctx is done.
func (m *Manager) sleep(ctx context.Context, d time.Duration) error {
	if m.ops.sleep != nil {
		return m.ops.sleep(ctx, d)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// follow waits for the check of r.Array to end (or the deadline, or
// ctx) and fills in r.
func (c *checkRun) follow(ctx context.Context, r *CheckResult) {
	c.mu.Lock()
	p := c.started[r.Array]
	c.mu.Unlock()
	m := c.m
	interval := c.req.Interval
	if interval <= 0 {
		interval = time.Second
	}
	a, err := m.fs.Array(p.Array)
	if err != nil {
		r.setErr(err)
		return
	}
	stopped := false // we wrote idle
	for {
		act, err := a.SyncAction()
		if err != nil {
			r.setErr(fmt.Errorf("md: reading sync_action of %s while its %s runs: %w", p.Array, p.Action, err))
			return
		}
		if act != p.Action {
			break // finished, or someone stopped it (ended tells which)
		}
		pr, _ := a.SyncCompleted()
		if pr.State == sysfs.ProgressRunning {
			r.PositionSectors = pr.Done
		}
		if c.req.Progress != nil {
			cp := CheckProgress{Array: p.Array, Action: p.Action, DoneSectors: pr.Done, TotalSectors: pr.Total, Deadline: c.deadline}
			if pr.State == sysfs.ProgressDelayed {
				cp.Pending = string(pr.State)
			}
			if sp, err := a.SyncSpeed(); err == nil && sp.Valid {
				cp.SpeedKiBs = sp.Value
				if sp.Value > 0 && pr.Total > pr.Done {
					cp.ETA = time.Duration((pr.Total-pr.Done)/2/sp.Value) * time.Second
				}
			}
			c.mu.Lock()
			c.req.Progress(cp)
			c.mu.Unlock()
		}
		if !c.deadline.IsZero() && !m.now().Before(c.deadline) {
			if err := m.ops.k.SetSyncAction(p.Array, sysfs.ActionIdle); err != nil {
				r.setErr(fmt.Errorf("md: stopping the %s of %s at the deadline: %w (it still runs)", p.Action, p.Array, err))
				return
			}
			stopped = true
			if err := c.waitIdle(ctx, a, interval); err != nil {
				r.setErr(fmt.Errorf("md: waiting for the %s of %s to stop: %w", p.Action, p.Array, err))
				return
			}
			break
		}
		if err := m.sleep(ctx, interval); err != nil {
			return // Ctrl-C: stop waiting, the check goes on (Result started)
		}
	}
	if !stopped {
		if err := c.waitIdle(ctx, a, interval); err != nil {
			return
		}
	}
	c.ended(ctx, a, p, r)
}

// waitIdle waits until sync_completed reads none: the sync thread has
// stopped (docs/scrub.md §4).
func (c *checkRun) waitIdle(ctx context.Context, a sysfs.Array, interval time.Duration) error {
	for {
		pr, err := a.SyncCompleted()
		if err != nil {
			return err
		}
		if pr.State == sysfs.ProgressNone {
			return nil
		}
		if err := c.m.sleep(ctx, min(interval, 100*time.Millisecond)); err != nil {
			return err
		}
	}
}

// ended reads what a check left when the kernel stopped it (interrupted)
// or it finished, and keeps the cursor or the result. The kernel tells
// which: a completed pass resets sync_min to 0 and sync_max to max; an
// interrupted one (idle or frozen, written by us at the deadline or by
// anyone) sets sync_min to the last checkpoint (0 before the first) and
// leaves sync_max at the guard the check wrote (docs/scrub.md §3, §8.5).
// mismatch_cnt holds this segment's count (§5).
func (c *checkRun) ended(ctx context.Context, a sysfs.Array, p *checkPlan, r *CheckResult) {
	cnt, err := a.MismatchCount()
	if err != nil {
		r.setErr(fmt.Errorf("md: reading mismatch_cnt of %s after its %s: %w", p.Array, p.Action, err))
		return
	}
	pos, err := a.SyncMin()
	if err != nil {
		r.setErr(fmt.Errorf("md: reading sync_min of %s after its %s: %w", p.Array, p.Action, err))
		return
	}
	limit, err := a.SyncMax()
	if err != nil {
		r.setErr(fmt.Errorf("md: reading sync_max of %s after its %s: %w", p.Array, p.Action, err))
		return
	}
	if guard := passGuard(p.Chunk); limit.Valid && limit.Value == guard {
		// Interrupted: the kernel left the guard (passGuard). It limits
		// nothing, but max is what the array had before.
		if err := c.m.ops.k.SetSyncMax(p.Array, sysfs.Optional[uint64]{}); err != nil {
			r.setErr(fmt.Errorf("md: the %s of %s was interrupted, and writing max back to its sync_max (%d, which limits nothing) failed: %w", p.Action, p.Array, guard, err))
			return
		}
	}
	total := p.Carried + cnt
	r.MismatchSectors = total
	// Finished: sync_min back at 0 and sync_max back at max, both done by
	// the kernel only when a pass completes (docs/scrub.md §3, §8.5).
	finished := pos == 0 && !limit.Valid
	if !finished && pos == 0 {
		// Interrupted before the kernel's first checkpoint: the pass
		// resumes where this segment started.
		pos = p.Start
	}
	if total > 0 {
		r.Meaning = MismatchMeaning(p.Level, p.Action, total)
	}
	if finished {
		r.Finished, r.PositionSectors = true, p.Size
		switch {
		case p.Action == sysfs.ActionRepair:
			r.Result = CheckRepaired
		case total > 0:
			r.Result = CheckMismatches
		default:
			r.Result = CheckClean
		}
	} else {
		r.Result = CheckStopped
		r.PositionSectors = alignCursor(pos, p.Chunk)
	}
	if c.req.Store == nil {
		return
	}
	now := c.m.now().UTC()
	err = c.save(ctx, p.UUID, func(rec *CheckRecord) {
		if finished {
			rec.Action, rec.Cursor, rec.Mismatches, rec.PassStarted = "", 0, 0, time.Time{}
			rec.LastFinished, rec.LastAction, rec.LastMismatches = now, p.Action, total
			return
		}
		rec.Action, rec.Cursor, rec.Mismatches = p.Action, r.PositionSectors, total
		if rec.PassStarted.IsZero() {
			rec.PassStarted = now
		}
	})
	if err != nil {
		r.setErr(fmt.Errorf("md: the %s of %s ended, but saving its record failed: %w", p.Action, p.Array, err))
		return
	}
	r.CursorSaved = !finished
}

// save loads the store again, changes the check record of uuid with f
// and saves it: the rest (slot records, other arrays' checks) stays as
// the store has it now.
func (c *checkRun) save(ctx context.Context, uuid string, f func(*CheckRecord)) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	rs, err := loadRecords(ctx, c.req.Store)
	if err != nil {
		return err
	}
	rec, _ := rs.Check(uuid)
	rec.UUID = uuid
	f(&rec)
	rs.PutCheck(rec)
	return c.req.Store.Save(ctx, rs)
}

// cancel stops a running check or repair of r.Array (idle) and, with a
// store, saves its cursor. It refuses an array where none runs: a
// resync, recovery or reshape is never stopped.
func (c *checkRun) cancel(ctx context.Context, r *CheckResult) {
	m := c.m
	f := m.gatherCheck(r.Array)
	r.UUID, r.Level = f.array.UUID, f.array.Level
	refusal := func(format string, args ...any) {
		r.setErr(&RefusedError{Op: "check", Array: r.Array, Check: CheckScrubRunning, Reason: fmt.Sprintf(format, args...), Err: ErrCheckBusy})
	}
	switch {
	case len(f.errs) > 0:
		refusal("cannot read %s", strings.Join(f.errs, "; "))
		return
	case f.action != sysfs.ActionCheck && f.action != sysfs.ActionRepair:
		refusal("no check or repair is running (sync_action %q)", f.action)
		return
	case c.req.Store != nil && f.array.UUID == "":
		refusal("its UUID is unknown, so no cursor can be kept")
		return
	}
	p := &checkPlan{Array: r.Array, UUID: f.array.UUID, Level: f.array.Level, Action: f.action, Size: f.size,
		Chunk: max(uint64(f.chunk/512), 8)}
	if rec := c.record(p.UUID); rec != nil && rec.Action == p.Action {
		p.Start, p.Carried, p.Started = rec.Cursor, rec.Mismatches, rec.PassStarted
	}
	r.Action, r.SizeSectors, r.ResumedFrom = p.Action, p.Size, p.Start
	if c.req.DryRun {
		r.Result, r.PositionSectors = CheckWouldStop, f.progress.Done
		return
	}
	// The executor's re-check: still this check, right before the write.
	if g := m.gatherCheck(r.Array); g.action != f.action {
		r.setErr(refuse("check", r.Array, "", fmt.Errorf("%w: sync_action is now %q", ErrPlanChanged, g.action)))
		return
	}
	if err := m.ops.k.SetSyncAction(r.Array, sysfs.ActionIdle); err != nil {
		r.setErr(fmt.Errorf("md: writing idle to sync_action of %s: %w (nothing was changed)", r.Array, err))
		return
	}
	a, err := m.fs.Array(r.Array)
	if err != nil {
		r.setErr(err)
		return
	}
	interval := c.req.Interval
	if interval <= 0 {
		interval = time.Second
	}
	if err := c.waitIdle(ctx, a, interval); err != nil {
		r.Result = CheckStopped
		r.setErr(fmt.Errorf("md: idle was written to %s, but waiting for its %s to stop failed: %w", r.Array, p.Action, err))
		return
	}
	c.ended(ctx, a, p, r)
}
