package md

// This file holds heal: filling a missing slot with a blank disk found in
// the port (by-path identity) that the slot's record names. The decision
// of which slots to try and with which disk is decideHeal's, a pure
// function of the snapshot, the records and the disks found per port.
// Whether the disk may be used (blank, not in use, large enough) and how
// it is added are the replace planner's and executor's (PlanReplace,
// ExecuteReplace), exactly as for mdctl replace --slot N.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/go-mdraid/mdraid/blockdev"
	"github.com/go-mdraid/mdraid/internal/escape"
	"github.com/go-mdraid/mdraid/sysfs"
)

// Outcome is what heal did, or would do, about one slot or array.
type Outcome string

// Heal outcomes, in the JSON form.
const (
	// OutcomeHealed: the disk was added to the slot; recovery follows.
	OutcomeHealed Outcome = "healed"
	// OutcomeWouldHeal: a dry run found the disk usable and planned the
	// add; nothing was written.
	OutcomeWouldHeal Outcome = "would-heal"
	// OutcomeRefused: the slot was not filled, for Decision.Reason.
	OutcomeRefused Outcome = "refused"
	// OutcomeSkipped: nothing to do (the array is not degraded).
	OutcomeSkipped Outcome = "skipped"
	// OutcomeFailed: the add was attempted and failed.
	OutcomeFailed Outcome = "failed"
	// OutcomeUnfrozen: heal unfroze recovery that an interrupted replace
	// had left frozen; the array is then decided as usual.
	OutcomeUnfrozen Outcome = "unfrozen"
)

// Decision is heal's verdict on one slot (or, with Slot -1, on a whole
// array) and why.
type Decision struct {
	// Array is the kernel name, UUID the array UUID.
	Array string `json:"array"`
	UUID  string `json:"uuid,omitempty"`
	// Slot is the slot concerned, or -1 for the whole array.
	Slot int `json:"slot"`
	// ByPath is the port recorded for the slot.
	ByPath string `json:"by_path,omitempty"`
	// Device and Disk are the kernel name and device node of the disk
	// found in that port.
	Device string `json:"device,omitempty"`
	Disk   string `json:"disk,omitempty"`
	// Outcome is what was done; Reason says why, for people.
	Outcome Outcome `json:"outcome"`
	Reason  string  `json:"reason"`
	// Err is the typed cause of a refusal or failure: a *RefusedError
	// (matching ErrRefused) for heal's own refusals and the planner's,
	// an error matching ErrHealDeferred or ErrHealNotRetried, the
	// Store's error, or the executor's error.
	Err error `json:"-"`

	old string // the faulty member still holding the slot, removed first
}

// Reasons heal refuses a slot by itself, before asking the replace
// planner. Decision.Err is then a *RefusedError (matching ErrRefused)
// that wraps one of them.
var (
	// errNoRecord: the array has no slot record; heal never acts on an
	// array it has not seen healthy.
	errNoRecord = errors.New("md: no slot record for the array")
	// errRecordMismatch: the array's level, metadata or number of slots
	// differ from its record (it was reshaped or re-created); heal never
	// grows or changes an array. Record it again once healthy.
	errRecordMismatch = errors.New("md: array does not match its slot record")
	// errRecordHost: the array now names another homehost than its
	// record: it lives on another host now, or was re-created there.
	errRecordHost = errors.New("md: array belongs to another host than its slot record")
	// errPortClaimed: the slot's recorded port is claimed by another
	// slot record too (of this array or another), so the disk found
	// there may belong to either; heal fills neither from it.
	errPortClaimed = errors.New("md: port claimed by two slot records")
	// errNoRecordedPort: the slot's member had no by-path identity.
	errNoRecordedPort = errors.New("md: no port recorded for the slot")
	// errPortEmpty: no disk is in the recorded port (yet).
	errPortEmpty = errors.New("md: no disk in the recorded port")
	// errPortAmbiguous: several block devices claim the port.
	errPortAmbiguous = errors.New("md: several disks in the recorded port")
	// errPortChanged: the disk in the port changed between the plan and
	// the add.
	errPortChanged = errors.New("md: the disk in the port changed")
	// errHealState: the array is not running, has failed, or is
	// read-only.
	errHealState = errors.New("md: array cannot be healed in its state")
	// ErrHealDeferred: the array is busy (a sync runs or is frozen, a
	// spare is waiting, or another slot is healed first); a later pass
	// tries again.
	ErrHealDeferred = errors.New("md: heal deferred")
)

