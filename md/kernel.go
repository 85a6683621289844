package md

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"golang.org/x/sys/unix"

	"github.com/go-mdraid/mdraid/blockdev"
	"github.com/go-mdraid/mdraid/ioctl"
	"github.com/go-mdraid/mdraid/superblock"
	"github.com/go-mdraid/mdraid/sysfs"
)

// kernel is everything replace, fail, remove, run and check change on the
// system: a handful of md ioctls and sysfs writes, and the superblock
// writes on a new member. The executor goes through it and nothing else,
// so that host tests can record the exact sequence of calls.
type kernel interface {
	// SetFaulty marks member dev of the array faulty (SET_DISK_FAULTY).
	SetFaulty(array string, dev sysfs.DevNum) error
	// HotRemove unbinds member dev (HOT_REMOVE_DISK), once.
	HotRemove(array string, dev sysfs.DevNum) error
	// AddNewDisk binds the block device dev as a new member
	// (ADD_NEW_DISK with state 0).
	AddNewDisk(array string, dev sysfs.DevNum) error
	// ReAddDisk binds dev back into its slot (ADD_NEW_DISK with the
	// descriptor number, slot and in-sync state of its superblock, and
	// its write-mostly and failfast flags); EINVAL when md will not take
	// it back as it was.
	ReAddDisk(array string, dev sysfs.DevNum, number uint32, slot int, writeMostly, failFast bool) error
	// RunArray starts an assembled, inactive array (RUN_ARRAY).
	RunArray(array string) error
	// SetArrayState writes md/array_state (read-auto starts an
	// assembled array auto-read-only, as mdadm --run does).
	SetArrayState(array string, st sysfs.ArrayState) error
	// SetSyncAction writes md/sync_action.
	SetSyncAction(array string, act sysfs.SyncAction) error
	// SetSyncMin writes md/sync_min (sectors): where the next check or
	// repair starts. EBUSY while a sync runs.
	SetSyncMin(array string, sectors uint64) error
	// SetSyncMax writes md/sync_max: the sector where syncs pause, or
	// "max" when limit is not Valid.
	SetSyncMax(array string, limit sysfs.Optional[uint64]) error
	// SetSafeModeDelay writes md/safe_mode_delay (seconds, "0.001").
	SetSafeModeDelay(array, seconds string) error
	// SetBitmapLocation writes md/bitmap/location: "none" drops the
	// bitmap, "+8" or "-16" loads the one written at that offset from
	// the superblock (sectors).
	SetBitmapLocation(array, loc string) error
	// SetComponentSize writes md/component_size (KiB).
	SetComponentSize(array string, kib uint64) error
	// SetMemberSize writes md/dev-MEMBER/size (KiB).
	SetMemberSize(array, member string, kib uint64) error
	// SetSlot writes md/dev-MEMBER/slot.
	SetSlot(array, member string, slot int) error
	// WriteState writes md/dev-MEMBER/state.
	WriteState(array, member string, cmd sysfs.MemberCommand) error
	// ClaimDevice opens the device or image at w.Path exclusively and
	// with O_DIRECT and checks through that descriptor that this is
	// still the planned device and that it is still blank. It writes
	// nothing; the claim's Write then writes the regions (each extended
	// to whole logical blocks by reading what surrounds it), syncs,
	// reads them back, compares them and closes the descriptor.
	ClaimDevice(w deviceWrite) (claimedDevice, error)
}

// claimedDevice is a candidate held open exclusively by ClaimDevice,
// checked and not yet written.
type claimedDevice interface {
	// Write writes the claim's regions and closes the device.
	Write() error
	// Close releases the device without writing; after Write it does
	// nothing.
	Close() error
}

// deviceWrite is the superblock write on a new member, with what the
// final check before it must find.
type deviceWrite struct {
	// Path is the device (or, in tests, image) to write; Dev its planned
	// device number (zero for an image).
	Path string
	Dev  sysfs.DevNum
	// Size and LBS are the size and logical block size the plan was
	// made for; MaxLBS is the array's logical block size.
	Size, LBS, MaxLBS int64
	Regions           []region
	// Own is, when resuming, the superblock area an earlier run wrote:
	// the final blank check leaves it out, and checks instead that it
	// holds what the plan resumes (checkOwnArea). It must be
	// regionArea(Regions). Nil for a fresh disk, which must be blank
	// everywhere.
	Own []span
	// Check, when set, is the final check through the writing
	// descriptor instead of the blank rule (zero-superblock: the disk
	// still holds what the plan erases, and nothing else); its errors
	// must match ErrPlanChanged.
	Check func(r io.ReaderAt, size int64) error
}

