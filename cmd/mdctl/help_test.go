package main

import (
	"bytes"
	"runtime/debug"
	"testing"

	qt "github.com/frankban/quicktest"
)

// TestHelpAndVersion runs what a new user types first: help (with and
// without a command), version as a command and as -V and --version.
func TestHelpAndVersion(t *testing.T) {
	tests := []struct {
		args []string
		out  string // substring of stdout
	}{
		{[]string{"help"}, "Usage: mdctl <command>"},
		{[]string{"help", "status"}, "Usage: mdctl status"},
		{[]string{"help", "replace"}, "--with"},
		{[]string{"version"}, "mdctl "},
		{[]string{"--version"}, "mdctl "},
		{[]string{"-V"}, "mdctl "},
	}
	for _, tt := range tests {
		t.Run(tt.args[0]+" "+tt.out, func(t *testing.T) {
			out, errOut, code := mdctlExit(t, tt.args...)
			qt.Assert(t, code, qt.Equals, 0, qt.Commentf("stderr: %s", errOut))
			qt.Assert(t, errOut, qt.Equals, "")
			qt.Assert(t, out, qt.Contains, tt.out)
		})
	}
	_, errOut, code := mdctlExit(t, "help", "nope")
	qt.Assert(t, code, qt.Not(qt.Equals), 0)
	qt.Assert(t, errOut, qt.Contains, "unexpected argument nope")
}

// exited is the panic of mdctlExit's exit function.
type exited struct{ code int }

// mdctlExit is mdctl with an exit function that ends the run, as
// os.Exit does (kong goes on parsing after a replaced exit returns).
func mdctlExit(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	func() {
		defer func() {
			if r := recover(); r != nil {
				e, ok := r.(exited)
				if !ok {
					panic(r)
				}
				code = e.code
			}
		}()
		code = run(args, &out, &errb, func(c int) { panic(exited{c}) })
	}()
	return out.String(), errb.String(), code
}

func TestVersionOf(t *testing.T) {
	bi := func(v string, settings ...string) *debug.BuildInfo {
		b := &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: v}}
		for i := 0; i+1 < len(settings); i += 2 {
			b.Settings = append(b.Settings, debug.BuildSetting{Key: settings[i], Value: settings[i+1]})
		}
		return b
	}
	tests := []struct {
		name string
		bi   *debug.BuildInfo
		ok   bool
		want string
	}{
		{"module", bi("v0.3.0", "vcs.revision", "abc"), true, "mdctl v0.3.0 go1.26.0"},
		{"work tree", bi("(devel)", "vcs.revision", "0123abcd", "vcs.modified", "true"), true, "mdctl 0123abcd+dirty go1.26.0"},
		{"clean work tree", bi("(devel)", "vcs.revision", "0123abcd", "vcs.modified", "false"), true, "mdctl 0123abcd go1.26.0"},
		{"no vcs", bi("(devel)"), true, "mdctl (devel) go1.26.0"},
		{"no build info", nil, false, "mdctl (unknown version)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			qt.Assert(t, versionOf(tt.bi, tt.ok), qt.Equals, tt.want)
		})
	}
}

// TestUsageErrorIsOneLine: a command line that does not parse prints one
// line on stderr (the error, kong's guess at the flag or mdadm's
// spelling of the command, where the usage is shown) and nothing on
// stdout, so that a redirected or piped output is never help text.
func TestUsageErrorIsOneLine(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"status", "--format=prometheus", "--sotre", "x"}, `mdctl: error: unknown flag --sotre, did you mean "--store"\? \(mdctl status --help shows the usage\)`},
		{[]string{"detail", "md0"}, `mdctl: error: unexpected argument detail; did you mean mdctl status\? \(mdctl --help shows the usage\)`},
		{[]string{"-D", "/dev/md0"}, `mdctl: error: unknown flag -D; did you mean mdctl status\? \(mdctl --help shows the usage\)`},
		{[]string{"status", "--json", "--nosuch"}, `mdctl: error: unknown flag --nosuch \(mdctl status --help shows the usage\)`},
		{[]string{"stop"}, `mdctl: error: stop: name the arrays to stop, or give --scan for every array \(mdctl stop --help shows the usage\)`},
	} {
		c := qt.New(t)
		stdout, stderr, code := mdctlExit(t, tt.args...)
		c.Check(code, qt.Equals, exitUsage, qt.Commentf("%q", tt.args))
		c.Check(stdout, qt.Equals, "", qt.Commentf("%q", tt.args))
		c.Check(stderr, qt.Matches, tt.want+"\n", qt.Commentf("%q", tt.args))
	}
}
