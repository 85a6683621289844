package md

import (
	"context"
	"errors"
	"os"
	"testing"

	qt "github.com/frankban/quicktest"
	"golang.org/x/sys/unix"
)

// TestWaitClean: the boot mirror written to (array_state active) with a
// kernel that marks it clean once safe_mode_delay is lowered (at the
// next notification), or never (writes keep coming).
func TestWaitClean(t *testing.T) {
	c := qt.New(t)
	errWrite := &os.PathError{Op: "write", Path: "safe_mode_delay", Err: unix.EINVAL}
	tests := []struct {
		name  string
		state string
		// kernel marks the array clean at the first wait after the delay
		// was lowered.
		kernel bool
		// fail makes the n-th SetSafeModeDelay fail (1-based; 0 none).
		fail      int
		unread    bool // safe_mode_delay cannot be read
		metadata  string
		want      CleanResult
		errMatch  string
		wantDelay string
	}{{
		name: "active turns clean", state: "active", kernel: true,
		want: CleanResult{Array: "md127", Result: CleanMade, Before: "active", After: "clean", SafeModeDelay: "0.204",
			Writes: []string{"safe_mode_delay=0.001", "safe_mode_delay=0.204"}, Superblocks: []string{"vda", "vdb"}},
		wantDelay: "0.204",
	}, {
		name: "already clean", state: "clean",
		want:      CleanResult{Array: "md127", Result: CleanAlready, Before: "clean", After: "clean", SafeModeDelay: "0.204"},
		wantDelay: "0.204",
	}, {
		name: "read-auto", state: "read-auto",
		want:      CleanResult{Array: "md127", Result: CleanAlready, Before: "read-auto", After: "read-auto", SafeModeDelay: "0.204"},
		wantDelay: "0.204",
	}, {
		name: "writes keep it active", state: "active",
		want: CleanResult{Array: "md127", Result: CleanTimedOut, Before: "active", After: "active", SafeModeDelay: "0.204",
			Writes: []string{"safe_mode_delay=0.001", "safe_mode_delay=0.204"}, Note: "writes kept it active"},
		wantDelay: "0.204",
	}, {
		name: "lowering fails", state: "active", fail: 1,
		errMatch:  "md: writing safe_mode_delay=0.001 to md127 failed: write safe_mode_delay: invalid argument; nothing changed",
		wantDelay: "0.204",
	}, {
		name: "restoring fails", state: "active", kernel: true, fail: 2,
		errMatch:  "md: safe_mode_delay of md127 was set to 0.001 \\(it was 0.204\\), and writing 0.204 back failed: write safe_mode_delay: invalid argument",
		wantDelay: "0.001",
	}, {
		name: "delay unreadable", state: "active", unread: true,
		errMatch: "md: md127: md: a fact the decision needs could not be established: could not read safe_mode_delay .*; nothing written",
	}, {
		name: "external metadata", state: "active", metadata: "external:/md126/0",
		want:      CleanResult{Array: "md127", Result: CleanSkipped, Before: "active", After: "active", SafeModeDelay: "0.204", Note: "external metadata: its monitor (mdmon) marks it clean"},
		wantDelay: "0.204",
	}}
	for _, tt := range tests {
		c.Run(tt.name, func(c *qt.C) {
			r := newWaitRig(c, "boot-mirror")
			r.set(c, "array_state", tt.state)
			if tt.metadata != "" {
				r.set(c, "metadata_version", tt.metadata)
			}
			if tt.unread {
				c.Assert(os.Remove(r.k.attr(r.name, "safe_mode_delay")), qt.IsNil)
			}
			n := 0
			r.k.onCall = func(name string) {
				if name == "SetSafeModeDelay" {
					n++
					if n == tt.fail {
						r.k.fail = map[string]error{"SetSafeModeDelay": errWrite}
					} else {
						r.k.fail = nil
					}
				}
			}
			r.step = func(int) {
				if tt.kernel && r.k.read(r.name, "safe_mode_delay") == "0.001" {
					r.set(c, "array_state", "clean")
				}
			}
			res, err := r.m.WaitClean(context.Background(), SyncWaitRequest{Arrays: []string{"md127"}})
			c.Assert(err, qt.IsNil)
			c.Assert(res, qt.HasLen, 1)
			if tt.errMatch != "" {
				c.Assert(res[0].Result, qt.Equals, CleanFailed)
				c.Assert(res[0].Err, qt.ErrorMatches, tt.errMatch)
			} else {
				c.Assert(res[0], qt.DeepEquals, tt.want)
			}
			if tt.unread {
				c.Assert(r.k.Calls(), qt.HasLen, 0)
				return
			}
			c.Assert(r.k.read(r.name, "safe_mode_delay"), qt.Equals, tt.wantDelay)
		})
	}
}

// read is an attribute of the fake kernel's array.
func (k *fakeKernel) read(array, attr string) string {
	b, _ := os.ReadFile(k.attr(array, attr))
	return trimAttr(b)
}

func TestWaitCleanNoArray(t *testing.T) {
	c := qt.New(t)
	r := newWaitRig(c, "boot-mirror")
	res, err := r.m.WaitClean(context.Background(), SyncWaitRequest{Arrays: []string{"nope"}})
	c.Assert(err, qt.IsNil)
	c.Assert(errors.Is(res[0].Err, ErrNoArray), qt.IsTrue)
}

// TestWaitCleanDryRun: the plan of an active array, nothing written.
func TestWaitCleanDryRun(t *testing.T) {
	c := qt.New(t)
	r := newWaitRig(c, "boot-mirror")
	r.set(c, "array_state", "active")
	before := r.snapshotMD(c)
	res, err := r.m.WaitClean(context.Background(), SyncWaitRequest{Scan: true, DryRun: true})
	c.Assert(err, qt.IsNil)
	c.Assert(res, qt.DeepEquals, []CleanResult{{Array: "md127", Result: CleanWouldClean, Before: "active", After: "active",
		SafeModeDelay: "0.204", Writes: []string{"safe_mode_delay=0.001", "safe_mode_delay=0.204"}}})
	c.Assert(r.k.Calls(), qt.HasLen, 0)
	c.Assert(r.snapshotMD(c), qt.DeepEquals, before)
}
