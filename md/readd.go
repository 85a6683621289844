package md

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/go-mdraid/mdraid/internal/escape"
	"github.com/go-mdraid/mdraid/ioctl"
	"github.com/go-mdraid/mdraid/superblock"
	"github.com/go-mdraid/mdraid/sysfs"
)

// Errors of re-add. Each is the cause inside a *RefusedError.
var (
	// ErrSlotTaken means the slot the device's superblock names is held
	// by another member, or its descriptor number is.
	ErrSlotTaken = errors.New("md: the device's slot is not free")
	// ErrSplitBrain means the device's superblock is newer than the
	// array's: both went on without the other.
	ErrSplitBrain = errors.New("md: the device is newer than the array (split brain)")
	// ErrNotRecordedDisk means the slot record names another disk for
	// the slot (device UUID, serial or WWN).
	ErrNotRecordedDisk = errors.New("md: not the disk recorded for the slot")
	// errNotReAddable is the cause of the other refusals: an array that
	// cannot take a member back, a device that is not a former member.
	errNotReAddable = errors.New("md: cannot re-add")
)

// reAddOp is the operation name of re-add's refusals.
const reAddOp = "re-add"

// ReAddRequest is a former member to put back into its own slot.
type ReAddRequest struct {
	// Array names the array, as in the package documentation ("Naming
	// arrays").
	Array string
	// Device is the former member: a kernel name or a path, by the rule
	// of Manager.DevicePath.
	Device string
	// Records, when set, hold the array's slot records: the device must
	// then be the disk recorded for its slot (its device UUID, and its
	// serial and WWN where both are known).
	Records *Records

	// AllowImageFile accepts a regular file as the device. It exists for
	// tests (md/mdtest's disks are image files); mdctl never sets it.
	AllowImageFile bool
}

// ReAddPlan is what ReAdd would do, with the facts that decided it.
type ReAddPlan struct {
	// Array is the array's kernel name, UUID its UUID.
	Array string `json:"array"`
	UUID  string `json:"uuid"`
	// Device is the device's kernel name, Path as given (resolved), DevNum
	// its major:minor.
	Device string `json:"device"`
	Path   string `json:"path"`
	DevNum string `json:"devnum"`
	// Slot is the slot its superblock names, and the slot it goes back
	// to; DevNumber its descriptor number.
	Slot      int    `json:"slot"`
	DevNumber uint32 `json:"dev_number"`
	// Events is its superblock's event count, ArrayEvents the array's
	// (its freshest in-sync member's).
	Events      uint64 `json:"events"`
	ArrayEvents uint64 `json:"array_events"`
	// Bitmap says that the array has a write-intent bitmap: md then
	// copies only the regions written since the device left, when the
	// bitmap still covers that time.
	Bitmap bool `json:"bitmap"`
	// DeviceUUID is the device UUID of its superblock.
	DeviceUUID string `json:"device_uuid"`
	// Identity says what ties the device to the slot.
	Identity string `json:"identity"`
	// Write is the re-add: ADD_NEW_DISK with the slot and the in-sync
	// state of the device's superblock.
	Write string `json:"write"`
	// Fallback is what is written when md does not take the device back
	// as it was (no bitmap, or one that no longer covers the gap): the
	// device added as a spare, rebuilt in full into its slot, which is
	// the array's only free slot. Empty when the array has other free
	// slots: a spare could land in another, so it is not added then.
	Fallback string `json:"fallback,omitempty"`

	dev        sysfs.DevNum
	writeMost  bool
	failFast   bool
	arrayState sysfs.ArrayState
}

// ReAddOutcome says how md took the device back.
type ReAddOutcome string

// The outcomes of ReAdd.
const (
	// ReAdded: md took the device back into its slot as the member it
	// was. With the array's bitmap only what changed since it left is
	// copied; without one the member is copied in full.
	ReAdded ReAddOutcome = "re-added"
	// ReAddedFull: md did not take it back as it was (its events are too
	// old for the bitmap, or there is none); it was added as a spare and
	// is rebuilt in full into its slot.
	ReAddedFull ReAddOutcome = "rebuilt"
)

