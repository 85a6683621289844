package md

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/go-mdraid/mdraid/md/mapfile"
	"github.com/go-mdraid/mdraid/sysfs"
)

// Errors of the executor.
var (
	// ErrPlanChanged means the array or the candidate changed between
	// planning and execution; nothing was written to the candidate. A
	// faulty member the plan removes first may have been removed by then:
	// the ExecError says so, and its NothingChanged is false.
	ErrPlanChanged = errors.New("md: the array or the disk changed since the plan was made")
	// errReadBack means what was read back after writing the new
	// superblock differs from what was written.
	errReadBack = errors.New("md: read-back differs from what was written")
	// errVerify means every step ran but the array does not look as
	// planned afterwards.
	errVerify = errors.New("md: replace did not take effect as planned")
)

// ExecError reports a replace that failed after it started changing the
// system: the step that failed, the steps done before it, and in what
// state the array and the disk were left. It unwraps to the cause, so
// errors.Is(err, unix.EBUSY) works.
type ExecError struct {
	Array string
	Step  StepKind
	Done  []StepKind
	// State says what the failure left behind and what to do next.
	State string
	// NothingChanged is set when the replace failed before changing
	// anything that stays changed: nothing was written to any disk,
	// no member was removed or added, and recovery is not left frozen.
	NothingChanged bool
	Err            error
}

// Error names the failed step, its cause and the state left behind.
func (e *ExecError) Error() string {
	return fmt.Sprintf("md: replace in %s failed at step %s: %v; %s", e.Array, e.Step, e.Err, e.State)
}

// Unwrap returns the cause.
func (e *ExecError) Unwrap() error { return e.Err }

// ReplaceResult is what ExecuteReplace did.
type ReplaceResult struct {
	Plan *Plan `json:"plan"`
	// Member is the new member's kernel name, Slot the slot it holds.
	Member string `json:"member"`
	Slot   int    `json:"slot"`
	// SyncAction is what sync_action read when the result was verified:
	// "recover" (rebuild running) or "idle" (already done).
	SyncAction string `json:"sync_action"`
	// Duration is the time from the start of ExecuteReplace to its
	// return: the replace itself, not the rebuild.
	Duration time.Duration `json:"duration_ns"`
	// Steps are the executed steps with their durations.
	Steps []StepTiming `json:"steps"`
}

// StepTiming is how long one executed step took.
type StepTiming struct {
	Kind     StepKind      `json:"kind"`
	Duration time.Duration `json:"duration_ns"`
}

