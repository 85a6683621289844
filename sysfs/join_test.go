package sysfs

import (
	"path/filepath"
	"testing"
)

// TestJoin: join is filepath.Join, whatever the elements.
func TestJoin(t *testing.T) {
	for _, c := range [][]string{
		{"/sys", "block", "md0", "md", "dev-vdb", "state"},
		{"/", "block"},
		{"", "block"},
		{"sys", "block"},
		{"/sys/", "block"},
		{"/sys", "", "md"},
		{"/sys", "..", "md"},
		{"/sys", "a/../b"},
		{"/sys", "./a"},
		{"/sys", "a/./b"},
		{"/sys//x", "a"},
		{"/sys", "a//b"},
		{"/sys", "a/"},
		{"/sys", "/a"},
		{"/sys/.", "a"},
		{"/sys", "a", ".b"},
		{"/sys", "dev-cciss!c0d0", "state"},
		{"/sys"},
	} {
		if got, want := join(c[0], c[1:]...), filepath.Join(c...); got != want {
			t.Errorf("join%q = %q, want %q", c, got, want)
		}
	}
}
