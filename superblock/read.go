package superblock

import (
	"errors"
	"fmt"
	"io"
	"slices"
)

// readFull reads len(buf) bytes at off. A short read at the end of r gives
// an error matching ErrTruncated; other I/O errors are wrapped.
func readFull(r io.ReaderAt, buf []byte, off int64) error {
	if off < 0 {
		return formatErr(-1, "offset", off, ErrOutOfRange)
	}
	n, err := r.ReadAt(buf, off)
	if n == len(buf) {
		return nil
	}
	if err == nil || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return formatErr(-1, fmt.Sprintf("read at %#x", off), n, ErrTruncated)
	}
	return fmt.Errorf("superblock: read %d bytes at %#x: %w", len(buf), off, err)
}

// Read reads the superblock of version v from a device of size bytes: one
// 4 KiB block at v.Offset(size), decoded with Decode. The returned value
// records the version and DiskOffset.
//
// Besides the errors of Version.Offset and Decode, Read returns an error
// matching ErrWrongLocation (a *FormatError) when the superblock found
// does not belong there: a 1.x superblock whose super_offset is not the
// sector it was read from, or a superblock of the other format. As with a
// *ChecksumError, the decoded value is returned with such an error.
func Read(r io.ReaderAt, size int64, v Version) (*Superblock, error) {
	return readInto(r, size, v, make([]byte, BlockSize))
}

// readInto is Read with buf, BlockSize bytes, to read into: Decode keeps
// nothing of it, so Probe reads every location into one buffer.
func readInto(r io.ReaderAt, size int64, v Version, buf []byte) (*Superblock, error) {
	off, err := v.Offset(size)
	if err != nil {
		return nil, err
	}
	if off+BlockSize > size {
		// Only possible for tiny 1.x devices; read what there is.
		buf = buf[:max(size-off, 0)]
	}
	if err := readFull(r, buf, off); err != nil {
		return nil, err
	}
	sb, err := Decode(buf)
	if sb == nil {
		return nil, err
	}
	sb.DiskOffset = off
	if lerr := checkLocation(sb, v, off); lerr != nil {
		return sb, errors.Join(lerr, err)
	}
	return sb, err
}

// checkLocation reports whether sb may sit at byte offset off as version
// v, as the kernel (super_1_load "sb_start != super_offset") and blkid
// check it.
func checkLocation(sb *Superblock, v Version, off int64) error {
	if (v == Version090) != (sb.Version == Version090) {
		return formatErr(0, "major_version", sb.Version,
			fmt.Errorf("%w: %v superblock at the %v location", ErrWrongLocation, sb.Version, v))
	}
	if v.Is1x() && (sb.SuperOffset > 1<<54 || int64(sb.SuperOffset)*512 != off) {
		return formatErr(off1SuperOffset, "super_offset", sb.SuperOffset,
			fmt.Errorf("%w: read at sector %d", ErrWrongLocation, off/512))
	}
	return nil
}

// Candidate is one superblock location Probe found something at.
type Candidate struct {
	// Version is the location's version; for 1.x superblocks that
	// decoded, Superblock.Version.
	Version Version
	// Offset is the byte offset probed.
	Offset int64
	// Superblock is the decoded superblock, also when Err is a checksum
	// or location error; nil when nothing could be decoded.
	Superblock *Superblock
	// Err is nil for a valid superblock.
	Err error
}

// Usable reports whether mdadm would load this superblock: it decoded and
// sits where it belongs. mdadm does not verify checksums when loading, so
// a checksum error does not make a candidate unusable.
func (c *Candidate) Usable() bool {
	if c.Superblock == nil {
		return false
	}
	return c.Err == nil || !errors.Is(c.Err, ErrWrongLocation) && errors.Is(c.Err, ErrChecksum)
}

// ProbeResult is what Probe found on a device.
type ProbeResult struct {
	// Candidates lists every location where a superblock, possibly
	// damaged, was found, or that could not be read, in libblkid's probe
	// order (0.90, 1.0, 1.1, 1.2). Locations without an md magic are
	// left out. On small devices several versions can share one offset;
	// it is listed once.
	Candidates []Candidate
	// Chosen is the index in Candidates of the superblock mdadm would
	// use, or -1.
	Chosen int
}

// Valid returns the superblocks that decoded with no error at all.
func (p *ProbeResult) Valid() []*Superblock {
	var out []*Superblock
	for _, c := range p.Candidates {
		if c.Err == nil && c.Superblock != nil {
			out = append(out, c.Superblock)
		}
	}
	return out
}

