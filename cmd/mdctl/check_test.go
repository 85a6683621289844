package main

import (
	"os"
	"path/filepath"
	"testing"

	qt "github.com/frankban/quicktest"
)

// sysfsTree reads every regular file below dir (the materialized sysfs).
func sysfsTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			b, rerr := os.ReadFile(p)
			out[p] = string(b)
			return rerr
		}
		return err
	})
	qt.Assert(t, err, qt.IsNil)
	return out
}

// TestCheckAllSkipsAndDryRun (issue 31): check --all, as the monthly unit
// runs it, names the arrays it skips and why and exits 0 for them (a
// raid0, linear or degraded array is nothing to fail on), refuses only
// an array that should be checkable and is not; --dry-run says per array
// what would be started or skipped, with the real run's exit code, and
// writes nothing: not to sysfs, not to the store.
func TestCheckAllSkipsAndDryRun(t *testing.T) {
	tests := []struct {
		name    string
		fixture string
		attr    map[string]string // md/ attributes to set first
		args    []string
		code    int
		out     []string
		wrote   bool // the real run writes sync_action
	}{
		{name: "raid0 --all is skipped", fixture: "raid0", args: []string{"check", "--all"},
			out: []string{"md0: skipped: level raid0 has no redundancy to check."}},
		{name: "raid0 named is refused", fixture: "raid0", args: []string{"check", "md0"}, code: exitRefused,
			out: []string{"md0: refused (nothing written): "}},
		{name: "linear --all is skipped", fixture: "linear", args: []string{"check", "--all"},
			out: []string{": skipped: level linear has no redundancy to check."}},
		{name: "degraded --all is skipped", fixture: "raid1-degraded-missing", args: []string{"check", "--all", "--store", "@store"},
			out: []string{"md0: skipped: it is degraded"}},
		{name: "recovering --all is skipped", fixture: "raid1-recovering", args: []string{"check", "--all"},
			out: []string{"md0: skipped: "}},
		{name: "frozen --all is refused", fixture: "raid1-v1.2", attr: map[string]string{"sync_action": "frozen"}, args: []string{"check", "--all"},
			code: exitRefused, out: []string{"md0: refused (nothing written): ", "recovery is frozen"}},
		{name: "sync_max --all is refused", fixture: "raid1-v1.2", attr: map[string]string{"sync_max": "4096"}, args: []string{"check", "--all", "--dry-run"},
			code: exitRefused, out: []string{"md0: refused (nothing written): ", "sync_max is 4096", "Dry run: nothing was written."}},
		{name: "dry run names what would start", fixture: "raid1-v1.2", args: []string{"check", "--all", "--dry-run", "--store", "@store", "--duration", "6h"},
			out: []string{"md0: would start a check from the start.", "Dry run: nothing was written."}},
		{name: "dry run of a repair", fixture: "raid1-v1.2", args: []string{"check", "md0", "--repair", "--dry-run", "--wait"},
			out: []string{"md0: would start a repair from the start.", "Dry run: nothing was written."}},
		{name: "dry run as JSON", fixture: "raid1-v1.2", args: []string{"check", "md0", "--dry-run", "--json"},
			out: []string{`"result": "would-start"`, `"action": "check"`}},
		{name: "dry run skips with --all", fixture: "raid0", args: []string{"check", "--all", "--dry-run", "--json"},
			out: []string{`"result": "skipped"`, `"skipped": "level raid0 has no redundancy to check"`}},
		{name: "dry run of a cancel", fixture: "raid1-v1.2", attr: map[string]string{"sync_action": "check", "sync_completed": "100 / 129024"},
			args: []string{"check", "md0", "--cancel", "--dry-run"}, out: []string{"md0: would stop the running check at about sector 100 of ", "Dry run: nothing was written."}},
		{name: "the real run writes", fixture: "raid1-v1.2", args: []string{"check", "--all"}, out: []string{"md0: check started"}, wrote: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := qt.New(t)
			flags, _ := materialize(t, tt.fixture)
			sys := flags[1]
			for k, v := range tt.attr {
				c.Assert(os.WriteFile(filepath.Join(sys, "block", "md0", "md", k), []byte(v+"\n"), 0o644), qt.IsNil)
			}
			store := filepath.Join(t.TempDir(), "checks.json")
			args := append([]string(nil), flags...)
			for _, a := range tt.args {
				if a == "@store" {
					a = store
				}
				args = append(args, a)
			}
			before := sysfsTree(t, sys)
			code, stdout, stderr := runCLI(t, args...)
			c.Check(code, qt.Equals, tt.code, qt.Commentf("stdout:\n%s\nstderr:\n%s", stdout, stderr))
			for _, s := range tt.out {
				c.Check(stdout, qt.Contains, s)
			}
			if tt.wrote {
				c.Check(sysfsTree(t, sys), qt.Not(qt.DeepEquals), before)
				return
			}
			c.Check(sysfsTree(t, sys), qt.DeepEquals, before)
			_, err := os.Stat(store)
			c.Check(os.IsNotExist(err), qt.IsTrue, qt.Commentf("the store was written: %v", err))
		})
	}
}
