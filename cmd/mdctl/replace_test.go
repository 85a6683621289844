package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	qt "github.com/frankban/quicktest"
	"golang.org/x/sys/unix"

	"github.com/go-mdraid/mdraid/internal/fixture"
	"github.com/go-mdraid/mdraid/md"
)

// materialize rebuilds a capture and returns the global flags for it.
func materialize(t *testing.T, name string) (flags []string, dev string) {
	t.Helper()
	sys, dev := fixture.Named(t, name).System(t)
	return []string{"--sysfs", sys, "--dev", dev}, dev
}

func TestReplaceCLIRefusals(t *testing.T) {
	tests := []struct {
		name    string
		fixture string
		args    []string
		out     []string // substrings of stdout
		errOut  string   // substring of stderr
	}{
		{name: "image file is no block device", fixture: "raid1-failed", args: []string{"replace", "md0", "--with", "@/vdz", "--member", "vdb", "--dry-run"},
			out:    []string{"Replace in md0 (raid1, metadata 1.2, 2 slots", "[pass] array running", "[pass] old member: vdb is faulty and will be removed", "[pass] target slot: slot 1", "[fail] candidate is a block device"},
			errOut: "is not a block device (nothing was written)"},
		{name: "healthy array", fixture: "raid1-v1.2", args: []string{"replace", "md0", "--with", "@/vdz"},
			out:    []string{"[fail] target slot: all 2 slots hold healthy members"},
			errOut: "the disk would only become a spare"},
		{name: "slot out of range", fixture: "raid5-degraded", args: []string{"replace", "md0", "--with", "@/vdz", "--slot", "9"},
			out: []string{"[fail] target slot: slot 9 is out of range"}},
		{name: "negative slot is not ignored", fixture: "raid5-degraded", args: []string{"replace", "md0", "--with", "@/vdz", "--slot=-1"},
			out: []string{"[fail] target slot: slot -1 is out of range"}},
		{name: "inactive", fixture: "raid5-inactive", args: []string{"replace", "md127", "--with", "@/vdz"},
			out: []string{"[fail] array running"}},
		{name: "hot without member", fixture: "raid1-v1.2", args: []string{"replace", "md0", "--with", "@/vdz", "--hot"},
			out: []string{"Hot replace in md0", "[fail] old member: a hot replace needs the member"}},
		{name: "fail the last copy", fixture: "raid1-degraded-missing", args: []string{"fail", "md0", "vda"},
			errOut: "refusing: would fail the array"},
		{name: "remove an active member", fixture: "raid1-v1.2", args: []string{"remove", "md0", "@/vda"},
			errOut: "fail it first"},
		{name: "run a running array", fixture: "raid1-v1.2", args: []string{"run", "md0"},
			errOut: "already running"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := qt.New(t)
			flags, dev := materialize(t, tt.fixture)
			c.Assert(os.WriteFile(filepath.Join(dev, "vdz"), make([]byte, 1<<20), 0o644), qt.IsNil)
			args := append([]string(nil), flags...)
			for _, a := range tt.args {
				if len(a) > 1 && a[0] == '@' {
					a = dev + a[1:]
				}
				args = append(args, a)
			}
			args = append(args, "--run-dir", t.TempDir())
			if tt.args[0] != "replace" {
				args = args[:len(args)-2]
			}
			code, stdout, stderr := runCLI(t, args...)
			c.Check(code, qt.Equals, exitRefused, qt.Commentf("stdout:\n%s\nstderr:\n%s", stdout, stderr))
			for _, s := range tt.out {
				c.Check(stdout, qt.Contains, s)
			}
			c.Check(stderr, qt.Contains, tt.errOut)
		})
	}
}

// TestReplaceErrorExitCodes (issue 10 item 8): an execution error exits
// 2 only when nothing stays changed, whatever its cause (ErrPlanChanged
// after the remove step ran is exit 3), and the message is the library's,
// without a "(nothing was written)" it cannot know.
func TestReplaceErrorExitCodes(t *testing.T) {
	c := qt.New(t)
	changed := &md.ExecError{Array: "md0", Step: md.StepAdd, Done: []md.StepKind{md.StepFreeze, md.StepWriteSuperblock, md.StepRemove},
		State: "/dev/vdz carries a spare superblock of md0 (dev_number 2) but was not added. vdb was removed from md0. Run the same replace again to resume. Recovery was unfrozen.", Err: fmt.Errorf("%w: moved", md.ErrPlanChanged)}
	var xe *exitError
	c.Assert(errors.As(replaceError(changed), &xe), qt.IsTrue)
	c.Check(xe.code, qt.Equals, exitPartial)
	c.Check(xe.msg, qt.Not(qt.Contains), "(nothing was written)")

	nothing := &md.ExecError{Array: "md0", Step: md.StepWriteSuperblock, Done: []md.StepKind{md.StepFreeze},
		State: "nothing was written to /dev/vdz. Nothing else was changed. Recovery was unfrozen.", NothingChanged: true, Err: unix.EBUSY}
	c.Assert(errors.As(replaceError(nothing), &xe), qt.IsTrue)
	c.Check(xe.code, qt.Equals, exitRefused)
	c.Check(xe.msg, qt.Not(qt.Contains), "(nothing was written)")

	changedSince := &md.RefusedError{Op: "replace", Array: "md0", Err: fmt.Errorf("%w: slot", md.ErrPlanChanged)}
	c.Assert(errors.As(replaceError(changedSince), &xe), qt.IsTrue)
	c.Check(xe.code, qt.Equals, exitRefused)
}
