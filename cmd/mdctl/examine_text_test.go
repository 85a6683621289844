package main

import (
	"fmt"
	"math"
	"testing"

	qt "github.com/frankban/quicktest"

	"github.com/go-mdraid/mdraid/superblock"
)

// TestSprintfMatchesFmt: examine's fast path for its most common line
// formats gives what fmt.Sprintf gives, for every kind of argument.
func TestSprintfMatchesFmt(t *testing.T) {
	c := qt.New(t)
	args := []any{
		"", "text", "a%d", int(-7), int(math.MaxInt64), int32(math.MinInt32), int64(-1), uint32(math.MaxUint32),
		uint64(math.MaxUint64), uint8(200), uint16(9), superblock.Version12, superblock.LevelRAID5, 1.5, nil, []byte("x"),
	}
	formats := []string{"%s", "%d", "%d sectors", "%dK", "%d%s", "%08x", "%v", "plain", "%d %%", "%s%s"}
	for _, f := range formats {
		for _, a := range args {
			c.Check(sprintf(f, a), qt.Equals, fmt.Sprintf(f, a), qt.Commentf("format %q, %T %v", f, a, a))
		}
		c.Check(sprintf(f, []any{}...), qt.Equals, fmt.Sprintf(f, []any{}...), qt.Commentf("format %q, no arguments", f))
		c.Check(sprintf(f, 1, "x"), qt.Equals, fmt.Sprintf(f, 1, "x"), qt.Commentf("format %q, two arguments", f))
	}
}
