package md

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/go-mdraid/mdraid/superblock"
)

// This file holds one decision: is a disk blank enough to be written?
// Replace and heal both call CheckBlank and nothing else.

// Errors matched by a *NotBlankError: every one matches ErrNotBlank, and
// also the sentinel of its kind.
var (
	// ErrNotBlank means a disk carries something recognisable and must
	// not be written.
	ErrNotBlank = errors.New("md: disk is not blank")
	// ErrHasMDSuperblock means an md superblock magic, valid or not, at
	// one of the four superblock locations.
	ErrHasMDSuperblock = errors.New("md: disk carries an md superblock")
	// ErrHasPartitionTable means an MBR, a protective MBR or a GPT header
	// (primary or backup), or partitions the kernel knows about.
	ErrHasPartitionTable = errors.New("md: disk carries a partition table")
	// ErrHasSignature means a file system, volume manager, encryption,
	// swap or cache signature.
	ErrHasSignature = errors.New("md: disk carries a file system or volume signature")
	// ErrHasData means no known signature, but the first or last 4 MiB,
	// or one of the 64 sampled blocks, hold data: not all one of the fill
	// bytes 0x00, 0x5a or 0xff.
	ErrHasData = errors.New("md: disk carries data")
)

// BlankKind says what kind of content made a disk not blank.
type BlankKind string

// Kinds of content.
const (
	KindMDSuperblock   BlankKind = "md-superblock"
	KindPartitionTable BlankKind = "partition-table"
	KindSignature      BlankKind = "signature"
	KindData           BlankKind = "data"
)

// NotBlankError says what was found on a disk and where. It matches
// ErrNotBlank and the sentinel of its Kind with errors.Is.
type NotBlankError struct {
	Kind BlankKind
	// What names the content, as blkid would: "ext4 superblock",
	// "GPT header (backup)", "md superblock 1.2", ...
	What string
	// Offset is the byte offset of the magic that was recognised.
	Offset int64
}

// Error says what was found and at which byte.
func (e *NotBlankError) Error() string {
	return fmt.Sprintf("md: disk is not blank: %s at byte %d", e.What, e.Offset)
}

// Is matches ErrNotBlank and the sentinel of the error's kind.
func (e *NotBlankError) Is(target error) bool {
	switch target {
	case ErrNotBlank:
		return true
	case ErrHasMDSuperblock:
		return e.Kind == KindMDSuperblock
	case ErrHasPartitionTable:
		return e.Kind == KindPartitionTable
	case ErrHasSignature:
		return e.Kind == KindSignature
	case ErrHasData:
		return e.Kind == KindData
	}
	return false
}

var _ error = (*NotBlankError)(nil)

