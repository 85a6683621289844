package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sync"
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

// TestDevNodesLooksUpOnce: the 0.90 device column looks each
// major:minor up once per examine (as mdadm's map_dev reads /dev once),
// however many rows and devices name it, and gives the same answer every
// time, from any goroutine.
func TestDevNodesLooksUpOnce(t *testing.T) {
	c := qt.New(t)
	sys, dev := t.TempDir(), t.TempDir()
	c.Assert(os.MkdirAll(filepath.Join(sys, "devices", "virtual", "block", "vda"), 0o755), qt.IsNil)
	c.Assert(os.MkdirAll(filepath.Join(sys, "dev", "block"), 0o755), qt.IsNil)
	c.Assert(os.Symlink("../../devices/virtual/block/vda", filepath.Join(sys, "dev", "block", "253:0")), qt.IsNil)
	c.Assert(os.WriteFile(filepath.Join(dev, "vda"), nil, 0o644), qt.IsNil)
	node := devNodes(sys, dev)
	c.Assert(node(253, 0), qt.Equals, filepath.Join(dev, "vda"))
	c.Assert(node(253, 1), qt.Equals, "")
	// Gone from both trees: the answers stay those of the first look.
	c.Assert(os.RemoveAll(sys), qt.IsNil)
	c.Assert(os.RemoveAll(dev), qt.IsNil)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.Check(node(253, 0), qt.Equals, filepath.Join(dev, "vda"))
			c.Check(node(253, 1), qt.Equals, "")
		}()
	}
	wg.Wait()
}
