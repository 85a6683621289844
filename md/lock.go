package md

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// defaultRunDir is where per-array lock files live.
const defaultRunDir = "/run/mdraid"

// errLocked means another replace holds the array's lock.
var errLocked = errors.New("md: another replace is running on this array")

// lockedError says which lock is held, and by which process when known.
// It matches errLocked.
type lockedError struct {
	Path string
	PID  int // 0 when unknown
}

// Error names the lock file and its holder.
func (e *lockedError) Error() string {
	if e.PID > 0 {
		return fmt.Sprintf("%v (lock %s held by process %d)", errLocked, e.Path, e.PID)
	}
	return fmt.Sprintf("%v (lock %s)", errLocked, e.Path)
}

// Is reports whether target is errLocked or ErrRefused: nothing was
// written when the lock is held.
func (e *lockedError) Is(target error) bool { return target == errLocked || target == ErrRefused }

// errUnsafeRunDir is matched by the error for a run directory, or a lock
// file in it, that someone other than us could have planted: lock files
// are opened by root at predictable names, so a directory another user
// can write to would let them point root at any file.
var errUnsafeRunDir = errors.New("md: unsafe run directory")

// unsafeRunDir is the error for an unsafe run directory or lock file: it
// matches errUnsafeRunDir and, since nothing was written, ErrRefused.
type unsafeRunDir struct{ msg string }

func (e *unsafeRunDir) Error() string { return errUnsafeRunDir.Error() + ": " + e.msg }

func (e *unsafeRunDir) Is(target error) bool {
	return target == errUnsafeRunDir || target == ErrRefused
}

func unsafeDir(format string, args ...any) error {
	return &unsafeRunDir{msg: fmt.Sprintf(format, args...)}
}

// lockArray takes the exclusive lock of the array with the given key
// (its UUID) under dir, without waiting: flock(LOCK_EX|LOCK_NB) on
// dir/replace-KEY.lock. The lock belongs to the open file, so two
// replaces in one process exclude each other too, and the kernel drops it
// when the process dies; the file is never removed, since removing a lock
// file races with the next locker. It returns the unlock function.
//
// dir must be owned by the effective user (root, in production) and not
// writable by group or others; see lockArrayAs.
func lockArray(dir, key string) (func(), error) { return lockArrayAs(dir, key, os.Geteuid()) }

// lockArrayAs is lockArray for a process whose files belong to uid (the
// seam for tests, which cannot make files owned by another user). It
// refuses, with an error matching errUnsafeRunDir and without writing
// anything:
//   - a run directory not owned by uid, or writable by group or others;
//   - a lock file that is a symbolic link (it is opened with O_NOFOLLOW,
//     relative to the directory already checked), not a regular file,
//     not owned by uid, or with more than one link.
//
// A lock file it creates (O_EXCL) gets the PID; an existing one, left by
// an earlier run and checked as above, has its PID overwritten in place
// and is never truncated.
func lockArrayAs(dir, key string, uid int) (func(), error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("md: lock directory: %w", err)
	}
	dfd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("md: lock directory %s: %w", dir, err)
	}
	defer unix.Close(dfd)
	var st unix.Stat_t
	if err := unix.Fstat(dfd, &st); err != nil {
		return nil, fmt.Errorf("md: lock directory %s: %w", dir, err)
	}
	switch {
	case int(st.Uid) != uid:
		return nil, unsafeDir("%s is owned by uid %d, not %d", dir, st.Uid, uid)
	case st.Mode&0o022 != 0:
		return nil, unsafeDir("%s is writable by group or others (mode %#o)", dir, st.Mode&0o7777)
	}
	key = strings.Map(func(r rune) rune {
		if r == '/' || r == 0 {
			return '_'
		}
		return r
	}, key)
	name := "replace-" + key + ".lock"
	path := filepath.Join(dir, name)
	const flags = unix.O_RDWR | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_CLOEXEC
	created := true
	fd, err := unix.Openat(dfd, name, flags|unix.O_CREAT|unix.O_EXCL, 0o644)
	if errors.Is(err, unix.EEXIST) {
		created = false
		fd, err = unix.Openat(dfd, name, flags, 0)
	}
	if errors.Is(err, unix.ELOOP) {
		return nil, unsafeDir("lock %s is a symbolic link", path)
	}
	if err != nil {
		return nil, fmt.Errorf("md: lock: %w", &os.PathError{Op: "open", Path: path, Err: err})
	}
	f := os.NewFile(uintptr(fd), path)
	if !created {
		if err := unix.Fstat(fd, &st); err != nil {
			f.Close()
			return nil, fmt.Errorf("md: lock %s: %w", path, err)
		}
		var why string
		switch {
		case st.Mode&unix.S_IFMT != unix.S_IFREG:
			why = "is not a regular file"
		case int(st.Uid) != uid:
			why = fmt.Sprintf("is owned by uid %d, not %d", st.Uid, uid)
		case st.Nlink != 1:
			why = fmt.Sprintf("has %d links", st.Nlink)
		}
		if why != "" {
			f.Close()
			return nil, unsafeDir("lock %s %s", path, why)
		}
	}
	if err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		defer f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			le := &lockedError{Path: path}
			b := make([]byte, 32)
			if n, _ := f.ReadAt(b, 0); n > 0 {
				le.PID, _ = strconv.Atoi(strings.TrimSpace(string(b[:n])))
			}
			return nil, le
		}
		return nil, fmt.Errorf("md: lock %s: %w", path, err)
	}
	// The PID, padded to a fixed width so that overwriting an older one
	// in place leaves no digits of it behind (the reader trims spaces).
	f.WriteAt([]byte(fmt.Sprintf("%-20d\n", os.Getpid())), 0)
	return func() {
		unix.Flock(fd, unix.LOCK_UN)
		f.Close()
	}, nil
}