// CheckBlank decides whether the device r of size bytes is blank: whether
// it may be written without destroying anything someone might still
// want. It returns nil for a blank disk, a *NotBlankError for the first
// finding (matching ErrNotBlank and one of ErrHasMDSuperblock,
// ErrHasPartitionTable, ErrHasSignature or ErrHasData), or the I/O error
// that kept it from deciding. A read error is never taken as blank.
//
// # The blank rule
//
// A disk is blank when all of these hold:
//
//  1. no md superblock magic, valid or not, at any of the four superblock
//     locations (0.90, 1.0, 1.1, 1.2);
//  2. no known signature (below) at the start of the disk, at its end, or
//     at the usual partition starts: sector 63 and 1, 2, 4, 8 and 16 MiB.
//     A disk whose partition table was wiped (an MBR has no backup) still
//     has its file systems there;
//  3. the first and the last 4 MiB are each filled with one byte value,
//     0x00, 0x5a or 0xff, and so are 64 blocks of 4 KiB spread evenly
//     over the disk (the first at byte 0, the last ending at the end).
//     So unknown content, plain dm-crypt, a raw image or a wiped member's
//     data is never taken for blank.
//
// A disk that holds anything else must be blanked by its owner before it
// is used, for example with blkdiscard on an SSD or by zeroing it.
// wipefs -a alone is not enough: it erases only the signatures it knows,
// and leaves the data, a file system in a partition whose table it
// erased, and anything headerless.
//
// # Signatures
//
// The magics checked, with their byte offsets (from libblkid, the kernel
// and the formats' own headers; "end" is the device size). Those measured
// from the start, except the Btrfs mirrors and ZFS, are also looked for
// at each usual partition start, offset by it, and so are md 1.1 and 1.2
// superblocks (a ZFS partition at 1 MiB is caught by the fill rule):
//
//   - md superblock (superblock.Probe): magic 0xa92b4efc at 0.90
//     (end&^64KiB)-64KiB, 1.0 ((end/512-16)&^7)*512, 1.1 0, 1.2 4096, in
//     either byte order. Stale, damaged or misplaced superblocks count.
//   - MBR / DOS partition table / boot sector: 0x55 0xaa at 510; reported
//     as a protective MBR when a partition entry has type 0xee.
//   - GPT header "EFI PART": at 512 and at 4096 (primary, for 512 and 4096
//     byte logical blocks), at end-512 and end-4096 (backup).
//   - ext2/3/4: 0xef53 (LE) at 1080.
//   - XFS: "XFSB" at 0.
//   - Btrfs: "_BHRfS_M" at 65600 (64 KiB + 0x40), and at the mirror
//     copies 64 MiB + 0x40 and 256 GiB + 0x40 when the device is that big.
//   - FAT12/16: "FAT12   ", "FAT16   ", "FAT     ", "MSDOS" at 54;
//     FAT32: "FAT32   ", "MSWIN" at 82.
//   - exFAT: "EXFAT   " at 3. NTFS: "NTFS    " at 3. BitLocker:
//     "-FVE-FS-" at 3.
//   - ISO 9660: "CD001" at 32769; UDF: "BEA01", "NSR02", "NSR03" at 32769.
//   - SquashFS: "hsqs" or "sqsh" at 0.
//   - F2FS: 0xf2f52010 (LE) at 1024.
//   - JFS: "JFS1" at 32768. ReiserFS: "ReIsErFs", "ReIsEr2Fs",
//     "ReIsEr3Fs" at 65536+52 (and 8192+52 for 3.5). NILFS2: 0x3434 (LE)
//     at 1030.
//   - LVM2 physical volume: "LABELONE" at the start of sector 0, 1, 2 or 3.
//   - LUKS1/LUKS2: "LUKS\xba\xbe" at 0; LUKS2 secondary header
//     "SKUL\xba\xbe" at 16, 32, 64, 128, 256, 512 KiB and 1, 2, 4 MiB.
//   - Swap: "SWAPSPACE2" or "SWAP-SPACE" ending at each page size
//     (4, 8, 16, 32, 64 KiB: offset pagesize-10), and the hibernation
//     images "S1SUSPEND", "S2SUSPEND", "ULSUSPEND", "LINHIB0001" there.
//   - bcache and bcachefs: their 16-byte magics at 4096+24.
//   - md external metadata: Intel IMSM "Intel Raid ISM Cfg Sig. " at
//     end-1024; SNIA DDF anchor 0xde11de11 (big-endian) at end-512.
//   - ZFS: the uberblock magic 0x00bab10c (either byte order) at every
//     1 KiB of the uberblock area (128 KiB into each label) of the four
//     256 KiB labels: two at the start (0, 256 KiB) and two at the end of
//     the device rounded down to 256 KiB (end-512 KiB, end-256 KiB).
//
// ZFS cache and spare vdevs that carry only an nvlist and no uberblock
// are not recognised by magic, but by the fill rule (clause 3).
func CheckBlank(r io.ReaderAt, size int64) error {
	fs, err := blankFindings(r, size)
	if err != nil {
		return err
	}
	if len(fs) > 0 {
		return fs[0]
	}
	return nil
}

// magic is one signature: bytes at an offset from the start (or, with
// fromEnd, from the end of the device).
type magic struct {
	kind    BlankKind
	what    string
	off     int64
	fromEnd bool
	b       []byte
}

func sig(what string, off int64, b string) magic {
	return magic{kind: KindSignature, what: what, off: off, b: []byte(b)}
}

func le16(v uint16) string { return string(binary.LittleEndian.AppendUint16(nil, v)) }
func le32(v uint32) string { return string(binary.LittleEndian.AppendUint32(nil, v)) }