// HealOptions configures Manager.Heal.
type HealOptions struct {
	// Store holds the slot records; required.
	Store Store
	// Array limits the pass to one array, named as in the package documentation ("Naming arrays"); an
	// ambiguous name is refused. Empty for every array.
	Array string
	// DryRun plans but writes nothing (OutcomeWouldHeal); see PlanHeal.
	DryRun bool
	// AllowImageFile accepts a regular file found in a recorded port as
	// the disk to fill a slot from or re-add, as ReplaceRequest's does.
	// It exists for tests on md/mdtest, whose disks are image files;
	// mdctl never sets it.
	AllowImageFile bool
	// Logger receives every decision with its reason; default none.
	Logger *slog.Logger

	// Report, when set, is the snapshot to decide on, as Discover
	// returned it; by default Heal takes one. A watcher that has just
	// taken a snapshot heals from that one.
	Report *Report
	// Records, when set, are the slot records to heal from; Store is
	// then not loaded (and may be nil).
	Records *Records
	// History, when set, remembers the attempts that failed across
	// passes (see HealHistory); nil remembers nothing, as for one pass.
	History *HealHistory
	// ReAdd also puts a former member found in its slot's recorded port
	// back into that slot (Manager.ReAdd), as mdadm's POLICY
	// action=re-add: with a bitmap md copies only what changed. Each
	// re-add is remembered in the Store (Records.ReAdds), which must be
	// set: a member that goes missing again after heal re-added it, or
	// that the kernel failed with read errors or bad blocks, is not
	// re-added again (ErrReAddBlocked) until an operator re-adds it
	// (mdctl re-add --store). Without ReAdd such a disk is refused as
	// not blank.
	ReAdd bool
}

// HealHistory remembers the heal attempts that failed (the array, the
// slot and the disk, with the array as it was), across the passes of
// Heal that share it: an attempt that failed is not made again while
// neither the disk nor the array changed; its decision is then
// OutcomeFailed with the first failure's reason, and Decision.Err matches
// ErrHealNotRetried. A watcher keeps one for as long as it runs. The zero
// value remembers nothing yet. It is not safe for concurrent use.
type HealHistory struct {
	failed map[healAttempt]failedAttempt
}

// Heal makes one pass over the degraded arrays. For each array with a
// record and each missing (or failed) slot, it looks in the port recorded
// for the slot; a disk found there (by its by-path identity, computed from
// sysfs alone) is offered to the replace planner for exactly that slot,
// and if the planner accepts it (blank by CheckBlank, not in use, large
// enough), the replace executor adds it. Heal never grows an array, never
// touches a disk that is not blank, never uses a disk in another port, and
// never acts on an array without a record. A record whose array now names
// another homehost, and a port that two slot records claim, are refused
// with the reason (Decision.Reason). One slot per array is healed per
// pass; the next waits until the recovery ends.
//
// Every decision is returned and logged. Heal fails, acting on nothing,
// when the records cannot be loaded: a missing store gives an error
// matching fs.ErrNotExist, a damaged one the Store's error (md/store's
// *store.Error, matching store.ErrCorrupt or store.ErrVersion). An Array that matches nothing gives ErrNoArray.
//
// Because the records come from the store and the disks from sysfs, heal
// works the same at boot, after a disk was swapped while the machine was
// off, as while it runs.
func (m *Manager) Heal(ctx context.Context, opts HealOptions) ([]Decision, error) {
	rs := opts.Records
	if rs == nil {
		if opts.Store == nil {
			return nil, errors.New("md: heal needs a Store of slot records")
		}
		var err error
		if rs, err = opts.Store.Load(ctx); err != nil {
			return nil, err
		}
	}
	r := opts.Report
	if r == nil {
		var err error
		if r, err = m.Discover(ctx); err != nil {
			return nil, err
		}
	}
	if opts.Array != "" {
		// One resolution rule for every command: a UUID or name that
		// more than one array carries is refused.
		kname, err := m.resolve(opts.Array)
		if err != nil {
			return nil, refuseLookup("heal", opts.Array, "", err)
		}
		var keep []Array
		for _, a := range r.Arrays {
			if a.Device == kname {
				keep = append(keep, a)
			}
		}
		if len(keep) == 0 {
			return nil, refuse("heal", opts.Array, "", fmt.Errorf("%w: %s", ErrNoArray, escape.Text(opts.Array)))
		}
		one := *r // the caller's Report stays as it was
		one.Arrays = keep
		r = &one
	}
	if opts.ReAdd && opts.Store == nil {
		return nil, errors.New("md: heal with ReAdd needs a Store, to remember each re-add across restarts")
	}
	cfg := healConfig{dryRun: opts.DryRun, allowImage: opts.AllowImageFile, logger: opts.Logger, reAdd: opts.ReAdd, store: opts.Store, records: rs}
	if h := opts.History; h != nil {
		if h.failed == nil {
			h.failed = map[healAttempt]failedAttempt{}
		}
		cfg.failed = h.failed
	}
	return m.heal(ctx, r, rs, cfg), nil
}

