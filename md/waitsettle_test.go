package md

import (
	"context"
	"testing"
	"time"

	qt "github.com/frankban/quicktest"
)

// TestWaitReplaceSettles: md marks a rebuilt member in sync a moment
// before it lowers md/degraded; WaitReplace polls until the two agree
// (seen once in CI: TestVMReplaceConcurrent on 7.2 got "degraded" back),
// a bounded number of times.
func TestWaitReplaceSettles(t *testing.T) {
	c := qt.New(t)
	r := growRig(t, "raid1-v1.2", 0)
	degraded := r.k.attr(r.name, "degraded")
	c.Assert(r.k.set(degraded, "1"), qt.IsNil)
	polls := 0
	a, err := r.m.WaitReplace(context.Background(), WaitRequest{Array: r.name, Member: "vdb", Interval: time.Millisecond,
		Progress: func(Array) {
			polls++
			if polls == 3 {
				c.Check(r.k.set(degraded, "0"), qt.IsNil)
			}
		}})
	c.Assert(err, qt.IsNil)
	c.Check(a.Availability, qt.Equals, Online)
	c.Check(polls, qt.Equals, 4)

	// md/degraded that never agrees: WaitReplace still returns.
	c.Assert(r.k.set(degraded, "1"), qt.IsNil)
	polls = 0
	a, err = r.m.WaitReplace(context.Background(), WaitRequest{Array: r.name, Member: "vdb", Interval: time.Millisecond,
		Progress: func(Array) { polls++ }})
	c.Assert(err, qt.IsNil)
	c.Check(polls, qt.Equals, maxSettle+1)
	c.Check(a.Availability, qt.Equals, Degraded)
}
