//go:build vmtest

package main

import (
	"strings"
	"testing"

	qt "github.com/frankban/quicktest"

	"github.com/go-mdraid/mdraid/internal/vmtest/guest"
)

// TestVMReplaceCLI runs mdctl fail, remove and replace (dry run, then
// --wait) on a real mirror.
func TestVMReplaceCLI(t *testing.T) {
	c := qt.New(t)
	disks := guest.ScratchDisks(t, 3)
	guest.Mdadm(c, "--create", "/dev/md/cli", "--run", "--assume-clean", "--level=1", "--metadata=1.0",
		"--name=boot", "--homehost=talos", "--raid-devices=2", disks[0].Path, disks[1].Path)
	md := guest.ArrayName(c, "/dev/md/cli")
	runDir := []string{"--run-dir", t.TempDir()}

	code, out, errOut := runCLI(t, "fail", md, disks[0].Path)
	c.Assert(code, qt.Equals, 0, qt.Commentf("%s%s", out, errOut))
	code, _, errOut = runCLI(t, "fail", md, disks[1].Name)
	c.Check(code, qt.Equals, exitRefused)
	c.Check(errOut, qt.Contains, "would fail the array")
	code, out, errOut = runCLI(t, "remove", md, disks[0].Name)
	c.Assert(code, qt.Equals, 0, qt.Commentf("%s%s", out, errOut))

	code, out, errOut = runCLI(t, append([]string{"replace", md, "--with", disks[2].Path, "--dry-run"}, runDir...)...)
	c.Assert(code, qt.Equals, 0, qt.Commentf("%s%s", out, errOut))
	t.Logf("mdctl replace --dry-run:\n%s", out)
	c.Check(out, qt.Contains, "[pass] candidate is blank")
	c.Check(out, qt.Contains, "pin "+disks[2].Name+" to slot 0")
	c.Check(out, qt.Contains, "Dry run: nothing was written.")
	c.Check(guest.ReadAttr(c, md, "degraded"), qt.Equals, "1")

	code, out, errOut = runCLI(t, append([]string{"replace", md, "--with", disks[2].Path, "--wait"}, runDir...)...)
	c.Assert(code, qt.Equals, 0, qt.Commentf("%s%s", out, errOut))
	t.Logf("mdctl replace --wait:\n%s", out)
	c.Check(out, qt.Contains, "now holds slot 0")
	c.Check(out, qt.Contains, "online with full redundancy")
	c.Check(guest.ReadAttr(c, md, "dev-"+disks[2].Name+"/slot"), qt.Equals, "0")
	c.Check(strings.TrimSpace(guest.ReadAttr(c, md, "raid_disks")), qt.Equals, "2")
	guest.Mdadm(c, "--stop", "/dev/"+md)
}
