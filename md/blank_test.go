package md

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"testing"

	qt "github.com/frankban/quicktest"
	"github.com/google/uuid"

	"github.com/go-mdraid/mdraid/internal/diskimage"
	"github.com/go-mdraid/mdraid/superblock"
)

func u16le(v uint16) []byte { return binary.LittleEndian.AppendUint16(nil, v) }

// TestCheckBlank: CheckBlank reports what signature.Scan finds, as a
// NotBlankError of the finding's kind (matching ErrNotBlank and that
// kind's sentinel only), at the finding's offset, in the scan's order.
// One case a kind is enough here: the scan's own cases, one a signature
// and location, are signature's TestScan.
func TestCheckBlank(t *testing.T) {
	const size = 64 << 20
	_, sb12 := diskimage.Superblock1x(t, superblock.Version12, size)
	tests := []struct {
		name string
		im   *diskimage.Sparse
		want error  // nil for blank
		what string // substring of NotBlankError.What
		off  int64
	}{
		{name: "zeros", im: diskimage.New(size)},
		{name: "random data in the middle", im: diskimage.New(size).Put(20<<20, bytes.Repeat([]byte{0x5a}, 4096))},
		{name: "tiny device", im: diskimage.New(4096)},
		{name: "md 1.2", im: diskimage.New(size).Put(4096, sb12), want: errHasMDSuperblock, what: "md superblock 1.2", off: 4096},
		{name: "MBR", im: diskimage.New(size).Put(510, []byte{0x55, 0xaa}), want: errHasPartitionTable, what: "MBR", off: 510},
		{name: "ext4", im: diskimage.New(size).Put(1080, u16le(0xef53)), want: errHasSignature, what: "ext2/3/4", off: 1080},
		{name: "md wins the order", im: diskimage.New(size).Put(4096, sb12).Put(1080, u16le(0xef53)), want: errHasMDSuperblock, off: 4096},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := qt.New(t)
			err := CheckBlank(tt.im, tt.im.Size)
			if tt.want == nil {
				c.Assert(err, qt.IsNil)
				return
			}
			c.Assert(err, qt.ErrorIs, tt.want)
			c.Assert(err, qt.ErrorIs, ErrNotBlank)
			var nb *NotBlankError
			c.Assert(errors.As(err, &nb), qt.IsTrue)
			c.Check(nb.What, qt.Contains, tt.what)
			c.Check(nb.Offset, qt.Equals, tt.off)
			for _, other := range []error{errHasMDSuperblock, errHasPartitionTable, errHasSignature} {
				if other != tt.want {
					c.Check(errors.Is(err, other), qt.IsFalse, qt.Commentf("also matches %v", other))
				}
			}
		})
	}
}

type failingReader struct{ err error }

func (f failingReader) ReadAt([]byte, int64) (int, error) { return 0, f.err }

// TestCheckBlankReadError: a disk that cannot be read is never blank.
func TestCheckBlankReadError(t *testing.T) {
	c := qt.New(t)
	boom := errors.New("boom")
	err := CheckBlank(failingReader{boom}, 64<<20)
	c.Assert(err, qt.ErrorIs, boom)
	c.Assert(errors.Is(err, ErrNotBlank), qt.IsFalse)
}

// fillImage returns an image of size bytes whose first and last n bytes
// are v.
func fillImage(size int64, v byte, n int) *diskimage.Sparse {
	return diskimage.New(size).Put(0, bytes.Repeat([]byte{v}, n)).Put(size-int64(n), bytes.Repeat([]byte{v}, n))
}

