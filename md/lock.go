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

// DefaultRunDir is where per-array lock files live.
const DefaultRunDir = "/run/mdraid"

// ErrLocked means another replace holds the array's lock.
var ErrLocked = errors.New("md: another replace is running on this array")

// LockedError says which lock is held, and by which process when known.
// It matches ErrLocked.
type LockedError struct {
	Path string
	PID  int // 0 when unknown
}

// Error names the lock file and its holder.
func (e *LockedError) Error() string {
	if e.PID > 0 {
		return fmt.Sprintf("%v (lock %s held by process %d)", ErrLocked, e.Path, e.PID)
	}
	return fmt.Sprintf("%v (lock %s)", ErrLocked, e.Path)
}

// Is reports whether target is ErrLocked.
func (e *LockedError) Is(target error) bool { return target == ErrLocked }

// lockArray takes the exclusive lock of the array with the given key
// (its UUID) under dir, without waiting: flock(LOCK_EX|LOCK_NB) on
// dir/replace-KEY.lock. The lock belongs to the open file, so two
// replaces in one process exclude each other too, and the kernel drops it
// when the process dies; the file is never removed, since removing a lock
// file races with the next locker. It returns the unlock function.
func lockArray(dir, key string) (func(), error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("md: lock directory: %w", err)
	}
	key = strings.Map(func(r rune) rune {
		if r == '/' || r == 0 {
			return '_'
		}
		return r
	}, key)
	path := filepath.Join(dir, "replace-"+key+".lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("md: lock: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		defer f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			le := &LockedError{Path: path}
			b := make([]byte, 32)
			if n, _ := f.ReadAt(b, 0); n > 0 {
				le.PID, _ = strconv.Atoi(strings.TrimSpace(string(b[:n])))
			}
			return nil, le
		}
		return nil, fmt.Errorf("md: lock %s: %w", path, err)
	}
	if err := f.Truncate(0); err == nil {
		f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return func() {
		unix.Flock(int(f.Fd()), unix.LOCK_UN)
		f.Close()
	}, nil
}
