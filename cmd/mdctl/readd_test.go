package main

import (
	"encoding/json"
	"path/filepath"
	"testing"

	qt "github.com/frankban/quicktest"

	"github.com/go-mdraid/mdraid/internal/fixture"
)

// TestReAddCLI: re-add's refusals exit 2 with one JSON object under
// --json (result refused, the error), the same with and without
// --dry-run; a --store that does not exist is refused, naming what
// records one.
func TestReAddCLI(t *testing.T) {
	c := qt.New(t)
	sys, dev := fixture.Named(t, "raid1-bitmap").System(t)
	for _, dry := range []bool{false, true} {
		args := []string{"re-add", "md0", filepath.Join(dev, "vdb"), "--json", "--sysfs", sys, "--dev", dev, "--run-dir", t.TempDir()}
		if dry {
			args = append(args, "--dry-run")
		}
		code, out, errOut := runCLI(t, args...)
		c.Check(code, qt.Equals, exitRefused, qt.Commentf("%s", errOut))
		var got struct {
			Array, Device, Result, Error string
			DryRun                       bool `json:"dry_run"`
		}
		c.Assert(json.Unmarshal([]byte(out), &got), qt.IsNil, qt.Commentf("%s", out))
		c.Check(got.Result, qt.Equals, "refused")
		c.Check(got.DryRun, qt.Equals, dry)
		c.Check(got.Error, qt.Matches, `md: cannot re-add: .*vdb is not a block device`)
	}
	code, _, errOut := runCLI(t, "re-add", "md0", "vdb", "--store", filepath.Join(t.TempDir(), "none.json"), "--sysfs", sys, "--dev", dev)
	c.Check(code, qt.Equals, exitRefused)
	c.Check(errOut, qt.Contains, "mdctl record --store")
}