// TestBlankRule has one case per clause of the blank rule stated in
// CheckBlank's doc (clause 1, md superblocks at the four locations, and
// the signatures at the start and end are TestCheckBlank's, and each
// signature and location signature's TestScan).
func TestBlankRule(t *testing.T) {
	const size = 64 << 20
	// The sampled blocks: 64 of 4 KiB spread evenly, the first at 0 and
	// the last ending at the end.
	sample := func(i int64) int64 { return ((size - 4096) * i / 63) &^ 4095 }
	mib := int64(1 << 20)
	tests := []struct {
		clause string
		name   string
		im     *diskimage.Sparse
		want   error
		what   string
		off    int64
	}{
		// Clause 2: signatures at the usual partition starts, where a
		// disk whose partition table was wiped still has them (one for
		// each start is signature's TestScan); and a signature elsewhere
		// is still caught by clause 3.
		{clause: "2", name: "ext4 at 1 MiB, MBR wiped", im: diskimage.New(size).Put(mib+1080, u16le(0xef53)), want: errHasSignature, what: "ext2/3/4 superblock in a partition at byte 1048576", off: mib + 1080},
		{clause: "2", name: "ext4 at 3 MiB is no usual start, but data", im: diskimage.New(size).Put(3*mib+1080, u16le(0xef53)), want: errHasData, off: 3*mib + 1080},

		// Clause 3: the first and last 4 MiB, and 64 blocks of 4 KiB
		// spread evenly, are each one fill byte.
		{clause: "3", name: "all zero", im: diskimage.New(size)},
		{clause: "3", name: "0x5a ends", im: fillImage(size, 0x5a, 4<<20)},
		{clause: "3", name: "0xff ends", im: fillImage(size, 0xff, 4<<20)},
		{clause: "3", name: "0xff head, zero tail", im: diskimage.New(size).Put(0, bytes.Repeat([]byte{0xff}, 4<<20))},
		{clause: "3", name: "data at 3 MiB (plain dm-crypt, a raw image)", im: diskimage.New(size).Put(3*mib, []byte("headerless data")), want: errHasData, off: 3 * mib},
		{clause: "3", name: "data 1 byte before the head ends", im: diskimage.New(size).Put(4*mib-1, []byte{1}), want: errHasData, off: 4*mib - 1},
		{clause: "3", name: "data 3 MiB before the end", im: diskimage.New(size).Put(size-3*mib, []byte("tail data")), want: errHasData, off: size - 3*mib},
		{clause: "3", name: "head half 0xff, half zero", im: diskimage.New(size).Put(0, bytes.Repeat([]byte{0xff}, 2<<20)), want: errHasData, off: 2 << 20},
		{clause: "3", name: "another fill byte", im: fillImage(size, 0x11, 4<<20), want: errHasData, off: 0},
		{clause: "3", name: "data in the middle sampled block", im: diskimage.New(size).Put(sample(32)+100, []byte("x")), want: errHasData, off: sample(32) + 100},
		{clause: "3", name: "data in a sampled block past 4 MiB", im: diskimage.New(size).Put(sample(5), []byte{0xff, 0}), want: errHasData, off: sample(5) + 1},
		{clause: "3", name: "a sampled block all 0x5a", im: diskimage.New(size).Put(sample(32), bytes.Repeat([]byte{0x5a}, 4096))},
		{clause: "3", name: "data between the samples is not seen", im: diskimage.New(size).Put(sample(32)+8192, []byte("x"))},
		{clause: "3", name: "a lone bitmap superblock is named", im: diskimage.New(size).Put(8192, lonelyBitmap(t)), want: errHasData, what: "an md write-intent bitmap superblock (version 4, array UUID 27f6dbfe-477c-0a6f-be93-609d5be6dc76) with no md superblock", off: 8192},
		{clause: "3", name: "bitmap magic off a block start is data", im: diskimage.New(size).Put(8192+8, lonelyBitmap(t)), want: errHasData, what: "data (byte 0x62 after fill bytes 0x00)", off: 8192 + 8},
		{clause: "3", name: "tiny device", im: diskimage.New(4096)},
		{clause: "3", name: "tiny device with data", im: diskimage.New(8192).Put(5000, []byte("x")), want: errHasData, off: 5000},
	}
	for _, tt := range tests {
		t.Run("clause "+tt.clause+"/"+tt.name, func(t *testing.T) {
			c := qt.New(t)
			err := CheckBlank(tt.im, tt.im.Size)
			if tt.want == nil {
				c.Assert(err, qt.IsNil)
				return
			}
			c.Assert(err, qt.ErrorIs, tt.want)
			c.Assert(err, qt.ErrorIs, ErrNotBlank)
			var nb *NotBlankError
			c.Assert(errors.As(err, &nb), qt.IsTrue)
			c.Check(nb.What, qt.Contains, tt.what)
			c.Check(nb.Offset, qt.Equals, tt.off)
		})
	}
}