// region is bytes to write at a byte offset of a device.
type region struct {
	What string
	Off  int64
	Data []byte
}

// sysKernel is the real kernel: ioctls on the md device node under
// devRoot, attribute writes under the sysfs root.
type sysKernel struct {
	fs       sysfs.FS
	devRoot  string
	procRoot string // for /proc/mdstat (Start)
	// openFile opens the device ClaimDevice claims; nil is os.OpenFile.
	// Tests observe the flags through it.
	openFile func(name string, flag int, perm os.FileMode) (*os.File, error)
}

func (k sysKernel) withDevice(array string, f func(d *ioctl.Device) error) error {
	d, err := ioctl.Open(filepath.Join(k.devRoot, array))
	if err != nil {
		return err
	}
	defer d.Close()
	return f(d)
}

func mkdev(d sysfs.DevNum) uint64 { return unix.Mkdev(d.Major, d.Minor) }

// SetFaulty issues SET_DISK_FAULTY.
func (k sysKernel) SetFaulty(array string, dev sysfs.DevNum) error {
	return k.withDevice(array, func(d *ioctl.Device) error { return d.SetDiskFaulty(mkdev(dev)) })
}

// HotRemove issues HOT_REMOVE_DISK.
func (k sysKernel) HotRemove(array string, dev sysfs.DevNum) error {
	return k.withDevice(array, func(d *ioctl.Device) error { return d.HotRemoveDisk(mkdev(dev)) })
}

// AddNewDisk issues ADD_NEW_DISK with state 0.
func (k sysKernel) AddNewDisk(array string, dev sysfs.DevNum) error {
	return k.withDevice(array, func(d *ioctl.Device) error {
		return d.AddNewDisk(ioctl.DiskInfo{Major: int32(dev.Major), Minor: int32(dev.Minor)})
	})
}

// RunArray issues RUN_ARRAY.
func (k sysKernel) RunArray(array string) error {
	return k.withDevice(array, func(d *ioctl.Device) error { return d.RunArray() })
}

// SetArrayState writes md/array_state.
func (k sysKernel) SetArrayState(array string, st sysfs.ArrayState) error {
	a, err := k.fs.Array(array)
	if err != nil {
		return err
	}
	return a.SetState(st)
}

// SetSyncAction writes md/sync_action. A stop (frozen, or idle while a
// check or repair runs) is confirmed and written again, up to
// stopWrites times: Linux 6.1's action_store takes the array's lock
// interruptibly and, when a signal interrupts the wait, skips stopping
// the sync thread yet reports the write as done (seen in the VM suite on
// 6.1: a check that went on after frozen was written). A stop that took
// has reaped the sync thread (6.1 reaps it in action_store before the
// write returns), so sync_completed reads none after frozen, and
// sync_action no longer reads check or repair after idle.
func (k sysKernel) SetSyncAction(array string, act sysfs.SyncAction) error {
	a, err := k.fs.Array(array)
	if err != nil {
		return err
	}
	for n := 1; ; n++ {
		if err := a.SetSyncAction(act); err != nil {
			if n > 1 {
				return fmt.Errorf("md: %s: writing %s to sync_action a %s time (the kernel accepted the earlier writes, but the sync ran on): %w", array, act, ordinal(n), err)
			}
			return err
		}
		if !stopSettles(a, act) {
			return nil
		}
		if n == stopWrites {
			return fmt.Errorf("md: %s: %s written to sync_action %d times, each accepted by the kernel, and the sync still runs: %w", array, act, n, errSyncRunsOn)
		}
	}
}

// stopWrites is how many times SetSyncAction writes a stop that the
// kernel accepts without stopping the sync.
const stopWrites = 3

// errSyncRunsOn is the error of a stop the kernel accepted without
// stopping the sync.
var errSyncRunsOn = errors.New("the kernel reported the stop written but did not stop the sync (a signal interrupted it in the kernel)")