// healConfig is what one heal pass needs besides the snapshot.
type healConfig struct {
	dryRun     bool
	allowImage bool // HealOptions.AllowImageFile
	logger     *slog.Logger
	filler     slotFiller // nil: the replace planner and executor
	// failed remembers the attempts that failed, across the passes of
	// one watch; nil remembers nothing (a single pass).
	failed map[healAttempt]failedAttempt
	// reAdd, store and records: see HealOptions.ReAdd.
	reAdd   bool
	store   Store
	records *Records
	now     func() time.Time
}

// healAttempt is one way of filling a slot: the array, the slot, and the
// disk (its serial, or its device number when it has none).
type healAttempt struct {
	uuid string
	slot int
	disk string
}

// failedAttempt is what a failed attempt left: the array as it was
// (healShape) and the reason reported.
type failedAttempt struct {
	shape  string
	reason string
	err    error
}

// healShape sums up what of an array changes when a disk is added,
// removed, fails or is rebuilt: its members, their slots and states.
// A heal attempt that failed is not retried while it is the same.
func healShape(a *Array) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s", a.Availability, a.State)
	for _, s := range a.Slots {
		fmt.Fprintf(&b, "|%d %s", s.Slot, s.State)
		if s.Member != nil {
			fmt.Fprintf(&b, " %s %v", s.Member.Device, s.Member.Flags)
		}
	}
	for _, sp := range a.Spares {
		fmt.Fprintf(&b, "|spare %s", sp.Device)
	}
	return b.String()
}

// attemptOf names the attempt of decision d: the disk by serial, or by
// device number; ok is false when the disk cannot be described.
func (m *Manager) attemptOf(d *Decision) (healAttempt, bool) {
	bd, err := blockdev.Lookup(m.fs, m.devRoot, d.Device)
	if err != nil {
		return healAttempt{}, false
	}
	id := "dev " + bd.Dev.String()
	if bd.Serial != "" {
		id = "serial " + bd.Serial
	}
	return healAttempt{uuid: d.UUID, slot: d.Slot, disk: id}, true
}

// ErrHealNotRetried matches a heal attempt that failed before in the same
// way and is not tried again until the disk or the array changes.
var ErrHealNotRetried = errors.New("md: heal attempt not retried")

// heal decides and carries out one pass over the snapshot r.
func (m *Manager) heal(ctx context.Context, r *Report, rs *Records, cfg healConfig) []Decision {
	log := cfg.logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var thawed []Decision
	if !cfg.dryRun {
		thawed = m.thawAll(r, log)
	}
	ds := decideHeal(r, rs, m.ports(log), m.devRoot)
	ds = append(thawed, ds...)
	// The identities of the disks offered, read before any is used: the
	// retry rule (fillOnce) decides from them.
	attempts := make([]healAttempt, len(ds))
	known := make([]bool, len(ds))
	for i := range ds {
		if ds[i].Outcome == "" {
			attempts[i], known[i] = m.attemptOf(&ds[i])
		}
	}
	for i := range ds {
		if ds[i].Outcome == OutcomeUnfrozen {
			continue // logged by thawAll
		}
		d := &ds[i]
		if d.Outcome == "" {
			m.fillOnce(ctx, cfg, r, d, attempts[i], known[i])
		}
		d.Log(log)
	}
	return ds
}

