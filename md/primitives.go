package md

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/go-mdraid/mdraid/blockdev"
	"github.com/go-mdraid/mdraid/sysfs"
)

// ops is what a Manager needs to change the system.
type ops struct {
	k         kernel
	runDir    string // lock files
	mountInfo string // mount table, to refuse mounted candidates
	// afterStep, when set (by tests), runs after each executed step; an
	// error stops the replace as if the step had failed.
	afterStep func(StepKind) error
	// verifyTimeout bounds how long a replace waits for the rebuild to
	// start after unfreezing; 0 means defaultVerifyTimeout.
	verifyTimeout time.Duration
	// mapLockWait bounds the wait for mdadm's map lock in a replace; 0
	// means mapLockWait.
	mapLockWait time.Duration
	// diskNumbers asks the kernel which descriptor numbers below upTo the
	// members of an array hold (GET_DISK_INFO); nil means it cannot be
	// asked (tests on fixture trees).
	diskNumbers func(array string, upTo int) (map[uint32]sysfs.DevNum, error)
	// statFile stats a loop device's backing file (blockdev.StackOptions);
	// nil stats it on this system.
	statFile func(path string) (blockdev.FileStat, error)
	// sleep waits between the reads of a check that is followed; nil
	// waits on a timer. Tests advance a simulated kernel in it.
	sleep func(ctx context.Context, d time.Duration) error
	// watchAttr opens a sysfs attribute to be read and polled (Wait,
	// WaitClean); nil opens the real one (pollAttr). Tests advance a
	// simulated kernel in its Wait.
	watchAttr func(path string) (attrWatch, error)
}

// Errors of the primitives.
var (
	// errWouldFail means failing the member would leave the array unable
	// to serve its data; nothing was written.
	errWouldFail = errors.New("md: refusing: would fail the array")
	// errNoMember means the named device is not a member of the array.
	errNoMember = errors.New("md: not a member of the array")
	// errMemberActive means a member that still holds a slot (in sync or
	// rebuilding) was asked to be removed; fail it first.
	errMemberActive = errors.New("md: member is active; fail it first")
	// errArrayRunning means Run was asked to start an array that runs.
	errArrayRunning = errors.New("md: array is already running")
	// errNotEnough means an inactive array has too few members to start.
	errNotEnough = errors.New("md: not enough members to start the array")
)

// Change is what Fail, Remove, Run or Stop did, or with DryRun would do. Pass a
// pointer to one as their optional last argument: to ask for a dry run,
// and to learn what was written.
type Change struct {
	// DryRun, set by the caller, makes the call decide as it would (the
	// same refusals and errors) and write nothing.
	DryRun bool
	// Array and Member are set by the call: the kernel names of the
	// array and of the member (Member is empty for Run).
	Array, Member string
	// Write is set by the call to the write made (tried, when the call
	// fails after deciding; due, with DryRun),
	// such as "SET_DISK_FAULTY 8:16", "HOT_REMOVE_DISK 8:16",
	// "dev-sdb/state=remove" or "RUN_ARRAY". It is empty when there was
	// nothing to write: Fail of a member that is faulty already.
	Write string
	// Removed is set by Stop to what it removed after stopping the
	// array (due, with DryRun): the /dev/md links made for it, by path,
	// and its map file entry ("map entry md127 (/run/mdadm/map)").
	Removed []string
	// Unfinished, set by the caller, lets Run start an array whose
	// superblocks no running array has updated although a member they
	// name is missing: what a create that did not finish leaves, which
	// Run otherwise refuses (RunOutlook.Unfinished). mdadm --run starts
	// it.
	Unfinished bool
}

// changeOf returns the caller's Change, or a throwaway one.
func changeOf(c []*Change) *Change {
	if len(c) > 0 && c[0] != nil {
		return c[0]
	}
	return &Change{}
}

// memberOf finds a member of the snapshot by kernel name.
func memberOf(s *snapshot, name string) *memberSnap {
	for i := range s.members {
		if s.members[i].Device == name {
			return &s.members[i]
		}
	}
	return nil
}

// unreadMember refuses a decision about a member whose state or slot
// could not be read: a spare and an in-sync member would look alike.
func unreadMember(ms *memberSnap) error {
	if len(ms.unread) == 0 {
		return nil
	}
	return fmt.Errorf("%w: could not read the %s of %s (%s)", errUnknownFact, strings.Join(ms.unread, " and "), ms.Device, ms.Error)
}