// ReAddResult is what ReAdd did.
type ReAddResult struct {
	Plan    *ReAddPlan   `json:"plan"`
	Outcome ReAddOutcome `json:"outcome"`
	// Writes are the writes made, in order (an ADD_NEW_DISK the kernel
	// refused with EINVAL is listed too: it changed nothing).
	Writes []string `json:"writes"`
	// SyncAction is the array's sync_action once the device was in its
	// slot ("recover" while md copies, "idle" when nothing was to copy).
	SyncAction string `json:"sync_action"`
}

// PlanReAdd decides, writing nothing, whether ReAdd would put the device
// back into its own slot of the array, and how. A device is taken back
// when its md superblock (read with O_DIRECT) is one of the array's
// (UUID, level, raid_disks, layout, chunk, size and creation time as the
// array's members'), names itself in a slot (not a spare, not faulty),
// that slot and its descriptor number are free in the running array, its
// events are not newer than the array's, no one holds, mounts or has
// opened it exclusively, it has no kernel partitions, and (with Records)
// it is the disk recorded for the slot. Each refusal is a *RefusedError
// that names why; a fact that cannot be read is a refusal.
func (m *Manager) PlanReAdd(ctx context.Context, req ReAddRequest) (*ReAddPlan, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	name, err := m.resolve(req.Array)
	if err != nil {
		return nil, refuseLookup(reAddOp, req.Array, req.Device, err)
	}
	f := m.arrayFacts(name, "")
	c := m.candidateFacts(m.DevicePath(req.Device), req.AllowImageFile)
	p, err := decideReAdd(f, c, req.Records)
	if err != nil {
		return nil, refuse(reAddOp, name, req.Device, err)
	}
	return p, nil
}

