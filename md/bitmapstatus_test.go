package md

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"testing"

	qt "github.com/frankban/quicktest"
	"github.com/go-mdraid/mdraid/internal/fixture"
	"github.com/go-mdraid/mdraid/superblock"
)

// TestCountDirty: the set bits among the first n, a partial last byte
// counted from its low bits as mdadm's count_dirty_bits does.
func TestCountDirty(t *testing.T) {
	c := qt.New(t)
	buf := []byte{0xff, 0x0f, 0xf0}
	for _, tc := range []struct{ bits, want uint64 }{
		{0, 0}, {1, 1}, {8, 8}, {12, 12}, {16, 12}, {20, 12}, {21, 13}, {24, 16},
	} {
		c.Check(countDirty(buf, tc.bits), qt.Equals, tc.want, qt.Commentf("%d bits", tc.bits))
	}
}

// TestStatusBitmapHostile: the bitmap's size comes from the disk. A
// header that claims more bits than a status reads (or than the device
// holds) is an error in Array.Bitmap, matched by errors.Is, and the rest
// of the report is as before.
func TestStatusBitmapHostile(t *testing.T) {
	for _, tc := range []struct {
		name  string
		field int64 // offset in the bitmap superblock
		value uint64
		size  int // bytes written
		is    error
	}{
		{"huge sync size", 40, 1 << 62, 8, superblock.ErrOutOfRange},
		{"bits past every bound (Bits saturates)", 40, 1<<64 - 1, 8, superblock.ErrOutOfRange},
		{"chunk not a power of two", 52, 3, 4, superblock.ErrInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := qt.New(t)
			m := fixtureManager(t, fixture.Named(t, "raid1-bitmap"))
			ctx := context.Background()
			before, err := m.Status(ctx, "md0")
			c.Assert(err, qt.IsNil)
			c.Assert(before.Bitmap, qt.IsNotNil)
			c.Assert(before.Bitmap.Error, qt.Equals, "")
			off, err := superblock.BitmapLocation(newestOf(t, m))
			c.Assert(err, qt.IsNil)
			for _, d := range []string{"vda", "vdb"} {
				f, err := os.OpenFile(filepath.Join(m.devRoot, d), os.O_RDWR, 0)
				c.Assert(err, qt.IsNil)
				b := make([]byte, 8)
				binary.LittleEndian.PutUint64(b, tc.value)
				_, err = f.WriteAt(b[:tc.size], off+tc.field)
				c.Assert(err, qt.IsNil)
				c.Assert(f.Close(), qt.IsNil)
			}
			a, err := m.Status(ctx, "md0")
			c.Assert(err, qt.IsNil)
			c.Assert(a.Bitmap, qt.IsNotNil)
			c.Check(a.Bitmap.Dirty, qt.IsNil)
			c.Check(a.Bitmap.Error, qt.Not(qt.Equals), "")
			if tc.is != nil {
				c.Check(errors.Is(a.Bitmap.Err, tc.is), qt.IsTrue, qt.Commentf("%v", a.Bitmap.Err))
			}
			c.Check(a.Availability, qt.Equals, before.Availability)
			c.Check(a.Errors, qt.DeepEquals, before.Errors)
		})
	}
}

