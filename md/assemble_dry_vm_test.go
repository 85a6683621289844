//go:build vmtest

package md

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	qt "github.com/frankban/quicktest"

	"github.com/go-mdraid/mdraid/internal/vmtest/guest"
)

// TestVMAssembleDryRun (issue 31) on the real kernel: a dry run of
// Assemble creates no array, link, map entry or lock file, and reports
// exactly what the real run that follows does: the same devices added to
// the same arrays, numbers and names, the same writes in the same order,
// the same start states. At boot (nothing assembled), with arrays half
// assembled by Incremental before, and with Run over incomplete arrays.
func TestVMAssembleDryRun(t *testing.T) {
	c := qt.New(t)
	disks := guest.ScratchDisks(t, 8)
	ctx := context.Background()
	// Arrays in use: written once, so that their superblocks say they
	// have run (a never-written set short of members is held back as an
	// unfinished create, TestVMCreateKilled).
	writeData(c, "/dev/"+createArray(c, "/dev/md/boot", []string{"--level=1", "--metadata=1.0", "--name=boot", "--raid-devices=2"}, disks[0:2]))
	writeData(c, "/dev/"+createArray(c, "/dev/md/r5", []string{"--level=5", "--name=r5", "--raid-devices=3"}, disks[2:5]))
	writeData(c, "/dev/"+createArray(c, "/dev/md/data", []string{"--level=1", "--name=data", "--raid-devices=2"}, disks[5:7]))
	c.Assert(guest.StopAll(), qt.IsNil)
	m := vmManager(t)
	paths := func(ds ...guest.Disk) []string {
		var out []string
		for _, d := range ds {
			out = append(out, d.Path)
		}
		return out
	}
	outcomes := func(res *AssembleResult) []string {
		var out []string
		for _, r := range res.Added {
			out = append(out, fmt.Sprintf("added %s -> %s %s started=%s read-auto=%v %d/%d: %s", r.Device, r.Array, r.Path, r.Started, r.ReadAuto, r.Present, r.Expected, strings.Join(r.Writes, ", ")))
		}
		for _, s := range res.Skipped {
			out = append(out, "skipped "+s.Device+": "+s.Reason.Error())
		}
		for _, f := range res.Failed {
			out = append(out, "failed "+f.Device+": "+f.Err.Error())
		}
		return out
	}
	// state is what a dry run must leave as it was: the arrays and their
	// states, the links, the map file and its lock file.
	state := func(c *qt.C) string {
		arrays, err := guest.Arrays()
		c.Assert(err, qt.IsNil)
		var b strings.Builder
		for _, a := range arrays {
			ms, _ := filepath.Glob(guest.SysPath(a, "dev-*"))
			fmt.Fprintf(&b, "%s %s %v\n", a, strings.TrimSpace(readOr(guest.SysPath(a, "array_state"))), ms)
		}
		links, _ := filepath.Glob("/dev/md/*")
		fmt.Fprintf(&b, "links %v\nmap %q\n", links, readOr("/run/mdadm/map"))
		_, err = os.Stat("/run/mdadm/map.lock")
		fmt.Fprintf(&b, "lock %v\n", err == nil)
		return b.String()
	}
	all := paths(disks...)
	for _, tt := range []struct {
		name  string
		prep  func(c *qt.C)
		req   AssembleRequest
		added int
	}{
		{name: "at boot", req: AssembleRequest{Devices: all}, added: 7},
		{name: "half assembled", prep: func(c *qt.C) {
			for _, d := range []guest.Disk{disks[0], disks[2], disks[3]} {
				_, err := m.Incremental(ctx, IncrementalRequest{Device: d.Path})
				c.Assert(err, qt.IsNil)
			}
		}, req: AssembleRequest{Devices: all}, added: 4},
		{name: "run", req: AssembleRequest{Devices: paths(disks[0], disks[2], disks[3], disks[5]), Run: true}, added: 4},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := qt.New(t)
			stopForAssembly(c)
			os.Remove("/run/mdadm/map.lock")
			if tt.prep != nil {
				tt.prep(c)
			}
			before := state(c)
			dreq := tt.req
			dreq.DryRun = true
			dry, err := m.Assemble(ctx, dreq)
			c.Assert(err, qt.IsNil)
			c.Check(state(c), qt.Equals, before, qt.Commentf("the dry run changed the system"))
			res, err := m.Assemble(ctx, tt.req)
			c.Assert(err, qt.IsNil)
			c.Check(len(res.Added), qt.Equals, tt.added, qt.Commentf("%v", outcomes(res)))
			c.Check(outcomes(dry), qt.DeepEquals, outcomes(res))
			c.Check(halfBuilt(c), qt.HasLen, 0)
		})
	}
	stopForAssembly(c)
}