// ExecuteReplace carries out a plan from PlanReplace:
//
//  1. it takes the array's exclusive lock (a refusal, matching
//     ErrRefused and naming the lock's holder, if another replace holds
//     it);
//  2. re-reads the array and the candidate and plans again, failing with
//     ErrPlanChanged (wrapping any refusal) if anything that matters
//     differs;
//  3. freezes recovery if sync_action reads idle;
//  4. claims the disk: opens it exclusively and with O_DIRECT, and
//     checks through that descriptor that it is still the planned disk
//     and blank (a refusal here leaves everything as it was);
//  5. removes the faulty member, retrying EBUSY a few times as mdadm
//     does (only now, so that a refusal by that check removes nothing;
//     before the write, so that the new member never shares the array
//     with the old one);
//  6. takes mdadm's map lock (Config.MapDir), waiting up to 10 s for
//     it, then writes the new member's superblock (and bitmap) through
//     the claim, synced and read back, and closes it;
//  7. adds the disk as a spare with ADD_NEW_DISK (right after the
//     close: closing a written disk makes udev probe it, and mdadm
//     --incremental, which mdadm 4.2's rules run then and which takes
//     the map lock before it opens a disk to add it, waits until the add
//     is done), then releases the map lock;
//  8. for a hot replace, marks the old member want_replacement;
//  9. pins the new member to the target slot through dev-NEW/slot;
//  10. unfreezes, and checks that raid_disks is unchanged and that the
//     new member holds the slot with recovery running or done.
//
// A failure after the first change is an *ExecError naming the step and
// the state left behind. Cancelling ctx stops nothing once the first
// change is made: the steps take milliseconds.
//
// # Interrupted runs
//
// If a replace dies after writing the superblock and before ADD_NEW_DISK,
// the disk carries a superblock that makes it "not blank". Planning the
// same replace again recognises it as its own (see ResumeWritten): the
// only thing on the disk is one valid superblock of this array's version
// at its location, with the array's set UUID, creation time, level and
// raid_disks, events 0, role spare, no device flags, the array's data
// offset, and a dev_number no bound member uses. The rerun writes the same
// superblock again (keeping its device UUID and dev_number) and carries
// on. If it died after ADD_NEW_DISK but before pinning the slot, recovery
// is still frozen and the disk is an unslotted spare of this array; the
// rerun pins the slot and unfreezes (ResumeAdded). Any other superblock
// is refused as not blank.
func (m *Manager) ExecuteReplace(ctx context.Context, p *Plan) (*ReplaceResult, error) {
	start := time.Now()
	if p == nil || len(p.Steps) == 0 {
		return nil, errors.New("md: ExecuteReplace needs a plan from PlanReplace")
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	key := p.UUID
	if key == "" {
		key = p.Array
	}
	unlock, err := lockArray(m.ops.runDir, key)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if p.candDev != (sysfs.DevNum{}) {
		// Two replaces into different arrays must not share a disk: the
		// kernel does not compare set UUIDs on ADD_NEW_DISK, so one could
		// add a disk that carries the other's superblock.
		unlockDisk, err := lockArray(m.ops.runDir, "disk-"+p.candDev.String())
		if err != nil {
			return nil, err
		}
		defer unlockDisk()
	}

	// The same route as PlanReplace's, under the lock: the facts again in
	// one pass (any freeze record is stale now: we hold the lock), the
	// pure plan again, and nothing done unless it is the same plan.
	rf := m.gatherReplace(p.Array, p.req, key)
	q, err := planReplace(rf.array, rf.cand, p.req, p.devUUID)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrPlanChanged, err)
	}
	if d := planDiff(p, q); d != "" {
		return nil, refuse("replace", p.Array, p.req.Member, fmt.Errorf("%w: %s", ErrPlanChanged, d))
	}

	x := &execution{m: m, p: q, key: key}
	defer x.release()
	if q.adopted != nil {
		// The freeze an interrupted run left is ours now.
		x.froze, x.written = true, q.adopted.Written && q.adopted.CandDev == q.Candidate.DevNum
		x.removed = q.adopted.Removed
		if err := x.recordFreeze(); err != nil {
			return nil, err
		}
	}
	var timings []StepTiming
	for _, st := range q.Steps {
		t0 := time.Now()
		err := x.step(st.Kind)
		timings = append(timings, StepTiming{Kind: st.Kind, Duration: time.Since(t0)})
		if err != nil {
			return nil, x.failed(st.Kind, err)
		}
		x.done = append(x.done, st.Kind)
		if m.ops.afterStep != nil {
			if err := m.ops.afterStep(st.Kind); err != nil {
				return nil, x.failed(st.Kind, err)
			}
		}
	}
	return &ReplaceResult{
		Plan: q, Member: q.Candidate.Device, Slot: q.Slot,
		SyncAction: string(x.action), Duration: time.Since(start), Steps: timings,
	}, nil
}

// planDiff says what differs between two plans for the same request, or
// "" when they would do the same thing.
func planDiff(p, q *Plan) string {
	var d []string
	if p.Slot != q.Slot {
		d = append(d, fmt.Sprintf("slot %d is now %d", p.Slot, q.Slot))
	}
	if p.candDev != q.candDev || p.Candidate.SizeBytes != q.Candidate.SizeBytes {
		d = append(d, "the candidate disk changed")
	}
	if p.DevNumber != q.DevNumber {
		d = append(d, fmt.Sprintf("dev_number %d is now %d", p.DevNumber, q.DevNumber))
	}
	if p.UUID != q.UUID || p.RaidDisks != q.RaidDisks {
		d = append(d, "the array changed")
	}
	if (p.Remove == nil) != (q.Remove == nil) || (p.Remove != nil && p.Remove.Device != q.Remove.Device) {
		d = append(d, "the member to remove changed")
	}
	if p.Resume != q.Resume {
		d = append(d, fmt.Sprintf("resume stage %q is now %q", p.Resume, q.Resume))
	}
	return strings.Join(d, "; ")
}