// decideFail is the decision behind Fail: whether the member may be
// marked faulty. It refuses when the array would not survive without it
// (mdadm's enough() check; the kernel would answer EBUSY for the last
// in-sync raid1/raid10 member and break raid5 beyond repair).
func decideFail(s *snapshot, name string) (*memberSnap, error) {
	ms := memberOf(s, name)
	if ms == nil {
		return nil, fmt.Errorf("%w: %s is not in %s", errNoMember, name, s.name)
	}
	a := build(s, "/dev")
	if a.Availability == Inactive {
		return nil, fmt.Errorf("%w: %s is not running", errArrayInactive, s.name)
	}
	if ms.state.Failed() {
		return ms, nil // already faulty: failing again is harmless
	}
	// Whether the array survives needs the member's own state and slot,
	// and the array's level, slots and members.
	if err := unreadMember(ms); err != nil {
		return nil, err
	}
	if why := unreadFacts(s, "array_state", "level", "raid_disks", "layout", "members"); why != "" {
		return nil, fmt.Errorf("%w: could not read %s", errUnknownFact, why)
	}
	if a.Availability == Unknown {
		return nil, fmt.Errorf("%w: %s is in an unknown state (%q)", errUnknownFact, s.name, s.state)
	}
	if ms.Slot < 0 || !ms.state.Has(sysfs.FlagInSync) {
		return ms, nil // a spare or a member being rebuilt holds no data yet
	}
	inSync := make([]bool, a.RaidDisks)
	for _, sl := range a.Slots {
		inSync[sl.Slot] = sl.State == SlotActive
	}
	if ms.Slot < len(inSync) {
		inSync[ms.Slot] = false
	}
	if !survives(a.Level, a.Layout, inSync) {
		return nil, fmt.Errorf("%w: %s holds the last in-sync copy of some data in %s", errWouldFail, name, s.name)
	}
	return ms, nil
}

// Fail marks a member faulty (SET_DISK_FAULTY), as a failing disk would.
// member is a kernel name or a device path. It refuses, writing nothing,
// when the array would not survive without the member ("md: refusing:
// would fail the array: ..."), and when that cannot be told: the
// member's state or slot, or the array's state, level, layout, slots or
// members could not be read. If the kernel refuses anyway (EBUSY) the
// refusal also matches unix.EBUSY. Every refusal is a
// *RefusedError matching ErrRefused. Failing a faulty member again does
// nothing (and leaves change's Write empty). change, at most one, asks
// for a dry run and tells what was written (see Change).
func (m *Manager) Fail(ctx context.Context, array, member string, change ...*Change) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	ch := changeOf(change)
	name, err := m.resolve(array)
	if err != nil {
		return refuseLookup("fail", array, member, err)
	}
	s := m.read(name)
	ms, err := decideFail(s, m.memberName(member))
	if err != nil {
		return refuse("fail", name, member, err)
	}
	ch.Array, ch.Member = name, ms.Device
	if ms.state.Failed() {
		return nil
	}
	dev := ms.DevNum
	if dev.IsZero() {
		return fmt.Errorf("md: device number of %s: %w", ms.Device, errNoDevNum)
	}
	ch.Write = "SET_DISK_FAULTY " + dev.String()
	if ch.DryRun {
		return nil
	}
	if err := m.ops.k.SetFaulty(name, dev); err != nil {
		if errors.Is(err, unix.EBUSY) {
			return refuse("fail", name, member, fmt.Errorf("%w: the kernel refused to fail %s: %w", errWouldFail, ms.Device, err))
		}
		return fmt.Errorf("md: failing %s in %s: %w", ms.Device, name, err)
	}
	return nil
}

// decideRemove is the decision behind Remove: only a faulty member or a
// spare without a slot can leave the array.
func decideRemove(s *snapshot, name string) (*memberSnap, error) {
	ms := memberOf(s, name)
	if ms == nil {
		return nil, fmt.Errorf("%w: %s is not in %s", errNoMember, name, s.name)
	}
	if ms.state.Failed() {
		return ms, nil
	}
	if err := unreadMember(ms); err != nil {
		return nil, err
	}
	if ms.Slot < 0 {
		return ms, nil
	}
	return nil, fmt.Errorf("%w: %s is %s in slot %d of %s", errMemberActive, name, ms.state, ms.Slot, s.name)
}

