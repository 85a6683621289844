package blockdev

import (
	"errors"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

func isEINVAL(err error) bool { return errors.Is(err, unix.EINVAL) }

const oDirect = unix.O_DIRECT

// rawFile is a descriptor read with pread(2), without os.File's poller
// set-up.
type rawFile struct{ fd int }

// openRaw opens path read-only (close-on-exec) with the extra flags. The
// error is an *os.PathError, so it matches fs.ErrNotExist and
// fs.ErrPermission.
func openRaw(path string, flags int) (rawFile, error) {
	for {
		fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC|flags, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return rawFile{fd: -1}, &os.PathError{Op: "open", Path: path, Err: err}
		}
		return rawFile{fd: fd}, nil
	}
}

// stat reports whether the descriptor is a block device, and a regular
// file's size. Anything else (a directory, a character device) is an
// error: it is nothing to read a superblock from.
func (f rawFile) stat() (dev bool, size int64, err error) {
	var st unix.Stat_t
	if err := unix.Fstat(f.fd, &st); err != nil {
		return false, 0, err
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFBLK:
		return true, 0, nil
	case unix.S_IFREG:
		return false, st.Size, nil
	}
	return false, 0, errors.New("neither a block device nor a regular file")
}

// logicalBlockSize asks the block device for its logical block size
// (BLKSSZGET): O_DIRECT offsets and lengths must be multiples of it.
func (f rawFile) logicalBlockSize() (int64, error) {
	n, err := unix.IoctlGetInt(f.fd, unix.BLKSSZGET)
	if err != nil {
		return 0, os.NewSyscallError("ioctl(BLKSSZGET)", err)
	}
	if n < 512 || n&(n-1) != 0 {
		return 0, errors.New("logical block size is not a power of two of at least 512")
	}
	return int64(n), nil
}

// pread reads buf at off with pread(2) until it is full, the end of the
// device or file is reached, or an error. On a descriptor opened with
// O_DIRECT (direct), a read that comes back short by other than whole
// sectors is the end of an image file.
func (f rawFile) pread(name string, buf []byte, off int64, direct bool) (int, error) {
	n := 0
	for n < len(buf) {
		m, err := unix.Pread(f.fd, buf[n:], off+int64(n))
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return n, &os.PathError{Op: "read", Path: name, Err: err}
		}
		if m == 0 {
			return n, io.EOF
		}
		n += m
		if direct && m%512 != 0 {
			return n, io.EOF // a short read at the end of a file
		}
	}
	return n, nil
}

// seekEnd returns the size of a device or file by seeking to its end.
func (f rawFile) seekEnd() (int64, error) { return unix.Seek(f.fd, 0, io.SeekEnd) }

func (f rawFile) close() error { return unix.Close(f.fd) }