// execution is one run of a plan.
type execution struct {
	m      *Manager
	p      *Plan
	done   []StepKind
	froze  bool
	action sysfs.SyncAction
	// key names the array's lock and freeze record; written says the
	// superblock write on the candidate has started (in this run or in
	// the interrupted one whose freeze it adopted).
	key     string
	written bool
	// claim is the candidate held open exclusively from StepClaim to
	// StepWriteSuperblock; mapLock is mdadm's map lock, held from
	// StepWriteSuperblock to the end of StepAdd.
	claim   claimedDevice
	mapLock *mapfile.Lock
	// removed is the faulty member this run (or the interrupted one whose
	// freeze it adopted) removes or removed, kept in the freeze record.
	removed string
}

// release closes a claim that was not written and releases the map
// lock.
func (x *execution) release() {
	if x.claim != nil {
		x.claim.Close()
		x.claim = nil
	}
	x.unlockMap()
}

func (x *execution) unlockMap() {
	if x.mapLock != nil {
		x.mapLock.Unlock()
		x.mapLock = nil
	}
}

// lockMap takes mdadm's map lock for the write and the add. From the
// close of the write to ADD_NEW_DISK the disk is unclaimed, and with
// mdadm 4.2's udev rules (Debian 12) the close makes udev run mdadm
// --incremental on it, which could add the new spare itself. mdadm takes
// the map lock before it reopens a disk to add it (Incremental.c;
// docs/assembly.md §2.1), so holding the lock until the add is done
// shuts it out. Until the close the claim's O_EXCL does, so the lock is
// not held over the removal and its retries (seconds, on a member with
// I/O stuck), which would stall every incremental assembly on the
// machine.
func (x *execution) lockMap() error {
	wait := x.m.ops.mapLockWait
	if wait == 0 {
		wait = mapLockWait
	}
	l, err := mapfile.Map{Dir: x.m.mapDir}.LockWithin(wait)
	switch {
	case errors.Is(err, mapfile.ErrLockTimeout):
		return fmt.Errorf("md: %w: mdadm's map lock, which mdadm and mdctl hold while they assemble or add disks, stayed held; try again once that is done: %w", errMapLocked, err)
	case err != nil:
		return fmt.Errorf("md: taking mdadm's map lock: %w", err)
	}
	x.mapLock = l
	return nil
}

// errMapLocked: mdadm's map lock stayed held by another process. Nothing
// was written, so a later attempt may succeed.
var errMapLocked = errors.New("map lock held")

// mapLockWait bounds the wait for mdadm's map lock. mdadm holds it for
// one incremental or assembly step, milliseconds to a second or two.
const mapLockWait = 10 * time.Second

// Retry policy for HOT_REMOVE_DISK's EBUSY. Before Linux 6.11 the kernel
// itself waited (up to about 5 s) for a failed member's in-flight I/O to
// end before it answered; since 6.11 it answers EBUSY at once, so right
// after a fail we wait here instead: up to 25 tries, 100 ms apart
// (docs/kernels.md).
const (
	removeTries = 25
	removeWait  = 100 * time.Millisecond
)

