package superblock

import (
	"bytes"
	"errors"
	"testing"

	qt "github.com/frankban/quicktest"
)

// TestLLBitmap: the chunk count is ceil(sync_size/chunksize) with the
// chunk size in sectors, the states are read one byte per chunk from
// 1024 bytes after the bitmap superblock (md-llbitmap.c, 6.18 to 7.2),
// and nothing beyond the last chunk is counted.
func TestLLBitmap(t *testing.T) {
	c := qt.New(t)
	sb := &Superblock{Version: Version12, SuperOffset: 8, BitmapOffset: 8, Features: FeatureBitmapOffset}
	bm := &Bitmap{Version: BitmapMajorLockless, ChunkSize: 128, SyncSize: 128*9 + 1}
	chunks, chunkBytes, err := bm.LLChunks()
	c.Assert(err, qt.IsNil)
	c.Check(chunks, qt.Equals, uint64(10))
	c.Check(chunkBytes, qt.Equals, uint64(64<<10))

	img := make([]byte, 1<<20)
	states := []byte{0, 1, 1, 2, 3, 4, 5, 6, 7, 9}
	at := 8*512 + 8*512 + LLBitmapDataOffset
	copy(img[at:], states)
	img[at+len(states)] = 2 // past the last chunk: not counted
	got, err := ReadLLBitmap(bytes.NewReader(img), int64(len(img)), sb, bm, 1<<20)
	c.Assert(err, qt.IsNil)
	c.Check(got.ByState, qt.DeepEquals, [LLStates]uint64{1, 2, 1, 1, 1, 1, 1, 1})
	c.Check(got.Invalid, qt.Equals, uint64(1))
	c.Check(got.ToSync(), qt.Equals, uint64(1+1+1+1+1+1))
	c.Check(LLBitmapState(3).String(), qt.Equals, "need-sync")
	c.Check(LLBitmapState(9).String(), qt.Equals, "invalid(9)")

	// Bounds: the count comes from the disk.
	_, err = ReadLLBitmap(bytes.NewReader(img), int64(len(img)), sb, bm, 9)
	c.Check(err, qt.ErrorIs, ErrOutOfRange)
	_, err = ReadLLBitmap(bytes.NewReader(img[:at+5]), int64(at+5), sb, bm, 1<<20)
	c.Check(err, qt.ErrorIs, ErrOutOfRange)
	huge := *bm
	huge.SyncSize = 1<<64 - 1
	_, err = ReadLLBitmap(bytes.NewReader(img), int64(len(img)), sb, &huge, 1<<20)
	c.Check(err, qt.ErrorIs, ErrOutOfRange)

	// What the kernel refuses.
	for _, b := range []Bitmap{{Version: 4, ChunkSize: 128}, {Version: 6, ChunkSize: 0}, {Version: 6, ChunkSize: 96}} {
		_, _, err := b.LLChunks()
		c.Check(errors.Is(err, ErrInvalid), qt.IsTrue, qt.Commentf("%+v: %v", b, err))
	}
}
