package main

import (
	"os"
	"path/filepath"
	"testing"

	qt "github.com/frankban/quicktest"
)

// TestDeviceArgumentRule (issue 31): every command resolves a device
// argument by one rule (blockdev.ArgPath): a name without a slash is the
// kernel name under --dev, never a file of that name in the current
// directory; a path with a slash is taken as given.
func TestDeviceArgumentRule(t *testing.T) {
	flags, dev := materialize(t, "raid1-failed")
	cwd := t.TempDir()
	t.Chdir(cwd)
	// A file vdy in the current directory, none under --dev; vdz under
	// --dev, none in the current directory.
	qt.Assert(t, os.WriteFile(filepath.Join(cwd, "vdy"), make([]byte, 1<<20), 0o644), qt.IsNil)
	qt.Assert(t, os.WriteFile(filepath.Join(dev, "vdz"), make([]byte, 1<<20), 0o644), qt.IsNil)
	run := func(args ...string) (int, string, string) {
		t.Helper()
		return runCLI(t, append(append([]string{}, flags...), args...)...)
	}
	tests := []struct {
		name   string
		args   []string
		code   int
		errOut string // substring of stderr
		out    string // substring of stdout
	}{
		{name: "replace: kernel name is the node under --dev", args: []string{"replace", "md0", "--with", "vdz", "--member", "vdb", "--run-dir", cwd},
			code: exitRefused, errOut: filepath.Join(dev, "vdz") + " is not a block device"},
		{name: "replace: kernel name is not the file in the current directory", args: []string{"replace", "md0", "--with", "vdy", "--member", "vdb", "--run-dir", cwd},
			code: exitRefused, errOut: filepath.Join(dev, "vdy")},
		{name: "replace: ./ names the file in the current directory", args: []string{"replace", "md0", "--with", "./vdy", "--member", "vdb", "--run-dir", cwd},
			code: exitRefused, errOut: "./vdy is not a block device"},
		{name: "replace: absolute path as given", args: []string{"replace", "md0", "--with", filepath.Join(dev, "vdz"), "--member", "vdb", "--run-dir", cwd},
			code: exitRefused, errOut: filepath.Join(dev, "vdz") + " is not a block device"},
		{name: "incremental: kernel name is the node under --dev", args: []string{"incremental", "vdz", "--map-dir", cwd},
			code: exitRefused, errOut: filepath.Join(dev, "vdz") + " is not a block device"},
		{name: "incremental: ./ names the file in the current directory", args: []string{"incremental", "./vdy", "--map-dir", cwd},
			code: exitRefused, errOut: "./vdy is not a block device"},
		{name: "examine: kernel name is the member under --dev", args: []string{"examine", "vda"},
			code: 0, out: filepath.Join(dev, "vda") + ":"},
		{name: "examine: kernel name is not the file in the current directory", args: []string{"examine", "vdy"},
			code: 3, errOut: filepath.Join(dev, "vdy")},
		{name: "fail: kernel name", args: []string{"fail", "md0", "vda", "--dry-run"},
			code: exitRefused, errOut: "refusing"},
		{name: "fail: node under --dev", args: []string{"fail", "md0", filepath.Join(dev, "vda"), "--dry-run"},
			code: exitRefused, errOut: "refusing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := qt.New(t)
			code, stdout, stderr := run(tt.args...)
			c.Check(code, qt.Equals, tt.code, qt.Commentf("stdout:\n%s\nstderr:\n%s", stdout, stderr))
			if tt.errOut != "" {
				c.Check(stderr, qt.Contains, tt.errOut)
			}
			if tt.out != "" {
				c.Check(stdout, qt.Contains, tt.out)
			}
		})
	}
}