func (x *execution) step(k StepKind) error {
	p, kern := x.p, x.m.ops.k
	switch k {
	case StepRemove:
		if x.froze && x.removed != p.Remove.Device {
			// Recorded first: a rerun of this replace after a death
			// during or after the removal names a member it finds gone.
			x.removed = p.Remove.Device
			if err := x.recordFreeze(); err != nil {
				return err
			}
		}
		if p.Remove.dev == (sysfs.DevNum{}) {
			// The member's block device is gone (a pulled disk leaves a
			// dangling block link), so there is no dev_t to name: remove
			// it through its sysfs state, as mdadm falls back to. If it
			// has left since (udev ran mdadm -If), that is done.
			err := kern.WriteState(p.Array, p.Remove.Device, sysfs.CmdRemove)
			if err != nil && memberGone(x.m.fs, p.Array, p.Remove.Device) {
				return nil
			}
			return err
		}
		return hotRemove(kern, x.m.fs, p.Array, p.Remove)
	case StepFreeze:
		a, err := x.m.fs.Array(p.Array)
		if err != nil {
			return err
		}
		act, err := a.SyncAction()
		if err != nil {
			return err
		}
		if act != sysfs.ActionIdle && act != sysfs.ActionRecover {
			return fmt.Errorf("%w: sync_action is %q", errArrayBusy, act)
		}
		// Recorded first, so that a death right after the freeze still
		// leaves a record (freeze.go).
		if err := x.recordFreeze(); err != nil {
			return err
		}
		if err := kern.SetSyncAction(p.Array, sysfs.ActionFrozen); err != nil {
			if errors.Is(err, errSyncRunsOn) {
				// Accepted but not done: sync_action reads frozen
				// while the sync runs. Undo it before saying so.
				if uerr := kern.SetSyncAction(p.Array, sysfs.ActionIdle); uerr != nil {
					return fmt.Errorf("%w; writing idle back failed, so %s is left frozen; its freeze record stays, and heal or this replace run again unfreezes it: %v", err, p.Array, uerr)
				}
				removeFreeze(x.m.ops.runDir, x.key)
				return fmt.Errorf("%w; idle was written back", err)
			}
			removeFreeze(x.m.ops.runDir, x.key)
			return err
		}
		x.froze = true
		return nil
	case StepClaim:
		w := deviceWrite{Path: p.Candidate.Path, Dev: p.candDev, Size: p.Candidate.SizeBytes,
			LBS: p.lbs, MaxLBS: p.arrayLBS, Regions: p.regions}
		if p.Resume == ResumeWritten {
			w.Own = regionArea(p.regions)
		}
		c, err := kern.ClaimDevice(w)
		if err != nil {
			return err
		}
		x.claim = c
		return nil
	case StepWriteSuperblock:
		if x.claim == nil {
			return &notWrittenError{fmt.Errorf("md: %s was not claimed before the write", p.Candidate.Path)}
		}
		if err := x.lockMap(); err != nil {
			return &notWrittenError{err}
		}
		if x.froze && !x.written {
			x.written = true
			if err := x.recordFreeze(); err != nil {
				return &notWrittenError{err}
			}
		}
		x.written = true
		c := x.claim
		x.claim = nil
		return c.Write()
	case StepAdd:
		err := addNewDisk(kern, x.m.fs, p)
		x.unlockMap()
		return err
	case StepWantReplacement:
		return kern.WriteState(p.Array, p.Replace.Device, sysfs.CmdWantReplacement)
	case StepSetSlot:
		return kern.SetSlot(p.Array, p.Candidate.Device, p.Slot)
	case StepUnfreeze:
		if err := kern.SetSyncAction(p.Array, sysfs.ActionIdle); err != nil {
			return err
		}
		x.froze = false
		removeFreeze(x.m.ops.runDir, x.key) // a record left over is harmless: the array is not frozen
		return nil
	case StepVerify:
		return x.verify()
	}
	return fmt.Errorf("md: unknown step %q", k)
}

// hotRemove removes a member, retrying EBUSY a few times: the kernel
// reports it while it has not yet noticed that a failed member's I/O
// ended. ENXIO ("not a member") counts as removed only when the member's
// dev-* directory is really gone.
func hotRemove(kern kernel, fsys sysfs.FS, array string, mem *PlanMember) error {
	var err error
	for i := 0; i < removeTries; i++ {
		if i > 0 {
			time.Sleep(removeWait)
		}
		err = kern.HotRemove(array, mem.dev)
		if err == nil {
			return nil
		}
		if errors.Is(err, unix.ENXIO) {
			if memberGone(fsys, array, mem.Device) {
				return nil
			}
			return err
		}
		if !errors.Is(err, unix.EBUSY) {
			return err
		}
	}
	return err
}