// TestBlankMasked: a rerun looks at everything but its own superblock
// area; the masked bytes are left out of both the magics and the fill
// rule, and nothing else is.
func TestBlankMasked(t *testing.T) {
	c := qt.New(t)
	const size = 64 << 20
	_, sb12 := diskimage.Superblock1x(t, superblock.Version12, size)
	im := diskimage.New(size).Put(4096, sb12)
	mask := []span{{4096, 4096}}
	fs, err := blankFindingsMasked(im, size, mask)
	c.Assert(err, qt.IsNil)
	c.Check(fs, qt.HasLen, 0)
	fs, err = blankFindings(im, size)
	c.Assert(err, qt.IsNil)
	c.Assert(fs, qt.HasLen, 1)
	c.Check(fs[0].Kind, qt.Equals, KindMDSuperblock)

	// Headerless data right after the area is seen.
	im.Put(8192, []byte("dm-crypt"))
	fs, err = blankFindingsMasked(im, size, mask)
	c.Assert(err, qt.IsNil)
	c.Assert(fs, qt.HasLen, 1)
	c.Check(fs[0].Kind, qt.Equals, KindData)
	c.Check(fs[0].Offset, qt.Equals, int64(8192))
}

// TestReplaceRefusesPartitionData (item 1): a disk whose MBR was wiped
// but whose partition at 1 MiB still holds an ext4 (or an LVM PV) is
// refused, and nothing is written.
func TestReplaceRefusesPartitionData(t *testing.T) {
	for _, tt := range []struct {
		name string
		off  int64
		b    []byte
	}{
		{"ext4 at 1 MiB", 1<<20 + 1080, u16le(0xef53)},
		{"LVM2 PV at 1 MiB + 512", 1<<20 + 512, []byte("LABELONE")},
		{"XFS at 16 MiB", 16 << 20, []byte("XFSB")},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := qt.New(t)
			r, path := replaceOn(t, "raid1-degraded-missing")
			writeImage(t, path, tt.off, tt.b)
			before := readImage(t, path)
			_, err := r.m.Replace(context.Background(), ReplaceRequest{Array: r.name, With: path, AllowImageFile: true})
			c.Assert(err, qt.ErrorIs, ErrRefused)
			c.Check(err, qt.ErrorIs, errHasSignature)
			c.Check(err, qt.ErrorMatches, `.*in a partition at byte.*blkdiscard.*wipefs -a alone is not enough.*`)
			r.checkNothingWritten(c, path, before)
		})
	}
}

// TestNotBlankNamesSerial: the refusal names the disk by serial and
// path and says how to blank it.
func TestNotBlankNamesSerial(t *testing.T) {
	c := qt.New(t)
	r, path := replaceOn(t, "raid1-degraded-missing")
	writeImage(t, path, 1080, u16le(0xef53))
	cand := r.m.candidateFacts(path, true)
	cand.Serial = "WD-WCC4E1234567"
	_, err := planReplace(r.facts(t, ""), cand, ReplaceRequest{Array: r.name, With: path, AllowImageFile: true}, uuid.New())
	c.Check(err, qt.ErrorIs, errHasSignature)
	c.Check(err, qt.ErrorMatches, `.*`+path+` \(serial WD-WCC4E1234567\) is not blank: ext2/3/4 superblock at byte 1080\. .*blkdiscard `+path+`; wipefs -a alone is not enough.*`)
}

// lonelyBitmap is the bitmap superblock a create writes, alone: what a
// create killed between a member's bitmap and its superblock leaves.
func lonelyBitmap(t *testing.T) []byte {
	t.Helper()
	bm := &superblock.Bitmap{Version: 4, ChunkSize: 64 << 10, DaemonSleep: 5, SyncSize: 120000,
		UUID: uuid.MustParse("27f6dbfe-477c-0a6f-be93-609d5be6dc76")}
	b, err := bm.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	return b
}
