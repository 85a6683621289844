package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	qt "github.com/frankban/quicktest"
)

// TestGrowCLI: usage errors exit 80; on the captured boot mirror
// (metadata 1.0, 64 MiB disks) md already lets each member give 65520
// KiB, mdadm's Avail Dev Size: the dry run of --size=max would raise the
// array from 65472 KiB, and of a size its members give asks nothing of
// them. A real grow writes the members' size and component_size (the
// capture's sysfs takes the writes) and says so; a smaller size is
// refused, nothing written.
func TestGrowCLI(t *testing.T) {
	c := qt.New(t)
	flags, sys := stopFixture(t)
	for _, args := range [][]string{
		{"grow", "boot"},
		{"grow", "boot", "--size", "lots"},
		{"grow", "boot", "--size", "0"},
		{"grow", "boot", "--size", "99999999999999999T"},
	} {
		code, out, errOut := runCLI(t, append(args, flags...)...)
		c.Check(code, qt.Equals, exitUsage, qt.Commentf("%v: %s%s", args, out, errOut))
	}
	code, out, errOut := runCLI(t, append([]string{"grow", "boot", "--size=max", "--dry-run"}, flags...)...)
	c.Assert(code, qt.Equals, exitOK, qt.Commentf("%s%s", out, errOut))
	c.Check(out, qt.Equals, "md127: would set component_size 65472 -> 65520 KiB; nothing written (dry run).\n")

	code, out, errOut = runCLI(t, append([]string{"grow", "boot", "--size=64M", "--dry-run"}, flags...)...)
	c.Check(code, qt.Equals, exitRefused, qt.Commentf("%s%s", out, errOut))
	c.Check(errOut, qt.Matches, `mdctl: error: md: refusing to resize in md127: 65536 KiB does not fit: vd. can give at most 65520 KiB\n`)

	code, _, errOut = runCLI(t, append([]string{"grow", "boot", "--size=1M"}, flags...)...)
	c.Check(code, qt.Equals, exitRefused)
	c.Check(errOut, qt.Matches, `mdctl: error: md: refusing to resize in md127: 1024 KiB is less than the 65472 KiB each member gives now: md would cut off the end of the array\n`)

	code, out, errOut = runCLI(t, append([]string{"grow", "boot", "--size=max", "--json"}, flags...)...)
	c.Assert(code, qt.Equals, exitOK, qt.Commentf("%s%s", out, errOut))
	var rep growReport
	c.Assert(json.Unmarshal([]byte(out), &rep), qt.IsNil)
	c.Check(rep.Result, qt.Equals, "done")
	c.Check(rep.ComponentKiB, qt.Equals, uint64(65520))
	b, err := os.ReadFile(filepath.Join(sys, "block", "md127", "md", "component_size"))
	c.Assert(err, qt.IsNil)
	c.Check(strings.TrimSpace(string(b)), qt.Equals, "65520")
}