// Remove unbinds a faulty member or a spare from the array
// (HOT_REMOVE_DISK), retrying EBUSY a few times as mdadm does. On an
// array that is not running (ENODEV) it writes "remove" to the member's
// sysfs state instead. A member that still holds a slot (in sync or
// rebuilding) is refused, and so is one whose state or slot cannot be
// read; the kernel's EBUSY (a rebuild running) is returned
// wrapped, matching unix.EBUSY. Both are refusals: *RefusedError,
// matching ErrRefused. change, at most one, asks for a dry run and tells
// what was written (see Change).
func (m *Manager) Remove(ctx context.Context, array, member string, change ...*Change) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	ch := changeOf(change)
	name, err := m.resolve(array)
	if err != nil {
		return refuseLookup("remove", array, member, err)
	}
	s := m.read(name)
	ms, err := decideRemove(s, m.memberName(member))
	if err != nil {
		return refuse("remove", name, member, err)
	}
	ch.Array, ch.Member = name, ms.Device
	dev := ms.DevNum
	viaState := "dev-" + ms.Device + "/state=" + string(sysfs.CmdRemove)
	if dev.IsZero() {
		ch.Write = viaState
	} else {
		ch.Write = "HOT_REMOVE_DISK " + dev.String()
	}
	if ch.DryRun {
		return nil
	}
	if dev.IsZero() {
		// The member's block device is gone (a pulled disk): remove it
		// through its sysfs state instead, as mdadm falls back to.
		err = m.ops.k.WriteState(name, ms.Device, sysfs.CmdRemove)
	} else {
		err = hotRemove(m.ops.k, m.fs, name, &PlanMember{Device: ms.Device, dev: dev})
	}
	if errors.Is(err, unix.ENODEV) {
		ch.Write = viaState
		err = m.ops.k.WriteState(name, ms.Device, sysfs.CmdRemove)
	}
	if err != nil {
		if errors.Is(err, unix.EBUSY) {
			return refuse("remove", name, member, fmt.Errorf("md: the kernel refused to remove %s from %s (busy: still in a slot, or a rebuild is running): %w", ms.Device, name, err))
		}
		return fmt.Errorf("md: removing %s from %s: %w", ms.Device, name, err)
	}
	return nil
}

// decideRun is the decision behind Run: the array must be assembled but
// not running, and its members' superblocks must cover enough slots for
// its level and layout, the kernel's own rule (raid10.c _enough; the
// layout is the superblock's, as md/layout reads 0 until the start).
func decideRun(s *snapshot, unfinished bool) error {
	if why := unreadFacts(s, "array_state", "level", "raid_disks", "layout", "members"); why != "" {
		return fmt.Errorf("%w: could not read %s", errUnknownFact, why)
	}
	a := build(s, "/dev")
	if a.Availability != Inactive {
		return fmt.Errorf("%w: %s is %s", errArrayRunning, s.name, a.Availability)
	}
	if len(s.members) == 0 {
		return fmt.Errorf("%w: %s has no members", errNotEnough, s.name)
	}
	o := a.Run
	if o != nil && o.Unfinished != "" {
		if !unfinished {
			return fmt.Errorf("%w: %s: %s", errNotEnough, s.name, o.Unfinished)
		}
		// What the members could serve, without the hold.
		o = runOutlook(&a)
	}
	if o == nil || !o.CanRun {
		slots := 0
		if o != nil {
			slots = o.Slots
		}
		return fmt.Errorf("%w: %s (%s) has %d of %d slots", errNotEnough, s.name, a.Level, slots, a.RaidDisks)
	}
	return nil
}

func countTrue(v []bool) int {
	n := 0
	for _, b := range v {
		if b {
			n++
		}
	}
	return n
}

// Run starts an assembled, inactive array with the members it has, as
// mdadm --run does (the last-resort unit runs it for an array assembled
// short of members): it writes array_state=read-auto, so the array
// starts auto-read-only and turns read-write at its first write; no
// resync or recovery runs before that. It refuses an array that is
// already running, one whose members cannot serve the data, and one
// whose state, level, layout, slots or members cannot be read, each with
// a *RefusedError matching ErrRefused whose message says which. change,
// at most one, asks for a dry run and tells what was written (see
// Change).
func (m *Manager) Run(ctx context.Context, array string, change ...*Change) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	ch := changeOf(change)
	name, err := m.resolve(array)
	if err != nil {
		return refuseLookup("run", array, "", err)
	}
	if err := decideRun(m.read(name), ch.Unfinished); err != nil {
		return refuse("run", name, "", err)
	}
	ch.Array, ch.Write = name, "array_state=read-auto"
	if ch.DryRun {
		return nil
	}
	if err := m.ops.k.SetArrayState(name, sysfs.StateReadAuto); err != nil {
		return fmt.Errorf("md: starting %s: %w", name, err)
	}
	return nil
}
