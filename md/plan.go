package md

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/go-mdraid/mdraid/superblock"
	"github.com/go-mdraid/mdraid/sysfs"
)

// This file holds the replace decision: planReplace turns what was read
// about an array and a candidate disk into a Plan or a typed refusal. It
// reads nothing and writes nothing.

// Refusal reasons. A *RefusedError wraps exactly one of them (or, for a
// disk that is not blank, a *NotBlankError), so errors.Is(err,
// ErrNoEmptySlot) and errors.As(err, &notBlank) both work.
var (
	// errUnsupportedArray: the array has no redundancy (raid0, linear),
	// external metadata (IMSM, DDF: its metadata handler manages members)
	// or is clustered (md-cluster: the cluster manages members).
	errUnsupportedArray = errors.New("md: array level or metadata cannot take a replacement")
	// errArrayInactive: the array is assembled but not running.
	errArrayInactive = errors.New("md: array is not running")
	// errArrayFailed: the array has lost data; a rebuild cannot help.
	errArrayFailed = errors.New("md: array has failed")
	// errArrayReadOnly: the array is read-only; the kernel refuses new
	// members.
	errArrayReadOnly = errors.New("md: array is read-only")
	// errArrayBusy: a resync, recovery, check, repair, reshape or
	// replacement is running or pending, or recovery is frozen by someone
	// else. One change at a time.
	errArrayBusy = errors.New("md: array is busy")
	// ErrNoEmptySlot: every slot holds a healthy member; the new disk
	// would only become a spare.
	ErrNoEmptySlot = errors.New("md: array has no empty or faulty slot")
	// errSlotAmbiguous: several slots are empty and none was named.
	errSlotAmbiguous = errors.New("md: several slots are empty; name one")
	// errSlotInvalid: the named slot is out of range or held by a healthy
	// member.
	errSlotInvalid = errors.New("md: slot cannot be filled")
	// errMemberInvalid: the named old member is not in the array, or not
	// in the state the operation needs (faulty for a replace, in sync for a
	// hot replace).
	errMemberInvalid = errors.New("md: member cannot be replaced")
	// errNotBlockDevice: the candidate is not a block device.
	errNotBlockDevice = errors.New("md: candidate is not a block device")
	// errCandidateMember: the candidate is an md array or a member of one.
	errCandidateMember = errors.New("md: candidate is an array or an array member")
	// errCandidateBusy: the candidate is mounted, has holders, is opened
	// exclusively by someone else, or is read-only.
	errCandidateBusy = errors.New("md: candidate is in use")
	// errCandidateTooSmall: the candidate cannot hold the data offset,
	// the component size and the metadata the array needs.
	errCandidateTooSmall = errors.New("md: candidate is too small")
	// errCandidateBlockSize: the candidate's logical block size is larger
	// than the array's. The kernel would raise the array's (6.1) or keep
	// it over a member that cannot address it (7.2); either way
	// anything addressed in the array's sectors, such as a GPT inside a
	// boot mirror, breaks.
	errCandidateBlockSize = errors.New("md: candidate's logical block size exceeds the array's")
	// errUnknownFact: a fact the decision needs could not be established
	// (the candidate is not in sysfs, could not be read, ...). It is a
	// refusal, never a pass.
	errUnknownFact = errors.New("md: a fact the decision needs could not be established")
	// errMemberUnknown: a member that stays bound has no readable
	// superblock, so its descriptor number is unknown and the new
	// member's number could collide with it (the kernel refuses that
	// with EBUSY, but only after the new superblock was written).
	errMemberUnknown = errors.New("md: a bound member's descriptor number is unknown")
)

// CheckStatus is the outcome of one planner check.
type CheckStatus string

// Check outcomes.
const (
	StatusPass CheckStatus = "pass"
	StatusFail CheckStatus = "fail"
	// StatusSkip: the check did not run (an earlier one failed, or a fact
	// it needs was missing). A plan with a skipped check is never carried
	// out.
	StatusSkip CheckStatus = "skip"
)

// PlanCheck is one thing the planner verified, with its reason.
type PlanCheck struct {
	Name   Check       `json:"name"`
	Status CheckStatus `json:"status"`
	Reason string      `json:"reason"`
}

// StepKind names one step of an executed plan.
type StepKind string

// Steps, in the order a plan lists them.
const (
	StepFreeze          StepKind = "freeze"           // sync_action frozen
	StepClaim           StepKind = "claim"            // open the candidate exclusively, check it again
	StepRemove          StepKind = "remove"           // HOT_REMOVE_DISK the faulty old member
	StepWriteSuperblock StepKind = "write-superblock" // the new member's superblock (and bitmap)
	StepAdd             StepKind = "add"              // ADD_NEW_DISK, state 0: a spare
	StepWantReplacement StepKind = "want-replacement" // hot: dev-OLD/state want_replacement
	StepSetSlot         StepKind = "set-slot"         // dev-NEW/slot: pin the target slot
	StepUnfreeze        StepKind = "unfreeze"         // sync_action idle: recovery starts
	StepVerify          StepKind = "verify"           // raid_disks unchanged, recovery into the slot
)

// Step is one action of a plan.
type Step struct {
	Kind   StepKind `json:"kind"`
	Detail string   `json:"detail"`
}

// ResumeStage says how much of an interrupted replace a plan finds done.
type ResumeStage string

// Resume stages.
const (
	// ResumeNone: a fresh replace.
	ResumeNone ResumeStage = ""
	// ResumeWritten: the candidate carries the superblock an earlier run
	// wrote, but was never added. The plan rewrites it (same device UUID
	// and dev_number) and carries on.
	ResumeWritten ResumeStage = "superblock-written"
	// ResumeAdded: the candidate was added as a spare with recovery
	// frozen, but its slot was not pinned. The plan pins it and unfreezes.
	ResumeAdded ResumeStage = "added"
	// ResumePinned: the candidate was added and pinned to its slot, but
	// the run died before it unfroze recovery (its freeze record names
	// the candidate). The plan unfreezes, and the kernel rebuilds.
	ResumePinned ResumeStage = "pinned"
)

// member reports whether the stage finds the candidate already a member
// of the array (added, and maybe pinned).
func (r ResumeStage) member() bool { return r == ResumeAdded || r == ResumePinned }

// PlanMember names a member a plan acts on.
type PlanMember struct {
	Device string `json:"device"` // kernel name
	DevNum string `json:"devnum"`
	Slot   int    `json:"slot"`
	dev    sysfs.DevNum
}

// Write is a region the plan writes on the candidate.
type Write struct {
	What   string `json:"what"`
	Offset int64  `json:"offset"`
	Length int    `json:"length"`
}

