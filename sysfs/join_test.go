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

// TestMemo: a value is computed once per WithCache, every time without.
func TestMemo(t *testing.T) {
	calls := 0
	f := func() any { calls++; return calls }
	var plain FS
	plain.Memo("k", f)
	plain.Memo("k", f)
	if calls != 2 {
		t.Fatalf("without a cache: %d calls, want 2", calls)
	}
	c := plain.WithCache()
	if v1, v2 := c.Memo("k", f), c.Memo("k", f); v1 != 3 || v2 != 3 {
		t.Fatalf("with a cache: %v, %v; want 3 twice", v1, v2)
	}
	if v := c.Memo("other", f); v != 4 {
		t.Fatalf("another key: %v, want 4", v)
	}
	if v := plain.WithCache().Memo("k", f); v != 5 {
		t.Fatalf("a new cache: %v, want 5", v)
	}
}
