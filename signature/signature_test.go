package signature

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"testing"

	qt "github.com/frankban/quicktest"

	"github.com/go-mdraid/mdraid/internal/diskimage"
	"github.com/go-mdraid/mdraid/superblock"
)

func u16le(v uint16) []byte { return binary.LittleEndian.AppendUint16(nil, v) }
func u32le(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }
func u64le(v uint64) []byte { return binary.LittleEndian.AppendUint64(nil, v) }
func u64be(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }

func TestScan(t *testing.T) {
	const size = 64 << 20
	const mib = 1 << 20
	off10, sb10 := diskimage.Superblock1x(t, superblock.Version10, size)
	_, sb12 := diskimage.Superblock1x(t, superblock.Version12, size)
	sb090off, _ := superblock.Version090.Offset(size)
	tests := []struct {
		name string
		im   *diskimage.Sparse
		want Finding // zero: nothing found
	}{
		{name: "zeros", im: diskimage.New(size)},
		{name: "data is no signature", im: diskimage.New(size).Put(3*mib, []byte("headerless data"))},
		{name: "tiny device", im: diskimage.New(4096)},
		{name: "empty device", im: diskimage.New(0)},
		{name: "md 1.2", im: diskimage.New(size).Put(4096, sb12), want: Finding{MDSuperblock, "md superblock 1.2", 4096}},
		{name: "md 1.0", im: diskimage.New(size).Put(off10, sb10), want: Finding{MDSuperblock, "md superblock 1.0", off10}},
		{name: "md 1.1 corrupt (magic only)", im: diskimage.New(size).Put(0, u32le(superblock.Magic)), want: Finding{MDSuperblock, "md superblock 1.1", 0}},
		{name: "md 0.90 magic big-endian", im: diskimage.New(size).Put(sb090off, binary.BigEndian.AppendUint32(nil, superblock.Magic)), want: Finding{MDSuperblock, "md superblock 0.90", sb090off}},
		{name: "MBR", im: diskimage.New(size).Put(510, []byte{0x55, 0xaa}), want: Finding{PartitionTable, "MBR boot signature (DOS partition table or boot sector)", 510}},
		{name: "protective MBR", im: diskimage.New(size).Put(446+4, []byte{0xee}).Put(510, []byte{0x55, 0xaa}), want: Finding{PartitionTable, "protective MBR (GPT)", 510}},
		{name: "GPT", im: diskimage.New(size).Put(512, []byte("EFI PART")), want: Finding{PartitionTable, "GPT header", 512}},
		{name: "GPT 4Kn", im: diskimage.New(size).Put(4096, []byte("EFI PART")), want: Finding{PartitionTable, "GPT header (4K blocks)", 4096}},
		{name: "backup GPT only", im: diskimage.New(size).Put(size-512, []byte("EFI PART")), want: Finding{PartitionTable, "GPT header (backup)", size - 512}},
		{name: "backup GPT 4Kn", im: diskimage.New(size).Put(size-4096, []byte("EFI PART")), want: Finding{PartitionTable, "GPT header (backup, 4K blocks)", size - 4096}},
		{name: "ext4", im: diskimage.New(size).Put(1080, u16le(0xef53)), want: Finding{Volume, "ext2/3/4 superblock", 1080}},
		{name: "xfs", im: diskimage.New(size).Put(0, []byte("XFSB")), want: Finding{Volume, "XFS superblock", 0}},
		{name: "btrfs", im: diskimage.New(size).Put(0x10040, []byte("_BHRfS_M")), want: Finding{Volume, "Btrfs superblock", 0x10040}},
		{name: "btrfs mirror at 64 MiB", im: diskimage.New(size+mib).Put(64<<20+0x40, []byte("_BHRfS_M")), want: Finding{Volume, "Btrfs superblock (mirror)", 64<<20 + 0x40}},
		{name: "fat12", im: diskimage.New(size).Put(54, []byte("FAT12   ")), want: Finding{Volume, "FAT12 boot sector", 54}},
		{name: "fat16", im: diskimage.New(size).Put(54, []byte("FAT16   ")), want: Finding{Volume, "FAT16 boot sector", 54}},
		{name: "msdos", im: diskimage.New(size).Put(54, []byte("MSDOS")), want: Finding{Volume, "FAT boot sector", 54}},
		{name: "fat32", im: diskimage.New(size).Put(82, []byte("FAT32   ")), want: Finding{Volume, "FAT32 boot sector", 82}},
		{name: "exfat", im: diskimage.New(size).Put(3, []byte("EXFAT   ")), want: Finding{Volume, "exFAT boot sector", 3}},
		{name: "ntfs", im: diskimage.New(size).Put(3, []byte("NTFS    ")), want: Finding{Volume, "NTFS boot sector", 3}},
		{name: "bitlocker", im: diskimage.New(size).Put(3, []byte("-FVE-FS-")), want: Finding{Volume, "BitLocker volume", 3}},
		{name: "iso9660", im: diskimage.New(size).Put(32769, []byte("CD001")), want: Finding{Volume, "ISO 9660 volume descriptor", 32769}},
		{name: "udf", im: diskimage.New(size).Put(32769, []byte("NSR03")), want: Finding{Volume, "UDF volume recognition", 32769}},
		{name: "squashfs", im: diskimage.New(size).Put(0, []byte("hsqs")), want: Finding{Volume, "SquashFS superblock", 0}},
		{name: "squashfs big-endian", im: diskimage.New(size).Put(0, []byte("sqsh")), want: Finding{Volume, "SquashFS superblock (big-endian)", 0}},
		{name: "f2fs", im: diskimage.New(size).Put(1024, u32le(0xf2f52010)), want: Finding{Volume, "F2FS superblock", 1024}},
		{name: "jfs", im: diskimage.New(size).Put(32768, []byte("JFS1")), want: Finding{Volume, "JFS superblock", 32768}},
		{name: "reiserfs", im: diskimage.New(size).Put(65536+52, []byte("ReIsEr2Fs")), want: Finding{Volume, "ReiserFS superblock", 65536 + 52}},
		{name: "reiserfs 3.5", im: diskimage.New(size).Put(8192+52, []byte("ReIsErFs")), want: Finding{Volume, "ReiserFS 3.5 superblock", 8192 + 52}},
		{name: "nilfs2", im: diskimage.New(size).Put(1030, u16le(0x3434)), want: Finding{Volume, "NILFS2 superblock", 1030}},
		{name: "lvm2 sector 0", im: diskimage.New(size).Put(0, []byte("LABELONE")), want: Finding{Volume, "LVM2 physical volume label", 0}},
		{name: "lvm2 sector 1", im: diskimage.New(size).Put(512, []byte("LABELONE\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00LVM2 001")), want: Finding{Volume, "LVM2 physical volume label", 512}},
		{name: "lvm2 sector 3", im: diskimage.New(size).Put(1536, []byte("LABELONE")), want: Finding{Volume, "LVM2 physical volume label", 1536}},
		{name: "luks1", im: diskimage.New(size).Put(0, []byte("LUKS\xba\xbe\x00\x01")), want: Finding{Volume, "LUKS header", 0}},
		{name: "luks2 secondary only", im: diskimage.New(size).Put(0x4000, []byte("SKUL\xba\xbe\x00\x02")), want: Finding{Volume, "LUKS2 secondary header", 0x4000}},
		{name: "luks2 secondary at 4 MiB (also 2 MiB into a partition at 2 MiB)", im: diskimage.New(size).Put(4<<20, []byte("SKUL\xba\xbe\x00\x02")), want: Finding{Volume, "LUKS2 secondary header", 4 << 20}},
		{name: "swap 4K pages", im: diskimage.New(size).Put(4096-10, []byte("SWAPSPACE2")), want: Finding{Volume, "swap signature (4 KiB pages)", 4086}},
		{name: "swap 64K pages", im: diskimage.New(size).Put(65536-10, []byte("SWAPSPACE2")), want: Finding{Volume, "swap signature (64 KiB pages)", 65526}},
		{name: "old swap", im: diskimage.New(size).Put(4096-10, []byte("SWAP-SPACE")), want: Finding{Volume, "swap signature (4 KiB pages)", 4086}},
		{name: "hibernation", im: diskimage.New(size).Put(8192-10, []byte("LINHIB0001")), want: Finding{Volume, "hibernation image (8 KiB pages)", 8182}},
		{name: "hibernation S1SUSPEND", im: diskimage.New(size).Put(4096-10, []byte("S1SUSPEND")), want: Finding{Volume, "hibernation image (4 KiB pages)", 4086}},
		{name: "bcache", im: diskimage.New(size).Put(4096+24, []byte("\xc6\x85\x73\xf6\x4e\x1a\x45\xca\x82\x65\xf5\x7f\x48\xba\x6d\x81")), want: Finding{Volume, "bcache superblock", 4120}},
		{name: "bcachefs", im: diskimage.New(size).Put(4096+24, []byte("\xc6\x85\x73\xf6\x66\xce\x90\xa9\xd9\x6a\x60\xcf\x80\x3d\xf7\xef")), want: Finding{Volume, "bcachefs superblock", 4120}},
		{name: "imsm", im: diskimage.New(size).Put(size-1024, []byte("Intel Raid ISM Cfg Sig. ")), want: Finding{Volume, "Intel IMSM metadata", size - 1024}},
		{name: "ddf", im: diskimage.New(size).Put(size-512, []byte{0xde, 0x11, 0xde, 0x11}), want: Finding{Volume, "DDF anchor", size - 512}},
		{name: "zfs label 0", im: diskimage.New(size).Put(128<<10+5<<10, u64le(0x00bab10c)), want: Finding{Volume, "ZFS uberblock (label 0)", 128<<10 + 5<<10}},
		{name: "zfs label 1 big-endian", im: diskimage.New(size).Put(256<<10+128<<10, u64be(0x00bab10c)), want: Finding{Volume, "ZFS uberblock (label 1)", 384 << 10}},
		{name: "zfs label 2 only", im: diskimage.New(size).Put(size-512<<10+128<<10+127<<10, u64le(0x00bab10c)), want: Finding{Volume, "ZFS uberblock (label 2)", size - 512<<10 + 255<<10}},
		{name: "zfs label 3 only, unaligned size", im: diskimage.New(size+4096).Put(size-256<<10+128<<10, u64le(0x00bab10c)), want: Finding{Volume, "ZFS uberblock (label 3)", size - 128<<10}},

		// At the usual partition starts.
		{name: "ext4 at 1 MiB", im: diskimage.New(size).Put(mib+1080, u16le(0xef53)), want: Finding{Volume, "ext2/3/4 superblock in a partition at byte 1048576", mib + 1080}},
		{name: "LVM2 PV label at 1 MiB + 512", im: diskimage.New(size).Put(mib+512, []byte("LABELONE")), want: Finding{Volume, "LVM2 physical volume label in a partition at byte 1048576", mib + 512}},
		{name: "NTFS at sector 63", im: diskimage.New(size).Put(63*512+3, []byte("NTFS    ")), want: Finding{Volume, "NTFS boot sector in a partition at byte 32256", 63*512 + 3}},
		{name: "swap at 2 MiB", im: diskimage.New(size).Put(2*mib+4086, []byte("SWAPSPACE2")), want: Finding{Volume, "swap signature (4 KiB pages) in a partition at byte 2097152", 2*mib + 4086}},
		{name: "boot sector at 4 MiB", im: diskimage.New(size).Put(4*mib+510, []byte{0x55, 0xaa}), want: Finding{PartitionTable, "MBR boot signature (DOS partition table or boot sector) in a partition at byte 4194304", 4*mib + 510}},
		{name: "md 1.2 at 8 MiB", im: diskimage.New(size).Put(8*mib+4096, u32le(superblock.Magic)), want: Finding{MDSuperblock, "md superblock 1.2 in a partition at byte 8388608", 8*mib + 4096}},
		{name: "md 1.1 at 16 MiB", im: diskimage.New(size).Put(16*mib, u32le(superblock.Magic)), want: Finding{MDSuperblock, "md superblock 1.1 in a partition at byte 16777216", 16 * mib}},
		{name: "XFS at 16 MiB", im: diskimage.New(size).Put(16*mib, []byte("XFSB")), want: Finding{Volume, "XFS superblock in a partition at byte 16777216", 16 * mib}},
		{name: "btrfs at 16 MiB", im: diskimage.New(size).Put(16*mib+0x10040, []byte("_BHRfS_M")), want: Finding{Volume, "Btrfs superblock in a partition at byte 16777216", 16*mib + 0x10040}},
		{name: "LUKS at 16 MiB", im: diskimage.New(size).Put(16*mib, []byte("LUKS\xba\xbe")), want: Finding{Volume, "LUKS header in a partition at byte 16777216", 16 * mib}},
		{name: "ext4 at 3 MiB is no usual start", im: diskimage.New(size).Put(3*mib+1080, u16le(0xef53))},
		{name: "btrfs mirror is the disk's only", im: diskimage.New(size+2*mib).Put(mib+64<<20+0x40, []byte("_BHRfS_M"))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := qt.New(t)
			fs, err := Scan(tt.im, tt.im.Size)
			c.Assert(err, qt.IsNil)
			if tt.want == (Finding{}) {
				c.Assert(fs, qt.HasLen, 0)
				return
			}
			c.Assert(len(fs) > 0, qt.IsTrue)
			c.Check(fs[0], qt.DeepEquals, tt.want)
		})
	}
}