// Plan is a decided replace: what will be done, and every check made to
// decide it. Manager.PlanReplace returns it (also, with the failed check,
// alongside a refusal); Manager.ExecuteReplace carries it out.
type Plan struct {
	Array     string `json:"array"`
	UUID      string `json:"uuid"`
	Metadata  string `json:"metadata"`
	Level     string `json:"level"`
	RaidDisks int    `json:"raid_disks"`
	Hot       bool   `json:"hot"`
	// Slot is the slot the new disk will fill, or -1 when none could be
	// chosen.
	Slot      int        `json:"slot"`
	Candidate *Candidate `json:"candidate"`
	// Remove is the faulty member unbound first, if any.
	Remove *PlanMember `json:"remove,omitempty"`
	// Replace is the live member a hot replace replaces.
	Replace *PlanMember `json:"replace,omitempty"`
	// Source is the in-sync member whose superblock is cloned.
	Source     string      `json:"source,omitempty"`
	DevNumber  uint32      `json:"dev_number"`
	DeviceUUID string      `json:"device_uuid,omitempty"`
	Resume     ResumeStage `json:"resume,omitempty"`
	Writes     []Write     `json:"writes,omitempty"`
	Steps      []Step      `json:"steps"`
	Checks     []PlanCheck `json:"checks"`
	// Superblock is the new member's superblock, as it will be written.
	Superblock *superblock.Superblock `json:"-"`

	req        ReplaceRequest
	devUUID    uuid.UUID
	regions    []region
	lbs        int64 // the candidate's logical block size
	arrayLBS   int64 // the array's
	raidDisks  int
	candDev    sysfs.DevNum
	freeze     bool
	actionSeen sysfs.SyncAction
	// adopted is the record of a freeze an interrupted replace left: the
	// plan keeps the array frozen and unfreezes it at the end.
	adopted *freezeRecord
	// pinned is the slot an interrupted run pinned the candidate to
	// (ResumePinned).
	pinned int
}

// Candidate is what was learnt about the disk offered as the new member.
// Manager.PlanReplace gathers it; the planner decides from it alone.
type Candidate struct {
	Path string `json:"path"`
	// Device is the kernel name ("vdc"); empty for an image file.
	Device           string `json:"device,omitempty"`
	DevNum           string `json:"devnum,omitempty"`
	SizeBytes        int64  `json:"size_bytes"`
	LogicalBlockSize int64  `json:"logical_block_size"`
	BlockDevice      bool   `json:"block_device"`
	// Image is a regular file accepted because the request allows image
	// files (tests only).
	Image    bool `json:"image,omitempty"`
	ReadOnly bool `json:"read_only,omitempty"`
	// IsArray is set when the candidate is itself an md array.
	IsArray bool `json:"is_array,omitempty"`
	// MemberOf lists the arrays the candidate is bound to.
	MemberOf []string `json:"member_of,omitempty"`
	// Holders are the devices stacked on the candidate (sysfs holders/).
	Holders []string `json:"holders,omitempty"`
	// StackedOn lists the arrays and array members the candidate is
	// built on (through slaves/, its whole disk, or a loop device's
	// backing file), each with how.
	StackedOn []string `json:"stacked_on,omitempty"`
	// UsedBy lists the loop devices over the candidate, and the devices
	// in use that a loop device below it is over.
	UsedBy []string `json:"used_by,omitempty"`
	// Partitions are the kernel's partitions of the candidate.
	Partitions []string `json:"partitions,omitempty"`
	// Mounts are the mount points of the candidate or its partitions.
	Mounts []string `json:"mounts,omitempty"`
	// ExclusiveBusy is set when an O_EXCL open failed with EBUSY.
	ExclusiveBusy bool `json:"exclusive_busy,omitempty"`
	// Findings are what CheckBlankDevice's scan recognised, md superblocks
	// first.
	Findings []*NotBlankError `json:"findings,omitempty"`
	// Serial is the disk's serial number, where sysfs shows one.
	Serial string `json:"serial,omitempty"`
	// ByPath is the disk's by-path identity (blockdev.PathID), where it
	// has one.
	ByPath string `json:"by_path,omitempty"`
	// Unknown lists the facts that could not be established, each with
	// why. The candidate is refused while any is listed.
	Unknown []string `json:"unknown,omitempty"`
	// Error joins Unknown; empty when every fact was established.
	Error string `json:"error,omitempty"`

	dev  sysfs.DevNum
	mdsb []*superblock.Superblock // superblocks that decoded without error
	// Why a fact could not be established (nil: it was).
	statErr, sysfsErr, busyErr, lbsErr, scanErr error
	// scanned is set once the blank scan ran to the end.
	scanned bool
	// area is the superblock area a replace would have written with the
	// one md superblock the disk carries (see candidateArea), and residue
	// what the blank scan finds outside it; residueKnown says it was
	// scanned. bitmapMissing says the superblock has a bitmap but none was
	// found: area is the superblock's alone.
	area          []span
	bitmapMissing bool
	residue       []*NotBlankError
	residueKnown  bool
}

// arrayFacts is what the planner knows about the array.
type arrayFacts struct {
	s *snapshot
	// bitmap is the bitmap superblock of the clone source, when the array
	// has an internal bitmap.
	bitmap    *superblock.Bitmap
	bitmapErr error
	// member is ReplaceRequest.Member resolved to a kernel name.
	member string
	// freeze is the record of a freeze whose replace is no longer
	// running (freeze.go), or nil.
	freeze *freezeRecord
	// lbs is the array's logical block size (queue/logical_block_size),
	// or 0 with lbsErr.
	lbs    int64
	lbsErr error
}

// cloneSource picks the member whose superblock a new member is cloned
// from: an in-sync member with the most events, the lowest slot on ties.
func cloneSource(s *snapshot) *memberSnap {
	var best *memberSnap
	for i := range s.members {
		ms := &s.members[i]
		if ms.sb == nil || !ms.state.Has(sysfs.FlagInSync) || ms.state.Failed() || ms.Error != "" {
			continue
		}
		if best == nil || ms.sb.Events > best.sb.Events || (ms.sb.Events == best.sb.Events && ms.Slot < best.Slot) {
			best = ms
		}
	}
	return best
}

// planner accumulates checks.
type planner struct {
	p     *Plan
	first error
}

func (pl *planner) pass(name Check, format string, args ...any) {
	pl.p.Checks = append(pl.p.Checks, PlanCheck{Name: name, Status: StatusPass, Reason: fmt.Sprintf(format, args...)})
}

func (pl *planner) skip(name Check, reason string) {
	pl.p.Checks = append(pl.p.Checks, PlanCheck{Name: name, Status: StatusSkip, Reason: reason})
}

func (pl *planner) fail(name Check, err error, format string, args ...any) {
	reason := fmt.Sprintf(format, args...)
	pl.p.Checks = append(pl.p.Checks, PlanCheck{Name: name, Status: StatusFail, Reason: reason})
	if pl.first == nil {
		pl.first = &RefusedError{Op: "replace", Array: pl.p.Array, Check: name, Reason: reason, Err: err}
	}
}

