package sysfs

import (
	"fmt"
	"io/fs"
	"strconv"
)

// Writes. Each writes one attribute with one write(2) and returns the
// kernel's answer as an *fs.PathError wrapping the errno, so callers can
// test errors.Is(err, unix.EBUSY) and the like. A missing attribute fails
// with an error matching fs.ErrNotExist; nothing is ever created.

// SetSyncAction writes sync_action. While a sync runs only
// [ActionFrozen] and [ActionIdle] are accepted; the others fail with
// EBUSY. Idle stops the running sync; frozen stops it and keeps new ones
// from starting until idle is written.
func (a Array) SetSyncAction(act SyncAction) error {
	return writeAttr(a.Path("sync_action"), string(act))
}

// SetState writes array_state. Only clear, inactive, readonly,
// read-auto, clean and active are accepted (EINVAL otherwise); moving a
// busy array to clear or inactive fails with EBUSY.
func (a Array) SetState(s ArrayState) error {
	return writeAttr(a.Path("array_state"), string(s))
}

// NewDev writes new_dev, binding the block device dev to the array as a
// new member. new_dev is write-only.
func (a Array) NewDev(dev DevNum) error {
	return writeAttr(a.Path("new_dev"), dev.String())
}

// SetSyncMax writes sync_max: recovery and resync stop at this sector
// until it is raised. Quirks: on striped levels it must be a multiple of
// the chunk size in sectors (EINVAL), it must not be below sync_min
// (EINVAL), and it cannot be lowered while a sync runs (EBUSY).
func (a Array) SetSyncMax(sectors uint64) error {
	return writeAttr(a.Path("sync_max"), strconv.FormatUint(sectors, 10))
}

// ResetSyncMax writes "max" to sync_max, removing the limit.
func (a Array) ResetSyncMax() error { return writeAttr(a.Path("sync_max"), "max") }

// SetSyncMin writes sync_min: where the next check or repair starts.
// It must be a multiple of the chunk size and is refused with EBUSY while
// a sync runs.
func (a Array) SetSyncMin(sectors uint64) error {
	return writeAttr(a.Path("sync_min"), strconv.FormatUint(sectors, 10))
}

// SetSafeModeDelay writes safe_mode_delay: seconds ("0.001"), "0"
// turning safe mode off. Lowered on an active array that nothing writes,
// it has the kernel mark the array clean and write its superblocks so
// (docs/kernels.md §10).
func (a Array) SetSafeModeDelay(seconds string) error {
	return writeAttr(a.Path("safe_mode_delay"), seconds)
}

// SetBitmapLocation writes bitmap/location: "none" removes the bitmap;
// a signed offset in sectors from the superblock ("+8", "-16") loads the
// internal bitmap written there. The kernel answers EBUSY while a sync
// runs and when a bitmap is present and loc is not "none".
func (a Array) SetBitmapLocation(loc string) error {
	return writeAttr(a.Path("bitmap", "location"), loc)
}

// SetComponentSize writes component_size (KiB): the space each member
// gives the array. On a running array md resizes it (update_size): 0
// means the most every member can give; it answers EBUSY while a sync
// runs, EROFS when the array is read-only, ENOSPC when a member (spares
// and faulty members included) gives less, and EINVAL for levels it
// cannot resize.
func (a Array) SetComponentSize(kib uint64) error {
	return writeAttr(a.Path("component_size"), strconv.FormatUint(kib, 10))
}

// WriteState writes cmd to the member's state. See [MemberCommand] for
// the commands and their quirks; the kernel rejects unknown ones with
// EINVAL.
func (m Member) WriteState(cmd MemberCommand) error {
	return writeAttr(m.Path("state"), string(cmd))
}

// SetSlot writes slot. Writing a role number places a spare in that slot
// on a running array and starts nothing else ("leave that to userspace"):
// it needs the slot to be none, fails with EBUSY while any recovery runs
// (freeze first) and with ENOSPC when n is not below raid_disks. Writing
// [SlotNone] takes a failed or spare member out of its slot. [SlotJournal]
// cannot be written.
func (m Member) SetSlot(s Slot) error {
	if s == SlotJournal || s < SlotNone {
		return fmt.Errorf("sysfs: %s: cannot write slot %v: %w", m.Path("slot"), s, fs.ErrInvalid)
	}
	return writeAttr(m.Path("slot"), s.String())
}

// SetSize writes size (KiB): the space the member can give the array.
// For an active member of a running array with persistent metadata md
// records it in the member's superblock first (rdev_size_change: 0
// means as much as the device holds; 1.0 and 0.90 superblocks are
// written at the device's end), then answers EINVAL when it is less
// than the array uses and EBUSY when the metadata cannot say it (a 1.0
// or 0.90 member with an internal bitmap).
func (m Member) SetSize(kib uint64) error {
	return writeAttr(m.Path("size"), strconv.FormatUint(kib, 10))
}

// SetRecoveryStart writes recovery_start (sectors): where recovery of
// this member begins. Only accepted while the member is not active in a
// slot.
func (m Member) SetRecoveryStart(sectors uint64) error {
	return writeAttr(m.Path("recovery_start"), strconv.FormatUint(sectors, 10))
}

// NewArray asks md to create the array device name ("md127") by writing
// it to /sys/module/md_mod/parameters/new_array, as mdadm does. The
// kernel accepts "mdN" (N at most 2^20-1) and "md_NAME"; it answers
// EEXIST if the device exists and EINVAL for any other name. The new
// device has no members and reads array_state "clear" until
// SET_ARRAY_INFO; the kernel frees it on last close if nothing was set.
func (fsys FS) NewArray(name string) error {
	return writeAttr(fsys.Path("module", "md_mod", "parameters", "new_array"), name)
}

// ModuleParameter reads an md_mod module parameter ("start_ro",
// "legacy_async_del_gendisk", ...). A parameter this kernel does not
// have fails with an error matching fs.ErrNotExist.
func (fsys FS) ModuleParameter(name string) (string, error) {
	if !validName(name) {
		return "", fmt.Errorf("sysfs: module parameter %q: %w", name, fs.ErrInvalid)
	}
	return readAttr(fsys.Path("module", "md_mod", "parameters", name))
}

// SetModuleParameter writes an md_mod module parameter.
func (fsys FS) SetModuleParameter(name, val string) error {
	if !validName(name) {
		return fmt.Errorf("sysfs: module parameter %q: %w", name, fs.ErrInvalid)
	}
	return writeAttr(fsys.Path("module", "md_mod", "parameters", name), val)
}

// Uevent writes action ("change") to /sys/block/NAME/uevent, which makes
// the kernel send that uevent for the block device, so that udev runs
// its rules for it again. mdadm does this after assembling an array.
func (a Array) Uevent(action string) error {
	return writeAttr(a.blockPath("uevent"), action)
}