// memberGone reports whether sysfs shows for certain that the member
// device is no longer bound to array: the array's md directory exists
// and the member's dev-* directory does not. An array that is gone
// (stopped) is not a member removed: nothing should be added to it.
func memberGone(fsys sysfs.FS, array, device string) bool {
	bound, known := memberBinding(fsys, array, device)
	return known && !bound
}

// Retry policy for ADD_NEW_DISK's EBUSY: mdadm --incremental, run by
// udev for the change event of the write's close, opens the disk
// exclusively for a moment before it adds it (Incremental.c). Under our
// map lock it waits instead; the retries are for one that does not (a
// map file elsewhere, or a lock it failed to take: mdadm carries on).
const (
	addTries = 10
	addWait  = 50 * time.Millisecond
)

// addNewDisk adds the candidate, retrying EBUSY for a moment; it stops
// retrying once the disk shows as bound to the array (someone else added
// it: failed reports that).
func addNewDisk(kern kernel, fsys sysfs.FS, p *Plan) error {
	var err error
	for i := 0; i < addTries; i++ {
		if i > 0 {
			time.Sleep(addWait)
		}
		err = kern.AddNewDisk(p.Array, p.candDev)
		if err == nil || !errors.Is(err, unix.EBUSY) {
			return err
		}
		if bound, known := memberBinding(fsys, p.Array, p.Candidate.Device); bound || !known {
			return err
		}
	}
	return err
}

// memberBinding reports whether sysfs shows device bound to array: its
// dev-* directory exists and reading its state does not show that it has
// left (Linux 6.1 lists an unbound member for a moment, see memberLeft);
// known is false when sysfs cannot tell.
func memberBinding(fsys sysfs.FS, array, device string) (bound, known bool) {
	if device == "" {
		return false, false
	}
	a, err := fsys.Array(array)
	if err != nil {
		return false, false
	}
	mem, err := a.Member(device)
	if err == nil {
		_, err = mem.State()
		return !memberLeft(mem, err), true
	}
	if errors.Is(err, fs.ErrNotExist) {
		return false, true
	}
	return false, false
}

// defaultVerifyTimeout bounds how long verify waits for the kernel to
// start the rebuild after recovery is unfrozen (md's thread does it
// asynchronously).
const defaultVerifyTimeout = 5 * time.Second

