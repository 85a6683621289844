package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	qt "github.com/frankban/quicktest"
)

// TestWritingCommandsHaveDryRunAndJSON (issue 31): every command that
// changes something takes --dry-run and --json, read from the command
// model that --help prints. The commands listed in lacking do not yet;
// the test fails if one of them gains both (then drop it from the list)
// or if any other writing command loses one.
func TestWritingCommandsHaveDryRunAndJSON(t *testing.T) {
	var cli CLI
	app, err := newParser(&cli)
	qt.Assert(t, err, qt.IsNil)
	readOnly := map[string]bool{"status": true, "examine": true, "completion": true, "help": true, "version": true,
		// watch reports; what it writes (--heal, --store) is heal's and
		// record's, each checked on its own.
		"watch": true}
	lacking := map[string]bool{}
	for _, n := range app.Model.Children {
		if readOnly[n.Name] {
			continue
		}
		has := map[string]bool{}
		for _, f := range n.Flags {
			has[f.Name] = true
		}
		both := has["dry-run"] && has["json"]
		if lacking[n.Name] {
			qt.Check(t, both, qt.IsFalse, qt.Commentf("%s has --dry-run and --json now: drop it from lacking", n.Name))
			continue
		}
		qt.Check(t, both, qt.IsTrue, qt.Commentf("%s changes something: it needs --dry-run (%v) and --json (%v)", n.Name, has["dry-run"], has["json"]))
	}
}

// TestChangeJSON: fail, remove, run, stop and replace print one JSON
// object with --json, whatever the outcome, with the text mode's exit
// code, and a dry run writes nothing.
func TestChangeJSON(t *testing.T) {
	type arrayOut struct {
		Array, Member, Result, Write, Error string
		DryRun                              bool `json:"dry_run"`
		Removed                             []string
	}
	tests := []struct {
		name    string
		fixture string
		args    []string
		code    int
		want    arrayOut
	}{
		{name: "fail, dry run", fixture: "raid1-v1.2", args: []string{"fail", "md0", "vda", "--dry-run", "--json"},
			want: arrayOut{Array: "md0", Member: "vda", Result: "would", DryRun: true, Write: "SET_DISK_FAULTY 254:0"}},
		{name: "fail refused", fixture: "raid1-failed", args: []string{"fail", "md0", "vda", "--json"}, code: exitRefused,
			want: arrayOut{Array: "md0", Member: "vda", Result: "refused"}},
		{name: "fail of a faulty member", fixture: "raid1-failed", args: []string{"fail", "md0", "vdb", "--json"},
			want: arrayOut{Array: "md0", Member: "vdb", Result: "nothing-to-do"}},
		{name: "remove, dry run", fixture: "raid1-failed", args: []string{"remove", "md0", "vdb", "--dry-run", "--json"},
			want: arrayOut{Array: "md0", Member: "vdb", Result: "would", DryRun: true}},
		{name: "run refused", fixture: "raid1-v1.2", args: []string{"run", "md0", "--json"}, code: exitRefused,
			want: arrayOut{Array: "md0", Result: "refused"}},
		{name: "stop, dry run", fixture: "raid1-v1.2", args: []string{"stop", "md0", "--dry-run", "--json"},
			want: arrayOut{Array: "md0", Result: "would", DryRun: true, Write: "STOP_ARRAY"}},
		{name: "stop of no such array", fixture: "raid1-v1.2", args: []string{"stop", "md9", "--json"}, code: exitRefused,
			want: arrayOut{Array: "md9", Result: "refused"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := qt.New(t)
			flags, _ := materialize(t, tt.fixture)
			sys := flags[1]
			before := sysfsTree(t, sys)
			args := append(append([]string(nil), flags...), "--run-dir", t.TempDir(), "--proc", t.TempDir(), "--map-dir", t.TempDir())
			code, stdout, stderr := runCLI(t, append(args, tt.args...)...)
			c.Check(code, qt.Equals, tt.code, qt.Commentf("stdout:\n%s\nstderr:\n%s", stdout, stderr))
			var out struct{ Arrays []arrayOut }
			c.Assert(json.Unmarshal([]byte(stdout), &out), qt.IsNil, qt.Commentf("stdout is not one JSON object:\n%s", stdout))
			c.Assert(out.Arrays, qt.HasLen, 1)
			got := out.Arrays[0]
			if tt.want.Write == "" {
				got.Write = "" // the device number varies by capture
			}
			if tt.code != 0 {
				c.Check(got.Error, qt.Not(qt.Equals), "")
				c.Check(stderr, qt.Contains, got.Error)
			}
			got.Error, got.Removed = "", nil
			c.Check(got, qt.DeepEquals, tt.want)
			if tt.want.DryRun || tt.code != 0 {
				c.Check(sysfsTree(t, sys), qt.DeepEquals, before)
			}
		})
	}
}

// TestReplaceJSON: replace --json prints the plan with every check and
// the outcome; a refusal is exit 2 with the candidate byte-identical.
func TestReplaceJSON(t *testing.T) {
	c := qt.New(t)
	flags, dev := materialize(t, "raid1-failed")
	img := filepath.Join(dev, "vdz")
	c.Assert(os.WriteFile(img, make([]byte, 1<<20), 0o644), qt.IsNil)
	args := append(append([]string(nil), flags...), "--run-dir", t.TempDir(), "replace", "md0", "--with", "vdz", "--member", "vdb", "--json")
	for _, dry := range []bool{true, false} {
		a := args
		if dry {
			a = append(a, "--dry-run")
		}
		code, stdout, stderr := runCLI(t, a...)
		c.Check(code, qt.Equals, exitRefused, qt.Commentf("stdout:\n%s\nstderr:\n%s", stdout, stderr))
		var out struct {
			Result string
			DryRun bool `json:"dry_run"`
			Plan   *struct {
				Array  string
				Checks []struct{ Name, Status string }
			}
			Error string
		}
		c.Assert(json.Unmarshal([]byte(stdout), &out), qt.IsNil, qt.Commentf("stdout is not one JSON object:\n%s", stdout))
		c.Check(out.Result, qt.Equals, "refused")
		c.Check(out.DryRun, qt.Equals, dry)
		c.Assert(out.Plan, qt.IsNotNil)
		c.Check(out.Plan.Array, qt.Equals, "md0")
		c.Check(len(out.Plan.Checks) > 3, qt.IsTrue)
		c.Check(out.Error, qt.Contains, img+" is not a block device")
		b, err := os.ReadFile(img)
		c.Assert(err, qt.IsNil)
		c.Check(b, qt.DeepEquals, make([]byte, 1<<20))
	}
}
