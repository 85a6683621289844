package blockdev

import (
	"errors"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

func isEINVAL(err error) bool { return errors.Is(err, unix.EINVAL) }

// logicalBlockSize asks the block device for its logical block size
// (BLKSSZGET): O_DIRECT offsets and lengths must be multiples of it.
func logicalBlockSize(f *os.File) (int64, error) {
	n, err := unix.IoctlGetInt(int(f.Fd()), unix.BLKSSZGET)
	if err != nil {
		return 0, os.NewSyscallError("ioctl(BLKSSZGET)", err)
	}
	if n < 512 || n&(n-1) != 0 {
		return 0, errors.New("logical block size is not a power of two of at least 512")
	}
	return int64(n), nil
}

// preadFull reads buf at off with pread(2) until it is full, the end of
// the device or file is reached, or an error. Unlike os.File.ReadAt it
// never continues at the unaligned offset a short read at the end of a
// file leaves, which O_DIRECT refuses.
func preadFull(f *os.File, buf []byte, off int64) (int, error) {
	n := 0
	for n < len(buf) {
		m, err := unix.Pread(int(f.Fd()), buf[n:], off+int64(n))
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return n, &os.PathError{Op: "read", Path: f.Name(), Err: err}
		}
		if m == 0 {
			return n, io.EOF
		}
		n += m
		if m%512 != 0 {
			return n, io.EOF // a short read at the end of a file
		}
	}
	return n, nil
}

const oDirect = unix.O_DIRECT
