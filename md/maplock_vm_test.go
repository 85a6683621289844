//go:build vmtest

package md

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	qt "github.com/frankban/quicktest"

	"github.com/go-mdraid/mdraid/internal/vmtest/guest"
)

// TestVMReplaceHoldsOffIncremental: udev runs mdadm --incremental on the
// new spare when the replace closes it after the write. That mdadm,
// started right then, must wait for mdadm's map lock until the replace
// has added the disk itself, and then find it taken: the replace ends as
// planned, and mdadm adds nothing. Without the lock, mdadm opens the
// unclaimed disk and adds it as a spare first.
func TestVMReplaceHoldsOffIncremental(t *testing.T) {
	c := qt.New(t)
	disks := guest.ScratchDisks(t, 3)
	ctx := context.Background()
	md := createArray(c, "/dev/md/holdoff", []string{"--level=1", "--metadata=1.2", "--raid-devices=2"}, disks[:2])
	m := vmManager(t)
	c.Assert(m.Fail(ctx, md, disks[1].Name), qt.IsNil)
	// Right after a fail the kernel shows "recover" until its md thread
	// has looked for spares (seen on 6.1), and a replace refuses that
	// ("try again in a moment"): wait, as a user is told to.
	for deadline := time.Now().Add(10 * time.Second); guest.ReadAttr(c, md, "sync_action") != "idle"; {
		c.Assert(time.Now().Before(deadline), qt.IsTrue, qt.Commentf("sync_action stays %q", guest.ReadAttr(c, md, "sync_action")))
		time.Sleep(5 * time.Millisecond)
	}
	cand := disks[2]

	var inc *exec.Cmd
	var incOut bytes.Buffer
	incDone := make(chan error, 1)
	waited := false
	m.ops.afterStep = func(k StepKind) error {
		if k != StepWriteSuperblock {
			return nil
		}
		// The disk is closed and carries the new spare superblock: what
		// udev's rule runs for the change event of that close.
		inc = exec.Command("mdadm", "--incremental", "--export", cand.Path, "--offroot")
		inc.Stdout, inc.Stderr = &incOut, &incOut
		c.Assert(inc.Start(), qt.IsNil)
		go func() { incDone <- inc.Wait() }()
		deadline := time.Now().Add(20 * time.Second)
		for time.Now().Before(deadline) {
			if flockWaiter(c, inc.Process.Pid) {
				waited = true
				return nil
			}
			if len(incDone) > 0 {
				return nil // it ended without waiting: checked below
			}
			time.Sleep(2 * time.Millisecond)
		}
		return nil
	}
	res, err := m.Replace(ctx, ReplaceRequest{Array: md, With: cand.Path, Member: disks[1].Name})
	m.ops.afterStep = nil
	t.Logf("replace: %v", err)
	c.Assert(err, qt.IsNil)
	c.Assert(inc, qt.IsNotNil)
	werr := <-incDone
	t.Logf("mdadm --incremental: %v\n%s", werr, incOut.String())
	c.Check(waited, qt.IsTrue, qt.Commentf("mdadm --incremental did not wait for the map lock"))
	c.Check(res.Slot, qt.Equals, 1)
	c.Check(guest.ReadAttr(c, md, "dev-"+cand.Name+"/slot"), qt.Equals, "1")
	c.Check(werr, qt.IsNotNil, qt.Commentf("mdadm --incremental added the disk"))
	c.Check(incOut.String(), qt.Contains, "cannot reopen "+cand.Path)
	c.Check(strings.Contains(incOut.String(), "MD_STARTED"), qt.IsFalse)
	c.Check(guest.ReadAttr(c, md, "raid_disks"), qt.Equals, "2")
	guest.Mdadm(c, "--stop", "/dev/"+md)
}

// flockWaiter reports whether /proc/locks shows pid waiting for a flock
// ("N: -> FLOCK ADVISORY WRITE PID ...").
func flockWaiter(c *qt.C, pid int) bool {
	b, err := os.ReadFile("/proc/locks")
	c.Assert(err, qt.IsNil)
	for line := range strings.Lines(string(b)) {
		f := strings.Fields(line)
		if len(f) >= 6 && f[1] == "->" && f[2] == "FLOCK" && f[5] == fmt.Sprint(pid) {
			return true
		}
	}
	return false
}

// TestVMReplaceRightAfterFail plans a replace over and over from the
// moment a member is failed until the plan passes, and checks each
// refusal against what sysfs showed just before and just after it: a
// recovery with nothing rebuilt yet (sync_completed none or "0 / N") is
// told as one that passes in a moment, one under way as running. It records what
// the kernel shows in that moment (docs/kernels.md §9).
func TestVMReplaceRightAfterFail(t *testing.T) {
	c := qt.New(t)
	disks := guest.ScratchDisks(t, 3)
	ctx := context.Background()
	md := createArray(c, "/dev/md/afterfail", []string{"--level=1", "--metadata=1.2", "--raid-devices=2"}, disks[:2])
	m := vmManager(t)
	state := func() string {
		return guest.ReadAttr(c, md, "sync_action") + "/" + guest.ReadAttr(c, md, "sync_completed")
	}
	c.Assert(m.Fail(ctx, md, disks[1].Name), qt.IsNil)
	var seen []string
	for deadline := time.Now().Add(10 * time.Second); ; {
		before := state()
		_, err := m.PlanReplace(ctx, ReplaceRequest{Array: md, With: disks[2].Path, Member: disks[1].Name})
		after := state()
		seen = append(seen, fmt.Sprintf("%s %s: %v", before, after, err))
		if err == nil {
			break
		}
		c.Assert(err, qt.ErrorIs, errArrayBusy, qt.Commentf("%s", strings.Join(seen, "\n")))
		if before != after && after == "idle/none" && strings.HasPrefix(before, "recover/0 / ") {
			// The plan read one of the two; refused, it read the first
			// (or a recover between them that rebuilt nothing).
			after = before
		}
		if before == after {
			action, completed, _ := strings.Cut(before, "/")
			switch {
			case action == "recover" && (completed == "none" || strings.HasPrefix(completed, "0 / ")):
				c.Check(err, qt.ErrorMatches, ".*try again in a moment.*")
			case action == "recover":
				c.Check(err, qt.ErrorMatches, ".*a recover is running.*")
			}
		}
		c.Assert(time.Now().Before(deadline), qt.IsTrue, qt.Commentf("%s", strings.Join(seen, "\n")))
	}
	t.Logf("sync_action/sync_completed before and after each plan from the fail on:\n%s", strings.Join(seen, "\n"))
	guest.Mdadm(c, "--stop", "/dev/"+md)
}