// decideReAdd is the pure decision behind PlanReAdd.
func decideReAdd(f arrayFacts, c *Candidate, rs *Records) (*ReAddPlan, error) {
	s := f.s.asBuilt()
	src := cloneSource(s)
	switch {
	case len(s.errs) > 0 && src == nil:
		return nil, fmt.Errorf("%w: the array cannot be read: %s", errUnknownFact, problems(s.errs))
	case s.stateBad:
		return nil, fmt.Errorf("%w: array_state cannot be read", errUnknownFact)
	case s.state == sysfs.StateInactive || s.state == sysfs.StateClear:
		return nil, fmt.Errorf("%w: %s is not running (mdctl incremental or assemble add members to an array that is not running)", errNotReAddable, s.name)
	case !s.level.Redundant():
		return nil, fmt.Errorf("%w: %s is %s, which has no redundancy to rebuild a member from", errNotReAddable, s.name, s.level)
	case src == nil:
		return nil, fmt.Errorf("%w: no in-sync member of %s has a superblock that can be read", errUnknownFact, s.name)
	case s.action == sysfs.ActionReshape:
		return nil, fmt.Errorf("%w: %s is reshaping", errArrayBusy, s.name)
	}
	if c.Error != "" {
		return nil, fmt.Errorf("%w: %s: %s", errUnknownFact, c.Path, c.Error)
	}
	if !c.BlockDevice && !c.Image {
		return nil, fmt.Errorf("%w: %s is not a block device", errNotReAddable, c.Path)
	}
	use := append(c.memberships(), c.uses("")...)
	if len(c.Partitions) > 0 {
		use = append(use, "has kernel partitions "+strings.Join(c.Partitions, ", "))
	}
	if len(use) > 0 {
		return nil, fmt.Errorf("%w: %s is %s", ErrInUse, c.Path, strings.Join(use, "; "))
	}
	if len(c.mdsb) == 0 {
		return nil, fmt.Errorf("%w: %s carries no md superblock that can be read: it is not a former member (replace or heal add a blank disk)", ErrNotMember, c.Path)
	}
	sb := c.mdsb[0]
	for _, o := range c.mdsb[1:] {
		if o.SetUUID == src.sb.SetUUID {
			sb = o
		}
	}
	a := src.sb
	if sb.SetUUID != a.SetUUID {
		return nil, fmt.Errorf("%w: %s belongs to another array (UUID %s, %s's is %s)", ErrMismatch, c.Path, sb.SetUUID, s.name, a.SetUUID)
	}
	if why := mismatch(a, sb); why != "" {
		return nil, fmt.Errorf("%w: %s carries %s's UUID but differs in %s", ErrMismatch, c.Path, s.name, why)
	}
	slot := slotOf(sb)
	if slot < 0 || slot >= s.raidDisks {
		return nil, fmt.Errorf("%w: %s's superblock does not name it in a slot (a spare, or failed when it left): replace or heal add it as a new disk once it is blank", errNotReAddable, c.Path)
	}
	if sb.Events > a.Events {
		return nil, fmt.Errorf("%w: %s has events %d, %s's members %d: it went on without the array (split brain). Decide which copy to keep: this is not decided here", ErrSplitBrain, c.Path, sb.Events, s.name, a.Events)
	}
	for _, ms := range s.members {
		if ms.Slot == slot && !ms.state.Failed() {
			return nil, fmt.Errorf("%w: slot %d of %s is held by %s", ErrSlotTaken, slot, s.name, ms.Device)
		}
	}
	nr := descNr(sb)
	used, known := usedDevNumbers(s, "")
	if !known {
		return nil, fmt.Errorf("%w: the descriptor numbers of %s's members cannot be told", errUnknownFact, s.name)
	}
	if used[nr] {
		holder := "a member"
		for _, ms := range s.members {
			if ms.DevNumber != nil && *ms.DevNumber == nr {
				holder = ms.Device
			}
		}
		return nil, fmt.Errorf("%w: its descriptor number %d is held by %s of %s (a failed member not yet removed: mdctl remove %s %s)", ErrSlotTaken, nr, holder, s.name, s.name, holder)
	}
	identity := fmt.Sprintf("its superblock: array UUID %s, slot %d, device UUID %s", a.SetUUID, slot, sb.DeviceUUID)
	if rs != nil {
		rec, ok := rs.find(snapshotUUID(f.s))
		if !ok {
			return nil, fmt.Errorf("%w: no slot record of %s", ErrNotRecordedDisk, s.name)
		}
		var sr *SlotRecord
		for i := range rec.Slots {
			if rec.Slots[i].Slot == slot {
				sr = &rec.Slots[i]
			}
		}
		if sr == nil {
			return nil, fmt.Errorf("%w: the record of %s has no slot %d", ErrNotRecordedDisk, s.name, slot)
		}
		if why := otherDisk(sr, c, sb); why != "" {
			return nil, fmt.Errorf("%w: slot %d of %s was %s; %s", ErrNotRecordedDisk, slot, s.name, recordedDisk(sr), why)
		}
		identity += "; the slot record's " + recordedDisk(sr)
	}
	p := &ReAddPlan{
		Array: s.name, UUID: snapshotUUID(f.s), Device: c.Device, Path: c.Path, DevNum: c.DevNum,
		Slot: slot, DevNumber: nr, Events: sb.Events, ArrayEvents: a.Events, Bitmap: a.HasBitmap(),
		DeviceUUID: sb.DeviceUUID.String(), Identity: identity, dev: c.dev, arrayState: s.state,
	}
	if sb.Version.Is1x() {
		p.writeMost = sb.DevFlags&superblock.DevFlagWriteMostly != 0
		p.failFast = sb.DevFlags&superblock.DevFlagFailFast != 0
	}
	p.Write = fmt.Sprintf("ADD_NEW_DISK %s (re-add: number %d, slot %d, in sync)", c.DevNum, nr, slot)
	if free := freeSlots(s); len(free) == 1 && free[0] == slot {
		p.Fallback = fmt.Sprintf("ADD_NEW_DISK %s (a spare: slot %d, the only free slot, rebuilt in full)", c.DevNum, slot)
	}
	return p, nil
}

