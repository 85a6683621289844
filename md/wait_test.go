package md

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	qt "github.com/frankban/quicktest"
	"golang.org/x/sys/unix"

	"github.com/go-mdraid/mdraid/internal/fixture"
	"github.com/go-mdraid/mdraid/sysfs"
)

// fakeAttr is an attrWatch on a capture's attribute file: each Wait is
// one step of the simulated kernel (step), which may change files, then
// a notification; the clock advances by tick per Wait.
type fakeAttr struct {
	path string
	rig  *waitRig
}

func (f *fakeAttr) Read() (string, error) {
	if err := f.rig.readErr; err != nil {
		return "", err
	}
	b, err := os.ReadFile(f.path)
	return trimAttr(b), err
}

func (f *fakeAttr) Wait(ctx context.Context, until time.Time) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	f.rig.waits++
	next := f.rig.now.Add(f.rig.tick)
	if next.After(until) {
		next = until
	}
	f.rig.now = next
	if f.rig.step != nil {
		f.rig.step(f.rig.waits)
	}
	return true, nil
}

func (f *fakeAttr) Close() error { return nil }

// waitRig is a capture whose attribute watches are fakeAttr.
type waitRig struct {
	*replaceRig
	now     time.Time
	tick    time.Duration
	waits   int
	step    func(n int)
	readErr error
}

func newWaitRig(t testing.TB, name string) *waitRig {
	t.Helper()
	r := &waitRig{replaceRig: newReplaceRig(t, name), now: time.Date(2026, 3, 1, 1, 0, 0, 0, time.UTC), tick: time.Second}
	r.m.now = func() time.Time { return r.now }
	r.m.ops.watchAttr = func(path string) (attrWatch, error) {
		if _, err := os.Stat(path); err != nil {
			return nil, err
		}
		return &fakeAttr{path: path, rig: r}, nil
	}
	return r
}

func (r *waitRig) set(t testing.TB, attr, v string) {
	t.Helper()
	if err := r.k.set(r.k.attr(r.name, attr), v); err != nil {
		t.Fatal(err)
	}
}

func TestWait(t *testing.T) {
	c := qt.New(t)
	tests := []struct {
		name    string
		fixture string
		timeout time.Duration
		// step is the kernel: what changes at the n-th wait.
		step func(r *waitRig, n int)
		want WaitResult
	}{{
		name:    "recovery finishes",
		fixture: "raid1-recovering",
		step: func(r *waitRig, n int) {
			if n == 3 {
				r.set(t, "sync_action", "idle")
				r.set(t, "sync_completed", "none")
			}
		},
		want: WaitResult{Array: "md0", Result: WaitFinished, Waited: []sysfs.SyncAction{"recover"}},
	}, {
		name:    "a check follows the recovery",
		fixture: "raid1-recovering",
		step: func(r *waitRig, n int) {
			switch n {
			case 1:
				r.set(t, "sync_action", "check")
			case 2:
				r.set(t, "sync_action", "idle")
			}
		},
		want: WaitResult{Array: "md0", Result: WaitFinished, Waited: []sysfs.SyncAction{"recover", "check"}},
	}, {
		name:    "the brief freeze before a recovery is waited through",
		fixture: "raid1-recovering",
		step: func(r *waitRig, n int) {
			switch n {
			case 1:
				r.set(t, "sync_action", "frozen")
			case 3:
				r.set(t, "sync_action", "recover")
			case 4:
				r.set(t, "sync_action", "idle")
			}
		},
		want: WaitResult{Array: "md0", Result: WaitFinished, Waited: []sysfs.SyncAction{"recover"}},
	}, {
		name:    "timeout",
		fixture: "raid1-recovering",
		timeout: 3 * time.Second,
		want:    WaitResult{Array: "md0", Result: WaitTimedOut, Waited: []sysfs.SyncAction{"recover"}, Running: "recover", DoneSectors: 32768, TotalSectors: 129024},
	}, {
		name:    "idle",
		fixture: "raid1-v1.2",
		want:    WaitResult{Array: "md0", Result: WaitNothing},
	}, {
		name:    "frozen for good",
		fixture: "raid1-v1.2",
		step: func(r *waitRig, n int) {
			if n == 1 {
				r.set(t, "sync_action", "frozen")
			}
		},
		want: WaitResult{Array: "md0", Result: WaitFrozen, Note: "sync_action has read frozen for 15s: no sync starts until someone writes idle"},
	}, {
		name:    "raid0",
		fixture: "raid0",
		want:    WaitResult{Array: "md0", Result: WaitNothing, Note: "no redundancy (no sync_action): nothing runs"},
	}, {
		name:    "inactive",
		fixture: "raid5-inactive",
		want:    WaitResult{Array: "md127", Result: WaitNothing, Note: "inactive: nothing runs"},
	}, {
		name:    "read-auto with a pending resync",
		fixture: "raid1-read-auto",
		step:    nil,
		want:    WaitResult{Array: "md0", Result: WaitNothing, Note: "read-auto: a resync from sector 1024 is pending and starts at the first write"},
	}}
	for _, tt := range tests {
		c.Run(tt.name, func(c *qt.C) {
			r := newWaitRig(c, tt.fixture)
			if tt.name == "frozen for good" {
				r.set(c, "sync_action", "frozen")
			}
			if tt.fixture == "raid1-read-auto" {
				r.set(c, "resync_start", "1024")
			}
			if tt.step != nil {
				r.step = func(n int) { tt.step(r, n) }
			}
			before := r.snapshotMD(c)
			res, err := r.m.Wait(context.Background(), SyncWaitRequest{Arrays: []string{r.name}, Timeout: tt.timeout})
			c.Assert(err, qt.IsNil)
			c.Assert(res, qt.DeepEquals, []WaitResult{tt.want})
			c.Assert(r.k.Calls(), qt.HasLen, 0) // Wait writes nothing
			if tt.step == nil {
				c.Assert(r.snapshotMD(c), qt.DeepEquals, before)
			}
		})
	}
}

