package md

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"testing"

	qt "github.com/frankban/quicktest"
	"github.com/google/uuid"

	"github.com/go-mdraid/mdraid/superblock"
)

// image is a sparse in-memory device: only the written bytes are stored.
type image struct {
	size   int64
	chunks map[int64][]byte // offset -> bytes
}

func newImage(size int64) *image { return &image{size: size, chunks: map[int64][]byte{}} }

func (im *image) put(off int64, b []byte) *image {
	im.chunks[off] = append([]byte(nil), b...)
	return im
}

func (im *image) ReadAt(p []byte, off int64) (int, error) {
	if off >= im.size {
		return 0, io.EOF
	}
	n := len(p)
	if off+int64(n) > im.size {
		n = int(im.size - off)
	}
	clear(p[:n])
	for o, b := range im.chunks {
		// overlap of [o, o+len(b)) with [off, off+n)
		lo, hi := max(o, off), min(o+int64(len(b)), off+int64(n))
		if lo < hi {
			copy(p[lo-off:hi-off], b[lo-o:hi-o])
		}
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func u16le(v uint16) []byte { return binary.LittleEndian.AppendUint16(nil, v) }
func u32le(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }
func u64le(v uint64) []byte { return binary.LittleEndian.AppendUint64(nil, v) }
func u64be(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }

// md1x returns a valid 1.x superblock for an image of size bytes.
func md1x(t testing.TB, v superblock.Version, size int64) (int64, []byte) {
	t.Helper()
	off, err := v.Offset(size)
	if err != nil {
		t.Fatal(err)
	}
	sb := &superblock.Superblock{Version: v, Level: 1, RaidDisks: 2, SetUUID: uuid.New(),
		DataOffset: 2048, DataSize: 4096, SuperOffset: uint64(off / 512), DevRoles: []superblock.Role{0, 1}}
	if v == superblock.Version10 {
		sb.DataOffset = 0
	}
	b, err := sb.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	return off, b
}

func TestCheckBlank(t *testing.T) {
	const size = 64 << 20
	off10, sb10 := md1x(t, superblock.Version10, size)
	_, sb12 := md1x(t, superblock.Version12, size)
	sb090off, _ := superblock.Version090.Offset(size)
	tests := []struct {
		name string
		im   *image
		want error  // nil for blank
		what string // substring of NotBlankError.What
		off  int64
	}{
		{name: "zeros", im: newImage(size)},
		{name: "random data in the middle", im: newImage(size).put(20<<20, bytes.Repeat([]byte{0x5a}, 4096))},
		{name: "tiny device", im: newImage(4096)},
		{name: "md 1.2", im: newImage(size).put(4096, sb12), want: errHasMDSuperblock, what: "md superblock 1.2", off: 4096},
		{name: "md 1.0", im: newImage(size).put(off10, sb10), want: errHasMDSuperblock, what: "md superblock 1.0", off: off10},
		{name: "md 1.1 corrupt (magic only)", im: newImage(size).put(0, u32le(superblock.Magic)), want: errHasMDSuperblock, what: "md superblock", off: 0},
		{name: "md 0.90 magic big-endian", im: newImage(size).put(sb090off, binary.BigEndian.AppendUint32(nil, superblock.Magic)), want: errHasMDSuperblock, off: sb090off},
		{name: "MBR", im: newImage(size).put(510, []byte{0x55, 0xaa}), want: errHasPartitionTable, what: "MBR", off: 510},
		{name: "protective MBR", im: newImage(size).put(446+4, []byte{0xee}).put(510, []byte{0x55, 0xaa}), want: errHasPartitionTable, what: "protective MBR", off: 510},
		{name: "GPT", im: newImage(size).put(512, []byte("EFI PART")), want: errHasPartitionTable, what: "GPT header", off: 512},
		{name: "GPT 4Kn", im: newImage(size).put(4096, []byte("EFI PART")), want: errHasPartitionTable, what: "4K", off: 4096},
		{name: "backup GPT only", im: newImage(size).put(size-512, []byte("EFI PART")), want: errHasPartitionTable, what: "backup", off: size - 512},
		{name: "backup GPT 4Kn", im: newImage(size).put(size-4096, []byte("EFI PART")), want: errHasPartitionTable, what: "backup, 4K", off: size - 4096},
		{name: "ext4", im: newImage(size).put(1080, u16le(0xef53)), want: errHasSignature, what: "ext2/3/4", off: 1080},
		{name: "xfs", im: newImage(size).put(0, []byte("XFSB")), want: errHasSignature, what: "XFS", off: 0},
		{name: "btrfs", im: newImage(size).put(0x10040, []byte("_BHRfS_M")), want: errHasSignature, what: "Btrfs", off: 0x10040},
		{name: "btrfs mirror at 64 MiB", im: newImage(size+(1<<20)).put(64<<20+0x40, []byte("_BHRfS_M")), want: errHasSignature, what: "mirror", off: 64<<20 + 0x40},
		{name: "fat12", im: newImage(size).put(54, []byte("FAT12   ")), want: errHasSignature, what: "FAT12", off: 54},
		{name: "fat16", im: newImage(size).put(54, []byte("FAT16   ")), want: errHasSignature, what: "FAT16", off: 54},
		{name: "fat32", im: newImage(size).put(82, []byte("FAT32   ")), want: errHasSignature, what: "FAT32", off: 82},
		{name: "exfat", im: newImage(size).put(3, []byte("EXFAT   ")), want: errHasSignature, what: "exFAT", off: 3},
		{name: "ntfs", im: newImage(size).put(3, []byte("NTFS    ")), want: errHasSignature, what: "NTFS", off: 3},
		{name: "bitlocker", im: newImage(size).put(3, []byte("-FVE-FS-")), want: errHasSignature, what: "BitLocker", off: 3},
		{name: "iso9660", im: newImage(size).put(32769, []byte("CD001")), want: errHasSignature, what: "ISO 9660", off: 32769},
		{name: "udf", im: newImage(size).put(32769, []byte("NSR03")), want: errHasSignature, what: "UDF", off: 32769},
		{name: "squashfs", im: newImage(size).put(0, []byte("hsqs")), want: errHasSignature, what: "SquashFS", off: 0},
		{name: "f2fs", im: newImage(size).put(1024, u32le(0xf2f52010)), want: errHasSignature, what: "F2FS", off: 1024},
		{name: "jfs", im: newImage(size).put(32768, []byte("JFS1")), want: errHasSignature, what: "JFS", off: 32768},
		{name: "reiserfs", im: newImage(size).put(65536+52, []byte("ReIsEr2Fs")), want: errHasSignature, what: "ReiserFS", off: 65536 + 52},
		{name: "nilfs2", im: newImage(size).put(1030, u16le(0x3434)), want: errHasSignature, what: "NILFS2", off: 1030},
		{name: "lvm2 sector 0", im: newImage(size).put(0, []byte("LABELONE")), want: errHasSignature, what: "LVM2", off: 0},
		{name: "lvm2 sector 1", im: newImage(size).put(512, []byte("LABELONE\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00LVM2 001")), want: errHasSignature, what: "LVM2", off: 512},
		{name: "lvm2 sector 3", im: newImage(size).put(1536, []byte("LABELONE")), want: errHasSignature, what: "LVM2", off: 1536},
		{name: "luks1", im: newImage(size).put(0, []byte("LUKS\xba\xbe\x00\x01")), want: errHasSignature, what: "LUKS header", off: 0},
		{name: "luks2 secondary only", im: newImage(size).put(0x4000, []byte("SKUL\xba\xbe\x00\x02")), want: errHasSignature, what: "LUKS2 secondary", off: 0x4000},
		{name: "luks2 secondary at 4 MiB", im: newImage(size).put(4<<20, []byte("SKUL\xba\xbe\x00\x02")), want: errHasSignature, what: "LUKS2 secondary", off: 4 << 20},
		{name: "swap 4K pages", im: newImage(size).put(4096-10, []byte("SWAPSPACE2")), want: errHasSignature, what: "swap signature (4 KiB", off: 4086},
		{name: "swap 64K pages", im: newImage(size).put(65536-10, []byte("SWAPSPACE2")), want: errHasSignature, what: "swap signature (64 KiB", off: 65526},
		{name: "old swap", im: newImage(size).put(4096-10, []byte("SWAP-SPACE")), want: errHasSignature, what: "swap", off: 4086},
		{name: "hibernation", im: newImage(size).put(4096-10, []byte("S1SUSPEND")), want: errHasSignature, what: "hibernation", off: 4086},
		{name: "bcache", im: newImage(size).put(4096+24, []byte("\xc6\x85\x73\xf6\x4e\x1a\x45\xca\x82\x65\xf5\x7f\x48\xba\x6d\x81")), want: errHasSignature, what: "bcache", off: 4120},
		{name: "bcachefs", im: newImage(size).put(4096+24, []byte("\xc6\x85\x73\xf6\x66\xce\x90\xa9\xd9\x6a\x60\xcf\x80\x3d\xf7\xef")), want: errHasSignature, what: "bcachefs", off: 4120},
		{name: "zfs label 0", im: newImage(size).put(128<<10+5<<10, u64le(0x00bab10c)), want: errHasSignature, what: "ZFS uberblock (label 0)", off: 128<<10 + 5<<10},
		{name: "zfs label 1 big-endian", im: newImage(size).put(256<<10+128<<10, u64be(0x00bab10c)), want: errHasSignature, what: "label 1", off: 384 << 10},
		{name: "zfs label 2 only", im: newImage(size).put(size-512<<10+128<<10+127<<10, u64le(0x00bab10c)), want: errHasSignature, what: "label 2", off: size - 512<<10 + 255<<10},
		{name: "zfs label 3 only, unaligned size", im: newImage(size+4096).put(size-256<<10+128<<10, u64le(0x00bab10c)), want: errHasSignature, what: "label 3", off: size - 128<<10},
		{name: "md wins the order", im: newImage(size).put(4096, sb12).put(1080, u16le(0xef53)), want: errHasMDSuperblock, off: 4096},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := qt.New(t)
			err := CheckBlank(tt.im, tt.im.size)
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
func fillImage(size int64, v byte, n int) *image {
	return newImage(size).put(0, bytes.Repeat([]byte{v}, n)).put(size-int64(n), bytes.Repeat([]byte{v}, n))
}

// TestBlankRule has one case per clause of the blank rule stated in
// CheckBlank's doc (clause 1, md superblocks at the four locations, and
// the signatures at the start and end are TestCheckBlank's).
func TestBlankRule(t *testing.T) {
	const size = 64 << 20
	// The sampled blocks: 64 of 4 KiB spread evenly, the first at 0 and
	// the last ending at the end.
	sample := func(i int64) int64 { return ((size - 4096) * i / 63) &^ 4095 }
	mib := int64(1 << 20)
	tests := []struct {
		clause string
		name   string
		im     *image
		want   error
		what   string
		off    int64
	}{
		// Clause 2: signatures at the usual partition starts, where a
		// disk whose partition table was wiped still has them.
		{clause: "2", name: "ext4 at 1 MiB, MBR wiped", im: newImage(size).put(mib+1080, u16le(0xef53)), want: errHasSignature, what: "ext2/3/4 superblock in a partition at byte 1048576", off: mib + 1080},
		{clause: "2", name: "LVM2 PV label at 1 MiB + 512", im: newImage(size).put(mib+512, []byte("LABELONE")), want: errHasSignature, what: "LVM2", off: mib + 512},
		{clause: "2", name: "NTFS at sector 63", im: newImage(size).put(63*512+3, []byte("NTFS    ")), want: errHasSignature, what: "NTFS", off: 63*512 + 3},
		{clause: "2", name: "swap at 2 MiB", im: newImage(size).put(2*mib+4086, []byte("SWAPSPACE2")), want: errHasSignature, what: "swap", off: 2*mib + 4086},
		{clause: "2", name: "boot sector at 4 MiB", im: newImage(size).put(4*mib+510, []byte{0x55, 0xaa}), want: errHasPartitionTable, what: "in a partition", off: 4*mib + 510},
		{clause: "2", name: "md 1.2 in a partition at 8 MiB", im: newImage(size).put(8*mib+4096, u32le(superblock.Magic)), want: errHasMDSuperblock, what: "md superblock 1.2 in a partition", off: 8*mib + 4096},
		{clause: "2", name: "XFS at 16 MiB", im: newImage(size).put(16*mib, []byte("XFSB")), want: errHasSignature, what: "XFS", off: 16 * mib},
		{clause: "2", name: "btrfs at 16 MiB", im: newImage(size).put(16*mib+0x10040, []byte("_BHRfS_M")), want: errHasSignature, what: "Btrfs", off: 16*mib + 0x10040},
		{clause: "2", name: "LUKS at 16 MiB", im: newImage(size).put(16*mib, []byte("LUKS\xba\xbe")), want: errHasSignature, what: "LUKS", off: 16 * mib},
		{clause: "2", name: "ext4 at 3 MiB is no usual start, but data", im: newImage(size).put(3*mib+1080, u16le(0xef53)), want: errHasData, off: 3*mib + 1080},

		// Clause 3: the first and last 4 MiB, and 64 blocks of 4 KiB
		// spread evenly, are each one fill byte.
		{clause: "3", name: "all zero", im: newImage(size)},
		{clause: "3", name: "0x5a ends", im: fillImage(size, 0x5a, 4<<20)},
		{clause: "3", name: "0xff ends", im: fillImage(size, 0xff, 4<<20)},
		{clause: "3", name: "0xff head, zero tail", im: newImage(size).put(0, bytes.Repeat([]byte{0xff}, 4<<20))},
		{clause: "3", name: "data at 3 MiB (plain dm-crypt, a raw image)", im: newImage(size).put(3*mib, []byte("headerless data")), want: errHasData, off: 3 * mib},
		{clause: "3", name: "data 1 byte before the head ends", im: newImage(size).put(4*mib-1, []byte{1}), want: errHasData, off: 4*mib - 1},
		{clause: "3", name: "data 3 MiB before the end", im: newImage(size).put(size-3*mib, []byte("tail data")), want: errHasData, off: size - 3*mib},
		{clause: "3", name: "head half 0xff, half zero", im: newImage(size).put(0, bytes.Repeat([]byte{0xff}, 2<<20)), want: errHasData, off: 2 << 20},
		{clause: "3", name: "another fill byte", im: fillImage(size, 0x11, 4<<20), want: errHasData, off: 0},
		{clause: "3", name: "data in the middle sampled block", im: newImage(size).put(sample(32)+100, []byte("x")), want: errHasData, off: sample(32) + 100},
		{clause: "3", name: "data in a sampled block past 4 MiB", im: newImage(size).put(sample(5), []byte{0xff, 0}), want: errHasData, off: sample(5) + 1},
		{clause: "3", name: "a sampled block all 0x5a", im: newImage(size).put(sample(32), bytes.Repeat([]byte{0x5a}, 4096))},
		{clause: "3", name: "data between the samples is not seen", im: newImage(size).put(sample(32)+8192, []byte("x"))},
		{clause: "3", name: "tiny device", im: newImage(4096)},
		{clause: "3", name: "tiny device with data", im: newImage(8192).put(5000, []byte("x")), want: errHasData, off: 5000},
	}
	for _, tt := range tests {
		t.Run("clause "+tt.clause+"/"+tt.name, func(t *testing.T) {
			c := qt.New(t)
			err := CheckBlank(tt.im, tt.im.size)
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
	_, sb12 := md1x(t, superblock.Version12, size)
	im := newImage(size).put(4096, sb12)
	mask := []span{{4096, 4096}}
	fs, err := blankFindingsMasked(im, size, mask)
	c.Assert(err, qt.IsNil)
	c.Check(fs, qt.HasLen, 0)
	fs, err = blankFindings(im, size)
	c.Assert(err, qt.IsNil)
	c.Assert(fs, qt.HasLen, 1)
	c.Check(fs[0].Kind, qt.Equals, KindMDSuperblock)

	// Headerless data right after the area is seen.
	im.put(8192, []byte("dm-crypt"))
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
