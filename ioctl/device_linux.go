//go:build linux

package ioctl

import (
	"errors"
	"fmt"
	"math"
	"os"
	"runtime"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

func open(path string) (*Device, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	return NewDevice(f), nil
}

func (d *Device) version() (Version, error) {
	var v Version
	err := d.callPtr(opRaidVersion, unsafe.Pointer(&v))
	return v, err
}

func (d *Device) arrayInfo() (ArrayInfo, error) {
	var info ArrayInfo
	err := d.callPtr(opGetArrayInfo, unsafe.Pointer(&info))
	return info, err
}

func (d *Device) diskInfo(number int) (DiskInfo, error) {
	if number < 0 || number > math.MaxInt32 {
		return DiskInfo{}, d.pathError(opGetDiskInfo, unix.EINVAL)
	}
	// The kernel reads Number and fills in the rest.
	info := DiskInfo{Number: int32(number)}
	err := d.callPtr(opGetDiskInfo, unsafe.Pointer(&info))
	return info, err
}

func (d *Device) addNewDisk(info DiskInfo) error {
	return d.callPtr(opAddNewDisk, unsafe.Pointer(&info))
}

func (d *Device) setArrayInfo(info ArrayInfo) error {
	return d.callPtr(opSetArrayInfo, unsafe.Pointer(&info))
}

func (d *Device) hotRemoveDisk(dev uint64) error {
	return d.callDev(opHotRemoveDisk, dev)
}

func (d *Device) setDiskFaulty(dev uint64) error {
	return d.callDev(opSetDiskFaulty, dev)
}

func (d *Device) runArray() error {
	return d.callVal(opRunArray, 0)
}

func (d *Device) stopArray() error {
	return d.callVal(opStopArray, 0)
}

func (d *Device) stopArrayRO() error {
	return d.callVal(opStopArrayRO, 0)
}

func (d *Device) restartArrayRW() error {
	return d.callVal(opRestartArrayRW, 0)
}

// callDev issues o with a device number passed by value. The kernel reads
// the argument as a u32 and decodes it with new_decode_dev, whose encoding is
// the low 32 bits of unix.Mkdev; a number with higher bits set would be
// silently truncated to another device, so it is refused.
func (d *Device) callDev(o op, dev uint64) error {
	if dev > math.MaxUint32 {
		return d.pathError(o, unix.EINVAL)
	}
	return d.callVal(o, uintptr(dev))
}

// callPtr issues o with a pointer to its argument struct.
func (d *Device) callPtr(o op, p unsafe.Pointer) error {
	return d.pathError(o, ioctlPtr(d.f, o.request(), p))
}

// callVal issues o with an argument passed by value.
func (d *Device) callVal(o op, v uintptr) error {
	return d.pathError(o, ioctlVal(d.f, o.request(), v))
}

// pathError wraps a failure of o, keeping the errno visible to errors.Is.
// It returns nil if err is nil.
func (d *Device) pathError(o op, err error) error {
	if err == nil {
		return nil
	}
	return &os.PathError{Op: "ioctl " + o.String(), Path: d.path, Err: err}
}

// ioctlPtr calls ioctl(fd, req, p) on f's descriptor. It returns the
// unix.Errno of a failure, or os.ErrClosed if f is closed.
func ioctlPtr(f *os.File, req uint32, p unsafe.Pointer) error {
	return control(f, func(fd uintptr) unix.Errno {
		_, _, errno := unix.Syscall(unix.SYS_IOCTL, fd, uintptr(req), uintptr(p))
		return errno
	})
}

// ioctlVal calls ioctl(fd, req, v) on f's descriptor. It returns the
// unix.Errno of a failure, or os.ErrClosed if f is closed.
func ioctlVal(f *os.File, req uint32, v uintptr) error {
	return control(f, func(fd uintptr) unix.Errno {
		_, _, errno := unix.Syscall(unix.SYS_IOCTL, fd, uintptr(req), v)
		return errno
	})
}

// control runs call on f's descriptor, which stays open meanwhile, and
// repeats it while it fails with EINTR. md takes its array lock
// interruptibly and returns EINTR before acting, so a repeat is safe; Go's
// runtime signals make EINTR likely enough to matter.
func control(f *os.File, call func(fd uintptr) unix.Errno) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var errno unix.Errno
	err = rc.Control(func(fd uintptr) {
		for {
			errno = call(fd)
			if errno != unix.EINTR {
				return
			}
		}
	})
	if err != nil {
		// Control fails only when the file has been closed; its error is
		// internal/poll's ErrFileClosing, which does not match os.ErrClosed.
		return os.ErrClosed
	}
	if errno != 0 {
		return errno
	}
	return nil
}

func statBlockDevice(path string) (BlockDevice, error) {
	// Check the node type before opening: opening a FIFO would block.
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return BlockDevice{}, &os.PathError{Op: "stat", Path: path, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFBLK {
		return BlockDevice{}, &os.PathError{Op: "stat", Path: path, Err: ErrNotBlockDevice}
	}
	f, err := os.Open(path)
	if err != nil {
		return BlockDevice{}, err
	}
	defer f.Close()
	// The path may have been replaced since Stat; trust the open file.
	fi, err := f.Stat()
	if err != nil {
		return BlockDevice{}, err
	}
	fst, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || fst.Mode&syscall.S_IFMT != syscall.S_IFBLK {
		return BlockDevice{}, &os.PathError{Op: "stat", Path: path, Err: ErrNotBlockDevice}
	}
	// BLKGETSIZE64 always writes a u64, although its number encodes
	// sizeof(size_t).
	var size uint64
	if err := ioctlPtr(f, unix.BLKGETSIZE64, unsafe.Pointer(&size)); err != nil {
		return BlockDevice{}, &os.PathError{Op: "ioctl BLKGETSIZE64", Path: path, Err: err}
	}
	lbs, err := logicalBlockSize(f)
	if err != nil {
		return BlockDevice{}, err
	}
	rdev := uint64(fst.Rdev)
	return BlockDevice{Major: unix.Major(rdev), Minor: unix.Minor(rdev), Size: size, LogicalBlockSize: lbs}, nil
}

func logicalBlockSize(f *os.File) (int64, error) {
	// BLKSSZGET writes an int.
	var n int32
	if err := ioctlPtr(f, unix.BLKSSZGET, unsafe.Pointer(&n)); err != nil {
		return 0, &os.PathError{Op: "ioctl BLKSSZGET", Path: f.Name(), Err: err}
	}
	if n <= 0 {
		return 0, &os.PathError{Op: "ioctl BLKSSZGET", Path: f.Name(), Err: fmt.Errorf("ioctl: logical block size %d", n)}
	}
	return int64(n), nil
}

func deletePartitions(f *os.File, upTo int) ([]int, error) {
	var done []int
	for pno := 1; pno <= upTo; pno++ {
		part := new(unix.BlkpgPartition)
		part.Pno = int32(pno)
		arg := &unix.BlkpgIoctlArg{Op: unix.BLKPG_DEL_PARTITION, Datalen: int32(unsafe.Sizeof(*part)), Data: (*byte)(unsafe.Pointer(part))}
		err := ioctlPtr(f, unix.BLKPG, unsafe.Pointer(arg))
		runtime.KeepAlive(part)
		switch {
		case err == nil:
			done = append(done, pno)
		case errors.Is(err, unix.ENXIO):
		default:
			return done, &os.PathError{Op: fmt.Sprintf("ioctl BLKPG_DEL_PARTITION %d", pno), Path: f.Name(), Err: err}
		}
	}
	return done, nil
}
