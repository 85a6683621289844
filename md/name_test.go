package md

import (
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	qt "github.com/frankban/quicktest"
)

func TestSafeName(t *testing.T) {
	for _, tt := range []struct {
		name, in, want string
	}{
		{"plain", "boot", "boot"},
		{"homehost kept", "talos:boot", "talos:boot"},
		{"slash to dash", "a/b", "a-b"},
		{"path traversal", "../../etc/x", "..-..-etc-x"},
		{"space and tab", "my array\tx", "my_array_x"},
		{"cut at newline", "boot\nMD_DEVNAME=sda", "boot"},
		{"cut at nul", "boot\x00junk", "boot"},
		{"letters", "données", "données"},
		{"empty", "", ""},
		{"only a newline", "\nx", ""},
		{"dot", ".", ""},
		{"dotdot", "..", ""},
		{"leading dash", "-rf", ""},
		{"leading slash becomes dash", "/x", ""},
		{"invalid utf-8", "a7\xff", ""},
		{"escape", "a\x1b[8m", ""},
		{"dollar", "$(reboot)", ""},
		{"equals", "a=b", ""},
		{"quote", `a"b`, ""},
		{"backslash", `a\b`, ""},
		{"bidi override", "a\u202eb", ""},
		{"cr", "a\rb", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := qt.New(t)
			got, err := SafeName(tt.in)
			if tt.want == "" {
				c.Check(err, qt.ErrorIs, ErrUnsafeName)
				c.Check(got, qt.Equals, "")
				return
			}
			c.Assert(err, qt.IsNil)
			c.Check(got, qt.Equals, tt.want)
		})
	}
}

// FuzzSafeName: whatever a superblock holds, SafeName either refuses it
// or returns one path element under /dev/md and one udev export line.
func FuzzSafeName(f *testing.F) {
	for _, s := range []string{"boot", "talos:boot", "../x", "-x", "a\nb", "a b", "\xff", ".", "a/../b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		got, err := SafeName(in)
		if err != nil {
			if got != "" {
				t.Fatalf("SafeName(%q) = %q with error %v", in, got, err)
			}
			if !strings.Contains(err.Error(), "md: ") || strings.ContainsAny(err.Error(), "\n\x1b") {
				t.Fatalf("error for %q is not one escaped line: %q", in, err)
			}
			return
		}
		switch {
		case got == "" || got == "." || got == ".." || got[0] == '-':
			t.Fatalf("SafeName(%q) = %q", in, got)
		case !utf8.ValidString(got) || strings.ContainsAny(got, "/\\\x00\n\r\t \"'`$=;|&<>*?[]{}()"):
			t.Fatalf("SafeName(%q) = %q holds an unsafe character", in, got)
		case filepath.Dir(filepath.Join("/dev/md", got)) != "/dev/md":
			t.Fatalf("SafeName(%q) = %q leaves /dev/md", in, got)
		}
		if again, err := SafeName(got); err != nil || again != got {
			t.Fatalf("SafeName is not idempotent on %q: %q, %v", got, again, err)
		}
	})
}
