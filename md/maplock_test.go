package md

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	qt "github.com/frankban/quicktest"
	"golang.org/x/sys/unix"

	"github.com/go-mdraid/mdraid/md/mapfile"
)

// mapLockHeld reports whether someone holds the rig's map lock.
func mapLockHeld(t testing.TB, r *replaceRig) bool {
	t.Helper()
	l, err := mapfile.Map{Dir: r.m.mapDir}.LockWithin(0)
	switch {
	case err == nil:
		if err := l.Unlock(); err != nil {
			t.Fatal(err)
		}
		return false
	case errors.Is(err, mapfile.ErrLockTimeout):
		return true
	}
	t.Fatal(err)
	return false
}

// TestExecuteHoldsMapLockOverWriteAndAdd: mdadm's map lock is held from
// the write until ADD_NEW_DISK has returned, so that mdadm --incremental
// (which takes it before it opens a disk to add it) cannot add the new
// spare between the close of the write and our add; and not over the
// removal, whose retries would stall every incremental assembly.
func TestExecuteHoldsMapLockOverWriteAndAdd(t *testing.T) {
	c := qt.New(t)
	r, path := replaceOn(t, "raid1-failed")
	during := map[string]bool{}
	r.k.onCall = func(name string) { during[name] = mapLockHeld(t, r) }
	after := map[StepKind]bool{}
	r.m.ops.afterStep = func(k StepKind) error {
		after[k] = mapLockHeld(t, r)
		return nil
	}
	_, err := r.m.Replace(context.Background(), ReplaceRequest{Array: r.name, With: path, Member: "vdb", AllowImageFile: true})
	c.Assert(err, qt.IsNil)
	c.Check(during, qt.DeepEquals, map[string]bool{
		"SetSyncAction": false, "ClaimDevice": false, "HotRemove": false,
		"WriteDevice": true, "AddNewDisk": true, "SetSlot": false,
	})
	c.Check(after, qt.DeepEquals, map[StepKind]bool{
		StepFreeze: false, StepClaim: false, StepRemove: false, StepWriteSuperblock: true,
		StepAdd: false, StepSetSlot: false, StepUnfreeze: false, StepVerify: false,
	})
}

// TestExecuteReleasesMapLockOnFailure: a replace that fails after taking
// the lock (the add, or the write step itself) releases it.
func TestExecuteReleasesMapLockOnFailure(t *testing.T) {
	for _, tt := range []struct {
		name  string
		setup func(r *replaceRig)
	}{
		{"add fails", func(r *replaceRig) { r.k.fail = map[string]error{"AddNewDisk": unix.EIO} }},
		{"write step fails", func(r *replaceRig) {
			r.m.ops.afterStep = func(k StepKind) error {
				if k == StepWriteSuperblock {
					return errors.New("injected")
				}
				return nil
			}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := qt.New(t)
			r, path := replaceOn(t, "raid1-failed")
			tt.setup(r)
			_, err := r.m.Replace(context.Background(), ReplaceRequest{Array: r.name, With: path, Member: "vdb", AllowImageFile: true})
			c.Assert(err, qt.IsNotNil)
			c.Check(mapLockHeld(t, r), qt.IsFalse)
		})
	}
}

// TestExecuteMapLockedStopsBeforeTheWrite: a map lock that stays held
// (an assembly that does not end) stops the replace before the write:
// nothing is written to the candidate, recovery is unfrozen, the freeze
// record removed, the message says what was changed (the faulty member
// removed) and to try again, and the lock's holder keeps it.
func TestExecuteMapLockedStopsBeforeTheWrite(t *testing.T) {
	c := qt.New(t)
	r, path := replaceOn(t, "raid1-failed")
	r.m.ops.mapLockWait = 20 * time.Millisecond
	before := readImage(t, path)
	l, err := mapfile.Map{Dir: r.m.mapDir}.Lock()
	c.Assert(err, qt.IsNil)
	defer l.Unlock()
	_, err = r.m.Replace(context.Background(), ReplaceRequest{Array: r.name, With: path, Member: "vdb", AllowImageFile: true})
	c.Assert(err, qt.ErrorIs, mapfile.ErrLockTimeout)
	c.Check(err, qt.ErrorIs, errMapLocked)
	var ee *ExecError
	c.Assert(errors.As(err, &ee), qt.IsTrue)
	c.Check(ee.Step, qt.Equals, StepWriteSuperblock)
	c.Check(ee.NothingChanged, qt.IsFalse)
	c.Check(ee.Error(), qt.Contains, "try again")
	c.Check(ee.State, qt.Contains, "nothing was written to "+path)
	c.Check(ee.State, qt.Contains, "vdb was removed from md0")
	c.Check(ee.State, qt.Contains, "Recovery was unfrozen")
	c.Check(ee.State, qt.Not(qt.Contains), "wipe")
	c.Check(bytes.Equal(readImage(t, path), before), qt.IsTrue, qt.Commentf("the candidate changed"))
	c.Check(r.k.Calls(), qt.DeepEquals, []string{"SetSyncAction(md0, frozen)", "ClaimDevice(vdz)", "HotRemove(md0, 254:16)", "SetSyncAction(md0, idle)"})
	left, err := filepath.Glob(filepath.Join(r.m.ops.runDir, "frozen-*"))
	c.Assert(err, qt.IsNil)
	c.Check(left, qt.HasLen, 0)
	c.Check(mapLockHeld(t, r), qt.IsTrue) // the holder still holds it
}
