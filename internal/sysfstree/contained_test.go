package sysfstree

import (
	"strings"
	"testing"

	qt "github.com/frankban/quicktest"
)

func TestContained(t *testing.T) {
	tests := []struct {
		name, manifest string
		ok             bool
	}{
		{"real shape", sample, true},
		{"loop", "l \"a\" \"b\"\nl \"b\" \"a\"\n", true},
		{"self", "l \"x/a\" \"a\"\n", true},
		{"up to root", "l \"x/y/a\" \"../..\"\n", true},
		{"dot", "l \"x/a\" \".\"\n", true},
		{"dangling", "l \"x/a\" \"../nowhere/at/all\"\n", true},
		{"up too far", "l \"x/a\" \"../..\"\n", false},
		{"up from the root", "l \"a\" \"..\"\n", false},
		{"dot-dot after a name", "l \"x/y/a\" \"../b/../..\"\n", false},
		// b resolves to the root, so b/.. would leave it although the
		// target looks like it stays inside.
		{"through another link", "l \"x/y/b\" \"../..\"\nl \"c\" \"x/y/b/..\"\n", false},
		{"entry below a link", "l \"x/a\" \"..\"\nf \"x/a/f\" \"1\\n\"\n", false},
		{"link below a link", "l \"x\" \"y\"\nl \"x/a\" \"..\"\n", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := qt.New(t)
			m := tt.manifest
			if !strings.HasPrefix(m, Header) {
				m = Header + "\n" + m
			}
			entries, err := Parse(strings.NewReader(m))
			c.Assert(err, qt.IsNil)
			err = Contained(entries)
			if tt.ok {
				c.Check(err, qt.IsNil)
			} else {
				c.Check(err, qt.IsNotNil)
			}
		})
	}
}

// TestContain: what Contain keeps is contained, and only offending
// entries are dropped.
func TestContain(t *testing.T) {
	c := qt.New(t)
	entries, err := Parse(strings.NewReader(Header + `
l "x/a" ".."
f "x/a/f" "1\n"
l "b" ".."
l "x/y/c" "../z/../.."
f "x/g" "2\n"
l "x/h" "../x/g"
`))
	c.Assert(err, qt.IsNil)
	got := Contain(entries)
	c.Check(Contained(got), qt.IsNil)
	var paths []string
	for _, e := range got {
		paths = append(paths, e.Path)
	}
	c.Check(paths, qt.DeepEquals, []string{"x/a", "x/g", "x/h"})
}

func TestParseLoose(t *testing.T) {
	c := qt.New(t)
	got := ParseLoose([]byte(Header + "\nf \"a\" \"1\"\nf \"b\nx\n# c\nl \"d\" \"a\"\n\nd \"../e\"\n"))
	c.Check(got, qt.DeepEquals, []Entry{{Kind: File, Path: "a", Data: "1"}, {Kind: Link, Path: "d", Data: "a"}})
}
