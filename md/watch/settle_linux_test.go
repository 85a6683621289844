//go:build linux

package watch

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	qt "github.com/frankban/quicktest"
)

// TestSettleRescanSeesDeferredRemoval: after a scan that a notification
// woke, the watcher looks again within settleGap, without waiting for
// another notification or the periodic rescan, and so reports a change
// the kernel finished after it notified (a member's dev-* directory goes
// only when the array's lock is released, after /proc/mdstat was
// signalled).
func TestSettleRescanSeesDeferredRemoval(t *testing.T) {
	c := qt.New(t)
	m, sys := fixtureSystem(t, "raid1-failed")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	o := (&Options{Rescan: time.Hour, Mdstat: filepath.Join(t.TempDir(), "no-mdstat"),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}).withDefaults()
	w := &watcher{m: m, o: o, refused: map[string]string{}}
	c.Assert(w.open(), qt.IsNil)
	timeouts := make(chan time.Duration, 8)
	member := filepath.Join(sys, "devices", "virtual", "block", "md0", "md", "dev-vdb")
	_, err := os.Stat(member)
	c.Assert(err, qt.IsNil)
	calls := 0
	w.wait = func(timeout time.Duration) (wakeup, bool) {
		timeouts <- timeout
		calls++
		switch calls {
		case 1:
			return wakeup{mdstat: true}, true // mdstat signalled (mdadm --remove)
		case 2:
			// Only now, with no notification of its own, the member's
			// directory goes.
			if err := os.RemoveAll(member); err != nil {
				t.Error(err)
			}
			return wakeup{}, true
		}
		<-ctx.Done()
		return wakeup{}, false
	}
	ch := make(chan Event, 64)
	go w.run(ctx, ch)
	deadline := time.After(10 * time.Second)
	for {
		select {
		case e := <-ch:
			if e.Type != MemberRemoved {
				continue
			}
			c.Check(e.Member, qt.Equals, "vdb")
			c.Check(<-timeouts, qt.Equals, time.Hour) // after the first scan
			c.Check(<-timeouts, qt.Equals, settleGap) // after the woken one
			cancel()
			for range ch {
			}
			return
		case <-deadline:
			t.Fatalf("no MemberRemoved; waits so far: %d", calls)
		}
	}
}
