package superblock

import (
	"fmt"
	"io"
	"math"
	"math/bits"

	"github.com/google/uuid"
)

// Bitmap superblock constants (mdadm bitmap.h, kernel md-bitmap.h).
const (
	BitmapMagic = 0x6d746962 // "bitm" in little-endian
	// BitmapSize is sizeof(bitmap_super_t).
	BitmapSize = 256

	BitmapMajorLo         = 3 // bitmap bits in host order (non-portable)
	BitmapMajorHi         = 4 // bitmap bits little-endian
	BitmapMajorClustered  = 5
	BitmapMajorLockless   = 6
	bitmapMaxWriteBehind  = 16383 // COUNTER_MAX
	bitmapMaxDaemonSleep  = math.MaxInt32 / 1000
	offBitmapMagic        = 0
	offBitmapVersion      = 4
	offBitmapUUID         = 8
	offBitmapEvents       = 24
	offBitmapEventsClr    = 32
	offBitmapSyncSize     = 40
	offBitmapState        = 48
	offBitmapChunkSize    = 52
	offBitmapDaemonSleep  = 56
	offBitmapWriteBehind  = 60
	offBitmapSectorsRes   = 64
	offBitmapNodes        = 68
	offBitmapClusterName  = 72
	offBitmapPad          = 136
	bitmapOffsetAfter090  = Size090
	maxBitmapDeviceSector = 1 << 54
)

// BitmapState is the bitmap superblock state word (enum bitmap_state; the
// values are bit numbers).
type BitmapState uint32

// Bitmap state bits.
const (
	BitmapStale      BitmapState = 1 << 1
	BitmapWriteError BitmapState = 1 << 2
	BitmapFirstUse   BitmapState = 1 << 3
	BitmapClean      BitmapState = 1 << 4
	BitmapDaemonBusy BitmapState = 1 << 5
	BitmapHostEndian BitmapState = 1 << 15
)

var bitmapStateNames = map[int]string{
	1: "stale", 2: "write-error", 3: "first-use", 4: "clean", 5: "daemon-busy", 15: "host-endian",
}

// String returns the names of the set bits joined by "|", or "0".
func (s BitmapState) String() string { return flagString(uint32(s), bitmapStateNames) }

// Bitmap is the superblock of an internal write-intent bitmap (struct
// bitmap_super_s, 256 bytes). Its fields are little-endian whatever the
// version; Version 3 means the bitmap bits that follow are in the writing
// host's order, 4 and later little-endian.
type Bitmap struct {
	Version uint32
	// UUID must equal Superblock.BitmapUUID of the array.
	UUID          uuid.UUID
	Events        uint64
	EventsCleared uint64
	// SyncSize is the size of the synced region in sectors.
	SyncSize uint64
	State    BitmapState
	// ChunkSize is the bytes covered by one bit.
	ChunkSize uint32
	// DaemonSleep is the flush period in seconds.
	DaemonSleep     uint32
	WriteBehind     uint32
	SectorsReserved uint32
	Nodes           uint32
	ClusterName     [64]byte
	// Pad is the reserved tail, kept for an exact round trip.
	Pad [BitmapSize - offBitmapPad]byte
}

