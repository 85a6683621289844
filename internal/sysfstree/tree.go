package sysfstree

import (
	"os"
	"strings"
	"testing"
)

// Tree materializes manifest, a manifest without its [Header] line, in a
// fresh tb.TempDir() and returns that directory. It fails the test when the
// manifest is malformed.
func Tree(tb testing.TB, manifest string) string {
	tb.Helper()
	return TreeIn(tb, tb.TempDir(), manifest)
}

// TreeIn is [Tree] below dir, which is created if needed; it returns dir.
func TreeIn(tb testing.TB, dir, manifest string) string {
	tb.Helper()
	entries, err := Parse(strings.NewReader(Header + "\n" + manifest))
	if err != nil {
		tb.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	if err := Materialize(dir, entries); err != nil {
		tb.Fatal(err)
	}
	return dir
}
