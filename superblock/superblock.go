package superblock

import (
	"bytes"
	"encoding/binary"
	"strconv"
	"time"

	"github.com/google/uuid"
)

// Superblock is an md superblock of any version, decoded into one
// version-independent value. It mirrors every field of the kernel's
// struct mdp_superblock_1 (1.x) and struct mdp_superblock_s (0.90); fields
// that exist in only one format say so and are zero for the other.
//
// Units are normalised so that one field means one thing: sizes and
// offsets are in 512-byte sectors, chunk sizes are in bytes. Everything
// else is kept as stored, so that decoding, encoding and decoding again
// gives an equal value, and encoding a decoded superblock reproduces the
// original bytes (with the checksum recomputed).
type Superblock struct {
	// Version is the format, and for 1.x the location. Decode derives
	// the 1.x minor version from SuperOffset as mdadm does (<= 4 is 1.1,
	// <= 8 is 1.2, else 1.0); Read and Probe check that it matches where
	// the superblock was found.
	Version Version
	// ByteOrder is the byte order of the superblock: always
	// binary.LittleEndian for 1.x; for 0.90 the order of the host that
	// wrote it, taken from the magic.
	ByteOrder binary.ByteOrder
	// DiskOffset is the byte offset on the device the superblock was
	// read from (set by Read and Probe), or -1 when it was decoded from a
	// buffer.
	DiskOffset int64

	// MinorVersion and PatchVersion are the 0.90 minor_version (90, or
	// 91 while reshaping) and patch_version. Zero for 1.x.
	MinorVersion uint32
	PatchVersion uint32

	// Features is the 1.x feature_map.
	Features FeatureMap
	// Pad0 is the 1.x pad0 word. The kernel refuses a non-zero value, so
	// one means a field this package does not know: see UnknownFields.
	Pad0 uint32

	// SetUUID is the array UUID. For 1.x the 16 bytes as stored. For
	// 0.90, word i of set_uuid0..3 in big-endian order at bytes
	// 4i..4i+3, so that SetUUID.String() is blkid's text and mdadm's
	// "%08x:%08x:%08x:%08x" shows the same digits.
	SetUUID uuid.UUID
	// SetName is the raw 1.x set_name: "homehost:name", NUL padded, not
	// NUL terminated when all 32 bytes are used. See Name and Homehost.
	SetName [32]byte

	// CTime and UTime are the creation and update times as stored: for
	// 1.x the low 40 bits are seconds and the high 24 bits microseconds;
	// for 0.90 plain seconds. See Created and Updated.
	CTime uint64
	UTime uint64

	Level  Level
	Layout uint32
	// Size is the used size of each member in sectors (1.x size; 0.90
	// size, which is in KiB on disk, times 2). 0 for raid0 and linear.
	Size uint64
	// ChunkSize is the chunk size in bytes (1.x chunksize is in sectors;
	// 0.90 chunk_size is in bytes). For linear arrays it is the rounding.
	ChunkSize uint64
	RaidDisks uint32

	// BitmapOffset is the 1.x word at byte 96, in sectors relative to
	// SuperOffset, meaningful when FeatureBitmapOffset is set. The same
	// word holds the PPL location when FeaturePPL is set: see PPLOffset
	// and PPLSize.
	BitmapOffset int32

	// Reshape fields, valid when FeatureReshapeActive is set (1.x) or
	// MinorVersion is 91 (0.90). NewChunk is in bytes.
	NewLevel        Level
	ReshapePosition uint64
	DeltaDisks      int32
	NewLayout       uint32
	NewChunk        uint64
	// NewOffset is the 1.x signed sector delta to DataOffset, valid when
	// FeatureNewOffset is set.
	NewOffset int32

	// 1.x per-device fields, in sectors.
	DataOffset  uint64
	DataSize    uint64
	SuperOffset uint64
	// RecoveryOffset is recovery_offset (FeatureRecoveryOffset), or
	// journal_tail on a journal device.
	RecoveryOffset   uint64
	DevNumber        uint32
	CntCorrectedRead uint32
	DeviceUUID       uuid.UUID
	DevFlags         DevFlags
	// Bad-block log geometry: BBLogSize sectors at SuperOffset +
	// BBLogOffset; entries are in units of 1<<BBLogShift sectors.
	BBLogShift  uint8
	BBLogSize   uint16
	BBLogOffset int32

	Events uint64
	// ResyncOffset is the 1.x resync_offset; all ones means clean.
	ResyncOffset uint64
	// Checksum is the stored sb_csum.
	Checksum uint32
	// LogicalBlockSize is the 1.x logical_block_size (bytes 224..227,
	// formerly the start of pad3): the array's logical block size in
	// bytes, written by Linux 6.19 and later (commit 62ed1b582246), or 0
	// when not recorded. Kernels before 6.19 refuse to import a
	// superblock where it is non-zero. See Validate for the values
	// accepted.
	LogicalBlockSize uint32
	// Pad3 is what is left of the 1.x pad3 since Linux 6.19 (bytes
	// 228..255). Kernels refuse non-zero bytes, so one means a field
	// this package does not know: see UnknownFields.
	Pad3 [28]byte
	// DevRoles is the 1.x dev_roles table, indexed by dev_number; its
	// length is max_dev.
	DevRoles []Role

	// 0.90-only fields.
	GValidWords   uint32
	NrDisks       uint32
	MDMinor       uint32 // preferred minor
	NotPersistent uint32
	State         ArrayFlags
	ActiveDisks   uint32
	WorkingDisks  uint32
	FailedDisks   uint32
	SpareDisks    uint32
	CPEvents      uint64
	RecoveryCP    uint32 // sectors; honoured only when Events == CPEvents
	RootPV        uint32
	RootBlock     uint32
	Disks         [Disks090]Descriptor
	ThisDisk      Descriptor
	// Reserved090 is nil unless a 0.90 reserved word is non-zero.
	Reserved090 *Reserved090
}