// stopSettles reports whether the sync that act should have stopped
// still runs stopWait after the write: a stop that took shows at once on
// 6.1, 6.12 and 7.2 in the VM suite, and the wait only keeps a slower
// reaping from counting as a stop not done.
func stopSettles(a sysfs.Array, act sysfs.SyncAction) bool {
	deadline := time.Now().Add(stopWait)
	for syncRunsOn(a, act) {
		if time.Now().After(deadline) {
			return true
		}
		time.Sleep(stopWait / 50)
	}
	return false
}

// stopWait is how long a stop that the kernel accepted may take to show.
const stopWait = 500 * time.Millisecond

// syncRunsOn reports whether the sync that act, just written, should
// have stopped still runs. What cannot be read counts as stopped: the
// write was accepted, and the callers read the state again.
func syncRunsOn(a sysfs.Array, act sysfs.SyncAction) bool {
	switch act {
	case sysfs.ActionFrozen:
		p, err := a.SyncCompleted()
		return err == nil && p.State != sysfs.ProgressNone
	case sysfs.ActionIdle:
		// After idle a needed resync or recovery starts again at once;
		// only a check or repair is one that idle ends.
		now, err := a.SyncAction()
		return err == nil && (now == sysfs.ActionCheck || now == sysfs.ActionRepair)
	}
	return false
}

// ordinal is "second", "third" for n = 2, 3, else "next".
func ordinal(n int) string {
	switch n {
	case 2:
		return "second"
	case 3:
		return "third"
	}
	return "next"
}

// SetSyncMin writes md/sync_min.
func (k sysKernel) SetSyncMin(array string, sectors uint64) error {
	a, err := k.fs.Array(array)
	if err != nil {
		return err
	}
	return a.SetSyncMin(sectors)
}

// SetSyncMax writes md/sync_max.
func (k sysKernel) SetSyncMax(array string, limit sysfs.Optional[uint64]) error {
	a, err := k.fs.Array(array)
	if err != nil {
		return err
	}
	if !limit.Valid {
		return a.ResetSyncMax()
	}
	return a.SetSyncMax(limit.Value)
}

// SetSafeModeDelay writes md/safe_mode_delay.
func (k sysKernel) SetSafeModeDelay(array, seconds string) error {
	a, err := k.fs.Array(array)
	if err != nil {
		return err
	}
	return a.SetSafeModeDelay(seconds)
}

// SetBitmapLocation writes md/bitmap/location.
func (k sysKernel) SetBitmapLocation(array, loc string) error {
	a, err := k.fs.Array(array)
	if err != nil {
		return err
	}
	return a.SetBitmapLocation(loc)
}

// SetComponentSize writes md/component_size.
func (k sysKernel) SetComponentSize(array string, kib uint64) error {
	a, err := k.fs.Array(array)
	if err != nil {
		return err
	}
	return a.SetComponentSize(kib)
}

// SetMemberSize writes md/dev-MEMBER/size.
func (k sysKernel) SetMemberSize(array, member string, kib uint64) error {
	m, err := k.member(array, member)
	if err != nil {
		return err
	}
	return m.SetSize(kib)
}

func (k sysKernel) member(array, member string) (sysfs.Member, error) {
	a, err := k.fs.Array(array)
	if err != nil {
		return sysfs.Member{}, err
	}
	return a.Member(member)
}

// SetSlot writes md/dev-MEMBER/slot.
func (k sysKernel) SetSlot(array, member string, slot int) error {
	m, err := k.member(array, member)
	if err != nil {
		return err
	}
	return m.SetSlot(sysfs.Slot(slot))
}

// WriteState writes md/dev-MEMBER/state.
func (k sysKernel) WriteState(array, member string, cmd sysfs.MemberCommand) error {
	m, err := k.member(array, member)
	if err != nil {
		return err
	}
	return m.WriteState(cmd)
}

// ClaimDevice opens the device read-write, exclusively (so nobody can
// claim it until the write's close, right before ADD_NEW_DISK) and with
// O_DIRECT (so that neither the check nor the read-back can be answered
// by the page cache). Through that one descriptor it checks that it is
// the planned device, of the planned size and logical block size, no
// larger than the array's, and that the disk is still blank (CheckBlank,
// leaving out w.Own): a file system made since the plan is refused, not
// overwritten. Every refusal matches ErrPlanChanged and is a
// notWrittenError. An image file that does not take O_DIRECT is opened
// without it. The claim's Write writes each region read-modify-write over
// whole logical blocks, fsyncs, reads every region back and closes.
func (k sysKernel) ClaimDevice(w deviceWrite) (claimedDevice, error) {
	f, size, align, err := k.claimChecked(w)
	if err != nil {
		if f != nil {
			f.Close()
		}
		return nil, err
	}
	return &claim{f: f, w: w, size: size, align: align}, nil
}