// planReplace is the replace decision. It turns the facts about the array
// and the candidate into a plan, or into a *RefusedError for the first
// check that failed; the plan, with every check, is returned in both
// cases. devUUID is the device UUID the new superblock gets unless the
// candidate already carries one of an interrupted run.
//
// It is a pure function of its arguments, the two parts of the
// replaceFacts gatherReplace read: no I/O, no clock, and f and c are left
// as they were (TestPlanReplaceReadsNothing). The plan refers to c.
func planReplace(f arrayFacts, c *Candidate, req ReplaceRequest, devUUID uuid.UUID) (*Plan, error) {
	a := build(f.s, "/dev")
	// The members as the model shows them (the slots of a not-running
	// array's members from their roles): a copy, f is the caller's.
	f.s = f.s.asBuilt()
	s := f.s
	p := &Plan{
		Array: s.name, UUID: a.UUID, Metadata: s.metadata.Raw, Level: a.Level,
		RaidDisks: a.RaidDisks, Hot: req.Hot, Slot: -1, Candidate: c,
		req: req, raidDisks: a.RaidDisks, candDev: c.dev, actionSeen: s.action,
	}
	pl := &planner{p: p}

	// The array.
	lvl := sysfs.Level(a.Level)
	clustered := clusteredReason(f)
	switch {
	case unreadFacts(s, "level", "metadata_version") != "":
		pl.skip(CheckArrayKind, "could not read "+unreadFacts(s, "level", "metadata_version"))
	case s.metadata.Kind != sysfs.MetadataNative:
		pl.fail(CheckArrayKind, errUnsupportedArray, "metadata %q is not native md metadata: an external metadata array (IMSM, DDF) takes new members through its container and metadata handler (mdmon), not by writing an md superblock", s.metadata.Raw)
	case clustered != "":
		pl.fail(CheckArrayKind, errUnsupportedArray, "the array is clustered (%s): md-cluster coordinates its members across nodes, and a member added on one node alone would corrupt it", clustered)
	case f.bitmap != nil && f.bitmap.Version == superblock.BitmapMajorLockless:
		pl.fail(CheckArrayKind, errUnsupportedArray, "the array has a lockless bitmap (llbitmap, bitmap version %d, Linux 6.18+): its layout differs from the classic bitmap's, so a new member's bitmap cannot be made from it", superblock.BitmapMajorLockless)
	case !lvl.Redundant():
		pl.fail(CheckArrayKind, errUnsupportedArray, "level %q has no redundancy to rebuild from", a.Level)
	default:
		pl.pass(CheckArrayKind, "%s with %s metadata", a.Level, s.metadata.Raw)
	}
	switch {
	case unreadFacts(s, "array_state", "degraded") != "":
		pl.skip(CheckArrayRunning, "could not read "+unreadFacts(s, "array_state", "degraded"))
	case a.Availability == Unknown:
		// A word no kernel writes can hide a failed array.
		pl.fail(CheckArrayRunning, errUnknownFact, "array is in an unknown state (%q)", a.State)
	case a.Availability == Inactive:
		pl.fail(CheckArrayRunning, errArrayInactive, "array is %s (state %q); start it first (mdctl run)", a.Availability, a.State)
	case a.Availability == Failed:
		pl.fail(CheckArrayRunning, errArrayFailed, "array has failed (state %q): too few in-sync members to rebuild from", a.State)
	case s.state == sysfs.StateReadonly:
		pl.fail(CheckArrayRunning, errArrayReadOnly, "array is read-only")
	default:
		pl.pass(CheckArrayRunning, "array is %s (state %q)", a.Availability, a.State)
	}

	// Who is the candidate to this array: a fresh disk, or one an
	// interrupted run left half done?
	var bound *memberSnap // the candidate, if bound to this array
	for i := range s.members {
		if c.Device != "" && s.members[i].Device == c.Device {
			bound = &s.members[i]
		}
	}
	if bound != nil && len(c.MemberOf) == 1 && s.action == sysfs.ActionFrozen &&
		!bound.state.Failed() && !bound.state.Has(sysfs.FlagInSync) {
		switch {
		case bound.Slot < 0:
			p.Resume = ResumeAdded
		case f.freeze != nil && f.freeze.Written && f.freeze.CandDev == c.DevNum:
			// Pinned by a run that died before it unfroze: only the
			// freeze record of that run says so; a slotted, frozen
			// member without it is someone else's rebuild.
			p.Resume = ResumePinned
			p.pinned = bound.Slot
		}
	}

	// One change at a time.
	busy, advice := "", "; wait for it to finish"
	switch {
	case s.action == sysfs.ActionFrozen && f.freeze != nil && f.freeze.Written && f.freeze.CandDev != c.DevNum &&
		p.Resume == ResumeNone && !oursOnDisk(f, c):
		busy = fmt.Sprintf("recovery is frozen by an interrupted replace (process %d, %s) that wrote a spare superblock on %s; run that replace again with %s to finish it, or, if that disk is gone, run mdctl heal to undo the freeze",
			f.freeze.PID, f.freeze.Time.Format(time.RFC3339), f.freeze.Candidate, f.freeze.Candidate)
		advice = ""
	case s.action == sysfs.ActionFrozen && f.freeze != nil:
		p.adopted = f.freeze
	case s.action == sysfs.ActionFrozen && p.Resume == ResumeNone && !oursOnDisk(f, c):
		busy = "recovery is frozen by someone else (sync_action frozen)"
	case s.action == sysfs.ActionRecover && !rebuilding(a) &&
		(s.progress.State == sysfs.ProgressNone || s.progress.State == sysfs.ProgressRunning && s.progress.Done == 0):
		// Right after a member fails, the kernel shows "recover" with
		// sync_completed "0 / N" until its md thread has looked for spares
		// (docs/kernels.md §9): nothing is being rebuilt, and in a moment
		// it reads idle, or a rebuild shows.
		busy = "the kernel shows a recovery starting (sync_action recover) with nothing rebuilt yet and no slot being rebuilt, as it does for a moment after a member fails"
		advice = "; try again in a moment"
	case s.action != "" && s.action != sysfs.ActionIdle && s.action != sysfs.ActionFrozen:
		busy = fmt.Sprintf("a %s is running", s.action)
	case s.progress.State == sysfs.ProgressDelayed:
		busy = "a sync is pending (sync_completed delayed)"
	}
	for _, sl := range a.Slots {
		if busy == "" && sl.State == SlotRebuilding && !(p.Resume == ResumePinned && sl.Member != nil && sl.Member.Device == c.Device) {
			busy = fmt.Sprintf("slot %d is being rebuilt (%s)", sl.Slot, sl.Member.Device)
		}
		if busy == "" && sl.Replacement != nil {
			busy = fmt.Sprintf("slot %d is being replaced by %s", sl.Slot, sl.Replacement.Device)
		}
	}
	for _, ms := range s.members {
		if busy == "" && ms.state.Has(sysfs.FlagWantReplacement) && p.Resume == ResumeNone {
			busy = fmt.Sprintf("%s waits for a replacement", ms.Device)
		}
	}
	idleUnknown := unreadFacts(s, "sync_action", "sync_completed", "members")
	if idleUnknown == "" && s.action == "" {
		// A redundant array always has a sync_action: none read is not
		// idle.
		idleUnknown = "sync_action: no value"
	}
	if busy != "" {
		pl.fail(CheckOneChange, errArrayBusy, "%s%s", busy, advice)
	} else if idleUnknown != "" {
		pl.skip(CheckOneChange, "could not read "+idleUnknown)
	} else if p.adopted != nil {
		pl.pass(CheckOneChange, "recovery was left frozen by an interrupted replace (process %d, %s); this replace keeps it frozen and unfreezes it", p.adopted.PID, p.adopted.Time.Format(time.RFC3339))
	} else {
		pl.pass(CheckOneChange, "sync_action %q, no rebuild or replacement running", s.action)
	}

	// The old member.
	var old *memberSnap
	if f.member != "" {
		for i := range s.members {
			if s.members[i].Device == f.member {
				old = &s.members[i]
			}
		}
	}
	switch {
	case req.Hot && f.member == "":
		pl.fail(CheckOldMember, errMemberInvalid, "a hot replace needs the member to replace (--member)")
	case f.member == "":
		pl.pass(CheckOldMember, "none named")
	case old == nil && !req.Hot && (p.Resume != ResumeNone || oursOnDisk(f, c) ||
		p.adopted != nil && p.adopted.Removed == f.member):
		pl.pass(CheckOldMember, "%s is no longer bound: removed by the interrupted run", f.member)
	case old == nil:
		pl.fail(CheckOldMember, errMemberInvalid, "%s is not a member of %s", f.member, s.name)
	case req.Hot && (!old.state.Has(sysfs.FlagInSync) || old.state.Failed() || old.Slot < 0):
		pl.fail(CheckOldMember, errMemberInvalid, "%s is %s, not an in-sync member; a hot replace copies from a live member", old.Device, old.state)
	case req.Hot:
		p.Replace = &PlanMember{Device: old.Device, DevNum: devNumText(old.DevNum), Slot: old.Slot}
		pl.pass(CheckOldMember, "%s is in sync in slot %d", old.Device, old.Slot)
	case !old.state.Failed():
		pl.fail(CheckOldMember, errMemberInvalid, "%s is %s, not faulty; fail it first, or use a hot replace", old.Device, old.state)
	default:
		p.Remove = &PlanMember{Device: old.Device, DevNum: devNumText(old.DevNum), Slot: old.Slot}
		pl.pass(CheckOldMember, "%s is faulty and will be removed", old.Device)
	}

	// The target slot.
	if why := unreadFacts(s, "raid_disks", "members"); why != "" {
		pl.skip(CheckTargetSlot, "could not read "+why)
	} else {
		planSlot(pl, a, req, old)
	}
	if p.Slot >= 0 && !req.Hot && p.Remove == nil {
		if sl := a.Slots[p.Slot]; sl.State == SlotFaulty && sl.Member != nil {
			// The faulty member still holds the slot (recovery frozen):
			// it must go first.
			for _, ms := range s.members {
				if ms.Device == sl.Member.Device {
					p.Remove = &PlanMember{Device: ms.Device, DevNum: devNumText(ms.DevNum), Slot: ms.Slot}
				}
			}
		}
	}
	if p.Remove != nil {
		p.Remove.dev, _ = sysfs.ParseDevNum(p.Remove.DevNum)
	}
	if p.Replace != nil {
		p.Replace.dev, _ = sysfs.ParseDevNum(p.Replace.DevNum)
	}

	// The candidate.
	planCandidate(pl, f, c, bound)

	// The new superblock.
	planSuperblock(pl, f, c, devUUID)

	if pl.first == nil {
		// A check that did not run is never a pass.
		for _, ck := range p.Checks {
			if ck.Status == StatusSkip {
				pl.first = &RefusedError{Op: "replace", Array: p.Array, Check: ck.Name, Reason: fmt.Sprintf("%s: not checked (%s)", ck.Name, ck.Reason), Err: errUnknownFact}
				break
			}
		}
	}
	if pl.first != nil {
		return p, pl.first
	}
	planSteps(p)
	return p, nil
}

