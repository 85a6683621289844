package examine

import (
	"errors"
	"io"
	"sync"
	"syscall"
	"testing"

	qt "github.com/frankban/quicktest"

	"github.com/go-mdraid/mdraid/superblock"
	"github.com/go-mdraid/mdraid/superblock/superblocktest"
)

// recorder is a device that records the reads made of it and fails, with
// EIO, those that touch the bytes before bad.
type recorder struct {
	r   io.ReaderAt
	bad int64

	mu    sync.Mutex
	reads [][2]int64 // offset, length
}

func (d *recorder) ReadAt(p []byte, off int64) (int, error) {
	d.mu.Lock()
	d.reads = append(d.reads, [2]int64{off, int64(len(p))})
	d.mu.Unlock()
	if off < d.bad {
		return 0, syscall.EIO
	}
	return d.r.ReadAt(p, off)
}

// TestInspectReadsEachBlockOnce (issue 14): examining a device reads each
// block it needs once, and the adjacent 1.1 and 1.2 locations with one
// read: three reads for the superblock locations of every real image,
// plus one for each structure the superblock announces (bitmap,
// bad-block log, PPL), and no byte read twice.
func TestInspectReadsEachBlockOnce(t *testing.T) {
	n := 0
	for _, img := range superblocktest.Images(t) {
		n++
		t.Run(img.Name, func(t *testing.T) {
			c := qt.New(t)
			d := &recorder{r: img.ReaderAt}
			rep := new(Inspector).Inspect(d, img.Size, img.Name)
			c.Assert(rep.Superblock(), qt.IsNotNil, qt.Commentf("status %v: %v", rep.Status, rep.Err))
			c.Assert(d.reads[0], qt.Equals, [2]int64{0, 2 * superblock.BlockSize}, qt.Commentf("reads %v", d.reads))
			sb := rep.Superblock()
			extra := 0
			if sb.HasBitmap() && !(sb.Version == superblock.Version11 && sb.BitmapOffset == 8) {
				extra++ // a 1.1 bitmap 8 sectors in is in the first read
			}
			if sb.BBLogSize != 0 && sb.BBLogOffset != 0 && sb.Features&superblock.FeatureBadBlocks != 0 {
				extra++
			}
			if sb.HasPPL() {
				extra++
			}
			c.Check(len(d.reads) <= 3+extra, qt.IsTrue, qt.Commentf("reads %v", d.reads))
			for i, a := range d.reads {
				for _, b := range d.reads[:i] {
					c.Check(a[0] >= b[0]+b[1] || b[0] >= a[0]+a[1], qt.IsTrue, qt.Commentf("reads %v and %v overlap", b, a))
				}
			}
		})
	}
	if n == 0 {
		superblocktest.Missing(t, "no images")
	}
}

// TestInspectFirstBlockUnreadable: when the one read of the 1.1 and 1.2
// locations fails (a bad sector at byte 0), each location is read on its
// own, so a 1.2 superblock at byte 4096 is still found and the 1.1
// location reports its own I/O error, as when each was read alone.
func TestInspectFirstBlockUnreadable(t *testing.T) {
	c := qt.New(t)
	var img superblocktest.Image
	for _, im := range superblocktest.Images(t) {
		if sb := new(Inspector).Inspect(im.ReaderAt, im.Size, im.Name).Superblock(); sb != nil && sb.Version == superblock.Version12 {
			img = im
			break
		}
	}
	if img.ReaderAt == nil {
		superblocktest.Missing(t, "no 1.2 image")
	}
	want := new(Inspector).Inspect(img.ReaderAt, img.Size, img.Name)
	d := &recorder{r: img.ReaderAt, bad: superblock.BlockSize}
	rep := new(Inspector).Inspect(d, img.Size, img.Name)
	c.Assert(rep.Status, qt.Equals, want.Status)
	c.Assert(rep.Candidate.Offset, qt.Equals, int64(superblock.BlockSize))
	c.Assert(rep.Superblock(), qt.DeepEquals, want.Superblock())
	var at0 *superblock.Candidate
	for i := range rep.Probe.Candidates {
		if rep.Probe.Candidates[i].Offset == 0 {
			at0 = &rep.Probe.Candidates[i]
		}
	}
	c.Assert(at0, qt.IsNotNil, qt.Commentf("candidates %+v", rep.Probe.Candidates))
	c.Assert(errors.Is(at0.Err, syscall.EIO), qt.IsTrue, qt.Commentf("%v", at0.Err))
	c.Assert(at0.Superblock, qt.IsNil)
}