// claimChecked is ClaimDevice's open and checks: the descriptor, the
// device's size and the I/O alignment. On a failure the descriptor it
// returns, if any, is still open.
func (k sysKernel) claimChecked(w deviceWrite) (*os.File, int64, int64, error) {
	path := w.Path
	flags := os.O_RDWR | oDirect
	// A planned device number means a block device: O_EXCL whatever a
	// stat says, so that a path swapped between a stat and the open can
	// never be written without it. Otherwise the stat only guesses; the
	// opened descriptor decides below.
	if w.Dev != (sysfs.DevNum{}) {
		flags |= unix.O_EXCL
	} else if fi, err := os.Stat(path); err == nil && fi.Mode()&os.ModeDevice != 0 {
		flags |= unix.O_EXCL
	}
	open := k.openFile
	if open == nil {
		open = os.OpenFile
	}
	f, err := open(path, flags, 0)
	if err != nil && flags&unix.O_EXCL == 0 && oDirect != 0 && errors.Is(err, unix.EINVAL) {
		f, err = open(path, flags&^oDirect, 0) // a file system without O_DIRECT
	}
	if err != nil {
		return nil, 0, 0, &notWrittenError{err} // EBUSY: someone holds it exclusively
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return f, 0, 0, &notWrittenError{&os.PathError{Op: "fstat", Path: path, Err: err}}
	}
	block := st.Mode&unix.S_IFMT == unix.S_IFBLK
	if block && flags&unix.O_EXCL == 0 {
		return f, 0, 0, &notWrittenError{fmt.Errorf("%w: %s became a block device between its stat and its open, so it was not opened exclusively", ErrPlanChanged, path)}
	}
	if w.Dev != (sysfs.DevNum{}) {
		got := sysfs.DevNum{Major: unix.Major(uint64(st.Rdev)), Minor: unix.Minor(uint64(st.Rdev))}
		if !block || got != w.Dev {
			return f, 0, 0, &notWrittenError{fmt.Errorf("%w: %s is now device %s, the plan was made for %s", ErrPlanChanged, path, got, w.Dev)}
		}
	}
	lbs := int64(512)
	if block {
		if lbs, err = ioctl.LogicalBlockSize(f); err != nil {
			return f, 0, 0, &notWrittenError{fmt.Errorf("%w: cannot tell the logical block size of %s: %w", ErrPlanChanged, path, err)}
		}
	}
	if w.LBS > 0 && lbs != w.LBS {
		return f, 0, 0, &notWrittenError{fmt.Errorf("%w: %s now has %d-byte logical blocks, the plan was made for %d", ErrPlanChanged, path, lbs, w.LBS)}
	}
	if w.MaxLBS <= 0 || lbs > w.MaxLBS {
		return f, 0, 0, &notWrittenError{fmt.Errorf("%w: %w: %s has %d-byte logical blocks, the array %d", ErrPlanChanged, errCandidateBlockSize, path, lbs, w.MaxLBS)}
	}
	size, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		return f, 0, 0, &notWrittenError{&os.PathError{Op: "seek", Path: path, Err: err}}
	}
	if size != w.Size {
		return f, 0, 0, &notWrittenError{fmt.Errorf("%w: %s now has %d bytes, the plan was made for %d", ErrPlanChanged, path, size, w.Size)}
	}
	// O_DIRECT wants I/O in whole logical blocks of the device; an image
	// file in whole blocks of its file system, 4 KiB at most in practice.
	align := lbs
	if !block {
		align = max(lbs, 4096)
	}
	if err := recheck(alignedReader{f: f, lbs: align}, size, w); err != nil {
		return f, 0, 0, &notWrittenError{err}
	}
	return f, size, align, nil
}