// rebuilding reports whether a slot of a is being rebuilt or replaced.
func rebuilding(a Array) bool {
	for _, sl := range a.Slots {
		if sl.State == SlotRebuilding || sl.Replacement != nil {
			return true
		}
	}
	return false
}

// unreadFacts says which of the attributes named could not be read for
// the snapshot s, with why, or "" when all were. The attributes are the
// ones the replace decision uses; a fact that could not be read is never
// taken as its zero value.
func unreadFacts(s *snapshot, attrs ...string) string {
	var out []string
	for _, e := range s.errs {
		var re *readError
		if errors.As(e, &re) && (re.what == "array" || slices.Contains(attrs, re.what)) {
			out = append(out, e.Error())
		}
	}
	return strings.Join(out, "; ")
}

// clusteredReason says why the array is clustered (an md-cluster array),
// or "" when it is not: the clustered feature bit in a member's
// superblock, or a clustered bitmap (version 5).
func clusteredReason(f arrayFacts) string {
	for _, ms := range f.s.members {
		if ms.sb != nil && ms.sb.Version.Is1x() && ms.sb.Features&superblock.FeatureClustered != 0 {
			return fmt.Sprintf("feature bit clustered in the superblock of %s", ms.Device)
		}
	}
	if f.bitmap != nil && f.bitmap.Version == superblock.BitmapMajorClustered {
		return fmt.Sprintf("bitmap version %d", superblock.BitmapMajorClustered)
	}
	return ""
}

