package md

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	qt "github.com/frankban/quicktest"

	"github.com/go-mdraid/mdraid/md/mapfile"
)

// TestExecuteHoldsMapLockFromClaimToAdd: mdadm's map lock is held from
// the claim until ADD_NEW_DISK has run, so that mdadm --incremental
// (which takes it before it opens a disk to add it) cannot add the new
// spare between the close of the write and our add.
func TestExecuteHoldsMapLockFromClaimToAdd(t *testing.T) {
	c := qt.New(t)
	r, path := replaceOn(t, "raid1-failed")
	held := map[StepKind]bool{}
	r.m.ops.afterStep = func(k StepKind) error {
		l, err := mapfile.Map{Dir: r.m.mapDir}.LockWithin(0)
		switch {
		case err == nil:
			held[k] = false
			return l.Unlock()
		case errors.Is(err, mapfile.ErrLockTimeout):
			held[k] = true
			return nil
		}
		return err
	}
	_, err := r.m.Replace(context.Background(), ReplaceRequest{Array: r.name, With: path, Member: "vdb", AllowImageFile: true})
	c.Assert(err, qt.IsNil)
	c.Check(held, qt.DeepEquals, map[StepKind]bool{
		StepFreeze: false, StepClaim: true, StepRemove: true, StepWriteSuperblock: true,
		StepAdd: false, StepSetSlot: false, StepUnfreeze: false, StepVerify: false,
	})
}

// TestExecuteRefusesWhileMapLocked: a map lock that stays held (an
// assembly that does not end) is a refusal at the claim: nothing is
// written, the faulty member stays, recovery is unfrozen, and the lock's
// holder keeps it.
func TestExecuteRefusesWhileMapLocked(t *testing.T) {
	c := qt.New(t)
	r, path := replaceOn(t, "raid1-failed")
	r.m.ops.mapLockWait = 20 * time.Millisecond
	before := readImage(t, path)
	l, err := mapfile.Map{Dir: r.m.mapDir}.Lock()
	c.Assert(err, qt.IsNil)
	defer l.Unlock()
	_, err = r.m.Replace(context.Background(), ReplaceRequest{Array: r.name, With: path, Member: "vdb", AllowImageFile: true})
	c.Assert(err, qt.ErrorIs, mapfile.ErrLockTimeout)
	var ee *ExecError
	c.Assert(errors.As(err, &ee), qt.IsTrue)
	c.Check(ee.Step, qt.Equals, StepClaim)
	c.Check(ee.NothingChanged, qt.IsTrue)
	c.Check(ee.Error(), qt.Contains, "map lock")
	c.Check(ee.State, qt.Contains, "nothing was written to "+path)
	c.Check(bytes.Equal(readImage(t, path), before), qt.IsTrue, qt.Commentf("the candidate changed"))
	c.Check(r.k.Calls(), qt.DeepEquals, []string{"SetSyncAction(md0, frozen)", "SetSyncAction(md0, idle)"})
	// The holder still holds it.
	_, err = mapfile.Map{Dir: r.m.mapDir}.LockWithin(0)
	c.Check(err, qt.ErrorIs, mapfile.ErrLockTimeout)
}