// recheck is the final blank check through the writing descriptor r:
// the disk is blank outside w.Own, and w.Own holds what the plan
// resumes. Its errors match ErrPlanChanged.
func recheck(r io.ReaderAt, size int64, w deviceWrite) error {
	if w.Check != nil {
		return w.Check(r, size)
	}
	fds, err := blankFindingsMasked(r, size, w.Own)
	if err != nil {
		return fmt.Errorf("%w: the final blank check of %s could not read it: %w", ErrPlanChanged, w.Path, err)
	}
	if len(fds) > 0 {
		return fmt.Errorf("%w: %s is no longer blank: %w", ErrPlanChanged, w.Path, fds[0])
	}
	if w.Own != nil {
		if err := checkOwnArea(r, w); err != nil {
			return fmt.Errorf("%w: %s: %w", ErrPlanChanged, w.Path, err)
		}
	}
	return nil
}

// claim is a device ClaimDevice holds open, checked, not yet written.
type claim struct {
	f           *os.File
	w           deviceWrite
	size, align int64
}

// Write writes the regions through the claim's descriptor read-modify-write
// over whole logical blocks, fsyncs, reads every region back and closes
// the descriptor (the close comes last: ADD_NEW_DISK follows it at once).
// A failure before the first write is a notWrittenError; the descriptor
// is closed whatever happens.
func (c *claim) Write() (err error) {
	if c.f == nil {
		return &notWrittenError{errors.New("md: the claimed device was already released")}
	}
	defer func() {
		if cerr := c.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("closing %s: %w", c.w.Path, cerr)
		}
	}()
	// The checks again, through the same descriptor: O_EXCL keeps out
	// only other exclusive openers, and the faulty member's removal ran
	// since the claim.
	if err := recheck(alignedReader{f: c.f, lbs: c.align}, c.size, c.w); err != nil {
		return &notWrittenError{err}
	}
	w, f, size, align := c.w, c.f, c.size, c.align
	aligned := make([]region, 0, len(w.Regions))
	for i, rg := range w.Regions {
		start := rg.Off &^ (align - 1)
		end := min((rg.Off+int64(len(rg.Data))+align-1)&^(align-1), size)
		buf := alignedBuf(int(end-start), 4096)
		if err := readFull(f, buf, start); err != nil {
			err = fmt.Errorf("reading around %s: %w", rg.What, err)
			if i == 0 {
				return &notWrittenError{err}
			}
			return err
		}
		copy(buf[rg.Off-start:], rg.Data)
		if _, err := f.WriteAt(buf, start); err != nil {
			return fmt.Errorf("writing %s: %w", rg.What, err)
		}
		aligned = append(aligned, region{What: rg.What, Off: start, Data: buf})
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("syncing %s: %w", w.Path, err)
	}
	return readBack(f, aligned)
}

// Close releases the device; after Write (or Close) it does nothing.
func (c *claim) Close() error {
	if c.f == nil {
		return nil
	}
	err := c.f.Close()
	c.f = nil
	return err
}

// checkOwnArea checks, through the writing descriptor r, that the area a
// resumed write left out of the blank rule still holds what the plan
// resumes: in each 4 KiB-widened region, the bytes around the region are
// one fill byte; the superblock region decodes, checksum and all, to the
// superblock of the same member (version, set UUID, creation time,
// device UUID, descriptor number, data and superblock offsets, events 0,
// role spare) or equals the planned bytes; a bitmap region is either one
// fill byte throughout (the interrupted run never wrote it) or a bitmap
// superblock of the planned bitmap's UUID followed by exactly the planned
// bits. Anything else there (a bcache, LUKS or file system superblock
// written since the plan) is refused.
func checkOwnArea(r io.ReaderAt, w deviceWrite) error {
	if !slices.Equal(w.Own, regionArea(w.Regions)) {
		return fmt.Errorf("the area left out of the blank check (%v) is not the one written (%v)", w.Own, regionArea(w.Regions))
	}
	for i, rg := range w.Regions {
		sp := w.Own[i]
		buf := make([]byte, sp.n) // bounded by the planned region (bitmapBytes)
		if _, err := r.ReadAt(buf, sp.off); err != nil {
			return fmt.Errorf("reading the %s area: %w", rg.What, err)
		}
		lo, hi := rg.Off-sp.off, rg.Off-sp.off+int64(len(rg.Data))
		if !oneFill(buf[:lo]) || !oneFill(buf[hi:]) {
			return fmt.Errorf("the %s area at byte %d holds data outside the %s", rg.What, sp.off, rg.What)
		}
		got := buf[lo:hi]
		switch {
		case bytes.Equal(got, rg.Data):
		case i == 0:
			if err := sameSpare(got, rg.Data); err != nil {
				return fmt.Errorf("the md superblock at byte %d is no longer the one this replace resumes: %w", rg.Off, err)
			}
		case oneFill(got):
			// The interrupted run never wrote this region.
		default:
			want, _ := superblock.DecodeBitmap(rg.Data)
			bm, err := superblock.DecodeBitmap(got)
			if err != nil || want == nil || bm.UUID != want.UUID || !bytes.Equal(got[superblock.BitmapSize:], rg.Data[superblock.BitmapSize:]) {
				return fmt.Errorf("the %s at byte %d is no longer the one this replace resumes", rg.What, rg.Off)
			}
		}
	}
	return nil
}

