package md

import (
	"bytes"
	"context"
	"errors"
	"os"
	"testing"

	qt "github.com/frankban/quicktest"
	"golang.org/x/sys/unix"
)

// TestPrimitiveRefusalsMatchErrRefused: every refusal of Fail, Remove and
// Run is a *RefusedError naming the operation, matches ErrRefused and its
// specific cause, and reaches no kernel call.
func TestPrimitiveRefusalsMatchErrRefused(t *testing.T) {
	tests := []struct {
		name    string
		fixture string
		op      string
		array   string // default: the fixture's array
		member  string
		want    error
	}{
		{name: "fail the last in-sync member", fixture: "raid1-degraded-missing", op: "fail", member: "vda", want: errWouldFail},
		{name: "fail a non-member", fixture: "raid1-v1.2", op: "fail", member: "vdq", want: errNoMember},
		{name: "fail on an inactive array", fixture: "raid5-inactive", op: "fail", member: "vda", want: errArrayInactive},
		{name: "fail in no array", fixture: "raid1-v1.2", op: "fail", array: "md9", member: "vda", want: ErrNoArray},
		{name: "remove an in-sync member", fixture: "raid1-v1.2", op: "remove", member: "vda", want: errMemberActive},
		{name: "remove a non-member", fixture: "raid1-v1.2", op: "remove", member: "vdq", want: errNoMember},
		{name: "remove from no array", fixture: "raid1-v1.2", op: "remove", array: "md9", member: "vdb", want: ErrNoArray},
		{name: "run a running array", fixture: "raid1-v1.2", op: "run", want: errArrayRunning},
		{name: "run no array", fixture: "raid1-v1.2", op: "run", array: "md9", want: ErrNoArray},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := qt.New(t)
			r := newReplaceRig(t, tt.fixture)
			array := tt.array
			if array == "" {
				array = r.name
			}
			ctx := context.Background()
			var err error
			switch tt.op {
			case "fail":
				err = r.m.Fail(ctx, array, tt.member)
			case "remove":
				err = r.m.Remove(ctx, array, tt.member)
			case "run":
				err = r.m.Run(ctx, array)
			}
			c.Check(err, qt.ErrorIs, ErrRefused)
			c.Check(err, qt.ErrorIs, tt.want)
			var re *RefusedError
			c.Assert(errors.As(err, &re), qt.IsTrue)
			c.Check(re.Op, qt.Equals, tt.op)
			c.Check(re.Member, qt.Equals, tt.member)
			c.Check(err.Error(), qt.Equals, re.Err.Error())
			c.Check(r.k.Calls(), qt.HasLen, 0)
		})
	}
}

// TestKernelBusyIsARefusal: when the kernel answers EBUSY to a fail,
// nothing changed: the error is a refusal and still matches unix.EBUSY.
// Another kernel error is a failure. (Remove's EBUSY: see
// TestPrimitivesCallKernel.)
func TestKernelBusyIsARefusal(t *testing.T) {
	c := qt.New(t)
	ctx := context.Background()
	r := newReplaceRig(t, "raid1-v1.2")
	r.k.fail = map[string]error{"SetFaulty": &os.PathError{Op: "ioctl SET_DISK_FAULTY", Path: "/dev/md0", Err: unix.EBUSY}}
	err := r.m.Fail(ctx, "md0", "vdb")
	c.Check(err, qt.ErrorIs, ErrRefused)
	c.Check(err, qt.ErrorIs, errWouldFail)
	c.Check(err, qt.ErrorIs, unix.EBUSY)

	r.k.fail = map[string]error{"SetFaulty": &os.PathError{Op: "ioctl SET_DISK_FAULTY", Path: "/dev/md0", Err: unix.EIO}}
	err = r.m.Fail(ctx, "md0", "vdb")
	c.Check(err, qt.Not(qt.ErrorIs), ErrRefused)
	c.Check(err, qt.ErrorIs, unix.EIO)

}

// TestPlanChangedIsARefusal: an executor that finds the plan changed
// (the candidate grew, so the plan would differ) refuses, matching both
// ErrPlanChanged and ErrRefused, and the disk is byte-identical.
func TestPlanChangedIsARefusal(t *testing.T) {
	c := qt.New(t)
	r, path := replaceOn(t, "raid1-degraded-missing")
	p, err := r.m.PlanReplace(context.Background(), ReplaceRequest{Array: r.name, With: path, AllowImageFile: true})
	c.Assert(err, qt.IsNil)
	c.Assert(os.Truncate(path, 128<<20), qt.IsNil)
	before := readImage(t, path)
	_, err = r.m.ExecuteReplace(context.Background(), p)
	c.Check(err, qt.ErrorIs, ErrPlanChanged)
	c.Check(err, qt.ErrorIs, ErrRefused)
	c.Check(err, qt.ErrorMatches, `md: the array or the disk changed since the plan was made: the candidate disk changed`)
	var re *RefusedError
	c.Assert(errors.As(err, &re), qt.IsTrue)
	c.Check(re.Op, qt.Equals, "replace")
	c.Check(r.k.Calls(), qt.HasLen, 0)
	c.Check(bytes.Equal(readImage(t, path), before), qt.IsTrue)
}

// TestHealRefusalsMatchErrRefused: every decision heal refuses by itself
// carries a *RefusedError (Op "heal") that keeps the cause's message; a
// skipped array is not a refusal.
func TestHealRefusalsMatchErrRefused(t *testing.T) {
	c := qt.New(t)
	mirror := recordsOf(t, mirrorHealthy())
	port1 := map[string][]string{byPathOf(1): {"vdc"}}
	for _, tt := range []struct {
		r     *Report
		rs    *Records
		ports map[string][]string
		want  error
	}{
		{report(mirrorMissing()), &Records{}, port1, errNoRecord},
		{report(mirrorMissing()), mirror, map[string][]string{}, errPortEmpty},
		{report(mirrorMissing()), mirror, map[string][]string{byPathOf(1): {"vdd", "vdc"}}, errPortAmbiguous},
		{report(withAvail(mirrorMissing(), Failed)), mirror, port1, errHealState},
		{report(mirrorRecovering(10)), mirror, port1, ErrHealDeferred},
	} {
		ds := decideHeal(tt.r, tt.rs, tt.ports, "/dev")
		c.Assert(ds, qt.HasLen, 1)
		d := ds[0]
		c.Check(d.Outcome, qt.Equals, OutcomeRefused)
		c.Check(d.Err, qt.ErrorIs, ErrRefused)
		c.Check(d.Err, qt.ErrorIs, tt.want)
		var re *RefusedError
		c.Assert(errors.As(d.Err, &re), qt.IsTrue)
		c.Check(re.Op, qt.Equals, "heal")
		c.Check(d.Reason, qt.Equals, re.Err.Error())
	}
	ds := decideHeal(report(mirrorHealthy()), mirror, port1, "/dev")
	c.Assert(ds, qt.HasLen, 1)
	c.Check(ds[0].Outcome, qt.Equals, OutcomeSkipped)
	c.Check(ds[0].Err, qt.Not(qt.ErrorIs), ErrRefused)
}
