package watch

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	qt "github.com/frankban/quicktest"
)

// TestLastResort: the raid5 capture assembled one member short (3 of 4,
// inactive) is started at the pass that finds it inactive for
// Options.LastResort since it was first seen so, not before; two short,
// it is refused once, never started, and nothing is written.
func TestLastResort(t *testing.T) {
	c := qt.New(t)
	for _, tt := range []struct {
		name   string
		drop   string // a member to take out of the capture
		want   []string
		reason string
		state  string
	}{{
		name:   "one short",
		want:   []string{"LastResortStarted md127"},
		reason: "inactive for 30s: started with the members it has (array_state=read-auto)",
		state:  "read-auto", // written over "inactive\n" in place
	}, {
		name:   "two short",
		drop:   "vda",
		want:   []string{"LastResortRefused md127"},
		reason: "md: not enough members to start the array: md127 (raid5) has 2 of 4 slots",
		state:  "inactive\n",
	}} {
		c.Run(tt.name, func(c *qt.C) {
			ctx := context.Background()
			m, sys := fixtureSystem(c, "raid5-inactive")
			dir, err := filepath.EvalSymlinks(filepath.Join(sys, "block", "md127", "md"))
			c.Assert(err, qt.IsNil)
			if tt.drop != "" {
				c.Assert(os.RemoveAll(filepath.Join(dir, "dev-"+tt.drop)), qt.IsNil)
			}
			now := t0
			w := &watcher{m: m, o: (&Options{LastResort: 30 * time.Second}).withDefaults(), clock: func() time.Time { return now }}
			pass := func() []Event {
				r, err := m.Discover(ctx)
				c.Assert(err, qt.IsNil)
				return w.lastResortPass(ctx, r)
			}
			c.Assert(brief(pass()), qt.DeepEquals, []string{})
			at, ok := w.lastResortDue()
			c.Assert(ok, qt.IsTrue)
			c.Assert(at, qt.Equals, t0.Add(30*time.Second))
			now = now.Add(29 * time.Second)
			c.Assert(brief(pass()), qt.DeepEquals, []string{})
			now = now.Add(time.Second)
			evs := pass()
			c.Assert(brief(evs), qt.DeepEquals, tt.want)
			c.Check(evs[0].Reason, qt.Equals, tt.reason)
			b, err := os.ReadFile(filepath.Join(dir, "array_state"))
			c.Assert(err, qt.IsNil)
			c.Check(string(b), qt.Equals, tt.state)
			if tt.drop == "" {
				return
			}
			// Refused: not again for the same reason, and no timer of
			// its own.
			_, ok = w.lastResortDue()
			c.Check(ok, qt.IsFalse)
			now = now.Add(time.Hour)
			c.Check(brief(pass()), qt.DeepEquals, []string{})
		})
	}
}

// TestLastResortOff: without the option nothing is tracked or started.
func TestLastResortOff(t *testing.T) {
	c := qt.New(t)
	m, sys := fixtureSystem(c, "raid5-inactive")
	w := &watcher{m: m, o: (&Options{}).withDefaults()}
	r, err := m.Discover(context.Background())
	c.Assert(err, qt.IsNil)
	c.Check(w.lastResortPass(context.Background(), r), qt.HasLen, 0)
	_, ok := w.lastResortDue()
	c.Check(ok, qt.IsFalse)
	b, err := os.ReadFile(filepath.Join(sys, "block", "md127", "md", "array_state"))
	c.Assert(err, qt.IsNil)
	c.Check(strings.TrimSpace(string(b)), qt.Equals, "inactive")
}