// TestScanOrder: md superblocks come first, then partition tables, then
// the rest, whatever the offsets.
func TestScanOrder(t *testing.T) {
	c := qt.New(t)
	const size = 64 << 20
	_, sb12 := diskimage.Superblock1x(t, superblock.Version12, size)
	im := diskimage.New(size).Put(1080, u16le(0xef53)).Put(512, []byte("EFI PART")).Put(4096, sb12)
	fs, err := Scan(im, size)
	c.Assert(err, qt.IsNil)
	c.Assert(fs, qt.DeepEquals, []Finding{
		{MDSuperblock, "md superblock 1.2", 4096},
		{PartitionTable, "GPT header", 512},
		{Volume, "ext2/3/4 superblock", 1080},
	})
}

// TestScanMasked: a magic overlapping the mask is not looked for, and
// nothing else is left out.
func TestScanMasked(t *testing.T) {
	c := qt.New(t)
	const size = 64 << 20
	_, sb12 := diskimage.Superblock1x(t, superblock.Version12, size)
	im := diskimage.New(size).Put(4096, sb12)
	mask := []Range{{Off: 4096, Len: 4096}}
	fs, err := ScanMasked(im, size, mask)
	c.Assert(err, qt.IsNil)
	c.Check(fs, qt.HasLen, 0)
	fs, err = Scan(im, size)
	c.Assert(err, qt.IsNil)
	c.Check(fs, qt.DeepEquals, []Finding{{MDSuperblock, "md superblock 1.2", 4096}})

	// A magic right after the masked range is seen; one straddling its
	// end is not.
	im.Put(8192+1080, u16le(0xef53))
	im.Put(8190, []byte("XFSB"))
	fs, err = ScanMasked(im, size, []Range{{Off: 0, Len: 8192}})
	c.Assert(err, qt.IsNil)
	c.Check(fs, qt.HasLen, 0, qt.Commentf("%v", fs)) // ext4 at 8192+1080 is at no start
	im.Put(1080, u16le(0xef53))
	fs, err = ScanMasked(im, size, mask)
	c.Assert(err, qt.IsNil)
	c.Check(fs, qt.DeepEquals, []Finding{{Volume, "ext2/3/4 superblock", 1080}})
}

