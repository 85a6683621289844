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
	// ErrHasData means no known signature, but the first or last 4 KiB
	// hold data: not all one of the fill bytes 0x00, 0x5a or 0xff.
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
// nothing on it is recognisable as metadata that someone might still
// want. It returns nil for a blank disk, a *NotBlankError for the first
// finding (matching ErrNotBlank and one of ErrHasMDSuperblock,
// ErrHasPartitionTable, ErrHasSignature or ErrHasData), or the I/O error that kept it
// from deciding. A read error is never taken as blank.
//
// The magics checked, with their byte offsets (from libblkid, the kernel
// and the formats' own headers; "end" is the device size):
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
// are not recognised by magic, but by the last rule: a disk with no
// known signature is blank only when its first and last 4 KiB are each
// filled with one byte value, 0x00, 0x5a or 0xff (what mdadm calls a
// bare disk); anything else is ErrHasData. So unknown content, plain
// dm-crypt or a wiped member's data is never taken for blank.
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

// bareRegions reports whether the first and last 4 KiB of the device are
// each filled with a single byte value among 0x00, 0x5a and 0xff, and if
// not, the offset of the region that is not.
func bareRegions(r io.ReaderAt, size int64) (int64, bool, error) {
	const n = 4096
	for _, off := range []int64{0, max(size-n, 0)} {
		b := make([]byte, min(n, size))
		if err := readFull(r, b, off); err != nil {
			return 0, false, err
		}
		if len(b) == 0 {
			continue
		}
		fill := b[0]
		if fill != 0x00 && fill != 0x5a && fill != 0xff {
			return off, false, nil
		}
		for _, c := range b {
			if c != fill {
				return off, false, nil
			}
		}
	}
	return 0, true, nil
}

// blankFindings lists everything CheckBlank recognises on the device, in
// a fixed order (md superblocks, then partition tables, then the rest).
func blankFindings(r io.ReaderAt, size int64) ([]*NotBlankError, error) {
	var out []*NotBlankError
	add := func(k BlankKind, what string, off int64) {
		out = append(out, &NotBlankError{Kind: k, What: what, Offset: off})
	}

	// md superblocks: any magic at any of the four locations.
	pr, err := superblock.Probe(r, size)
	switch {
	case err == nil:
		for _, c := range pr.Candidates {
			if c.Err != nil && c.Superblock == nil && !errors.Is(c.Err, superblock.ErrChecksum) &&
				!errors.Is(c.Err, superblock.ErrWrongLocation) && !isDecodeError(c.Err) {
				return nil, fmt.Errorf("md: reading %s superblock location: %w", c.Version, c.Err)
			}
			add(KindMDSuperblock, "md superblock "+c.Version.String(), c.Offset)
		}
	case errors.Is(err, superblock.ErrNoSuperblock), errors.Is(err, superblock.ErrDeviceTooSmall):
	default:
		return nil, fmt.Errorf("md: probing md superblocks: %w", err)
	}

	// Read the head of the device once; most magics lie in it.
	const headSize = 0x10100 // up to and past the btrfs and reiserfs magics
	head := make([]byte, min(int64(headSize), size))
	if err := readFull(r, head, 0); err != nil {
		return nil, err
	}
	at := func(off int64, n int) ([]byte, error) {
		if off < 0 || off+int64(n) > size {
			return nil, nil
		}
		if off+int64(n) <= int64(len(head)) {
			return head[off : off+int64(n)], nil
		}
		b := make([]byte, n)
		if err := readFull(r, b, off); err != nil {
			return nil, err
		}
		return b, nil
	}
	check := func(m magic) error {
		off := m.off
		if m.fromEnd {
			off = size - m.off
		}
		b, err := at(off, len(m.b))
		if err != nil {
			return err
		}
		if b != nil && bytes.Equal(b, m.b) {
			add(m.kind, m.what, off)
		}
		return nil
	}

	// MBR signature: a DOS partition table, a protective MBR, or the boot
	// sector of a FAT or NTFS file system.
	if b, _ := at(510, 2); b != nil && b[0] == 0x55 && b[1] == 0xaa {
		what := "MBR boot signature (DOS partition table or boot sector)"
		for i := int64(0); i < 4; i++ {
			if head[446+16*i+4] == 0xee {
				what = "protective MBR (GPT)"
			}
		}
		add(KindPartitionTable, what, 510)
	}

	mags := append([]magic(nil), blankMagics...)
	for _, off := range []int64{64 << 20, 256 << 30} {
		mags = append(mags, sig("Btrfs superblock (mirror)", off+0x40, "_BHRfS_M"))
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
		if err := check(m); err != nil {
			return nil, err
		}
	}
	if err := zfsFindings(r, size, add); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		// No known signature: the disk must also be bare (mdadm's rule),
		// its first and last 4 KiB each filled with one of 0x00, 0x5a or
		// 0xff. Known findings are reported instead, so that a rerun can
		// recognise its own half-written superblock.
		if off, bare, err := bareRegions(r, size); err != nil {
			return nil, err
		} else if !bare {
			add(KindData, "data (not a fill pattern in the first or last 4 KiB)", off)
		}
	}
	// Keep a stable order: md, partition tables, signatures.
	rank := map[BlankKind]int{KindMDSuperblock: 0, KindPartitionTable: 1, KindSignature: 2, KindData: 3}
	sorted := make([]*NotBlankError, 0, len(out))
	for k := 0; k < 4; k++ {
		for _, f := range out {
			if rank[f.Kind] == k {
				sorted = append(sorted, f)
			}
		}
	}
	return sorted, nil
}

// ZFS vdev labels (256 KiB each) and their uberblock arrays.
const (
	zfsLabelSize     = 256 << 10
	zfsUberblockOff  = 128 << 10
	zfsUberblockSize = 1 << 10
	zfsUberMagic     = 0x00bab10c
)

func zfsFindings(r io.ReaderAt, size int64, add func(BlankKind, string, int64)) error {
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
				add(KindSignature, fmt.Sprintf("ZFS uberblock (label %d)", i), l+zfsUberblockOff+int64(o))
				break
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
