package md

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	qt "github.com/frankban/quicktest"
	"github.com/go-mdraid/mdraid/sysfs"
	"golang.org/x/sys/unix"
)

// TestLockRefusesUnsafeRunDir: a run directory someone else could write
// to, or a lock file someone planted, is refused and nothing is written
// through it.
func TestLockRefusesUnsafeRunDir(t *testing.T) {
	const key = "6a1c2f9e-0b7d-4c36-9d0e-51f2a3b4c5d6"
	lockName := "replace-" + key + ".lock"
	precious := func(t *testing.T) string {
		p := filepath.Join(t.TempDir(), "precious")
		qt.Assert(t, os.WriteFile(p, []byte("precious data\n"), 0o644), qt.IsNil)
		return p
	}
	for _, tt := range []struct {
		name  string
		setup func(t *testing.T, dir, victim string)
		uid   int // 0: our euid
	}{
		{name: "world-writable directory", setup: func(t *testing.T, dir, _ string) {
			qt.Assert(t, os.Chmod(dir, 0o777), qt.IsNil)
		}},
		{name: "group-writable directory", setup: func(t *testing.T, dir, _ string) {
			qt.Assert(t, os.Chmod(dir, 0o775), qt.IsNil)
		}},
		{name: "directory owned by another user", uid: os.Geteuid() + 1},
		{name: "planted symlink", setup: func(t *testing.T, dir, victim string) {
			qt.Assert(t, os.Symlink(victim, filepath.Join(dir, lockName)), qt.IsNil)
		}},
		{name: "planted hard link", setup: func(t *testing.T, dir, victim string) {
			qt.Assert(t, os.Link(victim, filepath.Join(dir, lockName)), qt.IsNil)
		}},
		{name: "planted fifo", setup: func(t *testing.T, dir, _ string) {
			qt.Assert(t, unix.Mkfifo(filepath.Join(dir, lockName), 0o644), qt.IsNil)
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := qt.New(t)
			dir := filepath.Join(t.TempDir(), "run")
			c.Assert(os.Mkdir(dir, 0o755), qt.IsNil)
			victim := precious(t)
			if tt.setup != nil {
				tt.setup(t, dir, victim)
			}
			uid := os.Geteuid()
			if tt.uid != 0 {
				uid = tt.uid
			}
			unlock, err := lockArrayAs(dir, key, uid)
			if err == nil {
				unlock()
			}
			c.Check(err, qt.ErrorIs, errUnsafeRunDir)
			c.Check(err, qt.ErrorIs, ErrRefused) // nothing was written
			b, err := os.ReadFile(victim)
			c.Assert(err, qt.IsNil)
			c.Check(string(b), qt.Equals, "precious data\n")
		})
	}
}

// TestLockFile: a lock is created, held, and reports its holder; taking
// it again after an unlock reuses the file.
func TestLockFile(t *testing.T) {
	c := qt.New(t)
	dir := filepath.Join(t.TempDir(), "run", "mdraid") // created
	unlock, err := lockArray(dir, "k")
	c.Assert(err, qt.IsNil)
	_, err = lockArray(dir, "k")
	var le *lockedError
	c.Assert(err, qt.ErrorAs, &le)
	c.Check(le.PID, qt.Equals, os.Getpid())
	unlock()
	unlock, err = lockArray(dir, "k")
	c.Assert(err, qt.IsNil)
	unlock()
}

// TestExecuteReplaceLocksTheDisk: two replaces into different arrays must
// not share a disk, so the executor also locks the candidate's device
// number.
func TestExecuteReplaceLocksTheDisk(t *testing.T) {
	c := qt.New(t)
	r, path := replaceOn(t, "raid1-degraded-missing")
	p, err := r.m.PlanReplace(context.Background(), ReplaceRequest{Array: r.name, With: path, AllowImageFile: true})
	c.Assert(err, qt.IsNil)
	p.candDev = sysfs.DevNum{Major: 254, Minor: 99} // as for a block device
	unlock, err := lockArray(r.m.ops.runDir, "disk-254:99")
	c.Assert(err, qt.IsNil)
	defer unlock()
	_, err = r.m.ExecuteReplace(context.Background(), p)
	c.Check(err, qt.ErrorIs, errLocked)
	c.Check(r.k.Calls(), qt.HasLen, 0)
}