// planSlot decides which slot the new disk fills.
func planSlot(pl *planner, a Array, req ReplaceRequest, old *memberSnap) {
	p := pl.p
	if p.Resume == ResumePinned {
		if req.Slot != nil && *req.Slot != p.pinned {
			pl.fail(CheckTargetSlot, errSlotInvalid, "slot %d was named, but the interrupted run pinned %s to slot %d", *req.Slot, p.Candidate.Device, p.pinned)
			return
		}
		p.Slot = p.pinned
		pl.pass(CheckTargetSlot, "slot %d, pinned by the interrupted run", p.Slot)
		return
	}
	if a.RaidDisks == 0 {
		pl.skip(CheckTargetSlot, "the array has no slots to look at")
		return
	}
	if req.Hot {
		switch {
		case old == nil || old.Slot < 0:
			pl.skip(CheckTargetSlot, "no in-sync member to replace")
		case req.Slot != nil && *req.Slot != old.Slot:
			pl.fail(CheckTargetSlot, errSlotInvalid, "slot %d was named, but %s holds slot %d", *req.Slot, old.Device, old.Slot)
		default:
			p.Slot = old.Slot
			pl.pass(CheckTargetSlot, "slot %d, held by %s until the copy completes", p.Slot, old.Device)
		}
		return
	}
	var empty []int
	for _, sl := range a.Slots {
		if sl.State == SlotMissing || sl.State == SlotFaulty {
			empty = append(empty, sl.Slot)
		}
	}
	if req.Slot != nil {
		n := *req.Slot
		switch {
		case n < 0 || n >= a.RaidDisks:
			pl.fail(CheckTargetSlot, errSlotInvalid, "slot %d is out of range: the array has slots 0 to %d", n, a.RaidDisks-1)
		case a.Slots[n].State != SlotMissing && a.Slots[n].State != SlotFaulty:
			pl.fail(CheckTargetSlot, errSlotInvalid, "slot %d is %s (%s), not empty or faulty", n, a.Slots[n].State, a.Slots[n].Member.Device)
		case old != nil && old.Slot >= 0 && old.Slot != n:
			pl.fail(CheckTargetSlot, errSlotInvalid, "slot %d was named, but %s holds slot %d", n, old.Device, old.Slot)
		default:
			p.Slot = n
			pl.pass(CheckTargetSlot, "slot %d (named) is %s", n, a.Slots[n].State)
		}
		return
	}
	switch {
	case old != nil && old.Slot >= 0:
		p.Slot = old.Slot
		pl.pass(CheckTargetSlot, "slot %d, held by the faulty %s", p.Slot, old.Device)
	case len(empty) == 0:
		pl.fail(CheckTargetSlot, ErrNoEmptySlot, "all %d slots hold healthy members; the disk would only become a spare", a.RaidDisks)
	case len(empty) > 1:
		pl.fail(CheckTargetSlot, errSlotAmbiguous, "slots %s are empty; name one with --slot", joinInts(empty))
	default:
		p.Slot = empty[0]
		pl.pass(CheckTargetSlot, "slot %d is the only empty slot", p.Slot)
	}
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = fmt.Sprint(n)
	}
	return strings.Join(s, ", ")
}

// planCandidate checks the candidate disk. A fact candidateFacts could
// not establish fails the check that needs it; a check that could not run
// at all is skipped, never passed.
func planCandidate(pl *planner, f arrayFacts, c *Candidate, bound *memberSnap) {
	p := pl.p
	s := f.s
	switch {
	case c.BlockDevice:
		pl.pass(CheckBlockDevice, "%s is block device %s (%s)", c.Path, c.Device, c.DevNum)
	case c.Image:
		pl.pass(CheckBlockDevice, "%s is an image file (allowed for tests)", c.Path)
	case c.statErr != nil:
		pl.fail(CheckBlockDevice, errNotBlockDevice, "%s: %v", c.Path, c.statErr)
	case c.Error != "":
		pl.fail(CheckBlockDevice, errNotBlockDevice, "%s: %s", c.Path, c.Error)
	default:
		pl.fail(CheckBlockDevice, errNotBlockDevice, "%s is not a block device", c.Path)
	}
	if want := p.req.ByPath; want != "" {
		// Heal names the port it found the disk in; the executor's final
		// plan, under the lock, checks it again.
		if c.ByPath != want {
			pl.fail(CheckPort, errPortChanged, "%s is now at %q, not in %s", c.Path, c.ByPath, want)
		} else {
			pl.pass(CheckPort, "%s is at %s", c.Path, want)
		}
	}
	if !c.BlockDevice && !c.Image {
		for _, name := range []Check{CheckNotMember, CheckNotInUse, CheckBlankDevice, CheckBlockSize} {
			pl.skip(name, "not a block device")
		}
		return
	}
	resumeAdded := p.Resume.member()
	switch {
	case c.sysfsErr != nil:
		pl.fail(CheckNotMember, errUnknownFact, "cannot tell whether %s belongs to an array: sysfs did not tell (%v)", c.Path, c.sysfsErr)
	case c.IsArray:
		pl.fail(CheckNotMember, errCandidateMember, "%s is an md array itself", c.Path)
	case len(c.StackedOn) > 0:
		pl.fail(CheckNotMember, errCandidateMember, "%s is built on %s", c.Path, strings.Join(c.StackedOn, "; "))
	case resumeAdded:
		pl.pass(CheckNotMember, "%s is the spare an interrupted run added to %s; it will be resumed", c.Device, s.name)
	case bound != nil:
		pl.fail(CheckNotMember, errCandidateMember, "%s is already a member of %s (%s)", c.Device, s.name, bound.state)
	case len(c.MemberOf) > 0:
		pl.fail(CheckNotMember, errCandidateMember, "%s is a member of %s", c.Device, strings.Join(c.MemberOf, ", "))
	default:
		pl.pass(CheckNotMember, "not a member of any array")
	}
	resumedBy := ""
	if resumeAdded {
		resumedBy = s.name
	}
	inUse := c.uses(resumedBy)
	switch {
	case len(inUse) > 0:
		pl.fail(CheckNotInUse, errCandidateBusy, "%s is %s", c.Path, strings.Join(inUse, "; "))
	case c.sysfsErr != nil:
		pl.fail(CheckNotInUse, errUnknownFact, "cannot tell whether %s is held or has partitions: sysfs did not tell (%v)", c.Path, c.sysfsErr)
	case c.busyErr != nil:
		pl.fail(CheckNotInUse, errUnknownFact, "cannot tell whether %s is in use: %v", c.Path, c.busyErr)
	default:
		pl.pass(CheckNotInUse, "not mounted, no holders, not opened exclusively")
	}

	planBlank(pl, f, c)

	switch {
	case c.lbsErr != nil || c.LogicalBlockSize <= 0:
		pl.fail(CheckBlockSize, errUnknownFact, "cannot tell the logical block size of %s: %v", c.Path, c.lbsErr)
	case f.lbsErr != nil || f.lbs <= 0:
		pl.fail(CheckBlockSize, errUnknownFact, "cannot tell the logical block size of %s: %v", s.name, f.lbsErr)
	case c.LogicalBlockSize > f.lbs:
		pl.fail(CheckBlockSize, errCandidateBlockSize, "%s has %d-byte logical blocks, %s %d-byte ones: anything on %s addressed in %d-byte sectors would break",
			c.Path, c.LogicalBlockSize, s.name, f.lbs, s.name, f.lbs)
	default:
		pl.pass(CheckBlockSize, "%d-byte logical blocks (the array's are %d)", c.LogicalBlockSize, f.lbs)
	}
}