// blankMagics is the fixed list; btrfs mirrors, swap, LVM, LUKS2
// secondaries and ZFS are added by blankFindings.
var blankMagics = []magic{
	{kind: KindPartitionTable, what: "GPT header", off: 512, b: []byte("EFI PART")},
	{kind: KindPartitionTable, what: "GPT header (4K blocks)", off: 4096, b: []byte("EFI PART")},
	{kind: KindPartitionTable, what: "GPT header (backup)", off: 512, fromEnd: true, b: []byte("EFI PART")},
	{kind: KindPartitionTable, what: "GPT header (backup, 4K blocks)", off: 4096, fromEnd: true, b: []byte("EFI PART")},
	sig("ext2/3/4 superblock", 1080, le16(0xef53)),
	sig("XFS superblock", 0, "XFSB"),
	sig("Btrfs superblock", 0x10040, "_BHRfS_M"),
	sig("FAT12 boot sector", 54, "FAT12   "),
	sig("FAT16 boot sector", 54, "FAT16   "),
	sig("FAT boot sector", 54, "FAT     "),
	sig("FAT boot sector", 54, "MSDOS"),
	sig("FAT32 boot sector", 82, "FAT32   "),
	sig("FAT32 boot sector", 82, "MSWIN"),
	sig("exFAT boot sector", 3, "EXFAT   "),
	sig("NTFS boot sector", 3, "NTFS    "),
	sig("BitLocker volume", 3, "-FVE-FS-"),
	sig("ISO 9660 volume descriptor", 32769, "CD001"),
	sig("UDF volume recognition", 32769, "BEA01"),
	sig("UDF volume recognition", 32769, "NSR02"),
	sig("UDF volume recognition", 32769, "NSR03"),
	sig("SquashFS superblock", 0, "hsqs"),
	sig("SquashFS superblock (big-endian)", 0, "sqsh"),
	sig("F2FS superblock", 1024, le32(0xf2f52010)),
	sig("JFS superblock", 32768, "JFS1"),
	sig("ReiserFS superblock", 65536+52, "ReIsErFs"),
	sig("ReiserFS superblock", 65536+52, "ReIsEr2Fs"),
	sig("ReiserFS superblock", 65536+52, "ReIsEr3Fs"),
	sig("ReiserFS 3.5 superblock", 8192+52, "ReIsErFs"),
	sig("NILFS2 superblock", 1030, le16(0x3434)),
	sig("LUKS header", 0, "LUKS\xba\xbe"),
	sig("bcache superblock", 4096+24, "\xc6\x85\x73\xf6\x4e\x1a\x45\xca\x82\x65\xf5\x7f\x48\xba\x6d\x81"),
	sig("bcachefs superblock", 4096+24, "\xc6\x85\x73\xf6\x66\xce\x90\xa9\xd9\x6a\x60\xcf\x80\x3d\xf7\xef"),
	{kind: KindSignature, what: "Intel IMSM metadata", off: 1024, fromEnd: true, b: []byte("Intel Raid ISM Cfg Sig. ")},
	{kind: KindSignature, what: "DDF anchor", off: 512, fromEnd: true, b: []byte{0xde, 0x11, 0xde, 0x11}},
}

// Where the blank rule looks (see CheckBlank).
const (
	bareEnds      = 4 << 20 // the first and last 4 MiB are one fill byte
	bareBlocks    = 64      // and so are 64 blocks spread over the disk
	bareBlockSize = 4096
	headSize      = 0x10100 // a window per start: up to and past the btrfs and reiserfs magics
)

// partitionStarts are the usual first-partition offsets: DOS's sector 63,
// and the 1 MiB alignment of fdisk, parted and sgdisk with its multiples.
var partitionStarts = []int64{63 * 512, 1 << 20, 2 << 20, 4 << 20, 8 << 20, 16 << 20}

// span is a byte range [off, off+n).
type span struct{ off, n int64 }

// blankScan reads a device for the blank rule. Bytes inside mask are
// left out: a rerun uses it to look at everything but the superblock
// area it wrote itself.
type blankScan struct {
	r    io.ReaderAt
	size int64
	mask []span
	out  []*NotBlankError
}

func (b *blankScan) add(k BlankKind, what string, off int64) {
	b.out = append(b.out, &NotBlankError{Kind: k, What: what, Offset: off})
}

// masked reports whether [off, off+n) overlaps the mask.
func (b *blankScan) masked(off, n int64) bool {
	for _, m := range b.mask {
		if off < m.off+m.n && m.off < off+n {
			return true
		}
	}
	return false
}

// blankFindings lists everything CheckBlank recognises on the device, in
// a fixed order (md superblocks, then partition tables, then the rest).
func blankFindings(r io.ReaderAt, size int64) ([]*NotBlankError, error) {
	return blankFindingsMasked(r, size, nil)
}

