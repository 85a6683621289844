package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	qt "github.com/frankban/quicktest"
)

// TestExitNoSuchArray: a name that matches no array is one scheme: 4 for
// status (as mdadm --detail --test: the status could not be read), a
// refusal (2, nothing written) for every command that changes something.
func TestExitNoSuchArray(t *testing.T) {
	flags, _ := materialize(t, "raid1-degraded-missing")
	store := filepath.Join(t.TempDir(), "slots.json")
	tests := []struct {
		command string
		args    []string
	}{
		{"status", []string{"status", "nope"}},
		{"replace", []string{"replace", "nope", "--with", "/dev/nope"}},
		{"fail", []string{"fail", "nope", "vda"}},
		{"remove", []string{"remove", "nope", "vda"}},
		{"run", []string{"run", "nope"}},
		{"record", []string{"record", "--store", store, "nope"}},
		{"heal", []string{"heal", "--store", degradedStore(t, flags), "--array", "nope"}},
		{"check", []string{"check", "nope"}},
	}
	for _, tt := range tests {
		t.Run(tt.command, func(t *testing.T) {
			c := qt.New(t)
			want := -1
			for _, r := range exitCodesOf(tt.command) {
				if strings.Contains(r.meaning, noSuchArray) {
					want = r.code
				}
			}
			c.Assert(want, qt.Not(qt.Equals), -1, qt.Commentf("exitTable says nothing of a missing array for %s", tt.command))
			args := append(append([]string{}, tt.args...), append(flags, "--run-dir", t.TempDir())...)
			code, out, errOut := runCLI(t, args...)
			c.Check(code, qt.Equals, want, qt.Commentf("stdout:\n%s\nstderr:\n%s", out, errOut))
			if tt.command == "status" {
				c.Check(code, qt.Equals, exitUnreadable)
			} else {
				c.Check(code, qt.Equals, exitRefused)
			}
		})
	}
	_, err := os.Stat(store)
	qt.Check(t, err, qt.ErrorIs, os.ErrNotExist, qt.Commentf("record wrote the store"))
}

// TestExitUsage: every command line that does not parse exits exitUsage,
// as do flags that contradict each other.
func TestExitUsage(t *testing.T) {
	for _, args := range [][]string{
		{"bananas"},
		{"status", "--bananas"},
		{"status", "--format=xml"},
		{"replace", "md0"},
		{"check"},
		// A capture's sysfs with this host's /dev would mix them.
		{"status", "--sysfs", t.TempDir()},
		{"--sysfs", t.TempDir(), "examine", "/dev/null"},
	} {
		code, _, errOut := runCLI(t, args...)
		qt.Check(t, code, qt.Equals, exitUsage, qt.Commentf("%q: %s", args, errOut))
	}
	code, _, errOut := runCLI(t, "status", "--sysfs", t.TempDir())
	qt.Check(t, code, qt.Equals, exitUsage)
	qt.Check(t, errOut, qt.Equals, "mdctl: error: --sysfs needs --dev: the device directory that goes with that sysfs (--dev /dev for this host's)\n")
}

// TestExitHelp: each command's --help shows its rows of exitTable and
// the usage error.
func TestExitHelp(t *testing.T) {
	for _, g := range exitTable {
		for _, command := range g.commands {
			t.Run(command, func(t *testing.T) {
				c := qt.New(t)
				code, out, _ := runCLI(t, "help", command)
				c.Assert(code, qt.Equals, 0)
				// kong rewraps the help; compare words.
				words := strings.Join(strings.Fields(out), " ")
				for _, r := range append(g.rows, usageRow) {
					c.Check(words, qt.Contains, strings.Join(strings.Fields(r.meaning), " "))
				}
			})
		}
	}
}

// TestREADMEExitCodes pins the README's exit-code table (between the
// exit-codes markers) to exitTable.
func TestREADMEExitCodes(t *testing.T) {
	c := qt.New(t)
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	c.Assert(err, qt.IsNil)
	const begin, end = "<!-- exit-codes: begin (TestREADMEExitCodes) -->\n", "<!-- exit-codes: end -->"
	s := string(b)
	i, j := strings.Index(s, begin), strings.Index(s, end)
	c.Assert(i >= 0 && j > i, qt.IsTrue, qt.Commentf("README.md lacks the exit-code markers"))
	c.Check(s[i+len(begin):j], qt.Equals, exitMarkdown())
}