// planBlank applies the blank rule (CheckBlankDevice) to the candidate. A disk
// an interrupted run of this replace wrote passes only when everything
// outside its superblock area is blank.
func planBlank(pl *planner, f arrayFacts, c *Candidate) {
	p := pl.p
	resumeAdded := p.Resume.member()
	if !c.scanned {
		why := "the disk could not be read"
		if c.scanErr != nil {
			why = c.scanErr.Error()
		}
		pl.fail(CheckBlankDevice, errUnknownFact, "cannot tell whether %s is blank: %s", c.Path, why)
		return
	}
	ours := resumeAdded || oursOnDisk(f, c)
	var other []*NotBlankError
	for _, fd := range c.Findings {
		if fd.Kind != KindMDSuperblock || !ours {
			other = append(other, fd)
		}
	}
	if ours && len(other) == 0 {
		if !c.residueKnown {
			pl.fail(CheckBlankDevice, errUnknownFact, "cannot tell whether %s is blank outside its md superblock area", c.Path)
			return
		}
		other = c.residue
	}
	if len(c.Partitions) > 0 {
		other = append(other, &NotBlankError{Kind: KindPartitionTable, What: "kernel partitions " + strings.Join(c.Partitions, ", ")})
	}
	switch {
	case len(other) > 0:
		reason := other[0].What + fmt.Sprintf(" at byte %d", other[0].Offset)
		if len(other) > 1 {
			reason += fmt.Sprintf(" (and %d more findings)", len(other)-1)
		}
		pl.p.Checks = append(pl.p.Checks, PlanCheck{Name: CheckBlankDevice, Status: StatusFail, Reason: reason})
		if pl.first == nil {
			why := notBlankReason(c, reason)
			if former := formerMemberReason(f, c, p.Array); former != "" {
				why = former + " " + why
			}
			pl.first = &RefusedError{Op: "replace", Array: p.Array, Check: CheckBlankDevice, Reason: why, Err: other[0]}
		}
	case resumeAdded:
		pl.pass(CheckBlankDevice, "carries this array's superblock: added by an interrupted run; the rest of the disk is blank")
	case len(c.Findings) > 0:
		if p.Resume == ResumeNone {
			p.Resume = ResumeWritten
		}
		pl.pass(CheckBlankDevice, "carries only the spare superblock an interrupted run of this replace wrote (dev_number %d); the rest of the disk is blank; resuming", c.mdsb[0].DevNumber)
	default:
		pl.pass(CheckBlankDevice, "no md superblock, partition table or known signature; the first and last 4 MiB and 64 sampled blocks are one fill byte")
	}
}

// notBlankReason is the refusal for a disk that is not blank: what was
// found, the disk by serial and path, and what its owner can do.
func notBlankReason(c *Candidate, finding string) string {
	disk := c.Path
	if c.Serial != "" {
		disk = fmt.Sprintf("%s (serial %s)", c.Path, c.Serial)
	}
	return fmt.Sprintf("%s is not blank: %s. If nothing on it is needed, its owner must blank it first, for example with blkdiscard %s; wipefs -a alone is not enough (it leaves data and signatures it does not know)",
		disk, finding, c.Path)
}

// formerMemberReason is what the refusal of a candidate that is not
// blank says first when the candidate carries an md superblock of the
// array itself (its set UUID): that it is a former member, and what adds
// it back. Empty when it carries no such superblock. md re-adds a member
// with a recent enough superblock through a bitmap when the array has
// one (only the regions marked dirty are copied), and rebuilds it in full
// otherwise.
func formerMemberReason(f arrayFacts, c *Candidate, array string) string {
	src := cloneSource(f.s)
	if src == nil {
		return ""
	}
	for _, sb := range c.mdsb {
		if sb == nil || sb.SetUUID != src.sb.SetUUID {
			continue
		}
		how := fmt.Sprintf("mdctl re-add %s %s puts it back into its slot (mdctl incremental --run %s adds it back as well)", array, c.Path, c.Path)
		if !inSync(sb) {
			how = fmt.Sprintf("its superblock makes it a spare: mdctl incremental --run --add-spares %s adds it back as one", c.Path)
		}
		rebuild := "; md rebuilds it in full (the array has no write-intent bitmap)"
		if src.sb.HasBitmap() {
			rebuild = "; md re-adds it and, with the array's write-intent bitmap, copies only what changed since it left (a full rebuild when its events are too old for the bitmap)"
		}
		return fmt.Sprintf("%s is a former member of %s: its md superblock carries %s's array UUID %s (events %d, the array's %d). To take it back into %s, %s%s; it is not written by replace.",
			c.Path, array, array, src.sb.SetUUID, sb.Events, src.sb.Events, array, how, rebuild)
	}
	return ""
}

// oursOnDisk reports whether the candidate carries exactly one md
// superblock, everything outside its area is blank, and it is the one an
// interrupted replace into this array wrote: valid, of the array's version and at its location, with the
// array's set UUID, creation time, level and raid_disks, events 0, role
// spare at its own dev_number, no device flags, and a dev_number that no
// bound member uses. Anything else on the disk makes it "not blank".
func oursOnDisk(f arrayFacts, c *Candidate) bool {
	if len(c.Findings) != 1 || c.Findings[0].Kind != KindMDSuperblock || len(c.mdsb) != 1 ||
		!c.residueKnown || len(c.residue) > 0 {
		return false
	}
	got := c.mdsb[0]
	src := cloneSource(f.s)
	if src == nil || got.Version != src.sb.Version || got.DiskOffset != c.Findings[0].Offset {
		return false
	}
	if got.SetUUID != src.sb.SetUUID || got.CTime != src.sb.CTime || got.Level != src.sb.Level ||
		got.RaidDisks != src.sb.RaidDisks || got.Events != 0 || got.Role() != superblock.RoleSpare {
		return false
	}
	n := got.DevNumber
	if got.Version == superblock.Version090 {
		n = got.ThisDisk.Number
		if got.ThisDisk.State != 0 {
			return false
		}
	} else if got.DevFlags != 0 || got.DataOffset != src.sb.DataOffset {
		return false
	}
	used, _ := usedDevNumbers(f.s, "")
	return !used[n]
}

