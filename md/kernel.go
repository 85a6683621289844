package md

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/go-mdraid/mdraid/blockdev"
	"github.com/go-mdraid/mdraid/ioctl"
	"github.com/go-mdraid/mdraid/sysfs"
)

// kernel is everything replace, fail, remove and run change on the
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
	// RunArray starts an assembled, inactive array (RUN_ARRAY).
	RunArray(array string) error
	// SetSyncAction writes md/sync_action.
	SetSyncAction(array string, act sysfs.SyncAction) error
	// SetSlot writes md/dev-MEMBER/slot.
	SetSlot(array, member string, slot int) error
	// WriteState writes md/dev-MEMBER/state.
	WriteState(array, member string, cmd sysfs.MemberCommand) error
	// WriteDevice writes the regions to the device or image at path,
	// each extended to whole logical blocks of lbs bytes by reading what
	// surrounds it, syncs, reads the regions back and compares them.
	// Unless dev is zero, the opened device must have that number, so a
	// path re-pointed since the plan is never written.
	WriteDevice(path string, dev sysfs.DevNum, lbs int64, regions []region) error
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
	fs      sysfs.FS
	devRoot string
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

// SetSyncAction writes md/sync_action.
func (k sysKernel) SetSyncAction(array string, act sysfs.SyncAction) error {
	a, err := k.fs.Array(array)
	if err != nil {
		return err
	}
	return a.SetSyncAction(act)
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

// WriteDevice opens the device read-write and exclusively (so nobody can
// claim it during the write; the descriptor is closed before
// ADD_NEW_DISK), writes each region read-modify-write over whole logical
// blocks, fsyncs, and reads every region back, bypassing the page cache
// where the device allows O_DIRECT.
func (k sysKernel) WriteDevice(path string, dev sysfs.DevNum, lbs int64, regions []region) error {
	flags := os.O_RDWR
	if fi, err := os.Stat(path); err == nil && fi.Mode()&os.ModeDevice != 0 {
		flags |= unix.O_EXCL
	}
	f, err := os.OpenFile(path, flags, 0)
	if err != nil {
		return &notWrittenError{err} // EBUSY: someone holds it exclusively
	}
	defer f.Close()
	if dev != (sysfs.DevNum{}) {
		var st unix.Stat_t
		if err := unix.Fstat(int(f.Fd()), &st); err != nil {
			return &notWrittenError{&os.PathError{Op: "fstat", Path: path, Err: err}}
		}
		got := sysfs.DevNum{Major: unix.Major(uint64(st.Rdev)), Minor: unix.Minor(uint64(st.Rdev))}
		if st.Mode&unix.S_IFMT != unix.S_IFBLK || got != dev {
			return &notWrittenError{fmt.Errorf("%w: %s is now device %s, the plan was made for %s", ErrPlanChanged, path, got, dev)}
		}
	}
	if lbs <= 0 {
		lbs = 512
	}
	aligned := make([]region, 0, len(regions))
	for i, r := range regions {
		start := r.Off &^ (lbs - 1)
		end := (r.Off + int64(len(r.Data)) + lbs - 1) &^ (lbs - 1)
		buf := make([]byte, end-start)
		if err := readFull(f, buf, start); err != nil {
			err = fmt.Errorf("reading around %s: %w", r.What, err)
			if i == 0 {
				return &notWrittenError{err}
			}
			return err
		}
		copy(buf[r.Off-start:], r.Data)
		if _, err := f.WriteAt(buf, start); err != nil {
			return fmt.Errorf("writing %s: %w", r.What, err)
		}
		aligned = append(aligned, region{What: r.What, Off: start, Data: buf})
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("syncing %s: %w", path, err)
	}
	return readBack(path, f, aligned)
}

// notWrittenError is a WriteDevice failure before anything was written
// to the device: the open (EBUSY from O_EXCL), a path that now names
// another device, or the first read. It unwraps to the cause.
type notWrittenError struct{ err error }

func (e *notWrittenError) Error() string { return e.err.Error() }
func (e *notWrittenError) Unwrap() error { return e.err }

// nothingWritten reports whether err says WriteDevice wrote nothing.
func nothingWritten(err error) bool {
	var nw *notWrittenError
	return errors.As(err, &nw)
}

// readBack compares the regions with what the device returns, read with
// O_DIRECT when possible so that the page cache cannot answer.
func readBack(path string, f *os.File, regions []region) error {
	var rd interface {
		ReadAt([]byte, int64) (int, error)
	} = f
	if df, err := os.OpenFile(path, os.O_RDONLY|oDirect, 0); err == nil {
		defer df.Close()
		rd = df
	}
	for _, r := range regions {
		got := alignedBuf(len(r.Data), 4096)
		err := readFull(rd, got, r.Off)
		if err != nil && rd != f && errors.Is(err, unix.EINVAL) {
			err = readFull(f, got, r.Off) // O_DIRECT refused this alignment
		}
		if err != nil {
			return fmt.Errorf("reading back %s: %w", r.What, err)
		}
		if !bytes.Equal(got, r.Data) {
			return fmt.Errorf("%w: %s at byte %d", ErrReadBack, r.What, r.Off)
		}
	}
	return nil
}

// alignedBuf returns n bytes whose start is aligned to align, as O_DIRECT
// needs (blockdev.AlignedBuf).
func alignedBuf(n, align int) []byte { return blockdev.AlignedBuf(n, align) }