// fillOnce fills the slot of d unless the same attempt (array, slot,
// disk) failed before and neither the disk nor the array changed since:
// a failure that will recur is not retried on every pass (each retry
// freezes, rewrites the superblock, adds and unfreezes, which wakes the
// next pass). Such a decision is OutcomeFailed with the first failure's
// reason, so that the watcher reports it once. at names the attempt
// (attemptOf); known is false when its disk could not be described, and
// it is then always tried.
func (m *Manager) fillOnce(ctx context.Context, cfg healConfig, r *Report, d *Decision, at healAttempt, known bool) {
	var shape string
	if a := r.find(d.Array); a != nil {
		shape = healShape(a)
	}
	if known && cfg.failed != nil && !cfg.dryRun {
		if prev, ok := cfg.failed[at]; ok && prev.shape == shape {
			d.Outcome, d.Reason = OutcomeFailed, prev.reason
			d.Err = fmt.Errorf("%w: %w", ErrHealNotRetried, prev.err)
			return
		}
		delete(cfg.failed, at)
	}
	if !cfg.reAdd || !m.fillReAdd(ctx, cfg, r, d) {
		m.fill(ctx, cfg, d)
	}
	if !known || cfg.failed == nil || d.Outcome != OutcomeFailed ||
		errors.Is(d.Err, errLocked) || errors.Is(d.Err, ErrPlanChanged) || errors.Is(d.Err, errMapLocked) {
		return // nothing written to the disk (a faulty member removed first changes the array's shape): the next pass decides afresh
	}
	d.Reason += "; not retried until the disk or the array changes"
	cfg.failed[at] = failedAttempt{shape: shape, reason: d.Reason, err: d.Err}
}

// fill asks the replace planner whether the disk may fill the slot and,
// unless dryRun, has the executor do it. The by-path identity of the disk
// is part of the request, so the executor's final plan checks it again.
func (m *Manager) fill(ctx context.Context, cfg healConfig, d *Decision) {
	f, dryRun := cfg.filler, cfg.dryRun
	if f == nil {
		f = replaceFiller{m}
	}
	req := ReplaceRequest{Array: d.Array, With: d.Disk, Slot: &d.Slot, Member: d.old, ByPath: d.ByPath, AllowImageFile: cfg.allowImage}
	p, err := f.planFill(ctx, req)
	if err != nil {
		d.Outcome, d.Err, d.Reason = OutcomeFailed, err, err.Error()
		if errors.Is(err, ErrRefused) {
			d.Outcome = OutcomeRefused
		}
		return
	}
	if dryRun {
		d.Outcome, d.Reason = OutcomeWouldHeal, fmt.Sprintf("dry run: %s would be added to slot %d", d.Disk, d.Slot)
		return
	}
	// The port is checked again by the executor's final plan, under the
	// array's lock (ReplaceRequest.ByPath): a disk moved meanwhile is
	// refused there, having written nothing.
	if err := f.executeFill(ctx, p); err != nil {
		d.Outcome, d.Err, d.Reason = OutcomeFailed, err, err.Error()
		if errors.Is(err, errPortChanged) {
			d.Outcome = OutcomeRefused
		}
		return
	}
	d.Outcome, d.Reason = OutcomeHealed, fmt.Sprintf("added %s to slot %d; recovery follows", d.Disk, d.Slot)
}

// Log logs d on log as Heal logs each decision: one "heal" record at
// level error for OutcomeFailed, debug for OutcomeSkipped and info
// otherwise, with the array, uuid, outcome, slot (when set), by_path and
// disk (when known) and reason attributes. md/watch logs its decisions
// through it too.
func (d Decision) Log(log *slog.Logger) {
	level := slog.LevelInfo
	switch d.Outcome {
	case OutcomeFailed:
		level = slog.LevelError
	case OutcomeSkipped:
		level = slog.LevelDebug
	}
	attrs := []any{"array", d.Array, "uuid", d.UUID, "outcome", string(d.Outcome)}
	if d.Slot >= 0 {
		attrs = append(attrs, "slot", d.Slot)
	}
	if d.ByPath != "" {
		attrs = append(attrs, "by_path", d.ByPath)
	}
	if d.Disk != "" {
		attrs = append(attrs, "disk", d.Disk)
	}
	attrs = append(attrs, "reason", d.Reason)
	log.Log(context.Background(), level, "heal", attrs...)
}

// ports maps every by-path identity in sysfs to the block devices that
// have it (normally one), from class/block alone (blockdev.Ports).
func (m *Manager) ports(log *slog.Logger) map[string][]string {
	out, err := blockdev.Ports(m.fs)
	if err != nil {
		log.Warn("listing block devices", "err", err)
	}
	return out
}