// MaxDev returns max_dev, the number of dev_roles entries (1.x).
func (sb *Superblock) MaxDev() int { return len(sb.DevRoles) }

// FullName returns set_name up to the first NUL ("homehost:name"), as
// mdadm's "Name :" line prints it. Empty for 0.90.
func (sb *Superblock) FullName() string {
	n := bytes.IndexByte(sb.SetName[:], 0)
	if n < 0 {
		n = len(sb.SetName)
	}
	return string(sb.SetName[:n])
}

// Name returns the array name: the part of set_name after the first ':',
// or all of it when there is no ':'.
func (sb *Superblock) Name() string {
	s := sb.FullName()
	if i := bytes.IndexByte([]byte(s), ':'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// Homehost returns the part of set_name before the first ':', or "".
func (sb *Superblock) Homehost() string {
	s := sb.FullName()
	if i := bytes.IndexByte([]byte(s), ':'); i >= 0 {
		return s[:i]
	}
	return ""
}

// SetFullName stores s ("homehost:name" or "name") in SetName. It returns
// an error matching ErrOutOfRange if s is longer than 32 bytes.
func (sb *Superblock) SetFullName(s string) error {
	if len(s) > len(sb.SetName) {
		return formatErr(off1SetName, "set_name", s, ErrOutOfRange)
	}
	sb.SetName = [32]byte{}
	copy(sb.SetName[:], s)
	return nil
}

const mask40 = 1<<40 - 1

// PackTime packs t into the 1.x ctime/utime format: seconds in the low 40
// bits, microseconds in the high 24 bits.
func PackTime(t time.Time) uint64 {
	return uint64(t.Unix())&mask40 | uint64(t.Nanosecond()/1000)<<40
}

func (sb *Superblock) unpackTime(raw uint64) time.Time {
	if sb.Version == Version090 {
		return time.Unix(int64(uint32(raw)), 0).UTC()
	}
	// Microseconds beyond 999999 are kept in the raw field; time.Unix
	// normalises them.
	return time.Unix(int64(raw&mask40), int64(raw>>40)*1000).UTC()
}

// Created returns the creation time (ctime) in UTC.
func (sb *Superblock) Created() time.Time { return sb.unpackTime(sb.CTime) }

// Updated returns the last update time (utime) in UTC.
func (sb *Superblock) Updated() time.Time { return sb.unpackTime(sb.UTime) }

// PPLOffset returns ppl.offset, the signed sector offset of the partial
// parity log from SuperOffset (low half of the word at byte 96).
func (sb *Superblock) PPLOffset() int16 { return int16(uint32(sb.BitmapOffset)) }

// PPLSize returns ppl.size in sectors (high half of the word at byte 96).
func (sb *Superblock) PPLSize() uint16 { return uint16(uint32(sb.BitmapOffset) >> 16) }

// SetPPL stores a PPL location in the word at byte 96.
func (sb *Superblock) SetPPL(offset int16, size uint16) {
	sb.BitmapOffset = int32(uint32(uint16(offset)) | uint32(size)<<16)
}

// HasBitmap reports whether the superblock announces an internal
// write-intent bitmap (1.x FeatureBitmapOffset, 0.90 ArrayBitmapPresent).
func (sb *Superblock) HasBitmap() bool {
	if sb.Version == Version090 {
		return sb.State&ArrayBitmapPresent != 0
	}
	return sb.Features&FeatureBitmapOffset != 0
}

// HasPPL reports whether a 1.x superblock announces a partial parity log.
func (sb *Superblock) HasPPL() bool {
	return sb.Version.Is1x() && sb.Features&featureAnyPPL != 0
}

// Clean reports whether the array was clean when the superblock was
// written: 1.x resync_offset all ones (MaxSector), 0.90 state bit
// MD_SB_CLEAN.
func (sb *Superblock) Clean() bool {
	if sb.Version == Version090 {
		return sb.State&ArrayClean != 0
	}
	return sb.ResyncOffset == ^uint64(0)
}

// StateText returns "clean" or "active", as mdadm's "State :" line.
func (sb *Superblock) StateText() string {
	if sb.Clean() {
		return "clean"
	}
	return "active"
}

// Role returns this device's role. For 1.x it is dev_roles[dev_number], or
// RoleSpare when dev_number is outside the table (mdadm role_from_sb). For
// 0.90 it is derived from this_disk: faulty, a slot when active, else
// spare.
func (sb *Superblock) Role() Role {
	if sb.Version == Version090 {
		switch {
		case sb.ThisDisk.State&DiskFaulty != 0:
			return RoleFaulty
		case sb.ThisDisk.State&DiskActive != 0 && sb.ThisDisk.RaidDisk < uint32(RoleMax):
			return Role(sb.ThisDisk.RaidDisk)
		}
		return RoleSpare
	}
	if int64(sb.DevNumber) < int64(len(sb.DevRoles)) {
		return sb.DevRoles[sb.DevNumber]
	}
	return RoleSpare
}

// RoleText returns mdadm's "Device Role :" text: "Active device N",
// "Replacement device N" (FeatureReplacement), "Journal", or "spare". As
// in mdadm, a faulty device (0xfffe) also reads "spare".
func (sb *Superblock) RoleText() string {
	r := sb.Role()
	switch {
	case r >= RoleFaulty:
		return "spare"
	case r == RoleJournal:
		return "Journal"
	case sb.Version.Is1x() && sb.Features&FeatureReplacement != 0:
		return "Replacement device " + itoa(int(r))
	}
	return "Active device " + itoa(int(r))
}

// maxArrayState bounds ArrayState: slots are below RoleMax.
const maxArrayState = int(RoleMax)

// ArrayState returns mdadm's 1.x "Array State" string: one character per
// slot (raid_disks, plus -delta_disks while a reshape shrinks the array)
// counting the dev_roles entries equal to the slot: 'A' for one, '.' for
// none, 'R' for two unless the level is raid0, '?' otherwise (mdadm tests
// level > 0 on the unsigned value, so negative levels count as above 0).
// consistent is false when a '?' was printed or a role names a slot
// beyond the array, which is when mdadm adds "WARNING Array state is
// inconsistent". The string is capped at 0xff00 characters. For 0.90 it
// returns "", true.
func (sb *Superblock) ArrayState() (state string, consistent bool) {
	if sb.Version == Version090 {
		return "", true
	}
	n := int64(sb.RaidDisks) + int64(sb.deltaExtra())
	consistent = true
	if n > int64(maxArrayState) {
		n = int64(maxArrayState)
		consistent = false
	}
	counts := make([]uint8, n)
	for _, r := range sb.DevRoles {
		if int64(r) < n && counts[r] < 255 {
			counts[r]++
		}
		if r <= RoleMax && int64(r) > int64(sb.RaidDisks)+int64(sb.deltaExtra()) {
			consistent = false
		}
	}
	out := make([]byte, n)
	for i, c := range counts {
		switch {
		case c == 2 && sb.Level != 0: // mdadm compares the level unsigned
			out[i] = 'R'
		case c == 1:
			out[i] = 'A'
		case c == 0:
			out[i] = '.'
		default:
			out[i] = '?'
			consistent = false
		}
	}
	return string(out), consistent
}

// deltaExtra is mdadm's delta_extra: -delta_disks while a reshape that
// removes devices is active.
func (sb *Superblock) deltaExtra() uint32 {
	if !sb.Reshaping() {
		return 0
	}
	if sb.DeltaDisks < 0 {
		return uint32(-int64(sb.DeltaDisks))
	}
	return 0
}

// ArraySize returns the array size in bytes as mdadm --examine computes it
// from Size: one member for raid1, raid_disks-1 members for raid4/5,
// raid_disks-2 for raid6, raid_disks/(near*far) for raid10. ok is false
// for other levels or when the layout makes the formula meaningless.
func (sb *Superblock) ArraySize() (bytes uint64, ok bool) {
	var num int64
	den := uint64(1)
	switch sb.Level {
	case LevelRAID1:
		num = 1
	case LevelRAID4, LevelRAID5:
		num = int64(sb.RaidDisks) - 1
	case LevelRAID6:
		num = int64(sb.RaidDisks) - 2
	case LevelRAID10:
		num = int64(sb.RaidDisks)
		den = uint64(sb.Layout&255) * uint64(sb.Layout>>8&255)
	}
	if num <= 0 || den == 0 || sb.Size > 1<<54 {
		return 0, false
	}
	hi, lo := mulUint64(sb.Size<<9, uint64(num))
	if hi != 0 {
		return 0, false
	}
	return lo / den, true
}

func mulUint64(a, b uint64) (hi, lo uint64) {
	const mask32 = 1<<32 - 1
	a0, a1 := a&mask32, a>>32
	b0, b1 := b&mask32, b>>32
	w0 := a0 * b0
	t := a1*b0 + w0>>32
	w1 := t&mask32 + a0*b1
	hi = a1*b1 + t>>32 + w1>>32
	lo = a * b
	return
}

// LayoutName returns the layout as mdadm --examine prints it for this
// superblock's level, or "" when mdadm prints no Layout line (raid0 only
// shows one with FeatureRAID0Layout, and only for 1.x).
func (sb *Superblock) LayoutName() string {
	if sb.Level == LevelRAID0 && (sb.Version == Version090 || sb.Features&FeatureRAID0Layout == 0) {
		return ""
	}
	return LayoutName(sb.Level, sb.Layout)
}

// LayoutName returns mdadm's name for layout at level: raid5 and raid6
// algorithms ("left-symmetric", "parity-last", "ddf-N-restart",
// "left-symmetric-6", ...), raid10 geometry ("near=2", "near=2, far=2",
// "offset=2", "NO REDUNDANCY"), raid0 ("original", "alternate",
// "dangerous"). It returns "-unknown-" for an unnamed value and "" for a
// level without layouts.
func LayoutName(level Level, layout uint32) string {
	switch level {
	case LevelRAID0:
		switch layout {
		case 0:
			return "dangerous"
		case 1:
			return "original"
		case 2:
			return "alternate"
		}
		return "-unknown-"
	case LevelRAID5, LevelRAID4:
		if level == LevelRAID4 {
			return ""
		}
		if layout < uint32(len(r5Layouts)) {
			return r5Layouts[layout]
		}
		return "-unknown-"
	case LevelRAID6:
		if layout < uint32(len(r5Layouts)) {
			return r5Layouts[layout]
		}
		if n, ok := r6Layouts[layout]; ok {
			return n
		}
		return "-unknown-"
	case LevelRAID10:
		return r10Layout(layout)
	}
	return ""
}

// The raid5/6 algorithm numbers (md/raid5.h ALGORITHM_*), named as mdadm's
// first matching entry of r5layout/r6layout.
var r5Layouts = [...]string{
	0: "left-asymmetric", 1: "right-asymmetric", 2: "left-symmetric",
	3: "right-symmetric", 4: "parity-first", 5: "parity-last",
}

var r6Layouts = map[uint32]string{
	8: "ddf-zero-restart", 9: "ddf-N-restart", 10: "ddf-N-continue",
	16: "left-asymmetric-6", 17: "right-asymmetric-6", 18: "left-symmetric-6",
	19: "right-symmetric-6", 20: "parity-first-6",
}

// r10Layout renders a raid10 layout like mdadm's print_r10_layout: near
// copies in bits 0-7, far (or offset, bit 16) copies in bits 8-15.
func r10Layout(layout uint32) string {
	near := layout & 255
	far := layout >> 8 & 255
	s, sep := "", ""
	if near != 1 {
		s += "near=" + itoa(int(near))
		sep = ", "
	}
	if far != 1 {
		kind := "far"
		if layout&0x10000 != 0 {
			kind = "offset"
		}
		s += sep + kind + "=" + itoa(int(far))
	}
	if near*far == 1 {
		s += "NO REDUNDANCY"
	}
	return s
}

// BitmapUUID returns the UUID as a bitmap superblock of this array stores
// it: the set UUID for 1.x; for 0.90 the four set_uuid words in the
// superblock's byte order (mdadm uuid_from_super0, kernel mddev->uuid).
func (sb *Superblock) BitmapUUID() uuid.UUID {
	if sb.Version != Version090 || sb.ByteOrder != binary.LittleEndian {
		return sb.SetUUID
	}
	var u uuid.UUID
	for i := 0; i < 16; i += 4 {
		binary.LittleEndian.PutUint32(u[i:], binary.BigEndian.Uint32(sb.SetUUID[i:]))
	}
	return u
}

// UnusedSpace returns mdadm's "Unused Space" figures for a 1.x superblock
// on a device of devSize bytes, in sectors, computed exactly as mdadm's
// getinfo_super1 does (including its quirks): for 1.0, the space before
// the data and between the data end and the first of superblock, bitmap,
// PPL and bad-block log; for 1.1/1.2, the space between the first 36 KiB
// after the superblock (or the end of the bitmap, PPL or bad-block log)
// and the data, and after the data. bm is the bitmap superblock, or nil.
//
// As in mdadm, after is 1 when both would be zero (mdadm then hides the
// line), and after wraps around (is above math.MaxInt64) when the device
// is smaller than the data ("DEVICE TOO SMALL"). For 0.90 both are 0.
func (sb *Superblock) UnusedSpace(devSize int64, bm *Bitmap) (before, after uint64) {
	if !sb.Version.Is1x() {
		return 0, 0
	}
	devSectors := uint64(devSize) / 512
	var bitmapOffset, pplOffset, pplSize int64
	if sb.Features&FeatureBitmapOffset != 0 {
		if bm != nil {
			bitmapOffset = int64(sb.BitmapOffset)
		}
	} else if sb.Features&featureAnyPPL != 0 {
		pplOffset = int64(sb.PPLOffset())
		pplSize = int64(sb.PPLSize())
	}
	dataSize := sb.Size
	if sb.Level <= 0 {
		dataSize = sb.DataSize
	}
	so := sb.SuperOffset
	hasBBLog := sb.BBLogOffset != 0 && sb.BBLogSize != 0
	if sb.DataOffset < so {
		before = sb.DataOffset
		end := so
		if hasBBLog {
			if bb := so + uint64(int64(sb.BBLogOffset)); bb < end {
				end = bb
			}
		}
		if x := so + uint64(bitmapOffset+pplOffset); x < end {
			end = x
		}
		if sb.DataOffset+dataSize < end {
			after = end - dataSize - sb.DataOffset
		}
	} else {
		earliest := so + (32+4)*2
		if bitmapOffset > 0 {
			// mdadm compares the bitmap end relative to the
			// superblock with an absolute sector; kept as is.
			bmEnd := uint64(bitmapOffset) + bm.Size(4096)/512
			if bmEnd > earliest {
				earliest = bmEnd
			}
		} else if pplOffset > 0 {
			if e := uint64(pplOffset + pplSize); e > earliest {
				earliest = e
			}
		}
		if hasBBLog {
			bbEnd := so + uint64(int64(sb.BBLogOffset)) + uint64(sb.BBLogSize)
			if bbEnd > earliest {
				earliest = bbEnd
			}
		}
		if earliest < sb.DataOffset {
			before = sb.DataOffset - earliest
		}
		after = devSectors - dataSize - sb.DataOffset
	}
	if before == 0 && after == 0 {
		after = 1
	}
	if sb.getinfoRole() == RoleJournal {
		after = (devSectors - sb.DataOffset) % 8
	}
	return before, after
}

// getinfoRole is the role as mdadm's getinfo_super1 reads it, which
// differs from Role for a dev_number outside dev_roles (faulty rather than
// spare).
func (sb *Superblock) getinfoRole() Role {
	if int64(sb.DevNumber) >= int64(len(sb.DevRoles)) || sb.DevNumber >= MaxDev1 {
		return RoleFaulty
	}
	return sb.DevRoles[sb.DevNumber]
}

// Clone returns a deep copy of sb.
func (sb *Superblock) Clone() *Superblock {
	c := *sb
	if sb.DevRoles != nil {
		c.DevRoles = append([]Role(nil), sb.DevRoles...)
	}
	if sb.Reserved090 != nil {
		r := *sb.Reserved090
		c.Reserved090 = &r
	}
	return &c
}

func itoa(i int) string { return strconv.Itoa(i) }