// usedDevNumbers returns the descriptor numbers of the bound members:
// those in their superblocks, those the kernel holds, and for 0.90 those
// the kernel may renumber inactive members to (see devnumbers.go).
// When a bound member's superblock cannot be read its number is unknown,
// and known is false: the kernel would refuse a number it holds (EBUSY),
// but only after the new superblock was written.
// A member named removing leaves before the new one's superblock is
// written, so its number does not need to be known. A faulty member
// whose disk is gone (pulled, so its superblock cannot be read) holds one
// of the numbers that the in-sync members' 1.x superblocks mark faulty
// (0xfffe): the kernel writes that role at a faulty member's number. All
// those numbers count as used then.
func usedDevNumbers(s *snapshot, removing string) (used map[uint32]bool, known bool) {
	used, known = map[uint32]bool{}, true
	src := cloneSource(s)
	if s.kernelNums != nil {
		for n := range s.kernelNums.held {
			used[n] = true
		}
	}
	if src != nil && src.sb.Version == superblock.Version090 {
		for _, n := range renumbered090(s) {
			used[n] = true
		}
	}
	for _, ms := range s.members {
		switch {
		case ms.DevNumber != nil:
			used[*ms.DevNumber] = true
		case ms.Device == removing:
		case s.kernelNums != nil:
			// The kernel named every member's number.
		case ms.state.Failed() && src != nil && src.sb.Version.Is1x():
			for i, r := range src.sb.DevRoles {
				if r == superblock.RoleFaulty {
					used[uint32(i)] = true
				}
			}
		default:
			known = false
		}
	}
	return used, known
}

// chooseDevNumber picks the descriptor number of a new member as mdadm
// does: the lowest number at or above raid_disks that no bound member
// uses. 0.90 numbers must stay below 27.
func chooseDevNumber(s *snapshot, raidDisks int, v superblock.Version, removing string) (uint32, error) {
	used, known := usedDevNumbers(s, removing)
	if !known {
		return 0, errMemberUnknown
	}
	limit := uint32(superblock.MaxDev1)
	if v == superblock.Version090 {
		limit = superblock.Disks090
	}
	if s.kernelNums != nil {
		limit = min(limit, s.kernelNums.upTo) // only those were asked
	}
	for n := uint32(raidDisks); n < limit; n++ {
		if !used[n] {
			return n, nil
		}
	}
	return 0, fmt.Errorf("md: no free descriptor number below %d", limit)
}

// planSuperblock builds the new member's superblock and the writes.
func planSuperblock(pl *planner, f arrayFacts, c *Candidate, devUUID uuid.UUID) {
	p := pl.p
	src := cloneSource(f.s)
	if src == nil {
		pl.fail(CheckSource, errArrayFailed, "no in-sync member with a readable superblock to clone")
		pl.skip(CheckSize, "no superblock to size against")
		return
	}
	p.Source = src.Device
	if p.Resume.member() {
		pl.pass(CheckSource, "not needed: the candidate is already a member")
		pl.pass(CheckSize, "accepted by the kernel when it was added")
		return
	}
	if err := src.sb.CheckKnown(); err != nil {
		// A field of a newer kernel may be per device or may need
		// updating; copying it blindly could give the new member a
		// superblock the kernel misreads.
		var names []string
		for _, u := range src.sb.UnknownFields() {
			names = append(names, u.String())
		}
		pl.fail(CheckSource, err, "the superblock of %s holds fields this program does not know, written by a newer kernel (%s); it will not copy them to a new member", src.Device, strings.Join(names, ", "))
		pl.skip(CheckSize, "no superblock to size against")
		return
	}
	if src.sb.HasBitmap() && f.bitmap == nil {
		pl.fail(CheckSource, errArrayFailed, "cannot read the bitmap of %s: %v", src.Device, f.bitmapErr)
		return
	}
	pl.pass(CheckSource, "%s (superblock %s, events %d)", src.Device, src.sb.Version, src.sb.Events)
	if why := unreadFacts(f.s, "component_size"); why != "" || f.s.component == 0 {
		pl.skip(CheckSize, "could not read the array's component size: "+or(why, "component_size: no value"))
		return
	}
	if !c.BlockDevice && !c.Image {
		pl.skip(CheckSize, "candidate size unknown")
		return
	}
	if c.SizeBytes <= 0 {
		// An empty removable device, for one: nothing fits on it.
		pl.fail(CheckSize, errCandidateTooSmall, "%s has no capacity (%d bytes)", c.Path, c.SizeBytes)
		return
	}
	var n uint32
	if p.Resume == ResumeWritten {
		got := c.mdsb[0]
		n, devUUID = got.DevNumber, got.DeviceUUID
		if got.Version == superblock.Version090 {
			n = got.ThisDisk.Number
		}
	} else {
		var err error
		removing := ""
		if p.Remove != nil {
			removing = p.Remove.Device
		}
		if n, err = chooseDevNumber(f.s, p.raidDisks, src.sb.Version, removing); errors.Is(err, errMemberUnknown) {
			pl.fail(CheckSource, errMemberUnknown, "a member other than the one being replaced has no readable superblock, so its descriptor number is unknown; remove it or make it readable first")
			return
		} else if err != nil {
			pl.fail(CheckSize, errCandidateTooSmall, "%v", err)
			return
		}
	}
	component := f.s.component * 2 // sectors
	sb, err := newMemberSuperblock(src.sb, c.SizeBytes, n, devUUID, c.dev)
	if err == nil && sb.Version.Is1x() && sb.DataSize < component {
		err = fmt.Errorf("%w: %d data sectors, the array uses %d", errCandidateTooSmall, sb.DataSize, component)
	}
	if err == nil && sb.Version == superblock.Version090 && uint64(sb.DiskOffset/512) < component {
		err = fmt.Errorf("%w: %d sectors before the superblock, the array uses %d", errCandidateTooSmall, sb.DiskOffset/512, component)
	}
	if errors.Is(err, errCandidateTooSmall) {
		reason := strings.TrimPrefix(err.Error(), errCandidateTooSmall.Error()+": ")
		if need := src.sb.MinDeviceBytes(component); c.SizeBytes < need {
			pl.fail(CheckSize, err, "%s has %d bytes, the array needs at least %d (%s)", c.Path, c.SizeBytes, need, reason)
		} else {
			pl.fail(CheckSize, err, "%s has %d bytes: %s", c.Path, c.SizeBytes, reason)
		}
		return
	}
	if err != nil {
		pl.fail(CheckNewSuperblock, err, "cannot build a superblock for %s from the one of %s: %v", c.Path, src.Device, err)
		return
	}
	pl.pass(CheckSize, "%d bytes; data at sector %d, %d sectors for data (the array uses %d)", c.SizeBytes, sb.DataStart(), sb.DataRoom(), component)
	if verr := sb.Validate(c.SizeBytes); verr != nil {
		pl.fail(CheckNewSuperblock, verr, "the superblock built for %s from the one of %s would not load: %v", c.Path, src.Device, verr)
		return
	}
	regions, err := memberWrites(sb, f.bitmap)
	if err != nil {
		pl.fail(CheckNewSuperblock, err, "cannot encode the superblock built for %s: %v", c.Path, err)
		return
	}
	if p.Resume == ResumeWritten {
		// The blank rule left out the area the superblock on the disk
		// implies; it must be exactly the area this run writes.
		// A run killed between the superblock and the bitmap write left
		// no bitmap: the area on the disk is the superblock's, and the
		// blank scan covered the bitmap region (so it holds fill bytes).
		want := regionArea(regions)
		missing := c.bitmapMissing && len(want) == 2 && slices.Equal(want[:1], c.area)
		if !missing && !slices.Equal(want, c.area) {
			pl.fail(CheckResume, c.Findings[0], "%s", notBlankReason(c, fmt.Sprintf("the md superblock area found (%v) is not the one this replace writes (%v)", c.area, want)))
			return
		}
		pl.pass(CheckResume, "the superblock area on the disk is the one this replace writes again")
	}
	p.Superblock = sb
	p.DevNumber = n
	p.devUUID = devUUID
	p.DeviceUUID = devUUID.String()
	if sb.Version == superblock.Version090 {
		p.DeviceUUID = ""
	}
	p.regions = regions
	p.lbs = max(c.LogicalBlockSize, 512)
	p.arrayLBS = f.lbs
	for _, r := range regions {
		p.Writes = append(p.Writes, Write{What: r.What, Offset: r.Off, Length: len(r.Data)})
	}
}