// decideHeal is heal's decision: for every array in r, whether to try
// to fill which slot with which disk. ports maps a by-path identity to
// the block devices found there. A decision left with an empty Outcome is
// a disk to offer to the replace planner for that slot; every other
// decision is final. At most one slot per array is offered.
func decideHeal(r *Report, rs *Records, ports map[string][]string, devRoot string) []Decision {
	var out []Decision
	claims := portClaims(rs)
	for i := range r.Arrays {
		a := &r.Arrays[i]
		if !present(a) {
			continue
		}
		whole := func(o Outcome, err error) {
			if o == OutcomeRefused {
				err = refuse("heal", a.Device, "", err)
			}
			out = append(out, Decision{Array: a.Device, UUID: a.UUID, Slot: -1, Outcome: o, Reason: err.Error(), Err: err})
		}
		switch a.Availability {
		case Online, ReadOnly:
			whole(OutcomeSkipped, errors.New("not degraded"))
			continue
		case Inactive:
			whole(OutcomeRefused, fmt.Errorf("%w: not running", errHealState))
			continue
		case Failed:
			whole(OutcomeRefused, fmt.Errorf("%w: it has failed; a rebuild cannot restore it", errHealState))
			continue
		case Unknown:
			whole(OutcomeRefused, fmt.Errorf("%w: its state (%q) is unknown: %w", errHealState, a.State, errUnknownFact))
			continue
		}
		rec, ok := rs.find(a.UUID)
		if !ok || a.UUID == "" {
			whole(OutcomeRefused, fmt.Errorf("%w: record %s while it is healthy first", errNoRecord, a.Device))
			continue
		}
		if rec.Level != a.Level || rec.RaidDisks != a.RaidDisks || rec.Metadata != storable(a.Metadata) {
			whole(OutcomeRefused, fmt.Errorf("%w: array is %s, metadata %s, %d slots; record says %s, metadata %s, %d slots",
				errRecordMismatch, a.Level, a.Metadata, a.RaidDisks, rec.Level, rec.Metadata, rec.RaidDisks))
			continue
		}
		if rec.Homehost != storable(a.Homehost) { // stored as NewRecord stores it
			whole(OutcomeRefused, fmt.Errorf("%w: the array's homehost is %q, its record says %q; record it again on this host once healthy",
				errRecordHost, a.Homehost, rec.Homehost))
			continue
		}
		if k := a.Activity.Kind; k == sysfs.ActionFrozen && a.Freeze != nil {
			whole(OutcomeRefused, fmt.Errorf("%w: sync_action is frozen: %s", ErrHealDeferred, a.Freeze.Hint))
			continue
		}
		if k := a.Activity.Kind; k != sysfs.ActionIdle && k != "" {
			whole(OutcomeRefused, fmt.Errorf("%w: sync_action is %s", ErrHealDeferred, k))
			continue
		}
		// A delayed sync is about to run. A pending resync (Activity
		// Pending "pending", new with issue 31) defers nothing, as
		// before: it waits for a first write on a read-auto array, and
		// a frozen one is deferred above.
		if a.Activity.Pending == PendingDelayed {
			whole(OutcomeRefused, fmt.Errorf("%w: a sync is %s", ErrHealDeferred, a.Activity.Pending))
			continue
		}
		if len(a.Spares) > 0 {
			whole(OutcomeRefused, fmt.Errorf("%w: the array has a spare (%s) for the kernel to rebuild onto", ErrHealDeferred, a.Spares[0].Device))
			continue
		}
		chosen := -1
		for _, s := range a.Slots {
			if s.State != SlotMissing && s.State != SlotFaulty {
				continue
			}
			sr := rec.Slots[s.Slot]
			d := Decision{Array: a.Device, UUID: a.UUID, Slot: s.Slot, ByPath: sr.ByPath, Outcome: OutcomeRefused}
			devs := ports[sr.ByPath]
			others := claims[sr.ByPath]
			switch {
			case sr.ByPath == "":
				d.Err = fmt.Errorf("%w: slot %d's member %s had no by-path identity", errNoRecordedPort, s.Slot, sr.Device)
			case len(others) > 1:
				d.Err = fmt.Errorf("%w: %s is recorded for %s", errPortClaimed, sr.ByPath, strings.Join(others, " and "))
			case len(devs) == 0:
				d.Err = fmt.Errorf("%w: nothing in %s", errPortEmpty, sr.ByPath)
			case len(devs) > 1:
				sort.Strings(devs)
				d.Err = fmt.Errorf("%w: %s in %s", errPortAmbiguous, strings.Join(devs, ", "), sr.ByPath)
			case chosen >= 0:
				d.Device, d.Disk = devs[0], path.Join(devRoot, devs[0])
				d.Err = fmt.Errorf("%w: slot %d is healed first, one at a time", ErrHealDeferred, chosen)
			default:
				d.Device, d.Disk = devs[0], path.Join(devRoot, devs[0])
				d.Outcome = ""
				if s.State == SlotFaulty && s.Member != nil {
					d.old = s.Member.Device
				}
				chosen = s.Slot
			}
			if d.Err != nil {
				d.Err = refuse("heal", a.Device, "", d.Err)
				d.Reason = d.Err.Error()
			}
			out = append(out, d)
		}
	}
	return out
}