// sameSpare reports, as an error, how the superblock in got differs from
// the planned one in want as a member: nil when got decodes (checksum
// included) to the spare superblock of the same member of the same array.
func sameSpare(got, want []byte) error {
	g, err := superblock.Decode(got)
	if err != nil {
		return err
	}
	p, err := superblock.Decode(want)
	if err != nil {
		return err
	}
	gn, pn := g.DevNumber, p.DevNumber
	if g.Version == superblock.Version090 {
		gn, pn = g.ThisDisk.Number, p.ThisDisk.Number
	}
	switch {
	case g.Version != p.Version || g.SetUUID != p.SetUUID || g.CTime != p.CTime:
		return errors.New("another array's")
	case g.DeviceUUID != p.DeviceUUID || gn != pn:
		return fmt.Errorf("another member's (dev_number %d)", gn)
	case g.Events != 0 || g.Role() != superblock.RoleSpare:
		return fmt.Errorf("events %d, role %d: no longer an unused spare's", g.Events, g.Role())
	case g.DataOffset != p.DataOffset || g.SuperOffset != p.SuperOffset:
		return errors.New("another layout's")
	}
	return nil
}

// oneFill reports whether b is one of the blank rule's fill bytes (0x00,
// 0x5a, 0xff) throughout.
func oneFill(b []byte) bool {
	if len(b) == 0 {
		return true
	}
	if b[0] != 0x00 && b[0] != 0x5a && b[0] != 0xff {
		return false
	}
	for _, c := range b {
		if c != b[0] {
			return false
		}
	}
	return true
}

// notWrittenError is a claim or write failure before anything was written
// to the device: the open (EBUSY from O_EXCL), a path that now names
// another device, the final checks (size, block size, blank rule), or the
// first read. It unwraps to the cause.
type notWrittenError struct{ err error }

func (e *notWrittenError) Error() string { return e.err.Error() }
func (e *notWrittenError) Unwrap() error { return e.err }

// nothingWritten reports whether err says the claim or write wrote nothing.
func nothingWritten(err error) bool {
	var nw *notWrittenError
	return errors.As(err, &nw)
}

// alignedReader reads any byte range through a descriptor that may be
// open with O_DIRECT: whole logical blocks into an aligned buffer.
type alignedReader struct {
	f   *os.File
	lbs int64
}

// ReadAt reads len(p) bytes at off.
func (a alignedReader) ReadAt(p []byte, off int64) (int, error) {
	start := off &^ (a.lbs - 1)
	end := (off + int64(len(p)) + a.lbs - 1) &^ (a.lbs - 1)
	buf := alignedBuf(int(end-start), 4096)
	n, err := a.f.ReadAt(buf, start)
	got := max(min(int64(n)-(off-start), int64(len(p))), 0)
	copy(p, buf[off-start:off-start+got])
	if got < int64(len(p)) {
		if err == nil {
			err = io.EOF
		}
		return int(got), err
	}
	return len(p), nil
}

// readBack compares the regions with what the device returns through f,
// which is open with O_DIRECT where the device allows it, so that the
// page cache cannot answer.
func readBack(f *os.File, regions []region) error {
	for _, r := range regions {
		got := alignedBuf(len(r.Data), 4096)
		if err := readFull(f, got, r.Off); err != nil {
			return fmt.Errorf("reading back %s: %w", r.What, err)
		}
		if !bytes.Equal(got, r.Data) {
			return fmt.Errorf("%w: %s at byte %d", errReadBack, r.What, r.Off)
		}
	}
	return nil
}

// alignedBuf returns n bytes whose start is aligned to align, as O_DIRECT
// needs (blockdev.AlignedBuf).
func alignedBuf(n, align int) []byte { return blockdev.AlignedBuf(n, align) }
