package md

import (
	"context"
	"errors"
	"io/fs"
	"time"

	"golang.org/x/sys/unix"
)

// pollAttr is an attrWatch on a real sysfs attribute: a raw descriptor
// polled for POLLPRI (Go's netpoller waits only for readability), and an
// eventfd that a cancelled context writes to end the poll.
type pollAttr struct {
	path string
	fd   int
	buf  []byte
}

func openPollAttr(path string) (attrWatch, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	return &pollAttr{path: path, fd: fd, buf: make([]byte, 4096)}, nil
}

// Read reads the attribute from offset 0, which arms it.
func (p *pollAttr) Read() (string, error) {
	for {
		n, err := unix.Pread(p.fd, p.buf, 0)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return "", &fs.PathError{Op: "read", Path: p.path, Err: err}
		}
		return trimAttr(p.buf[:n]), nil
	}
}

// Wait polls the attribute for POLLPRI until until or ctx is done.
func (p *pollAttr) Wait(ctx context.Context, until time.Time) (bool, error) {
	efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return false, &fs.PathError{Op: "eventfd", Path: p.path, Err: err}
	}
	defer unix.Close(efd)
	stop := context.AfterFunc(ctx, func() {
		unix.Write(efd, []byte{1, 0, 0, 0, 0, 0, 0, 0})
	})
	defer stop()
	for {
		if err := ctx.Err(); err != nil {
			return false, err
		}
		left := time.Until(until)
		if left <= 0 {
			return false, nil
		}
		// Rounded up: woken a little early, the caller would poll again.
		ms := int(min((left+time.Millisecond-1)/time.Millisecond, 1<<30))
		fds := []unix.PollFd{{Fd: int32(p.fd), Events: unix.POLLPRI}, {Fd: int32(efd), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, ms)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return false, &fs.PathError{Op: "poll", Path: p.path, Err: err}
		}
		if n == 0 {
			continue // the deadline check above ends it
		}
		if fds[1].Revents != 0 {
			return false, ctx.Err()
		}
		if fds[0].Revents&(unix.POLLPRI|unix.POLLERR) != 0 {
			return true, nil
		}
		if fds[0].Revents&(unix.POLLNVAL|unix.POLLHUP) != 0 {
			return false, &fs.PathError{Op: "poll", Path: p.path, Err: unix.ENODEV}
		}
	}
}

// Close closes the descriptor.
func (p *pollAttr) Close() error { return unix.Close(p.fd) }