// TestStatusLocklessBitmap: a lockless bitmap (version 6) is read as
// md-llbitmap.c lays it out (6.18 to 7.2): the chunk size in sectors,
// ceil(sync_size/chunksize) chunks, one state byte each from 1024 bytes
// after the bitmap superblock. Status counts them by state; Dirty is what
// a resync would write. Sizes from the disk that a status will not read,
// and chunk sizes the kernel refuses, are errors in Array.Bitmap.
//
// No kernel of the matrix builds the lockless bitmap (docs/kernels.md
// §4), so the bitmap here is the captured classic one rewritten by these
// facts, not a kernel's.
func TestStatusLocklessBitmap(t *testing.T) {
	const sync = 253952 // sectors: raid1-bitmap's sync size
	for _, tc := range []struct {
		name            string
		chunk, syncSize uint64
		states          []byte
		is              error
	}{
		{name: "states", chunk: 128, syncSize: sync, states: append(append(append(make([]byte, 1000), bytes.Repeat([]byte{1}, 900)...), 2, 2, 3, 4, 6, 9), bytes.Repeat([]byte{1}, 78)...)},
		{name: "chunk not a power of two", chunk: 96, syncSize: sync, is: superblock.ErrInvalid},
		{name: "more chunks than a status reads", chunk: 128, syncSize: 128 << 21, is: superblock.ErrOutOfRange},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := qt.New(t)
			m := fixtureManager(t, fixture.Named(t, "raid1-bitmap"))
			ctx := context.Background()
			off, err := superblock.BitmapLocation(newestOf(t, m))
			c.Assert(err, qt.IsNil)
			for _, d := range []string{"vda", "vdb"} {
				f, err := os.OpenFile(filepath.Join(m.devRoot, d), os.O_RDWR, 0)
				c.Assert(err, qt.IsNil)
				b := make([]byte, superblock.BitmapSize)
				_, err = f.ReadAt(b, off)
				c.Assert(err, qt.IsNil)
				bm, err := superblock.DecodeBitmap(b)
				c.Assert(err, qt.IsNil)
				bm.Version, bm.ChunkSize, bm.SyncSize = superblock.BitmapMajorLockless, uint32(tc.chunk), tc.syncSize
				b, err = bm.MarshalBinary()
				c.Assert(err, qt.IsNil)
				_, err = f.WriteAt(b, off)
				c.Assert(err, qt.IsNil)
				_, err = f.WriteAt(tc.states, off+superblock.LLBitmapDataOffset)
				c.Assert(err, qt.IsNil)
				c.Assert(f.Close(), qt.IsNil)
			}
			a, err := m.Status(ctx, "md0")
			c.Assert(err, qt.IsNil)
			b := a.Bitmap
			c.Assert(b, qt.IsNotNil)
			c.Check(b.Version, qt.Equals, uint32(superblock.BitmapMajorLockless))
			if tc.is != nil {
				c.Check(errors.Is(b.Err, tc.is), qt.IsTrue, qt.Commentf("%v", b.Err))
				c.Check(b.Dirty, qt.IsNil)
				c.Check(b.Lockless, qt.IsNil)
				return
			}
			c.Assert(b.Error, qt.Equals, "")
			c.Check(b.Chunks, qt.Equals, uint64(1984))
			c.Check(b.ChunkBytes, qt.Equals, uint64(64<<10))
			c.Check(*b.Lockless, qt.DeepEquals, LocklessBitmap{Unwritten: 1000, Clean: 978, Dirty: 2, NeedSync: 1, Syncing: 1, SyncingUnwritten: 1, Invalid: 1})
			c.Assert(b.Dirty, qt.IsNotNil)
			c.Check(*b.Dirty, qt.Equals, uint64(2+1+1+1+1))
		})
	}
}

// TestStatusBitmapNotStarted: an array assembled but not started has no
// in-sync member; its bitmap is read from a member holding the freshest
// superblock, as mdadm --examine-bitmap of that member reads it.
func TestStatusBitmapNotStarted(t *testing.T) {
	c := qt.New(t)
	m := fixtureManager(t, fixture.Named(t, "raid1-bitmap"))
	ctx := context.Background()
	running, err := m.Status(ctx, "md0")
	c.Assert(err, qt.IsNil)
	c.Assert(running.Bitmap, qt.IsNotNil)
	md := m.fs.Path("block", "md0", "md")
	c.Assert(os.WriteFile(filepath.Join(md, "array_state"), []byte("inactive\n"), 0o644), qt.IsNil)
	for _, d := range []string{"vda", "vdb"} {
		c.Assert(os.WriteFile(filepath.Join(md, "dev-"+d, "state"), []byte("\n"), 0o644), qt.IsNil)
	}
	a, err := m.Status(ctx, "md0")
	c.Assert(err, qt.IsNil)
	c.Assert(a.Bitmap, qt.IsNotNil)
	c.Check(a.Bitmap.Error, qt.Equals, "")
	c.Check(a.Bitmap.From, qt.Not(qt.Equals), "")
	c.Check(a.Bitmap.Chunks, qt.Equals, running.Bitmap.Chunks)
	c.Check(a.Bitmap.Dirty, qt.DeepEquals, running.Bitmap.Dirty)
}

// newestOf is the freshest member superblock of md0.
func newestOf(t *testing.T, m *Manager) *superblock.Superblock {
	t.Helper()
	s := m.read("md0")
	n := s.newest()
	if n == nil {
		t.Fatal("no superblock")
	}
	return n
}