// Best returns the candidate mdadm would use, or nil.
func (p *ProbeResult) Best() *Candidate {
	if p.Chosen < 0 || p.Chosen >= len(p.Candidates) {
		return nil
	}
	return &p.Candidates[p.Chosen]
}

// Probe looks for a superblock at every location of a device of size bytes
// and reports all it finds, since a device can carry stale superblocks of
// several versions. It returns an error only when nothing was found: one
// matching ErrNoSuperblock when no location holds an md magic,
// ErrDeviceTooSmall when no location fits, or the joined per-location
// errors (I/O errors) otherwise.
//
// Chosen follows mdadm (util.c guess_super_type and super1.c load_super1,
// as read in md-raid-utilities/mdadm): guess_super_type tries the
// superlist in order (super0 before super1) and replaces its pick only
// when a later one has a strictly greater info.array.ctime, a 32-bit value
// (1.x: the low 32 bits of ctime, i.e. the seconds); ties keep 0.90. For
// 1.x, load_super1 with an unspecified minor tries 1.0, 1.1 and 1.2 in
// that order and keeps the strictly greatest raw 64-bit ctime (so the
// microseconds in the high bits weigh more than the seconds). mdadm checks
// magic, major version and (1.x) super_offset but not the checksum, so
// superblocks with a bad checksum can be chosen. Unlike mdadm, which only
// reads 0.90 superblocks in its own byte order, both byte orders are
// candidates here (as in libblkid).
func Probe(r io.ReaderAt, size int64) (*ProbeResult, error) {
	res := &ProbeResult{Chosen: -1}
	type loc struct {
		v   Version
		off int64
	}
	var locs []loc
	for _, v := range Versions {
		if off, err := v.Offset(size); err == nil {
			locs = append(locs, loc{v, off})
		}
	}
	if len(locs) == 0 {
		return res, formatErr(-1, "device size", size, ErrDeviceTooSmall)
	}
	var ioErrs []error
	buf := make([]byte, BlockSize)
	for i, l := range locs {
		if slices.ContainsFunc(locs[:i], func(p loc) bool { return p.off == l.off }) {
			continue // read already
		}
		sb, err := readInto(r, size, l.v, buf)
		if errors.Is(err, ErrNoSuperblock) {
			continue
		}
		if sb == nil {
			res.Candidates = append(res.Candidates, Candidate{Version: l.v, Offset: l.off, Err: err})
			ioErrs = append(ioErrs, fmt.Errorf("%v at %#x: %w", l.v, l.off, err))
			continue
		}
		if errors.Is(err, ErrWrongLocation) {
			// Another version sharing this offset may accept it.
			for _, l2 := range locs[i+1:] {
				if l2.off == l.off && checkLocation(sb, l2.v, l.off) == nil {
					err = recheckChecksum(sb)
					break
				}
			}
		}
		v := l.v
		if err == nil || !errors.Is(err, ErrWrongLocation) {
			v = sb.Version
		}
		res.Candidates = append(res.Candidates, Candidate{Version: v, Offset: l.off, Superblock: sb, Err: err})
	}
	res.Chosen = chooseMdadm(res.Candidates)
	if len(res.Candidates) == 0 {
		return res, formatErr(-1, "superblock", "none at any location", ErrNoSuperblock)
	}
	if res.Chosen < 0 && len(ioErrs) == len(res.Candidates) {
		return res, errors.Join(ioErrs...)
	}
	return res, nil
}

// recheckChecksum returns a *ChecksumError when sb's stored checksum is
// wrong, computed the way Decode does.
func recheckChecksum(sb *Superblock) error {
	c := sb.ComputedChecksum()
	ok := c == sb.Checksum
	if sb.Version == Version090 {
		ok = fold16(c) == fold16(sb.Checksum)
	}
	if ok {
		return nil
	}
	return &ChecksumError{Superblock: sb, Stored: sb.Checksum, Computed: c}
}

// chooseMdadm implements mdadm's choice (see Probe).
func chooseMdadm(cs []Candidate) int {
	best090, best1 := -1, -1
	for i := range cs {
		c := &cs[i]
		if !c.Usable() {
			continue
		}
		if c.Superblock.Version == Version090 {
			if best090 < 0 {
				best090 = i
			}
			continue
		}
		if best1 < 0 || cs[best1].Superblock.CTime < c.Superblock.CTime {
			best1 = i
		}
	}
	switch {
	case best090 < 0:
		return best1
	case best1 < 0:
		return best090
	case uint32(cs[best090].Superblock.CTime) < uint32(cs[best1].Superblock.CTime):
		return best1
	}
	return best090
}
