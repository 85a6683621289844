package md

import (
	"errors"
	"fmt"
	"io"

	"github.com/google/uuid"

	"github.com/go-mdraid/mdraid/signature"
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
	// errHasMDSuperblock means an md superblock magic, valid or not, at
	// one of the four superblock locations.
	errHasMDSuperblock = errors.New("md: disk carries an md superblock")
	// errHasPartitionTable means an MBR, a protective MBR or a GPT header
	// (primary or backup), or partitions the kernel knows about.
	errHasPartitionTable = errors.New("md: disk carries a partition table")
	// errHasSignature means a file system, volume manager, encryption,
	// swap or cache signature.
	errHasSignature = errors.New("md: disk carries a file system or volume signature")
	// errHasData means no known signature, but the first or last 4 MiB,
	// or one of the 64 sampled blocks, hold data: not all one of the fill
	// bytes 0x00, 0x5a or 0xff.
	errHasData = errors.New("md: disk carries data")
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
	case errHasMDSuperblock:
		return e.Kind == KindMDSuperblock
	case errHasPartitionTable:
		return e.Kind == KindPartitionTable
	case errHasSignature:
		return e.Kind == KindSignature
	case errHasData:
		return e.Kind == KindData
	}
	return false
}

var _ error = (*NotBlankError)(nil)

// CheckBlank decides whether the device r of size bytes is blank: whether
// it may be written without destroying anything someone might still
// want. It returns nil for a blank disk, a *NotBlankError for the first
// finding (matching ErrNotBlank; its Kind says what kind of content it
// is), or the I/O error that kept it from deciding. A read error is never taken as blank.
//
// # The blank rule
//
// A disk is blank when all of these hold:
//
//  1. no md superblock magic, valid or not, at any of the four superblock
//     locations (0.90, 1.0, 1.1, 1.2);
//  2. no known signature at the start of the disk, at its end, or at the
//     usual partition starts: sector 63 and 1, 2, 4, 8 and 16 MiB. A disk
//     whose partition table was wiped (an MBR has no backup) still has its
//     file systems there. The signatures, and where each is looked for,
//     are those of [signature.Scan], listed in package signature's doc;
//     md superblocks are clause 1, and partition tables (MBR, protective
//     MBR, GPT primary and backup) are reported as such;
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

// Where the blank rule looks (see CheckBlank).
const (
	bareEnds      = 4 << 20 // the first and last 4 MiB are one fill byte
	bareBlocks    = 64      // and so are 64 blocks spread over the disk
	bareBlockSize = 4096
)

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
	smask := make([]signature.Range, len(mask))
	for i, m := range mask {
		smask[i] = signature.Range{Off: m.off, Len: m.n}
	}
	fs, err := signature.ScanMasked(r, size, smask)
	if err != nil {
		return nil, err // a read error, never taken for blank
	}
	// Scan's order (md, partition tables, the rest) is the stable order
	// CheckBlank reports in.
	for _, f := range fs {
		b.add(blankKind(f.Kind), f.What, f.Offset)
	}
	if len(b.out) == 0 {
		// No known signature: the disk must also be bare.
		if err := b.fillRule(); err != nil {
			return nil, err
		}
	}
	return b.out, nil
}

// blankKind is the kind of NotBlankError a signature finding makes.
func blankKind(k signature.Kind) BlankKind {
	switch k {
	case signature.MDSuperblock:
		return KindMDSuperblock
	case signature.PartitionTable:
		return KindPartitionTable
	}
	return KindSignature
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
		buf, err := signature.ReadRange(b.r, b.size, signature.Range{Off: rg.off, Len: rg.n})
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
					b.add(KindData, orBitmap(buf, i, fmt.Sprintf("data (byte %#02x is not a fill pattern)", c)), rg.off+int64(i))
					return nil
				}
			}
			if c != fill {
				b.add(KindData, orBitmap(buf, i, fmt.Sprintf("data (byte %#02x after fill bytes %#02x)", c, fill)), rg.off+int64(i))
				return nil
			}
		}
	}
	return nil
}

// orBitmap names what the fill rule found at buf[i] when it is the start
// of an md write-intent bitmap superblock with no md superblock (what a
// create killed between a member's bitmap and its superblock leaves, or
// a superblock erased without its bitmap), else returns data. The bitmap
// superblock starts a 512-byte block: the regions read are aligned so.
func orBitmap(buf []byte, i int, data string) string {
	if i%512 != 0 || i+superblock.BitmapSize > len(buf) {
		return data
	}
	bm, err := superblock.DecodeBitmap(buf[i : i+superblock.BitmapSize])
	if err != nil {
		return data
	}
	return fmt.Sprintf("an md write-intent bitmap superblock (version %d, array UUID %s) with no md superblock", bm.Version, uuid.UUID(bm.UUID))
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
