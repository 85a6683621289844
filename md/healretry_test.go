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
// on every pass, and its failure is reported once; once the array
// changes, it is tried again.
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
	w := &watcher{m: m, o: (&WatchOptions{Heal: true}).withDefaults(), refused: map[string]string{}, failed: map[healAttempt]failedAttempt{}}
	var events []Event
	for range 50 {
		ds := m.heal(context.Background(), r, rs, healConfig{filler: f, failed: w.failed})
		c.Assert(ds, qt.HasLen, 1)
		c.Assert(ds[0].Outcome, qt.Equals, OutcomeFailed)
		c.Assert(ds[0].Reason, qt.Contains, "not retried until the disk or the array changes")
		events = append(events, w.report(r, ds)...)
	}
	c.Check(f.execs, qt.Equals, 1, qt.Commentf("the add was attempted on %d passes", f.execs))
	c.Assert(events, qt.HasLen, 1)
	c.Check(events[0].Type, qt.Equals, HealFailed)

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
	m.heal(context.Background(), &r2, rs, healConfig{filler: f, failed: w.failed})
	c.Check(f.execs, qt.Equals, 3)
}
