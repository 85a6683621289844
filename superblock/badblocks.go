package superblock

import (
	"io"
)

// BadBlock is one entry of the 1.x bad-block log, in sectors.
type BadBlock struct {
	Sector uint64
	Length uint64
}

// maxBBLogRead is the largest bad-block log ReadBadBlocks reads, in
// sectors: mdadm's examine limit (the kernel only accepts 8).
const maxBBLogRead = 100

// DecodeBadBlocks decodes bad-block log entries from b: little-endian u64
// values holding the start in bits 63..10 and the length in bits 9..0, both
// in units of 1<<shift sectors. An all-ones entry ends the list, as does
// the end of b.
func DecodeBadBlocks(b []byte, shift uint8) []BadBlock {
	var out []BadBlock
	for i := 0; i+8 <= len(b); i += 8 {
		v := le.Uint64(b[i:])
		if v == ^uint64(0) {
			break
		}
		out = append(out, BadBlock{Sector: v >> 10 << shift, Length: v & 0x3ff << shift})
	}
	return out
}

// AppendBadBlocks appends the log encoding of bbs to b, followed by an
// all-ones terminator when there is room: b grows by size bytes, which
// should be BBLogSize*512. It returns an error matching ErrOutOfRange when
// an entry is not aligned to 1<<shift sectors, is longer than 1023 units,
// starts beyond 2^54 units, or the entries do not fit.
func AppendBadBlocks(b []byte, bbs []BadBlock, shift uint8, size int) ([]byte, error) {
	if size < 0 || len(bbs)*8 > size {
		return b, formatErr(-1, "bad block count", len(bbs), ErrOutOfRange)
	}
	if shift >= 64 {
		return b, formatErr(off1BBLogShift, "bblog_shift", shift, ErrOutOfRange)
	}
	unit := uint64(1) << shift
	start := len(b)
	for i, bb := range bbs {
		if bb.Sector%unit != 0 || bb.Length%unit != 0 || bb.Length/unit > 0x3ff || bb.Length == 0 || bb.Sector/unit >= 1<<54 {
			return b[:start], formatErr(int64(8*i), "bad block", bb, ErrOutOfRange)
		}
		b = le.AppendUint64(b, (bb.Sector/unit)<<10|bb.Length/unit)
	}
	for len(b)-start+8 <= size {
		b = le.AppendUint64(b, ^uint64(0))
	}
	for len(b)-start < size {
		b = append(b, 0xff)
	}
	return b, nil
}

// BadBlockLogLocation returns the byte offset and length of a 1.x
// superblock's bad-block log. ok is false when no log is configured
// (bblog_size or bblog_offset zero, or a 0.90 superblock).
func BadBlockLogLocation(sb *Superblock) (off int64, length int, ok bool, err error) {
	if !sb.Version.Is1x() || sb.BBLogSize == 0 || sb.BBLogOffset == 0 {
		return 0, 0, false, nil
	}
	off, err = sectorOffset(sb.SuperOffset, int64(sb.BBLogOffset), off1BBLogOffset, "bblog_offset")
	if err != nil {
		return 0, 0, false, err
	}
	return off, int(sb.BBLogSize) * 512, true, nil
}

// ReadBadBlocks reads the bad-block log of a 1.x superblock. It returns
// nil, nil when no log is configured or FeatureBadBlocks is clear (the log
// is empty). A log larger than 100 sectors gives ErrOutOfRange (mdadm's
// limit; the kernel accepts at most 8, which Validate reports).
func ReadBadBlocks(r io.ReaderAt, sb *Superblock) ([]BadBlock, error) {
	off, n, ok, err := BadBlockLogLocation(sb)
	if err != nil || !ok || sb.Features&FeatureBadBlocks == 0 {
		return nil, err
	}
	if sb.BBLogSize > maxBBLogRead {
		return nil, formatErr(off1BBLogSize, "bblog_size", sb.BBLogSize, ErrOutOfRange)
	}
	buf := make([]byte, n)
	if err := readFull(r, buf, off); err != nil {
		return nil, err
	}
	return DecodeBadBlocks(buf, sb.BBLogShift), nil
}