// snapshotMD returns every file under the array's md directory.
func (r *waitRig) snapshotMD(t testing.TB) map[string]string {
	return (&checkRig{replaceRig: r.replaceRig}).snapshotMD(t)
}

func TestWaitFailures(t *testing.T) {
	c := qt.New(t)
	r := newWaitRig(c, "raid1-recovering")

	res, err := r.m.Wait(context.Background(), SyncWaitRequest{Arrays: []string{"nosuch", "md0"}, Timeout: time.Second})
	c.Assert(err, qt.IsNil)
	c.Assert(res, qt.HasLen, 2)
	c.Assert(res[0].Result, qt.Equals, WaitFailed)
	c.Assert(res[0].Err, qt.ErrorIs, ErrNoArray)
	c.Assert(res[1].Result, qt.Equals, WaitTimedOut) // one bad name does not stop the other

	r.readErr = &os.PathError{Op: "read", Path: "sync_action", Err: unix.ENODEV}
	res, err = r.m.Wait(context.Background(), SyncWaitRequest{Arrays: []string{"md0"}})
	c.Assert(err, qt.IsNil)
	c.Assert(res[0].Result, qt.Equals, WaitFailed)
	c.Assert(res[0].Err, qt.ErrorIs, unix.ENODEV)
	r.readErr = nil

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err = r.m.Wait(ctx, SyncWaitRequest{Arrays: []string{"md0"}})
	c.Assert(err, qt.IsNil)
	c.Assert(res[0].Err, qt.ErrorIs, context.Canceled)

	_, err = r.m.Wait(context.Background(), SyncWaitRequest{})
	c.Assert(err, qt.ErrorMatches, "md: wait takes arrays or Scan, not both or neither")
}

func TestWaitScan(t *testing.T) {
	c := qt.New(t)
	m := fixtureManager(c, fixture.Named(c, "eight-arrays"))
	m.ops.watchAttr = func(path string) (attrWatch, error) {
		if _, err := os.Stat(path); err != nil {
			return nil, err
		}
		return &fakeAttr{path: path, rig: &waitRig{}}, nil
	}
	res, err := m.Wait(context.Background(), SyncWaitRequest{Scan: true})
	c.Assert(err, qt.IsNil)
	var got []string
	for _, r := range res {
		got = append(got, r.Array+":"+string(r.Result))
	}
	c.Assert(len(got) > 1, qt.IsTrue)
	c.Assert(strings.Join(got, " "), qt.Not(qt.Contains), "failed")
}
