package ioctl

import (
	"errors"
	"os"
)

// ErrNotBlockDevice is returned, inside an [*os.PathError], by
// [StatBlockDevice] when the path exists but is not a block device node.
var ErrNotBlockDevice = errors.New("ioctl: not a block device")

// BlockDevice identifies a block device node, such as a prospective or
// current md member, and gives its size.
type BlockDevice struct {
	Major uint32 // major device number
	Minor uint32 // minor device number
	Size  uint64 // size in bytes (BLKGETSIZE64)
	// LogicalBlockSize is the smallest unit the device addresses, in
	// bytes (BLKSSZGET): 512, or 4096 on a 4Kn disk.
	LogicalBlockSize int64
}

// Dev returns the device number in the encoding that [Device.HotRemoveDisk]
// and [Device.SetDiskFaulty] take. It equals unix.Mkdev(b.Major, b.Minor) on
// Linux.
func (b BlockDevice) Dev() uint64 {
	return mkdev(b.Major, b.Minor)
}

// StatBlockDevice returns the device number and size of the block device
// node at path, following symbolic links such as /dev/disk/by-id/*. It opens
// the device read-only, without O_EXCL, so it works on devices that md or a
// file system holds.
//
// If path is not a block device node, the error is an [*os.PathError]
// matching [ErrNotBlockDevice]. Other failures are [*os.PathError] values
// holding the errno of stat, open or the BLKGETSIZE64 ioctl.
func StatBlockDevice(path string) (BlockDevice, error) {
	return statBlockDevice(path)
}

// LogicalBlockSize returns the logical block size, in bytes, of the block
// device open as f (BLKSSZGET). Asking the open descriptor, rather than
// sysfs, answers for the very device that descriptor reads and writes.
// Failures are [*os.PathError] values holding the ioctl's errno.
func LogicalBlockSize(f *os.File) (int64, error) {
	return logicalBlockSize(f)
}

// DeletePartitions asks the kernel to forget the partitions numbered 1 to
// upTo of the block device open as f (BLKPG_DEL_PARTITION), as mdadm does
// to a disk before it joins an array: the member's data starts with the
// array's contents, and a partition table inside them (a disk image
// written to the array) must not show up as partitions of the member. It
// changes nothing on the disk. A number with no partition is skipped. It
// returns the numbers it deleted; an error (EBUSY: a partition is in use)
// stops it, and the numbers before it stay deleted. Hold f with O_EXCL so
// that nobody claims a partition meanwhile.
func DeletePartitions(f *os.File, upTo int) ([]int, error) {
	return deletePartitions(f, upTo)
}