// otherDisk says how the candidate differs from the disk recorded for
// the slot, or "".
func otherDisk(sr *SlotRecord, c *Candidate, sb *superblock.Superblock) string {
	switch {
	case sr.DeviceUUID != "" && sr.DeviceUUID != sb.DeviceUUID.String():
		return fmt.Sprintf("%s carries device UUID %s", c.Path, sb.DeviceUUID)
	case sr.Serial != "" && c.Serial != "" && sr.Serial != c.Serial:
		return fmt.Sprintf("%s has serial %s", c.Path, escape.Text(c.Serial))
	}
	return ""
}

// recordedDisk names the disk a slot record holds.
func recordedDisk(sr *SlotRecord) string {
	var parts []string
	if sr.DeviceUUID != "" {
		parts = append(parts, "device UUID "+sr.DeviceUUID)
	}
	if sr.Serial != "" {
		parts = append(parts, "serial "+escape.Text(sr.Serial))
	}
	if sr.WWN != "" {
		parts = append(parts, "WWN "+escape.Text(sr.WWN))
	}
	if len(parts) == 0 {
		return "recorded without an identity"
	}
	return strings.Join(parts, ", ")
}

// freeSlots lists the slots of the array that no working member holds.
func freeSlots(s *snapshot) []int {
	held := map[int]bool{}
	for _, ms := range s.members {
		if ms.Slot >= 0 && !ms.state.Failed() {
			held[ms.Slot] = true
		}
	}
	var out []int
	for i := 0; i < s.raidDisks; i++ {
		if !held[i] {
			out = append(out, i)
		}
	}
	return out
}

// ReAdd puts a former member back into its own slot of a running array,
// as mdadm --re-add does: under the array's lock it plans again
// (PlanReAdd's checks; a plan that changed is refused), then issues
// ADD_NEW_DISK with the device's descriptor number, slot and in-sync
// state. The kernel decides: it takes the device back as the member it
// was (ReAdded: with the array's bitmap it copies only what changed
// since the device left) or refuses with EINVAL, having changed nothing
// (no bitmap and older events, or events older than the bitmap
// covers). Then, when the device's slot is the array's only free slot,
// it is added as a spare, which md rebuilds in full into that slot
// (ReAddedFull); otherwise ReAdd stops there, refused. It waits (up to 5
// seconds) for the kernel to put the device into its slot and fails if
// it lands elsewhere. The device is never written by ReAdd; md writes
// its superblock as it does for any member.
func (m *Manager) ReAdd(ctx context.Context, req ReAddRequest) (*ReAddResult, error) {
	p, err := m.PlanReAdd(ctx, req)
	if err != nil {
		return nil, err
	}
	unlock, err := lockArray(m.ops.runDir, p.UUID)
	if err != nil {
		return nil, err
	}
	defer unlock()
	unlockDisk, err := lockArray(m.ops.runDir, "disk-"+p.DevNum)
	if err != nil {
		return nil, err
	}
	defer unlockDisk()
	req.Array = p.Array
	q, err := m.PlanReAdd(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrPlanChanged, err)
	}
	if q.Write != p.Write || q.DevNum != p.DevNum || q.Fallback != p.Fallback {
		return nil, refuse(reAddOp, p.Array, req.Device, fmt.Errorf("%w: %s became %s", ErrPlanChanged, p.Write, q.Write))
	}
	res := &ReAddResult{Plan: q, Outcome: ReAdded}
	k := m.ops.k
	err = k.ReAddDisk(q.Array, q.dev, q.DevNumber, q.Slot, q.writeMost, q.failFast)
	res.Writes = append(res.Writes, q.Write)
	if errors.Is(err, unix.EINVAL) {
		if q.Fallback == "" {
			return res, refuse(reAddOp, q.Array, req.Device, fmt.Errorf("md: the kernel did not take %s back as the member it was (%w: no write-intent bitmap, or events %d older than it covers); nothing was changed. A spare added now could land in another free slot of %s (%s), so none is added: replace or heal add a blank disk to slot %d",
				q.Path, err, q.Events, q.Array, slotList(m, q.Array), q.Slot))
		}
		res.Outcome = ReAddedFull
		err = k.AddNewDisk(q.Array, q.dev)
		res.Writes = append(res.Writes, q.Fallback)
	}
	if err != nil {
		if errors.Is(err, unix.EBUSY) && len(res.Writes) == 1 {
			return res, refuse(reAddOp, q.Array, req.Device, fmt.Errorf("%w: the kernel answered EBUSY (the device is open exclusively, or its descriptor number is taken): %w; nothing was changed", ErrInUse, err))
		}
		return res, fmt.Errorf("md: re-adding %s to %s (%s): %w", q.Path, q.Array, strings.Join(res.Writes, ", then "), err)
	}
	return res, m.waitInSlot(ctx, res)
}

