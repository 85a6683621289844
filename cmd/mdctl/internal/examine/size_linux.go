package examine

import (
	"os"

	"golang.org/x/sys/unix"
)

// blockDeviceSize asks a block device for its size (BLKGETSIZE64).
func blockDeviceSize(f *os.File) (int64, error) {
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	if fi.Mode()&os.ModeDevice == 0 {
		return 0, nil
	}
	var size uint64
	conn, err := f.SyscallConn()
	if err != nil {
		return 0, err
	}
	var ioErr error
	if err := conn.Control(func(fd uintptr) {
		size, ioErr = unix.IoctlGetUint64(int(fd), unix.BLKGETSIZE64)
	}); err != nil {
		return 0, err
	}
	if ioErr != nil {
		return 0, &os.PathError{Op: "ioctl BLKGETSIZE64", Path: f.Name(), Err: ioErr}
	}
	return int64(size), nil
}
