package md

import (
	"context"
	"fmt"
	"testing"

	qt "github.com/frankban/quicktest"
	"golang.org/x/sys/unix"
)

// TestHealNotRetried: an attempt whose add keeps failing (ADD_NEW_DISK
// returning EINVAL, after the superblock was written) is made once, not
// on every pass, by the passes that share a HealHistory (a watcher's);
// once the array changes, it is tried again. (md/watch's
// TestHealFailureReportedOnce: its failure is reported once.)
func TestHealNotRetried(t *testing.T) {
	c := qt.New(t)
	fc := loadCase(t, "raid1-degraded-missing")
	m, sys := fixtureSystem(t, fc)
	plugDisk(t, sys, "vdc", "0000:00:11.0")
	r, err := m.Discover(context.Background())
	c.Assert(err, qt.IsNil)
	a := r.Arrays[0]
	healthy := healthyArray(2)
	healthy.Device, healthy.Path, healthy.UUID = a.Device, a.Path, a.UUID
	healthy.Metadata, healthy.Name, healthy.Homehost = a.Metadata, a.Name, a.Homehost
	rs := recordsOf(t, healthy)

	addFails := &ExecError{Array: a.Device, Step: StepAdd, Err: fmt.Errorf("ADD_NEW_DISK: %w", unix.EINVAL), State: "the superblock on vdc was written"}
	f := &fakeFiller{failing: addFails}
	var h HealHistory
	h.failed = map[healAttempt]failedAttempt{} // as Manager.Heal makes it
	for i := range 50 {
		ds := m.heal(context.Background(), r, rs, healConfig{filler: f, failed: h.failed})
		c.Assert(ds, qt.HasLen, 1)
		c.Assert(ds[0].Outcome, qt.Equals, OutcomeFailed)
		c.Assert(ds[0].Reason, qt.Contains, "not retried until the disk or the array changes")
		if i > 0 {
			c.Assert(ds[0].Err, qt.ErrorIs, ErrHealNotRetried)
		}
	}
	c.Check(f.execs, qt.Equals, 1, qt.Commentf("the add was attempted on %d passes", f.execs))

	// A single pass (mdctl heal) remembers nothing: it tries.
	m.heal(context.Background(), r, rs, healConfig{filler: f})
	c.Check(f.execs, qt.Equals, 2)

	// The array changed (here: its state): the watcher tries again.
	r2 := *r
	r2.Arrays = append([]Array(nil), r.Arrays...)
	r2.Arrays[0].State = "active"
	if r2.Arrays[0].State == a.State {
		r2.Arrays[0].State = "clean"
	}
	m.heal(context.Background(), &r2, rs, healConfig{filler: f, failed: h.failed})
	c.Check(f.execs, qt.Equals, 3)
}
