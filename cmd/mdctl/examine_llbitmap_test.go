package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	qt "github.com/frankban/quicktest"

	"github.com/go-mdraid/mdraid/md"
	"github.com/go-mdraid/mdraid/superblock"
	"github.com/go-mdraid/mdraid/superblock/superblocktest"
)

// TestExamineLocklessBitmap: a member with a lockless bitmap (version 6)
// shows its chunk states in one extra line and in --json, decoded as
// md-llbitmap.c lays them out (docs/kernels.md §4): the captured
// raid1-bitmap member with its bitmap rewritten by those facts (no
// kernel of the matrix builds the lockless bitmap).
func TestExamineLocklessBitmap(t *testing.T) {
	c := qt.New(t)
	img := superblocktest.ByName(t, "fixtures/raid1-bitmap/vda")
	dev := img.Bytes(t)
	sb, err := superblock.Decode(dev[4096:])
	c.Assert(err, qt.IsNil)
	off, err := superblock.BitmapLocation(sb)
	c.Assert(err, qt.IsNil)
	bm, err := superblock.DecodeBitmap(dev[off:])
	c.Assert(err, qt.IsNil)
	bm.Version, bm.ChunkSize = superblock.BitmapMajorLockless, 128
	bm.State |= superblock.BitmapFirstUse
	b, err := bm.MarshalBinary()
	c.Assert(err, qt.IsNil)
	copy(dev[off:], b)
	chunks := (bm.SyncSize + 127) / 128
	states := bytes.Repeat([]byte{1}, int(chunks))
	states[0], states[1], states[2] = 0, 2, 3
	copy(dev[off+superblock.LLBitmapDataOffset:], states)
	path := filepath.Join(t.TempDir(), "member")
	c.Assert(os.WriteFile(path, dev, 0o644), qt.IsNil)

	out, stderr, code := mdctl(t, "examine", path)
	c.Assert(code, qt.Equals, 0, qt.Commentf("stderr: %s", stderr))
	want := fmt.Sprintf("Lockless Bitmap : %d chunks of 64 KiB: 1 unwritten, %d clean, 1 dirty, 1 need-sync (not yet initialised: the first start sets every chunk)", chunks, chunks-3)
	c.Check(out, qt.Contains, "Internal Bitmap : 8 sectors from superblock\n"+want+"\n")

	out, _, code = mdctl(t, "examine", "--json", path)
	c.Assert(code, qt.Equals, 0)
	var reps []jsonReport
	c.Assert(json.Unmarshal([]byte(out), &reps), qt.IsNil)
	j := reps[0].Bitmap
	c.Assert(j, qt.IsNotNil)
	c.Check(j.ChunkBytes, qt.Equals, uint64(64<<10))
	c.Assert(j.Lockless, qt.IsNotNil)
	c.Check(j.Lockless.Chunks, qt.Equals, chunks)
	c.Check(j.Lockless.States["clean"], qt.Equals, chunks-3)
	c.Check(j.Lockless.States["need-sync"], qt.Equals, uint64(1))
	c.Check(j.Lockless.ToSync, qt.Equals, uint64(2))

	// A chunk size the kernel refuses: said, not guessed.
	bm.ChunkSize = 96
	b, err = bm.MarshalBinary()
	c.Assert(err, qt.IsNil)
	copy(dev[off:], b)
	c.Assert(os.WriteFile(path, dev, 0o644), qt.IsNil)
	out, _, _ = mdctl(t, "examine", path)
	c.Check(out, qt.Contains, "Lockless Bitmap : chunk states not read: ")
}

// TestBitmapLineLockless: status names a lockless bitmap, counts what a
// resync would write, and lists the chunks by state.
func TestBitmapLineLockless(t *testing.T) {
	c := qt.New(t)
	dirty := uint64(3)
	b := &md.ArrayBitmap{OffsetSectors: 8, ChunkBytes: 64 << 10, Chunks: 1984, Dirty: &dirty, From: "vda",
		Version: superblock.BitmapMajorLockless, Lockless: &md.LocklessBitmap{Unwritten: 1000, Clean: 981, Dirty: 2, NeedSync: 1}}
	c.Check(bitmapLine(b), qt.Equals, "  bitmap: lockless (llbitmap) at +8 sectors, 64.0 KiB chunks, 3 of 1984 to sync (0.2%, read from vda): 1000 unwritten, 981 clean, 2 dirty, 1 need-sync")
	b.Version, b.Lockless = 4, nil
	c.Check(bitmapLine(b), qt.Equals, "  bitmap: internal at +8 sectors, 64.0 KiB chunks, 3 of 1984 dirty (0.2%, read from vda)")
}