// blankFindingsMasked is blankFindings over everything but the bytes in
// mask: a magic overlapping the mask is not looked for, and masked bytes
// are left out of the fill rule.
func blankFindingsMasked(r io.ReaderAt, size int64, mask []span) ([]*NotBlankError, error) {
	b := &blankScan{r: r, size: size, mask: mask}

	// md superblocks: any magic at any of the four locations.
	pr, err := superblock.Probe(r, size)
	switch {
	case err == nil:
		for _, c := range pr.Candidates {
			if c.Err != nil && c.Superblock == nil && !errors.Is(c.Err, superblock.ErrChecksum) &&
				!errors.Is(c.Err, superblock.ErrWrongLocation) && !isDecodeError(c.Err) {
				return nil, fmt.Errorf("md: reading %s superblock location: %w", c.Version, c.Err)
			}
			if !b.masked(c.Offset, 4) {
				b.add(KindMDSuperblock, "md superblock "+c.Version.String(), c.Offset)
			}
		}
	case errors.Is(err, superblock.ErrNoSuperblock), errors.Is(err, superblock.ErrDeviceTooSmall):
	default:
		return nil, fmt.Errorf("md: probing md superblocks: %w", err)
	}

	// The disk's start, then each usual partition start.
	if err := b.signaturesAt(0, ""); err != nil {
		return nil, err
	}
	for _, base := range partitionStarts {
		if err := b.signaturesAt(base, fmt.Sprintf(" in a partition at byte %d", base)); err != nil {
			return nil, err
		}
	}
	// The end of the disk.
	for _, m := range blankMagics {
		if m.fromEnd {
			if err := b.check(nil, 0, m, size-m.off, ""); err != nil {
				return nil, err
			}
		}
	}
	if err := zfsFindings(r, size, b); err != nil {
		return nil, err
	}
	if len(b.out) == 0 {
		// No known signature: the disk must also be bare.
		if err := b.fillRule(); err != nil {
			return nil, err
		}
	}
	// Keep a stable order: md, partition tables, signatures, data.
	rank := map[BlankKind]int{KindMDSuperblock: 0, KindPartitionTable: 1, KindSignature: 2, KindData: 3}
	sorted := make([]*NotBlankError, 0, len(b.out))
	for k := 0; k < 4; k++ {
		for _, f := range b.out {
			if rank[f.Kind] == k {
				sorted = append(sorted, f)
			}
		}
	}
	return sorted, nil
}

// window reads up to n bytes at off (fewer at the end of the device).
func (b *blankScan) window(off, n int64) ([]byte, error) {
	if off >= b.size {
		return nil, nil
	}
	w := make([]byte, min(n, b.size-off))
	if err := readFull(b.r, w, off); err != nil {
		return nil, err
	}
	return w, nil
}

// check looks for m at byte off of the device; w is a window read at
// wOff, used when it holds the bytes.
func (b *blankScan) check(w []byte, wOff int64, m magic, off int64, where string) error {
	n := int64(len(m.b))
	if off < 0 || off+n > b.size || b.masked(off, n) {
		return nil
	}
	var got []byte
	if off >= wOff && off+n <= wOff+int64(len(w)) {
		got = w[off-wOff : off-wOff+n]
	} else {
		got = make([]byte, n)
		if err := readFull(b.r, got, off); err != nil {
			return err
		}
	}
	if bytes.Equal(got, m.b) {
		b.add(m.kind, m.what+where, off)
	}
	return nil
}

// signaturesAt looks for every magic measured from the start of a
// device, at base and on: the disk's own (base 0) or a partition's.
func (b *blankScan) signaturesAt(base int64, where string) error {
	w, err := b.window(base, headSize)
	if err != nil || w == nil {
		return err
	}
	// 0x55 0xaa at 510: a DOS partition table, a protective MBR, the boot
	// sector of a FAT or NTFS file system, or an extended partition.
	if len(w) >= 512 && w[510] == 0x55 && w[511] == 0xaa && !b.masked(base+510, 2) {
		what := "MBR boot signature (DOS partition table or boot sector)"
		for i := 0; i < 4; i++ {
			if w[446+16*i+4] == 0xee {
				what = "protective MBR (GPT)"
			}
		}
		b.add(KindPartitionTable, what+where, base+510)
	}
	mags := append([]magic(nil), blankMagics...)
	if base == 0 {
		for _, off := range []int64{64 << 20, 256 << 30} {
			mags = append(mags, sig("Btrfs superblock (mirror)", off+0x40, "_BHRfS_M"))
		}
	} else {
		// md 1.1 and 1.2 superblocks of a partition (the disk's own are
		// superblock.Probe's).
		for _, v := range []superblock.Version{superblock.Version11, superblock.Version12} {
			off, _ := v.Offset(b.size - base)
			mags = append(mags, magic{kind: KindMDSuperblock, what: "md superblock " + v.String(), off: off, b: []byte(le32(superblock.Magic))})
		}
	}
	for s := int64(0); s < 4; s++ {
		mags = append(mags, sig("LVM2 physical volume label", 512*s, "LABELONE"))
	}
	for _, kib := range []int64{16, 32, 64, 128, 256, 512, 1024, 2048, 4096} {
		mags = append(mags, sig("LUKS2 secondary header", kib<<10, "SKUL\xba\xbe"))
	}
	for _, page := range []int64{4096, 8192, 16384, 32768, 65536} {
		for _, s := range []string{"SWAPSPACE2", "SWAP-SPACE"} {
			mags = append(mags, sig(fmt.Sprintf("swap signature (%d KiB pages)", page>>10), page-10, s))
		}
		for _, s := range []string{"S1SUSPEND", "S2SUSPEND", "ULSUSPEND", "LINHIB0001"} {
			mags = append(mags, sig(fmt.Sprintf("hibernation image (%d KiB pages)", page>>10), page-10, s))
		}
	}
	for _, m := range mags {
		if !m.fromEnd {
			if err := b.check(w, base, m, base+m.off, where); err != nil {
				return err
			}
		}
	}
	return nil
}

