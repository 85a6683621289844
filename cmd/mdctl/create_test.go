package main

import (
	"os"
	"path/filepath"
	"testing"

	qt "github.com/frankban/quicktest"
)

// TestCreateCLI: usage errors exit 80 with one line and nothing on
// stdout; a planner refusal exits 2 and leaves the device as it was.
// (Regular files are never devices for mdctl: the fixture's images are
// refused as not block devices.)
func TestCreateCLI(t *testing.T) {
	c := qt.New(t)
	flags, _ := stopFixture(t)
	img := filepath.Join(t.TempDir(), "disk")
	c.Assert(os.WriteFile(img, make([]byte, 1<<20), 0o644), qt.IsNil)

	for _, args := range [][]string{
		{"create", "x", "--level=foo", "-n", "2", img, "missing"},
		{"create", "x", "--level=1", "-n", "2", "--metadata=2.0", img, "missing"},
		{"create", "x", "--level=1", "-n", "2", "--bitmap=file", img, "missing"},
	} {
		code, out, errOut := runCLI(t, append(args, flags...)...)
		c.Check(code, qt.Equals, exitUsage, qt.Commentf("%v: %s", args, errOut))
		c.Check(out, qt.Equals, "")
		c.Check(errOut, qt.Matches, `mdctl: error: [^\n]*\n`)
	}

	for _, dry := range []string{"--dry-run", "--json"} {
		code, out, errOut := runCLI(t, append([]string{"create", "/dev/md/new", "--level=1", "-n", "2", dry, img, "missing"}, flags...)...)
		c.Check(code, qt.Equals, exitRefused, qt.Commentf("%s%s", out, errOut))
		c.Check(out, qt.Equals, "")
		c.Check(errOut, qt.Matches, `mdctl: error: md: refusing to create in /dev/md/new: .*/disk is in use: not a block device\n`)
	}
	b, err := os.ReadFile(img)
	c.Assert(err, qt.IsNil)
	c.Check(b, qt.DeepEquals, make([]byte, 1<<20))
}