// DecodeBitmap decodes a bitmap superblock from the first 256 bytes of b.
// Errors match ErrTruncated, ErrNoBitmap (wrong magic) or
// ErrUnsupportedVersion (version outside 3..6).
func DecodeBitmap(b []byte) (*Bitmap, error) {
	if len(b) < BitmapSize {
		return nil, formatErr(-1, "bitmap length", len(b), ErrTruncated)
	}
	if m := le.Uint32(b[offBitmapMagic:]); m != BitmapMagic {
		return nil, formatErr(offBitmapMagic, "bitmap magic", m, ErrNoBitmap)
	}
	v := le.Uint32(b[offBitmapVersion:])
	if v < BitmapMajorLo || v > BitmapMajorLockless {
		return nil, formatErr(offBitmapVersion, "bitmap version", v, ErrUnsupportedVersion)
	}
	bm := &Bitmap{
		Version:         v,
		Events:          le.Uint64(b[offBitmapEvents:]),
		EventsCleared:   le.Uint64(b[offBitmapEventsClr:]),
		SyncSize:        le.Uint64(b[offBitmapSyncSize:]),
		State:           BitmapState(le.Uint32(b[offBitmapState:])),
		ChunkSize:       le.Uint32(b[offBitmapChunkSize:]),
		DaemonSleep:     le.Uint32(b[offBitmapDaemonSleep:]),
		WriteBehind:     le.Uint32(b[offBitmapWriteBehind:]),
		SectorsReserved: le.Uint32(b[offBitmapSectorsRes:]),
		Nodes:           le.Uint32(b[offBitmapNodes:]),
	}
	copy(bm.UUID[:], b[offBitmapUUID:])
	copy(bm.ClusterName[:], b[offBitmapClusterName:])
	copy(bm.Pad[:], b[offBitmapPad:])
	return bm, nil
}

// MarshalBinary encodes the bitmap superblock (256 bytes).
func (bm *Bitmap) MarshalBinary() ([]byte, error) {
	return bm.AppendBinary(make([]byte, 0, BitmapSize))
}

// AppendBinary appends the 256-byte bitmap superblock to b. Only the
// superblock is written: a new member's bitmap bits (mdadm fills them with
// 0xff) are the caller's business.
func (bm *Bitmap) AppendBinary(b []byte) ([]byte, error) {
	var out [BitmapSize]byte
	le.PutUint32(out[offBitmapMagic:], BitmapMagic)
	le.PutUint32(out[offBitmapVersion:], bm.Version)
	copy(out[offBitmapUUID:], bm.UUID[:])
	le.PutUint64(out[offBitmapEvents:], bm.Events)
	le.PutUint64(out[offBitmapEventsClr:], bm.EventsCleared)
	le.PutUint64(out[offBitmapSyncSize:], bm.SyncSize)
	le.PutUint32(out[offBitmapState:], uint32(bm.State))
	le.PutUint32(out[offBitmapChunkSize:], bm.ChunkSize)
	le.PutUint32(out[offBitmapDaemonSleep:], bm.DaemonSleep)
	le.PutUint32(out[offBitmapWriteBehind:], bm.WriteBehind)
	le.PutUint32(out[offBitmapSectorsRes:], bm.SectorsReserved)
	le.PutUint32(out[offBitmapNodes:], bm.Nodes)
	copy(out[offBitmapClusterName:], bm.ClusterName[:])
	copy(out[offBitmapPad:], bm.Pad[:])
	return append(b, out[:]...), nil
}

// Bits returns the number of bits in the bitmap: SyncSize sectors in
// ChunkSize chunks, rounded up (mdadm bitmap_bits). 0 when ChunkSize is 0;
// saturates at math.MaxUint64.
func (bm *Bitmap) Bits() uint64 {
	if bm.ChunkSize == 0 {
		return 0
	}
	hi, lo := bits.Mul64(bm.SyncSize, 512)
	lo, carry := bits.Add64(lo, uint64(bm.ChunkSize)-1, 0)
	hi += carry
	if hi >= uint64(bm.ChunkSize) {
		return math.MaxUint64
	}
	q, _ := bits.Div64(hi, lo, uint64(bm.ChunkSize))
	return q
}

// Size returns the bytes the bitmap occupies on disk, superblock included,
// rounded up to boundary (mdadm calc_bitmap_size; mdadm uses 4096 for
// placement). It saturates at math.MaxUint64.
func (bm *Bitmap) Size(boundary uint64) uint64 {
	n := bm.Bits()
	if n > math.MaxUint64-7-BitmapSize*8 {
		return math.MaxUint64
	}
	size := (n+7)/8 + BitmapSize
	if boundary > 1 {
		if size > math.MaxUint64-boundary {
			return math.MaxUint64
		}
		size = (size + boundary - 1) / boundary * boundary
	}
	return size
}

