// Package golden compares test output with golden files kept in a
// package's testdata directory, and rewrites them when the test binary
// runs with -update:
//
//	go test ./cmd/mdctl -run Golden -update
//
// A rewritten file is a change to review like any other: git diff shows
// what the output now is.
package golden

import (
	"errors"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	qt "github.com/frankban/quicktest"
)

var update = flag.Bool("update", false, "rewrite the golden files with the output the tests produce")

// Updating reports whether the test binary runs with -update.
func Updating() bool { return *update }

// Check compares got with the content of the file at path. With -update it
// writes got to path instead (creating its directory). An empty got with
// -update removes the file, and an absent file stands for empty output, so
// a command that prints nothing on a stream needs no file for it.
func Check(tb testing.TB, path string, got []byte) {
	tb.Helper()
	if *update {
		if len(got) == 0 {
			if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
				tb.Fatal(err)
			}
			return
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			tb.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		want, err = nil, nil
	}
	if err != nil {
		tb.Fatal(err)
	}
	qt.Check(tb, string(got), qt.Equals, string(want),
		qt.Commentf("output differs from %s; if the change is intended, run the test with -update and review git diff", path))
}
