package md

import (
	"bytes"
	"runtime"
	"testing"

	qt "github.com/frankban/quicktest"
	"github.com/google/uuid"

	"github.com/go-mdraid/mdraid/sysfs"
)

// These tests come from the adversarial review of the replace write path
// (issue 10, review findings 1, 2, 3, 6, 7 and 8).

// TestCandidateFactsHostileBitmapAllocation: a hostile candidate (one
// 1.2 superblock with a bitmap whose bits fill almost the whole disk)
// does not make candidateFacts allocate what its superblock says.
func TestCandidateFactsHostileBitmapAllocation(t *testing.T) {
	c := qt.New(t)
	r := newReplaceRig(t, "raid1-bitmap")
	small := r.candidate(t, "vdy", 64<<20)
	f := r.facts(t, "")
	setAction(sysfs.ActionIdle)(f.s)
	dropMember("vdb")(f.s)
	p, err := planReplace(f, r.m.candidateFacts(small, true), ReplaceRequest{Array: r.name, With: small, AllowImageFile: true}, uuid.New())
	c.Assert(err, qt.IsNil)

	const size = 1 << 30
	path := r.candidate(t, "vdz", size)
	sb := p.Superblock.Clone()
	sb.DataOffset = size/512 - 64
	sb.DataSize = 64
	bm := *f.bitmap
	bm.ChunkSize = 512
	bm.SyncSize = 900 << 20 * 8 // bits/8 = 900 MiB
	sb.BBLogOffset, sb.BBLogSize = 0, 0
	hdr, err := sb.MarshalBinary()
	c.Assert(err, qt.IsNil)
	bh, err := bm.MarshalBinary()
	c.Assert(err, qt.IsNil)
	// Only the superblock and the bitmap header: a sparse image.
	writeImage(t, path, sb.DiskOffset, hdr)
	writeImage(t, path, sb.DiskOffset+int64(sb.BitmapOffset)*512, bh)
	before := readImage(t, path)

	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	cand := r.m.candidateFacts(path, true)
	runtime.ReadMemStats(&m1)
	c.Check(m1.TotalAlloc-m0.TotalAlloc < 64<<20, qt.IsTrue, qt.Commentf("candidateFacts allocated %d MiB", (m1.TotalAlloc-m0.TotalAlloc)>>20))
	_, err = planReplace(f, cand, ReplaceRequest{Array: r.name, With: path, AllowImageFile: true}, uuid.New())
	c.Check(err, qt.ErrorIs, ErrRefused)
	c.Check(bytes.Equal(readImage(t, path), before), qt.IsTrue)
}

// TestMemberWritesBoundsTheBitmap: memberWrites never allocates more than
// the bitmap format allows for the array's size, whatever the bitmap
// header says.
func TestMemberWritesBoundsTheBitmap(t *testing.T) {
	c := qt.New(t)
	r := newReplaceRig(t, "raid1-bitmap")
	path := r.candidate(t, "vdy", 64<<20)
	f := r.facts(t, "")
	setAction(sysfs.ActionIdle)(f.s)
	dropMember("vdb")(f.s)
	p, err := planReplace(f, r.m.candidateFacts(path, true), ReplaceRequest{Array: r.name, With: path, AllowImageFile: true}, uuid.New())
	c.Assert(err, qt.IsNil)
	for _, tt := range []struct {
		name               string
		dataSize, syncSize uint64
		chunk              uint32
	}{
		{"bits past the format limit", 200 << 20 * 8, 160 << 20 * 8, 512},
		{"bitmap larger than the member", 64, 160 << 20 * 8, 512},
		{"chunk not a power of two", 200 << 20 * 8, 1 << 20, 1000},
	} {
		c.Run(tt.name, func(c *qt.C) {
			sb := p.Superblock.Clone()
			sb.DataOffset = 1 << 30 // 512 GiB of room before the data
			sb.DataSize = tt.dataSize
			sb.BBLogOffset, sb.BBLogSize = 0, 0
			bm := *f.bitmap
			bm.ChunkSize = tt.chunk
			bm.SyncSize = tt.syncSize
			var m0, m1 runtime.MemStats
			runtime.ReadMemStats(&m0)
			_, err := memberWrites(sb, &bm)
			runtime.ReadMemStats(&m1)
			c.Check(err, qt.Not(qt.IsNil))
			c.Check(m1.TotalAlloc-m0.TotalAlloc < 1<<20, qt.IsTrue)
		})
	}
}
