//go:build vmtest

package main

import (
	"os/exec"
	"slices"
	"strconv"
	"testing"
	"time"

	qt "github.com/frankban/quicktest"

	"github.com/go-mdraid/mdraid/internal/vmtest/guest"
)

// TestVMCreateAndRetireCLI: mdctl create and mdctl zero-superblock on the
// real kernel, timed against mdadm --create on the same disks (the PERF
// lines bench/create-vm.sh prints). Each round: mdctl create on blank
// disks (mdctl runs in this process, so its time has no process start;
// mdadm's has), stop, mdctl zero-superblock, which must leave the disks
// blank again (nothing of the metadata left: mdctl's own blank rule
// accepts them for the next create), then mdadm --create on them, stop,
// and zero-superblock again.
func TestVMCreateAndRetireCLI(t *testing.T) {
	for _, tt := range []struct {
		name  string
		disks int
		args  []string
	}{
		{"mirror", 2, []string{"--level=1", "--metadata=1.2", "--bitmap=internal"}},
		{"raid5", 4, []string{"--level=5", "--metadata=1.2"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := qt.New(t)
			disks := guest.ScratchDisks(t, tt.disks)
			var paths []string
			for _, d := range disks {
				paths = append(paths, d.Path)
			}
			runDir := []string{"--run-dir", t.TempDir()}
			args := append([]string{"/dev/md/bench", "--name=bench", "--raid-devices=" + strconv.Itoa(tt.disks)}, tt.args...)
			retire := func() {
				c.Helper()
				guest.Mdadm(c, "--stop", "/dev/md/bench")
				code, out, errOut := runCLI(t, append([]string{"zero-superblock"}, paths...)...)
				c.Assert(code, qt.Equals, 0, qt.Commentf("%s%s", out, errOut))
			}
			var ours, theirs []time.Duration
			for range 3 {
				start := time.Now()
				code, out, errOut := runCLI(t, append(append(append([]string{"create"}, args...), paths...), runDir...)...)
				ours = append(ours, time.Since(start))
				c.Assert(code, qt.Equals, 0, qt.Commentf("%s%s", out, errOut))
				retire()

				start = time.Now()
				out2, err := exec.Command("mdadm", append(append([]string{"--create", "--run"}, args...), paths...)...).CombinedOutput()
				theirs = append(theirs, time.Since(start))
				c.Assert(err, qt.IsNil, qt.Commentf("%s", out2))
				retire()
			}
			// After the last zero-superblock the disks are blank again:
			// mdctl create's own rule accepts them (the dry run).
			code, out, errOut := runCLI(t, append(append(append([]string{"create", "--dry-run"}, args...), paths...), runDir...)...)
			c.Check(code, qt.Equals, 0, qt.Commentf("%s%s", out, errOut))
			slices.Sort(ours)
			slices.Sort(theirs)
			t.Logf("PERF create %s (%d disks): mdctl create %v, mdadm --create %v (medians of 3; all: %v / %v); ratio %.2f",
				tt.name, tt.disks, ours[1].Round(time.Millisecond), theirs[1].Round(time.Millisecond), ours, theirs,
				float64(ours[1])/float64(theirs[1]))
		})
	}
}