// HostEndianBits reports whether the bitmap bits are in the writing host's
// order (version 3) rather than little-endian.
func (bm *Bitmap) HostEndianBits() bool { return bm.Version == BitmapMajorLo }

// Validate checks the bitmap superblock as the kernel's md_bitmap_read_sb
// does: chunk size a power of two of at least 512 bytes, daemon_sleep in
// range, write_behind at most 16383, and, when sb is not nil, the UUID
// equal to sb.BitmapUUID(). The result is nil or an errors.Join of
// *FormatError values matching ErrInvalid or ErrOutOfRange.
func (bm *Bitmap) Validate(sb *Superblock) error {
	var errs []error
	if bm.ChunkSize < 512 || bm.ChunkSize&(bm.ChunkSize-1) != 0 {
		errs = append(errs, formatErr(offBitmapChunkSize, "chunksize", bm.ChunkSize, ErrInvalid))
	}
	if bm.DaemonSleep < 1 || bm.DaemonSleep > bitmapMaxDaemonSleep {
		errs = append(errs, formatErr(offBitmapDaemonSleep, "daemon_sleep", bm.DaemonSleep, ErrOutOfRange))
	}
	if bm.WriteBehind > bitmapMaxWriteBehind {
		errs = append(errs, formatErr(offBitmapWriteBehind, "write_behind", bm.WriteBehind, ErrOutOfRange))
	}
	if sb != nil && bm.UUID != sb.BitmapUUID() {
		errs = append(errs, formatErr(offBitmapUUID, "uuid", bm.UUID, fmt.Errorf("%w: bitmap belongs to another array", ErrInvalid)))
	}
	return joinErrs(errs)
}

// BitmapLocation returns the byte offset of sb's bitmap superblock: for
// 1.x (SuperOffset + BitmapOffset) sectors, for 0.90 4096 bytes after the
// superblock (which needs sb.DiskOffset). The error matches ErrNoBitmap or
// ErrOutOfRange.
func BitmapLocation(sb *Superblock) (int64, error) {
	if !sb.HasBitmap() {
		return 0, formatErr(-1, "bitmap", "not present", ErrNoBitmap)
	}
	if sb.Version == Version090 {
		if sb.DiskOffset < 0 {
			return 0, formatErr(-1, "superblock disk offset", sb.DiskOffset, ErrOutOfRange)
		}
		return sb.DiskOffset + bitmapOffsetAfter090, nil
	}
	return sectorOffset(sb.SuperOffset, int64(sb.BitmapOffset), off1BitmapOffset, "bitmap_offset")
}

// sectorOffset returns (base+delta)*512 when it is a sane non-negative
// device offset.
func sectorOffset(base uint64, delta int64, off int64, field string) (int64, error) {
	if base >= maxBitmapDeviceSector {
		return 0, formatErr(off1SuperOffset, "super_offset", base, ErrOutOfRange)
	}
	s := int64(base) + delta
	if s < 0 {
		return 0, formatErr(off, field, delta, ErrOutOfRange)
	}
	return s * 512, nil
}

// ReadBitmap reads the bitmap superblock of sb from r. Errors: ErrNoBitmap
// when sb has none or the magic is missing, ErrTruncated when r ends
// early, ErrUnsupportedVersion, or I/O errors. When the bitmap decodes but
// belongs to another array (UUID mismatch; mdadm then ignores the bitmap)
// both the bitmap and an error matching ErrInvalid are returned.
func ReadBitmap(r io.ReaderAt, sb *Superblock) (*Bitmap, error) {
	off, err := BitmapLocation(sb)
	if err != nil {
		return nil, err
	}
	var buf [BitmapSize]byte
	if err := readFull(r, buf[:], off); err != nil {
		return nil, err
	}
	bm, err := DecodeBitmap(buf[:])
	if err != nil {
		return nil, err
	}
	if bm.UUID != sb.BitmapUUID() {
		return bm, formatErr(offBitmapUUID, "bitmap uuid", bm.UUID, fmt.Errorf("%w: bitmap belongs to another array", ErrInvalid))
	}
	return bm, nil
}
