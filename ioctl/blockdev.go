package ioctl

import "errors"

// ErrNotBlockDevice is returned, inside an [*os.PathError], by
// [StatBlockDevice] when the path exists but is not a block device node.
var ErrNotBlockDevice = errors.New("ioctl: not a block device")

// BlockDevice identifies a block device node, such as a prospective or
// current md member, and gives its size.
type BlockDevice struct {
	Major uint32 // major device number
	Minor uint32 // minor device number
	Size  uint64 // size in bytes (BLKGETSIZE64)
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