func (x *execution) verify() error {
	timeout := x.m.ops.verifyTimeout
	if timeout == 0 {
		timeout = defaultVerifyTimeout
	}
	deadline := time.Now().Add(timeout)
	for {
		err := x.check()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (x *execution) check() error {
	p := x.p
	a, err := x.m.fs.Array(p.Array)
	if err != nil {
		return err
	}
	rd, err := a.RaidDisks()
	if err != nil {
		return err
	}
	if !rd.Valid || int(rd.Value.Current) != p.raidDisks {
		return fmt.Errorf("%w: raid_disks is %v, was %d", errVerify, rd, p.raidDisks)
	}
	mem, err := a.Member(p.Candidate.Device)
	if err != nil {
		return fmt.Errorf("%w: %s is not a member: %w", errVerify, p.Candidate.Device, err)
	}
	slot, err := mem.Slot()
	if err != nil {
		return err
	}
	st, err := mem.State()
	if err != nil {
		return err
	}
	if int(slot) != p.Slot {
		return fmt.Errorf("%w: %s holds slot %v, not %d", errVerify, p.Candidate.Device, slot, p.Slot)
	}
	if st.Failed() {
		return fmt.Errorf("%w: %s is faulty", errVerify, p.Candidate.Device)
	}
	if p.Hot && !st.Has(sysfs.FlagReplacement) && !st.Has(sysfs.FlagInSync) {
		return fmt.Errorf("%w: %s is %s, not the replacement of slot %d", errVerify, p.Candidate.Device, st, p.Slot)
	}
	act, err := a.SyncAction()
	if err != nil {
		return err
	}
	x.action = act
	switch {
	case act == sysfs.ActionRecover:
		return nil
	case act == sysfs.ActionIdle && st.Has(sysfs.FlagInSync):
		return nil
	}
	return fmt.Errorf("%w: sync_action is %q and %s is %s; recovery into slot %d has not started", errVerify, act, p.Candidate.Device, st, p.Slot)
}

// failed turns a step's error into an *ExecError describing what is left,
// unfreezing recovery first where that is safe.
func (x *execution) failed(k StepKind, err error) error {
	x.release() // before anything is unfrozen: nothing more is written
	p := x.p
	dev := p.Candidate.Path
	e := &ExecError{Array: p.Array, Step: k, Done: append([]StepKind(nil), x.done...), Err: err}
	unfreeze := func() string {
		if !x.froze {
			return ""
		}
		if uerr := x.m.ops.k.SetSyncAction(p.Array, sysfs.ActionIdle); uerr != nil {
			return fmt.Sprintf(" Recovery is still frozen (unfreezing failed: %v): write idle to sync_action.", uerr)
		}
		x.froze = false
		removeFreeze(x.m.ops.runDir, x.key)
		return " Recovery was unfrozen."
	}
	wrote, removed := false, ""
	for _, d := range x.done {
		wrote = wrote || d == StepWriteSuperblock
		if d == StepRemove {
			removed = fmt.Sprintf(" %s was removed from %s.", p.Remove.Device, p.Array)
		}
	}
	// A rerun that resumes on the superblock an interrupted run wrote
	// says that the disk still carries it.
	prior := ""
	if p.Resume == ResumeWritten {
		prior = fmt.Sprintf(" It still carries the spare superblock of %s (dev_number %d) that an interrupted run of this replace wrote.", p.Array, p.DevNumber)
	}
	// The disk is named by its device number too: the path may name
	// another disk by the time someone reads this.
	disk, check := dev, ""
	if p.candDev != (sysfs.DevNum{}) {
		disk = fmt.Sprintf("%s (device %s)", dev, p.candDev)
		check = fmt.Sprintf(" check that it is still device %s and", p.candDev)
	}
	switch k {
	case StepClaim:
		e.State = fmt.Sprintf("nothing was written to %s.%s Nothing else was changed.%s", dev, prior, unfreeze())
		e.NothingChanged = !x.froze
	case StepRemove:
		switch {
		case p.Resume == ResumePinned:
			// An interrupted run added and pinned the disk; recovery
			// stays frozen until the replace is run again.
			e.State = fmt.Sprintf("nothing was written; %s is still bound to %s. %s holds slot %d (pinned by an interrupted replace) and recovery is left frozen; run the same replace again to finish, or remove %s and write idle to sync_action.", p.Remove.Device, p.Array, p.Candidate.Device, p.pinned, p.Candidate.Device)
			e.NothingChanged = true
		case p.Resume == ResumeAdded:
			e.State = fmt.Sprintf("nothing was written; %s is still bound to %s. %s is a spare of %s without a slot (added by an interrupted replace); recovery is left frozen so that the kernel cannot rebuild it into another slot; run the same replace again to pin slot %d and unfreeze, or remove %s and write idle to sync_action.", p.Remove.Device, p.Array, p.Candidate.Device, p.Array, p.Slot, p.Candidate.Device)
			e.NothingChanged = true
		default:
			e.State = fmt.Sprintf("nothing was written to %s; %s is still bound to %s.%s%s", dev, p.Remove.Device, p.Array, prior, unfreeze())
			e.NothingChanged = !x.froze
		}
	case StepFreeze:
		e.State = "nothing was written." + unfreeze()
		e.NothingChanged = !x.froze
	case StepWriteSuperblock:
		switch {
		case wrote: // the fault hook ran after a complete write
			e.State = fmt.Sprintf("%s carries a spare superblock of %s (dev_number %d) but is not a member.%s Run the same replace again to resume.%s", disk, p.Array, p.DevNumber, removed, unfreeze())
		case nothingWritten(err):
			// Opened exclusively by someone else, or the path now names
			// another device: we wrote nothing there, so there is
			// nothing of ours to wipe.
			e.State = fmt.Sprintf("nothing was written to %s.%s%s%s", dev, prior, or(removed, " Nothing else was changed."), unfreeze())
			e.NothingChanged = removed == "" && !x.froze
		default:
			e.State = fmt.Sprintf("the superblock write on %s failed and may be partial; it is not a member of %s.%s Before using that disk again,%s wipe the md superblock this replace wrote.%s", disk, p.Array, removed, check, unfreeze())
		}
	case StepAdd:
		bound, known := memberBinding(x.m.fs, p.Array, p.Candidate.Device)
		frozen := " Recovery is left frozen so that the kernel cannot rebuild it into another slot; run the same replace again to resume."
		if !x.froze {
			frozen = " Recovery is not frozen (this run did not freeze it), so the kernel may rebuild it into any empty slot."
		}
		switch {
		case !known:
			e.State = fmt.Sprintf("%s carries a spare superblock of %s (dev_number %d); ADD_NEW_DISK failed and sysfs cannot tell whether it is bound to %s now.%s%s", disk, p.Array, p.DevNumber, p.Array, removed, frozen)
		case bound:
			// Added by someone else between the close and our
			// ADD_NEW_DISK: the close made udev probe the disk, and
			// mdadm's rules can add a spare superblock themselves.
			e.State = fmt.Sprintf("%s carries a spare superblock of %s (dev_number %d) and is bound to %s, but not by this replace (something else added it, udev's mdadm --incremental for one): it is a spare without a slot.%s%s", disk, p.Array, p.DevNumber, p.Array, removed, frozen)
		case errors.Is(err, unix.EBUSY) && x.froze:
			// Someone holds it exclusively: mdadm --incremental may be
			// about to add it.
			e.State = fmt.Sprintf("%s carries a spare superblock of %s (dev_number %d) but was not added: something holds it exclusively (mdadm --incremental adding it, for one).%s Recovery is left frozen so that, should it be added, the kernel cannot rebuild it into another slot; run the same replace again to resume; to reuse the disk elsewhere instead, first%s wipe that superblock, then write idle to /sys/block/%s/md/sync_action.", disk, p.Array, p.DevNumber, removed, check, p.Array)
		default:
			e.State = fmt.Sprintf("%s carries a spare superblock of %s (dev_number %d) but was not added.%s Run the same replace again to resume; to reuse the disk elsewhere, first%s wipe that superblock.%s", disk, p.Array, p.DevNumber, removed, check, unfreeze())
		}
	case StepWantReplacement, StepSetSlot:
		marked := ""
		for _, d := range x.done {
			if d == StepWantReplacement {
				marked = fmt.Sprintf(" %s is marked want_replacement (to clear it, write -want_replacement to /sys/block/%s/md/dev-%s/state).", p.Replace.Device, p.Array, p.Replace.Device)
			}
		}
		if x.froze {
			e.State = fmt.Sprintf("%s is a spare of %s without a slot.%s%s Recovery is left frozen so that the kernel cannot rebuild it into another slot; run the same replace again (or mdctl heal) to pin slot %d and unfreeze, or remove %s and write idle to sync_action.", p.Candidate.Device, p.Array, removed, marked, p.Slot, p.Candidate.Device)
		} else {
			e.State = fmt.Sprintf("%s is a spare of %s without a slot.%s%s Recovery is not frozen (this run did not freeze it), so the kernel may rebuild %s into any empty slot; remove %s from %s if that is not wanted.", p.Candidate.Device, p.Array, removed, marked, p.Candidate.Device, p.Candidate.Device, p.Array)
		}
	case StepUnfreeze:
		e.State = fmt.Sprintf("%s holds slot %d but recovery is still frozen: write idle to /sys/block/%s/md/sync_action.%s", p.Candidate.Device, p.Slot, p.Array, removed)
	case StepVerify:
		e.State = fmt.Sprintf("every step ran (%s carries a spare superblock of %s, dev_number %d; it was added and pinned to slot %d, and recovery unfrozen).%s But the array does not look as planned; check mdctl status.", disk, p.Array, p.DevNumber, p.Slot, removed)
	}
	if p.adopted != nil {
		// The array was frozen before this run started (by an interrupted
		// replace); unfreezing it, or keeping the record, is a change.
		e.NothingChanged = false
	}
	return e
}

// or returns s, or def when s is empty.
func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
