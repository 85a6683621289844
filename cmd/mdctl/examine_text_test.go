package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sync"
	"testing"

	qt "github.com/frankban/quicktest"
	"github.com/google/uuid"

	"github.com/go-mdraid/mdraid/superblock"
)

// TestSprintfMatchesFmt: examine's fast path for its most common line
// formats gives what fmt.Sprintf gives, for every kind of argument, and
// mdadmUUID what its fmt form gives.
func TestSprintfMatchesFmt(t *testing.T) {
	c := qt.New(t)
	args := []any{
		"", "text", "a%d", int(-7), int(math.MaxInt64), int32(math.MinInt32), int64(-1), uint32(math.MaxUint32),
		uint64(math.MaxUint64), uint32(0xabc), uint8(200), uint16(9), int8(-3), superblock.Version12, superblock.LevelRAID5,
		superblock.FeatureBitmapOffset, 1.5, nil, []byte("x"), true,
	}
	formats := []string{
		"%s", "%d", "%x", "%d sectors", "%dK", "%d%s", "%d sectors%s", "%d KiB%s", "0x%x", "%x - correct",
		"%x - expected %x", "%08x", "%v", "plain", "", "%d %%", "%s%s", "%d (%d->%d)", "near=%d, %s=%d",
		"before=%d sectors, after=%d sectors", "%d entries available at offset %d sectors%s", "0.%02d.%02d",
		"%", "%d%", "%q", "%5d", "%-3s",
	}
	for _, f := range formats {
		c.Check(sprintf(f, []any{}...), qt.Equals, fmt.Sprintf(f, []any{}...), qt.Commentf("format %q, no arguments", f))
		for _, a := range args {
			c.Check(sprintf(f, a), qt.Equals, fmt.Sprintf(f, a), qt.Commentf("format %q, %T %v", f, a, a))
			for _, b := range args {
				c.Check(sprintf(f, a, b), qt.Equals, fmt.Sprintf(f, a, b), qt.Commentf("format %q, %T %v, %T %v", f, a, a, b, b))
				c.Check(sprintf(f, b, a, b), qt.Equals, fmt.Sprintf(f, b, a, b), qt.Commentf("format %q, %T %v, %T %v, %T %v", f, b, b, a, a, b, b))
			}
		}
	}
	for _, u := range []uuid.UUID{{}, uuid.MustParse("77e61baf-c0b5-d7d0-39cf-575b64d4878c"), uuid.Max} {
		c.Check(mdadmUUID(u), qt.Equals, fmt.Sprintf("%x:%x:%x:%x", u[0:4], u[4:8], u[8:12], u[12:16]))
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
