package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	qt "github.com/frankban/quicktest"
)

// TestREADMETour pins the README's tour blocks to what the tour prints
// now: every command of the tour is in the README, followed by exactly
// the output mdctl gives (the captures rebuilt under a temporary root
// shown as /tour; runs of spaces compare as one, since column widths
// follow the root's length).
func TestREADMETour(t *testing.T) {
	if testing.Short() {
		t.Skip("builds mdctl")
	}
	c := qt.New(t)
	bin := filepath.Join(t.TempDir(), "mdctl")
	build := exec.Command("go", "build", "-o", bin, "../../cmd/mdctl")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := build.CombinedOutput()
	c.Assert(err, qt.IsNil, qt.Commentf("%s", out))
	root := filepath.Join(t.TempDir(), "tour")
	var b bytes.Buffer
	c.Assert(run(&b, bin, root, "../../testdata/fixtures"), qt.IsNil)
	tour := blocks(strings.ReplaceAll(b.String(), root, "/tour"))
	readme, err := os.ReadFile("../../README.md")
	c.Assert(err, qt.IsNil)
	inREADME := map[string]string{}
	for _, fence := range regexp.MustCompile("(?s)```[a-z]*\n(.*?)```").FindAllStringSubmatch(string(readme), -1) {
		for cmd, text := range blocks(fence[1]) {
			inREADME[cmd] = text
		}
	}
	c.Assert(tour, qt.Not(qt.HasLen), 0)
	for cmd, want := range tour {
		got, ok := inREADME[cmd]
		if !c.Check(ok, qt.IsTrue, qt.Commentf("the README lacks the tour step %q (scripts/tour /tour prints it)", cmd)) {
			continue
		}
		c.Check(squeeze(got), qt.Equals, squeeze(want), qt.Commentf("README block of %q differs from scripts/tour /tour", cmd))
	}
}

// blocks splits tour text into command line -> the lines that follow it
// up to the next "$ mdctl" line.
func blocks(s string) map[string]string {
	out := map[string]string{}
	cmd := ""
	var text strings.Builder
	flush := func() {
		if cmd != "" {
			out[cmd] = text.String()
		}
		text.Reset()
	}
	for _, line := range strings.SplitAfter(s, "\n") {
		if strings.HasPrefix(line, "$ mdctl ") {
			flush()
			cmd = strings.TrimSpace(line)
			continue
		}
		text.WriteString(line)
	}
	flush()
	return out
}

var spaces = regexp.MustCompile(` {2,}`)

func squeeze(s string) string { return spaces.ReplaceAllString(strings.TrimRight(s, "\n"), " ") }