// newMemberSuperblock is superblock.NewMember for the device number dev,
// with the device-too-small errors as errCandidateTooSmall (the reason
// kept, as the size check reports it).
func newMemberSuperblock(src *superblock.Superblock, devSize int64, n uint32, devUUID uuid.UUID, dev sysfs.DevNum) (*superblock.Superblock, error) {
	sb, err := src.NewMember(devSize, n, devUUID, dev.Major, dev.Minor)
	var se *superblock.SizeError
	switch {
	case errors.As(err, &se):
		return nil, fmt.Errorf("%w: %s", errCandidateTooSmall, se.Reason)
	case errors.Is(err, superblock.ErrDeviceTooSmall):
		return nil, fmt.Errorf("%w: %w", errCandidateTooSmall, err)
	case err != nil:
		return nil, err
	}
	return sb, nil
}

// memberWrites encodes the new superblock and, for an array with an
// internal bitmap, the bitmap as mdadm writes it for a new member: the
// array's bitmap superblock followed by bits all set (0xff), rounded up to
// 4 KiB but never into the next metadata area.
func memberWrites(sb *superblock.Superblock, bm *superblock.Bitmap) ([]region, error) {
	b, err := sb.MarshalBinary()
	if err != nil {
		return nil, err
	}
	out := []region{{What: "md superblock " + sb.Version.String(), Off: sb.DiskOffset, Data: b}}
	if !sb.HasBitmap() {
		return out, nil
	}
	if bm == nil {
		return nil, fmt.Errorf("md: array has a bitmap but its superblock was not read")
	}
	loc, err := superblock.BitmapLocation(sb)
	if err != nil {
		return nil, err
	}
	hdr, err := bm.MarshalBinary()
	if err != nil {
		return nil, err
	}
	size, err := bitmapBytes(sb, bm, loc)
	if err != nil {
		return nil, err
	}
	data := make([]byte, size)
	copy(data, hdr)
	for i := len(hdr); i < len(data); i++ {
		data[i] = 0xff
	}
	return append(out, region{What: "bitmap", Off: loc, Data: data}), nil
}

// maxBitmapBytes bounds a bitmap region, superblock and bits, whatever
// a bitmap superblock claims. It is this program's limit, not the
// kernel's: the kernel keeps an internal bitmap in the space reserved
// between the md superblock and the data (or the bad-block log), growing
// the chunk until it fits, and mdadm reserves at most 128 MiB there.
const maxBitmapBytes = 128 << 20

// bitmapBytes is the length of the bitmap region memberWrites writes for
// the superblock sb with the bitmap superblock bm at byte loc: the bitmap
// superblock and one bit per chunk of the synced size, rounded up to 4 KiB
// but never into the next metadata area. It is bounded before anything is
// sized from it: the chunk must be a power of two of at least 512 bytes,
// the bitmap may cover no more than the member's data, and the region
// must fit the room and maxBitmapBytes.
func bitmapBytes(sb *superblock.Superblock, bm *superblock.Bitmap, loc int64) (uint64, error) {
	if bm.ChunkSize < 512 || bm.ChunkSize&(bm.ChunkSize-1) != 0 {
		return 0, fmt.Errorf("md: bitmap chunk size %d is not a power of two of at least 512 bytes", bm.ChunkSize)
	}
	if room := sb.DataRoom(); bm.SyncSize > room {
		return 0, fmt.Errorf("md: the bitmap covers %d sectors, the member holds %d", bm.SyncSize, room)
	}
	// bits <= SyncSize (chunks of at least one sector), so no overflow.
	need := uint64(superblock.BitmapSize) + (bm.Bits()+7)/8
	if need > maxBitmapBytes {
		return 0, fmt.Errorf("md: bitmap needs %d bytes, more than the %d this program writes", need, maxBitmapBytes)
	}
	room := sb.BitmapRoom(loc)
	if need > room {
		return 0, fmt.Errorf("md: bitmap needs %d bytes, %d available", need, room)
	}
	return min((need+4095)&^4095, room), nil
}

// planSteps lists what the executor does.
func planSteps(p *Plan) {
	add := func(k StepKind, format string, args ...any) {
		p.Steps = append(p.Steps, Step{Kind: k, Detail: fmt.Sprintf(format, args...)})
	}
	p.freeze = p.actionSeen == sysfs.ActionIdle
	if p.freeze {
		add(StepFreeze, "freeze recovery (sync_action frozen)")
	}
	// The faulty member leaves only once the candidate is claimed (opened
	// exclusively) and found blank again, so that a refusal then leaves
	// the array as it was; and before the new superblock is written and
	// added, so that the new member never shares the array with it (its
	// descriptor number may be reused), and the write's close is followed
	// at once by ADD_NEW_DISK (a close after writing makes udev probe the
	// disk, and mdadm's rules may try to add it themselves).
	if !p.Resume.member() {
		add(StepClaim, "open %s exclusively and check again that it is the planned disk and blank", p.Candidate.Path)
	}
	if p.Remove != nil {
		add(StepRemove, "remove faulty %s (%s) from %s", p.Remove.Device, p.Remove.DevNum, p.Array)
	}
	if !p.Resume.member() {
		add(StepWriteSuperblock, "write a spare superblock (dev_number %d) on %s, read it back and close it", p.DevNumber, p.Candidate.Path)
		add(StepAdd, "add %s to %s as a spare (ADD_NEW_DISK)", p.Candidate.Path, p.Array)
	}
	if p.Hot {
		add(StepWantReplacement, "mark %s want_replacement", p.Replace.Device)
	}
	if p.Resume != ResumePinned {
		add(StepSetSlot, "pin %s to slot %d", p.Candidate.Device, p.Slot)
	}
	add(StepUnfreeze, "unfreeze recovery (sync_action idle)")
	add(StepVerify, "check raid_disks is still %d and recovery into slot %d started", p.raidDisks, p.Slot)
}