// slotList names the free slots of array, for a message.
func slotList(m *Manager, array string) string {
	var out []string
	for _, n := range freeSlots(m.read(array)) {
		out = append(out, fmt.Sprint(n))
	}
	if len(out) == 0 {
		return "none"
	}
	return "free slots " + strings.Join(out, ", ")
}

// waitInSlot waits until the kernel shows the device in its planned slot
// (md adds it from its own thread), for up to the verify timeout; then it
// reads sync_action.
func (m *Manager) waitInSlot(ctx context.Context, res *ReAddResult) error {
	q := res.Plan
	timeout := m.ops.verifyTimeout
	if timeout == 0 {
		timeout = defaultVerifyTimeout
	}
	deadline := time.Now().Add(timeout)
	for {
		slot, err := m.memberSlot(q.Array, q.Device)
		if err == nil && slot == q.Slot {
			break
		}
		if err == nil && slot >= 0 {
			return fmt.Errorf("md: the kernel put %s into slot %d of %s, not %d (changed: %s)", q.Device, slot, q.Array, q.Slot, strings.Join(res.Writes, ", "))
		}
		if time.Now().After(deadline) {
			why := "it has no slot"
			if err != nil {
				why = err.Error()
			}
			return fmt.Errorf("md: %s was added to %s but is not in slot %d after %v: %s (changed: %s)", q.Device, q.Array, q.Slot, timeout, why, strings.Join(res.Writes, ", "))
		}
		if err := m.sleep(ctx, 20*time.Millisecond); err != nil {
			return fmt.Errorf("%w (changed: %s)", err, strings.Join(res.Writes, ", "))
		}
	}
	if a, err := m.fs.Array(q.Array); err == nil {
		if act, err := a.SyncAction(); err == nil {
			res.SyncAction = string(act)
		}
	}
	return nil
}

// ReAddDisk issues ADD_NEW_DISK for a re-add: the descriptor number,
// slot and in-sync state of the device's superblock, as mdadm's
// attempt_re_add.
func (k sysKernel) ReAddDisk(array string, dev sysfs.DevNum, number uint32, slot int, writeMostly, failFast bool) error {
	st := ioctl.DiskActive | ioctl.DiskSync
	if writeMostly {
		st |= ioctl.DiskWriteMostly
	}
	if failFast {
		st |= ioctl.DiskFailFast
	}
	return k.withDevice(array, func(d *ioctl.Device) error {
		return d.AddNewDisk(ioctl.DiskInfo{Number: int32(number), Major: int32(dev.Major), Minor: int32(dev.Minor), RaidDisk: int32(slot), State: st})
	})
}
