package main

import (
	"os"
	"path/filepath"
	"testing"

	qt "github.com/frankban/quicktest"
)

// stopFixture materializes the boot mirror (md127, name boot) and
// returns the global flags for it and its sysfs root.
// The process root is an empty directory: the test host's processes are
// not the fixture's.
func stopFixture(t *testing.T) (flags []string, sys string) {
	t.Helper()
	flags, _ = materialize(t, "boot-mirror")
	return append(flags, "--run-dir", t.TempDir(), "--proc", t.TempDir()), flags[1]
}

// TestStopCLI: what mdctl stop prints and how it exits. The fixture has
// no node for the array, so a real stop gets as far as opening it and
// fails there, nothing changed.
func TestStopCLI(t *testing.T) {
	c := qt.New(t)
	flags, sys := stopFixture(t)

	code, out, errOut := runCLI(t, append([]string{"stop", "--dry-run", "boot"}, flags...)...)
	c.Check(code, qt.Equals, exitOK, qt.Commentf("%s%s", out, errOut))
	c.Check(out, qt.Equals, "mdctl: would stop md127 (boot) (STOP_ARRAY); nothing written (dry run)\n")

	code, out, errOut = runCLI(t, append([]string{"stop", "nope"}, flags...)...)
	c.Check(code, qt.Equals, exitRefused)
	c.Check(out, qt.Equals, "")
	c.Check(errOut, qt.Equals, "mdctl: error: md: no such array: nope\n")

	code, out, errOut = runCLI(t, append([]string{"stop", "md127"}, flags...)...)
	c.Check(code, qt.Equals, exitFailure, qt.Commentf("%s%s", out, errOut))
	c.Check(errOut, qt.Matches, `mdctl: error: md: stopping md127 failed, nothing changed: open .*md127: no such file or directory\n`)

	// Several arrays: each is tried, the worst code wins (1 over 2).
	code, _, errOut = runCLI(t, append([]string{"stop", "nope", "md127"}, flags...)...)
	c.Check(code, qt.Equals, exitFailure)
	c.Check(errOut, qt.Matches, `mdctl: error: md: no such array: nope\nmdctl: error: md: stopping md127 failed.*\n`)

	// Held by a dm volume with a hostile name: refused, named, escaped
	// (by md, and its backslash again by main).
	arr, err := filepath.EvalSymlinks(filepath.Join(sys, "block", "md127"))
	c.Assert(err, qt.IsNil)
	c.Assert(os.WriteFile(filepath.Join(arr, "holders", "dm-0"), nil, 0o644), qt.IsNil)
	c.Assert(os.MkdirAll(filepath.Join(sys, "block", "dm-0", "dm"), 0o755), qt.IsNil)
	c.Assert(os.WriteFile(filepath.Join(sys, "block", "dm-0", "dm", "name"), []byte("vg-\x1b[31mroot\n"), 0o644), qt.IsNil)
	for _, dry := range []string{"--dry-run", "--run-dir=" + t.TempDir()} {
		code, out, errOut = runCLI(t, append([]string{"stop", dry, "/dev/md/boot"}, flags...)...)
		c.Check(code, qt.Equals, exitRefused)
		c.Check(out, qt.Equals, "")
		c.Check(errOut, qt.Equals, `mdctl: error: md: refusing to stop an array in use: md127 is held by dm-0 (vg-\\x1b[31mroot)`+"\n")
	}
}

// TestStopCLIUsage: stop needs an array.
func TestStopCLIUsage(t *testing.T) {
	code, _, _ := runCLI(t, "stop")
	qt.Check(t, code, qt.Equals, exitUsage)
}