// fillRule checks clause 3 of the blank rule: the first and last 4 MiB,
// and 64 blocks of 4 KiB spread evenly, are each one fill byte (masked
// bytes left out).
func (b *blankScan) fillRule() error {
	regions := []span{{0, min(bareEnds, b.size)}, {max(b.size-bareEnds, 0), min(bareEnds, b.size)}}
	if last := b.size - bareBlockSize; last > 0 {
		for i := int64(0); i < bareBlocks; i++ {
			off := (last * i / (bareBlocks - 1)) &^ (bareBlockSize - 1)
			if i == bareBlocks-1 {
				off = last
			}
			regions = append(regions, span{off, bareBlockSize})
		}
	}
	for _, rg := range regions {
		buf, err := b.window(rg.off, rg.n)
		if err != nil {
			return err
		}
		fill, seen := byte(0), false
		for i, c := range buf {
			if b.masked(rg.off+int64(i), 1) {
				continue
			}
			if !seen {
				fill, seen = c, true
				if fill != 0x00 && fill != 0x5a && fill != 0xff {
					b.add(KindData, fmt.Sprintf("data (byte %#02x is not a fill pattern)", c), rg.off+int64(i))
					return nil
				}
			}
			if c != fill {
				b.add(KindData, fmt.Sprintf("data (byte %#02x after fill bytes %#02x)", c, fill), rg.off+int64(i))
				return nil
			}
		}
	}
	return nil
}

// ZFS vdev labels (256 KiB each) and their uberblock arrays.
const (
	zfsLabelSize     = 256 << 10
	zfsUberblockOff  = 128 << 10
	zfsUberblockSize = 1 << 10
	zfsUberMagic     = 0x00bab10c
)

func zfsFindings(r io.ReaderAt, size int64, b *blankScan) error {
	end := size &^ (zfsLabelSize - 1)
	labels := []int64{0, zfsLabelSize, end - 2*zfsLabelSize, end - zfsLabelSize}
	buf := make([]byte, zfsLabelSize-zfsUberblockOff)
	for i, l := range labels {
		if l < 0 || l+zfsLabelSize > size || (i >= 2 && l < 2*zfsLabelSize) {
			continue
		}
		if err := readFull(r, buf, l+zfsUberblockOff); err != nil {
			return err
		}
		for o := 0; o+8 <= len(buf); o += zfsUberblockSize {
			v := binary.LittleEndian.Uint64(buf[o:])
			if v == zfsUberMagic || binary.BigEndian.Uint64(buf[o:]) == zfsUberMagic {
				if !b.masked(l+zfsUberblockOff+int64(o), 8) {
					b.add(KindSignature, fmt.Sprintf("ZFS uberblock (label %d)", i), l+zfsUberblockOff+int64(o))
					break
				}
			}
		}
	}
	return nil
}

// readFull reads len(b) bytes at off; a short read is an error.
func readFull(r io.ReaderAt, b []byte, off int64) error {
	n, err := r.ReadAt(b, off)
	if n == len(b) {
		return nil
	}
	if err == nil || err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return fmt.Errorf("md: reading %d bytes at %d: %w", len(b), off, err)
}

// isDecodeError reports whether err is a content error from the superblock
// decoder (as opposed to an I/O error).
func isDecodeError(err error) bool {
	var fe *superblock.FormatError
	return errors.As(err, &fe)
}
