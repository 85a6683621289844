//go:build unix

package sysfs

import (
	"io/fs"
	"syscall"
)

// readRaw opens, reads once and closes with plain system calls. os.File
// would add several fcntl and epoll_ctl calls per attribute, which doubles
// the cost of a status report that reads hundreds of attributes (and
// system calls are what is slow in a VM).
func readRaw(p string, buf []byte) (int, error) {
	var fd int
	var err error
	for {
		fd, err = syscall.Open(p, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		return 0, &fs.PathError{Op: "open", Path: p, Err: err}
	}
	defer syscall.Close(fd)
	for {
		n, err := syscall.Read(fd, buf)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return 0, &fs.PathError{Op: "read", Path: p, Err: err}
		}
		return n, nil
	}
}
