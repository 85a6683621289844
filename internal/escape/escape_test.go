package escape

import (
	"strings"
	"testing"

	qt "github.com/frankban/quicktest"
)

func TestText(t *testing.T) {
	for _, tt := range []struct{ name, in, want string }{
		{"plain", "talos:boot", "talos:boot"},
		{"space kept", "my array", "my array"},
		{"letters kept", "données", "données"},
		{"forged line", "h:\n  health: ONLINE\x1b[8m", `h:\x0a  health: ONLINE\x1b[8m`},
		{"invalid utf-8", "vmtest:a7\xff", `vmtest:a7\xff`},
		{"tab, cr, del", "a\tb\rc\x7f", `a\x09b\x0dc\x7f`},
		{"backslash", `a\x1b`, `a\\x1b`},
		{"c1 control", "a\u0085b\u009b", `a\u0085b\u009b`},
		{"bidi override", "abc\u202edcba", `abc\u202edcba`},
		{"line separator", "a\u2028b", `a\u2028b`},
		{"nbsp", "a\u00a0b", `a\u00a0b`},
		{"tag character", "a\U000e0041", `a\U000e0041`},
		{"truncated rune", "a\xe2\x82", `a\xe2\x82`},
		{"nul", "a\x00b", `a\x00b`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			qt.Check(t, Text(tt.in), qt.Equals, tt.want)
		})
	}
}

func TestLines(t *testing.T) {
	qt.Check(t, Lines("one\ntwo \x1b[2J\nthree"), qt.Equals, "one\ntwo \\x1b[2J\nthree")
	qt.Check(t, Lines("plain\ntext"), qt.Equals, "plain\ntext")
}

func FuzzText(f *testing.F) {
	for _, s := range []string{"", "talos:boot", "a\xffb", "\x1b[31m", `\\x`, "\u202e", "a\nb"} {
		f.Add(s, "x")
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		ea := Text(a)
		if !Safe(ea) {
			t.Fatalf("Text(%q) = %q is not safe", a, ea)
		}
		if a != b && ea == Text(b) {
			t.Fatalf("Text(%q) == Text(%q) == %q", a, b, ea)
		}
		if Safe(a) && !strings.Contains(a, `\`) && ea != a {
			t.Fatalf("Text(%q) changed a safe string to %q", a, ea)
		}
		for _, l := range strings.Split(Lines(a), "\n") {
			if !Safe(l) {
				t.Fatalf("Lines(%q) has an unsafe line %q", a, l)
			}
		}
	})
}