type failingReader struct{ err error }

func (f failingReader) ReadAt([]byte, int64) (int, error) { return 0, f.err }

// TestScanReadError: a device that cannot be read gives the read error,
// never an empty result.
func TestScanReadError(t *testing.T) {
	c := qt.New(t)
	boom := errors.New("boom")
	fs, err := Scan(failingReader{boom}, 64<<20)
	c.Assert(err, qt.ErrorIs, boom)
	c.Check(fs, qt.IsNil)

	// A short device: the reader ends before the size it claims.
	fs, err = Scan(readerOnly{diskimage.New(4096), 4096}, 64<<20)
	c.Assert(err, qt.IsNotNil)
	c.Check(fs, qt.IsNil)
}

// readerOnly serves r's bytes below n and io.EOF past them.
type readerOnly struct {
	r io.ReaderAt
	n int64
}

func (r readerOnly) ReadAt(p []byte, off int64) (int, error) {
	if off >= r.n {
		return 0, io.EOF
	}
	if off+int64(len(p)) > r.n {
		n, _ := r.r.ReadAt(p[:r.n-off], off)
		return n, io.EOF
	}
	return r.r.ReadAt(p, off)
}

func TestKindString(t *testing.T) {
	c := qt.New(t)
	c.Check(MDSuperblock.String(), qt.Equals, "md-superblock")
	c.Check(PartitionTable.String(), qt.Equals, "partition-table")
	c.Check(Volume.String(), qt.Equals, "volume")
	c.Check(Kind(9).String(), qt.Equals, "Kind(9)")
}

// FuzzScan: any content and any size never panics, and every finding
// lies on the device.
func FuzzScan(f *testing.F) {
	f.Add([]byte("XFSB"), int64(1<<20))
	f.Add(append(make([]byte, 510), 0x55, 0xaa), int64(512))
	f.Add(bytes.Repeat([]byte("EFI PART"), 1024), int64(8192))
	f.Fuzz(func(t *testing.T, head []byte, size int64) {
		if size < 0 || size > 1<<40 {
			return
		}
		im := diskimage.New(size).Put(0, head)
		if int64(len(head)) <= size {
			im.Put(size-int64(len(head)), head)
		}
		fs, err := Scan(im, size)
		if err != nil {
			return
		}
		for _, fd := range fs {
			if fd.Offset < 0 || fd.Offset >= size {
				t.Fatalf("finding %+v outside a %d-byte device", fd, size)
			}
		}
	})
}
