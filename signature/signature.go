package signature

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/go-mdraid/mdraid/superblock"
)

// Kind is the broad class of a finding.
type Kind uint8

// Kinds of findings, in the order Scan reports them.
const (
	// MDSuperblock is an md superblock magic, valid or not.
	MDSuperblock Kind = iota + 1
	// PartitionTable is an MBR, a protective MBR or a GPT header.
	PartitionTable
	// Volume is a file system, volume manager, encryption, swap,
	// hibernation, cache or external RAID metadata signature.
	Volume
)

// String names the kind: "md-superblock", "partition-table" or "volume".
func (k Kind) String() string {
	switch k {
	case MDSuperblock:
		return "md-superblock"
	case PartitionTable:
		return "partition-table"
	case Volume:
		return "volume"
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// Finding is one recognised signature.
type Finding struct {
	Kind Kind
	// What names the content, as blkid would: "ext2/3/4 superblock",
	// "GPT header (backup)", "md superblock 1.2", ... A signature found
	// at a usual partition start ends in " in a partition at byte N".
	What string
	// Offset is the byte offset of the magic on the device.
	Offset int64
}

// Range is the byte range [Off, Off+Len) of a device.
type Range struct {
	Off, Len int64
}

// overlaps reports whether [off, off+n) overlaps r.
func (r Range) overlaps(off, n int64) bool {
	return off < r.Off+r.Len && r.Off < off+n
}

// placement says where a magic's offsets are measured from.
type placement uint8

const (
	// anyStart: from the start of the disk and of each usual partition
	// start.
	anyStart placement = iota
	// diskStart: from the start of the disk only.
	diskStart
	// partStart: from each usual partition start only (the disk's own are
	// superblock.Probe's).
	partStart
	// fromEnd: back from the end of the disk.
	fromEnd
)

// at reports whether a magic placed so is looked for at the start base
// (0 for the disk's own).
func (p placement) at(base int64) bool {
	switch p {
	case anyStart:
		return true
	case diskStart:
		return base == 0
	case partStart:
		return base != 0
	}
	return false
}

// magic is one entry of the table: the bytes b at each of offs.
type magic struct {
	kind  Kind
	what  string
	place placement
	offs  []int64
	b     string
	// page: the magic ends at each of pageSizes (offs is unused); What
	// names the page size.
	page bool
}

func le16(v uint16) string { return string(binary.LittleEndian.AppendUint16(nil, v)) }
func le32(v uint32) string { return string(binary.LittleEndian.AppendUint32(nil, v)) }

func at(offs ...int64) []int64 { return offs }

// pageSizes are the page sizes whose swap and hibernation signatures are
// looked for.
var pageSizes = at(4<<10, 8<<10, 16<<10, 32<<10, 64<<10)

// magics is the table the package doc lists (a test holds the two
// together). The MBR boot signature and ZFS are recognised by code of
// their own (scanMBR, scanZFS).
var magics = []magic{
	{kind: MDSuperblock, what: "md superblock 1.1", place: partStart, offs: at(0), b: le32(superblock.Magic)},
	{kind: MDSuperblock, what: "md superblock 1.2", place: partStart, offs: at(4096), b: le32(superblock.Magic)},
	{kind: PartitionTable, what: "GPT header", offs: at(512), b: "EFI PART"},
	{kind: PartitionTable, what: "GPT header (4K blocks)", offs: at(4096), b: "EFI PART"},
	{kind: PartitionTable, what: "GPT header (backup)", place: fromEnd, offs: at(512), b: "EFI PART"},
	{kind: PartitionTable, what: "GPT header (backup, 4K blocks)", place: fromEnd, offs: at(4096), b: "EFI PART"},
	{kind: Volume, what: "ext2/3/4 superblock", offs: at(1080), b: le16(0xef53)},
	{kind: Volume, what: "XFS superblock", offs: at(0), b: "XFSB"},
	{kind: Volume, what: "Btrfs superblock", offs: at(0x10040), b: "_BHRfS_M"},
	{kind: Volume, what: "FAT12 boot sector", offs: at(54), b: "FAT12   "},
	{kind: Volume, what: "FAT16 boot sector", offs: at(54), b: "FAT16   "},
	{kind: Volume, what: "FAT boot sector", offs: at(54), b: "FAT     "},
	{kind: Volume, what: "FAT boot sector", offs: at(54), b: "MSDOS"},
	{kind: Volume, what: "FAT32 boot sector", offs: at(82), b: "FAT32   "},
	{kind: Volume, what: "FAT32 boot sector", offs: at(82), b: "MSWIN"},
	{kind: Volume, what: "exFAT boot sector", offs: at(3), b: "EXFAT   "},
	{kind: Volume, what: "NTFS boot sector", offs: at(3), b: "NTFS    "},
	{kind: Volume, what: "BitLocker volume", offs: at(3), b: "-FVE-FS-"},
	{kind: Volume, what: "ISO 9660 volume descriptor", offs: at(32769), b: "CD001"},
	{kind: Volume, what: "UDF volume recognition", offs: at(32769), b: "BEA01"},
	{kind: Volume, what: "UDF volume recognition", offs: at(32769), b: "NSR02"},
	{kind: Volume, what: "UDF volume recognition", offs: at(32769), b: "NSR03"},
	{kind: Volume, what: "SquashFS superblock", offs: at(0), b: "hsqs"},
	{kind: Volume, what: "SquashFS superblock (big-endian)", offs: at(0), b: "sqsh"},
	{kind: Volume, what: "F2FS superblock", offs: at(1024), b: le32(0xf2f52010)},
	{kind: Volume, what: "JFS superblock", offs: at(32768), b: "JFS1"},
	{kind: Volume, what: "ReiserFS superblock", offs: at(65536 + 52), b: "ReIsErFs"},
	{kind: Volume, what: "ReiserFS superblock", offs: at(65536 + 52), b: "ReIsEr2Fs"},
	{kind: Volume, what: "ReiserFS superblock", offs: at(65536 + 52), b: "ReIsEr3Fs"},
	{kind: Volume, what: "ReiserFS 3.5 superblock", offs: at(8192 + 52), b: "ReIsErFs"},
	{kind: Volume, what: "NILFS2 superblock", offs: at(1030), b: le16(0x3434)},
	{kind: Volume, what: "LUKS header", offs: at(0), b: "LUKS\xba\xbe"},
	{kind: Volume, what: "bcache superblock", offs: at(4096 + 24), b: "\xc6\x85\x73\xf6\x4e\x1a\x45\xca\x82\x65\xf5\x7f\x48\xba\x6d\x81"},
	{kind: Volume, what: "bcachefs superblock", offs: at(4096 + 24), b: "\xc6\x85\x73\xf6\x66\xce\x90\xa9\xd9\x6a\x60\xcf\x80\x3d\xf7\xef"},
	{kind: Volume, what: "Intel IMSM metadata", place: fromEnd, offs: at(1024), b: "Intel Raid ISM Cfg Sig. "},
	{kind: Volume, what: "DDF anchor", place: fromEnd, offs: at(512), b: "\xde\x11\xde\x11"},
	{kind: Volume, what: "Btrfs superblock (mirror)", place: diskStart, offs: at(64<<20+0x40, 256<<30+0x40), b: "_BHRfS_M"},
	{kind: Volume, what: "LVM2 physical volume label", offs: at(0, 512, 1024, 1536), b: "LABELONE"},
	{kind: Volume, what: "LUKS2 secondary header", offs: at(16<<10, 32<<10, 64<<10, 128<<10, 256<<10, 512<<10, 1<<20, 2<<20, 4<<20), b: "SKUL\xba\xbe"},
	{kind: Volume, what: "swap signature", page: true, b: "SWAPSPACE2"},
	{kind: Volume, what: "swap signature", page: true, b: "SWAP-SPACE"},
	{kind: Volume, what: "hibernation image", page: true, b: "S1SUSPEND"},
	{kind: Volume, what: "hibernation image", page: true, b: "S2SUSPEND"},
	{kind: Volume, what: "hibernation image", page: true, b: "ULSUSPEND"},
	{kind: Volume, what: "hibernation image", page: true, b: "LINHIB0001"},
}

// PartitionStarts are the usual first-partition byte offsets at which
// Scan also looks for signatures: DOS's sector 63, and the 1 MiB
// alignment of fdisk, parted and sgdisk with its multiples 2, 4, 8 and
// 16 MiB.
func PartitionStarts() []int64 {
	return []int64{63 * 512, 1 << 20, 2 << 20, 4 << 20, 8 << 20, 16 << 20}
}

// headSize is the window read at each start: up to and past the btrfs
// and reiserfs magics.
const headSize = 0x10100

// scan is one pass over a device.
type scan struct {
	r    io.ReaderAt
	size int64
	mask []Range
	out  []Finding
}

func (s *scan) add(k Kind, what string, off int64) {
	s.out = append(s.out, Finding{Kind: k, What: what, Offset: off})
}

// masked reports whether [off, off+n) overlaps the mask.
func (s *scan) masked(off, n int64) bool {
	for _, m := range s.mask {
		if m.overlaps(off, n) {
			return true
		}
	}
	return false
}

// Scan looks for every signature the package knows (see the package
// doc) on the device r of size bytes: md superblocks, then partition
// tables, then the rest, each group in a fixed order. It returns no
// findings and a nil error when it recognises nothing; that alone does
// not make a disk blank (a caller deciding so must also look at the
// data). A read error is returned as such, wrapped, and never taken for
// "nothing found".
func Scan(r io.ReaderAt, size int64) ([]Finding, error) {
	return ScanMasked(r, size, nil)
}

// ScanMasked is Scan over everything but the bytes in mask: a magic that
// overlaps a masked range is not looked for. A caller that wrote its own
// md superblock area uses it to look at the rest of the disk.
func ScanMasked(r io.ReaderAt, size int64, mask []Range) ([]Finding, error) {
	s := &scan{r: r, size: size, mask: mask}
	if err := s.probeMD(); err != nil {
		return nil, err
	}
	// The disk's start, then each usual partition start.
	if err := s.at(0, ""); err != nil {
		return nil, err
	}
	for _, base := range PartitionStarts() {
		if err := s.at(base, fmt.Sprintf(" in a partition at byte %d", base)); err != nil {
			return nil, err
		}
	}
	// The end of the disk.
	for _, m := range magics {
		if m.place != fromEnd {
			continue
		}
		for _, off := range m.offs {
			if err := s.check(nil, 0, m.kind, m.what, m.b, size-off); err != nil {
				return nil, err
			}
		}
	}
	if err := s.scanZFS(); err != nil {
		return nil, err
	}
	// A stable order: md, partition tables, the rest.
	sorted := make([]Finding, 0, len(s.out))
	for _, k := range []Kind{MDSuperblock, PartitionTable, Volume} {
		for _, f := range s.out {
			if f.Kind == k {
				sorted = append(sorted, f)
			}
		}
	}
	return sorted, nil
}

// probeMD adds any md superblock magic, valid or not, at any of the four
// superblock locations.
func (s *scan) probeMD() error {
	pr, err := superblock.Probe(s.r, s.size)
	switch {
	case err == nil:
	case errors.Is(err, superblock.ErrNoSuperblock), errors.Is(err, superblock.ErrDeviceTooSmall):
		return nil
	default:
		return fmt.Errorf("signature: probing md superblocks: %w", err)
	}
	for _, c := range pr.Candidates {
		if c.Err != nil && c.Superblock == nil && !errors.Is(c.Err, superblock.ErrChecksum) &&
			!errors.Is(c.Err, superblock.ErrWrongLocation) && !isDecodeError(c.Err) {
			return fmt.Errorf("signature: reading %s superblock location: %w", c.Version, c.Err)
		}
		if !s.masked(c.Offset, 4) {
			s.add(MDSuperblock, "md superblock "+c.Version.String(), c.Offset)
		}
	}
	return nil
}

// ReadRange reads the bytes of rg that lie on the device r of size
// bytes: all of them, fewer where rg runs past the end, none (nil) from
// the end on. A short read is an error wrapping io.ErrUnexpectedEOF,
// never a shorter result. Scan reads its windows through it; a caller
// applying its own rule to the same device (md's fill rule) can too.
func ReadRange(r io.ReaderAt, size int64, rg Range) ([]byte, error) {
	if rg.Off >= size {
		return nil, nil
	}
	w := make([]byte, min(rg.Len, size-rg.Off))
	if err := readFull(r, w, rg.Off); err != nil {
		return nil, err
	}
	return w, nil
}

// check looks for the magic b at byte off of the device; w is a window
// read at wOff, used when it holds the bytes.
func (s *scan) check(w []byte, wOff int64, k Kind, what, b string, off int64) error {
	n := int64(len(b))
	if off < 0 || off+n > s.size || s.masked(off, n) {
		return nil
	}
	var got []byte
	if off >= wOff && off+n <= wOff+int64(len(w)) {
		got = w[off-wOff : off-wOff+n]
	} else {
		got = make([]byte, n)
		if err := readFull(s.r, got, off); err != nil {
			return err
		}
	}
	if bytes.Equal(got, []byte(b)) {
		s.add(k, what, off)
	}
	return nil
}

// at looks for every magic measured from a start, at base and on: the
// disk's own (base 0) or a partition's. where is appended to What.
func (s *scan) at(base int64, where string) error {
	w, err := ReadRange(s.r, s.size, Range{Off: base, Len: headSize})
	if err != nil || w == nil {
		return err
	}
	s.scanMBR(w, base, where)
	for _, m := range magics {
		if m.page || !m.place.at(base) {
			continue
		}
		for _, off := range m.offs {
			if err := s.check(w, base, m.kind, m.what+where, m.b, base+off); err != nil {
				return err
			}
		}
	}
	// Page-size signatures, page by page.
	for _, page := range pageSizes {
		for _, m := range magics {
			if !m.page || !m.place.at(base) {
				continue
			}
			what := fmt.Sprintf("%s (%d KiB pages)%s", m.what, page>>10, where)
			if err := s.check(w, base, m.kind, what, m.b, base+page-10); err != nil {
				return err
			}
		}
	}
	return nil
}

// scanMBR looks for 0x55 0xaa at 510 of the window w read at base: a DOS
// partition table, a protective MBR, the boot sector of a FAT or NTFS
// file system, or an extended partition.
func (s *scan) scanMBR(w []byte, base int64, where string) {
	if len(w) < 512 || w[510] != 0x55 || w[511] != 0xaa || s.masked(base+510, 2) {
		return
	}
	what := "MBR boot signature (DOS partition table or boot sector)"
	for i := 0; i < 4; i++ {
		if w[446+16*i+4] == 0xee {
			what = "protective MBR (GPT)"
		}
	}
	s.add(PartitionTable, what+where, base+510)
}

// ZFS vdev labels (256 KiB each) and their uberblock arrays.
const (
	zfsLabelSize     = 256 << 10
	zfsUberblockOff  = 128 << 10
	zfsUberblockSize = 1 << 10
	zfsUberMagic     = 0x00bab10c
)

// scanZFS looks for the uberblock magic, in either byte order, at every
// 1 KiB of the uberblock area of the four labels; one finding a label.
func (s *scan) scanZFS() error {
	end := s.size &^ (zfsLabelSize - 1)
	labels := []int64{0, zfsLabelSize, end - 2*zfsLabelSize, end - zfsLabelSize}
	buf := make([]byte, zfsLabelSize-zfsUberblockOff)
	for i, l := range labels {
		if l < 0 || l+zfsLabelSize > s.size || (i >= 2 && l < 2*zfsLabelSize) {
			continue
		}
		if err := readFull(s.r, buf, l+zfsUberblockOff); err != nil {
			return err
		}
		for o := 0; o+8 <= len(buf); o += zfsUberblockSize {
			off := l + zfsUberblockOff + int64(o)
			if v := binary.LittleEndian.Uint64(buf[o:]); v != zfsUberMagic && binary.BigEndian.Uint64(buf[o:]) != zfsUberMagic {
				continue
			}
			if !s.masked(off, 8) {
				s.add(Volume, fmt.Sprintf("ZFS uberblock (label %d)", i), off)
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
	return fmt.Errorf("signature: reading %d bytes at %d: %w", len(b), off, err)
}

// isDecodeError reports whether err is a content error from the
// superblock decoder (as opposed to an I/O error).
func isDecodeError(err error) bool {
	var fe *superblock.FormatError
	return errors.As(err, &fe)
}