// slotFiller is what heal needs from the replace machinery: a plan with
// every check a replace makes (a refusal matches ErrRefused), and its
// execution. It is an interface so that tests can fake the kernel side.
type slotFiller interface {
	planFill(ctx context.Context, req ReplaceRequest) (*Plan, error)
	executeFill(ctx context.Context, p *Plan) error
	planReAdd(ctx context.Context, req ReAddRequest) (*ReAddPlan, error)
	reAdd(ctx context.Context, req ReAddRequest) (*ReAddResult, error)
}

// replaceFiller fills slots with the replace planner and executor, the
// same as mdctl replace --slot N.
type replaceFiller struct{ m *Manager }

func (f replaceFiller) planFill(ctx context.Context, req ReplaceRequest) (*Plan, error) {
	return f.m.PlanReplace(ctx, req)
}

func (f replaceFiller) executeFill(ctx context.Context, p *Plan) error {
	_, err := f.m.ExecuteReplace(ctx, p)
	return err
}

func (f replaceFiller) planReAdd(ctx context.Context, req ReAddRequest) (*ReAddPlan, error) {
	return f.m.PlanReAdd(ctx, req)
}

func (f replaceFiller) reAdd(ctx context.Context, req ReAddRequest) (*ReAddResult, error) {
	return f.m.ReAdd(ctx, req)
}

// thawAll undoes, before heal decides, every freeze that an interrupted
// replace left (thawStale), and reads those arrays again into r. It
// returns one OutcomeUnfrozen decision per array unfrozen, and a failed
// one when unfreezing failed.
func (m *Manager) thawAll(r *Report, log *slog.Logger) []Decision {
	var out []Decision
	for i := range r.Arrays {
		a := &r.Arrays[i]
		if a.Freeze == nil || !a.Freeze.Stale || a.UUID == "" {
			continue
		}
		did, err := m.thawStale(a.Device, a.UUID)
		if err == nil && did == "" {
			continue
		}
		d := Decision{Array: a.Device, UUID: a.UUID, Slot: -1, Outcome: OutcomeUnfrozen, Reason: did}
		if err != nil {
			d.Outcome, d.Err = OutcomeFailed, err
			d.Reason = strings.TrimPrefix(did+"; ", "; ") + err.Error()
		}
		d.Log(log)
		out = append(out, d)
		*a = m.status(m.fs.WithCache(), a.Device)
	}
	return out
}

// portClaims maps every recorded port to the slot records that claim it
// ("array UUID slot N"), over all records.
func portClaims(rs *Records) map[string][]string {
	out := map[string][]string{}
	if rs == nil {
		return out
	}
	for _, rec := range rs.Arrays {
		for _, sr := range rec.Slots {
			if sr.ByPath != "" {
				out[sr.ByPath] = append(out[sr.ByPath], fmt.Sprintf("array %s slot %d", rec.UUID, sr.Slot))
			}
		}
	}
	return out
}

// present reports whether a counts as an existing array: a device whose
// array was stopped lingers with array_state "clear" for a moment.
func present(a *Array) bool { return a.State != "clear" }

// find returns the array with kernel name dev.
func (r *Report) find(dev string) *Array {
	for i := range r.Arrays {
		if r.Arrays[i].Device == dev {
			return &r.Arrays[i]
		}
	}
	return nil
}
