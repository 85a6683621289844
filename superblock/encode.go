package superblock

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
)

// EncodedSize returns the number of bytes MarshalBinary produces: 4096 for
// 0.90; for 1.x, 256 + 2*len(DevRoles) rounded up to 512.
func (sb *Superblock) EncodedSize() int {
	if sb.Version == Version090 {
		return Size090
	}
	return (Size1 + 2*len(sb.DevRoles) + 511) &^ 511
}

// MarshalBinary encodes sb with its checksum recomputed (the Checksum field
// is ignored and not changed). A 0.90 superblock is written in sb.ByteOrder
// (little-endian when nil); a 1.x superblock is little-endian. Fields that
// do not exist in sb's version are ignored.
//
// It fails with a *FormatError when a value cannot be represented: an
// unknown Version (ErrUnsupportedVersion), more than 1920 dev_roles, chunk
// sizes that are not whole sectors, 0.90 values wider than 32 bits
// (ErrOutOfRange), or a 1.x SuperOffset that says another version
// (ErrWrongLocation).
func (sb *Superblock) MarshalBinary() ([]byte, error) {
	return sb.AppendBinary(make([]byte, 0, sb.EncodedSize()))
}

// AppendBinary appends the encoding of sb to b (see MarshalBinary). It does
// not allocate when b has room for EncodedSize more bytes.
func (sb *Superblock) AppendBinary(b []byte) ([]byte, error) {
	var err error
	switch {
	case sb.Version == Version090:
		err = sb.check090()
	case sb.Version.Is1x():
		err = sb.check1()
	default:
		err = formatErr(-1, "version", sb.Version, ErrUnsupportedVersion)
	}
	if err != nil {
		return b, err
	}
	n := sb.EncodedSize()
	b = slices.Grow(b, n)
	out := b[len(b) : len(b)+n]
	clear(out)
	if sb.Version == Version090 {
		sb.encode090(out)
	} else {
		sb.encode1(out)
	}
	return b[:len(b)+n], nil
}

func (sb *Superblock) check1() error {
	if len(sb.DevRoles) > MaxDev1 {
		return formatErr(off1MaxDev, "max_dev", len(sb.DevRoles), ErrOutOfRange)
	}
	if err := checkSectors(off1ChunkSize, "chunksize", sb.ChunkSize); err != nil {
		return err
	}
	if err := checkSectors(off1NewChunk, "new_chunk", sb.NewChunk); err != nil {
		return err
	}
	if v := versionFromSuperOffset(sb.SuperOffset); v != sb.Version {
		return formatErr(off1SuperOffset, "super_offset", sb.SuperOffset,
			fmt.Errorf("%w: super_offset means version %v, not %v", ErrWrongLocation, v, sb.Version))
	}
	return nil
}

func checkSectors(off int64, field string, bytes uint64) error {
	if bytes%512 != 0 || bytes/512 > math.MaxUint32 {
		return formatErr(off, field, bytes, ErrOutOfRange)
	}
	return nil
}

func (sb *Superblock) check090() error {
	for _, f := range []struct {
		off   int64
		name  string
		value uint64
	}{
		{off0CTime, "ctime", sb.CTime},
		{off0UTime, "utime", sb.UTime},
		{off0ChunkSize, "chunk_size", sb.ChunkSize},
		{off0NewChunk, "new_chunk", sb.NewChunk},
		{off0Size, "size", sb.Size / 2},
	} {
		if f.value > math.MaxUint32 {
			return formatErr(f.off, f.name, f.value, ErrOutOfRange)
		}
	}
	if sb.Size%2 != 0 {
		return formatErr(off0Size, "size", sb.Size, fmt.Errorf("%w: 0.90 size is in KiB, got an odd sector count", ErrOutOfRange))
	}
	return nil
}

// encode1 writes a 1.x superblock into out, which is zeroed and at least
// 256+2*len(DevRoles) bytes long.
func (sb *Superblock) encode1(out []byte) {
	le.PutUint32(out[off1Magic:], Magic)
	le.PutUint32(out[off1MajorVersion:], 1)
	le.PutUint32(out[off1FeatureMap:], uint32(sb.Features))
	le.PutUint32(out[off1Pad0:], sb.Pad0)
	copy(out[off1SetUUID:], sb.SetUUID[:])
	copy(out[off1SetName:], sb.SetName[:])
	le.PutUint64(out[off1CTime:], sb.CTime)
	le.PutUint32(out[off1Level:], uint32(sb.Level))
	le.PutUint32(out[off1Layout:], sb.Layout)
	le.PutUint64(out[off1Size:], sb.Size)
	le.PutUint32(out[off1ChunkSize:], uint32(sb.ChunkSize/512))
	le.PutUint32(out[off1RaidDisks:], sb.RaidDisks)
	le.PutUint32(out[off1BitmapOffset:], uint32(sb.BitmapOffset))
	le.PutUint32(out[off1NewLevel:], uint32(sb.NewLevel))
	le.PutUint64(out[off1ReshapePos:], sb.ReshapePosition)
	le.PutUint32(out[off1DeltaDisks:], uint32(sb.DeltaDisks))
	le.PutUint32(out[off1NewLayout:], sb.NewLayout)
	le.PutUint32(out[off1NewChunk:], uint32(sb.NewChunk/512))
	le.PutUint32(out[off1NewOffset:], uint32(sb.NewOffset))
	le.PutUint64(out[off1DataOffset:], sb.DataOffset)
	le.PutUint64(out[off1DataSize:], sb.DataSize)
	le.PutUint64(out[off1SuperOffset:], sb.SuperOffset)
	le.PutUint64(out[off1RecoveryOffset:], sb.RecoveryOffset)
	le.PutUint32(out[off1DevNumber:], sb.DevNumber)
	le.PutUint32(out[off1CntCorrected:], sb.CntCorrectedRead)
	copy(out[off1DeviceUUID:], sb.DeviceUUID[:])
	out[off1DevFlags] = byte(sb.DevFlags)
	out[off1BBLogShift] = sb.BBLogShift
	le.PutUint16(out[off1BBLogSize:], sb.BBLogSize)
	le.PutUint32(out[off1BBLogOffset:], uint32(sb.BBLogOffset))
	le.PutUint64(out[off1UTime:], sb.UTime)
	le.PutUint64(out[off1Events:], sb.Events)
	le.PutUint64(out[off1ResyncOffset:], sb.ResyncOffset)
	le.PutUint32(out[off1MaxDev:], uint32(len(sb.DevRoles)))
	le.PutUint32(out[off1LogicalBlock:], sb.LogicalBlockSize)
	copy(out[off1Pad3:], sb.Pad3[:])
	n := Size1 + 2*len(sb.DevRoles)
	rb, roles := out[off1DevRoles:n], sb.DevRoles
	for len(roles) >= 4 && len(rb) >= 8 {
		le.PutUint64(rb, uint64(roles[0])|uint64(roles[1])<<16|uint64(roles[2])<<32|uint64(roles[3])<<48)
		roles, rb = roles[4:], rb[8:]
	}
	for len(roles) >= 1 && len(rb) >= 2 {
		le.PutUint16(rb, uint16(roles[0]))
		roles, rb = roles[1:], rb[2:]
	}
	le.PutUint32(out[off1SBCsum:], csum1(out[:n]))
}

// encode090 writes a 0.90 superblock into out, which is zeroed and 4096
// bytes long.
func (sb *Superblock) encode090(out []byte) {
	bo := sb.ByteOrder
	if bo == nil {
		bo = binary.LittleEndian
	}
	put := func(off int, v uint32) { bo.PutUint32(out[off:], v) }
	put(off0Magic, Magic)
	put(off0MajorVersion, 0)
	put(off0MinorVersion, sb.MinorVersion)
	put(off0PatchVersion, sb.PatchVersion)
	put(off0GValidWords, sb.GValidWords)
	for i, off := range [4]int{off0SetUUID0, off0SetUUID1, off0SetUUID2, off0SetUUID3} {
		put(off, binary.BigEndian.Uint32(sb.SetUUID[4*i:]))
	}
	put(off0CTime, uint32(sb.CTime))
	put(off0Level, uint32(sb.Level))
	put(off0Size, uint32(sb.Size/2))
	put(off0NrDisks, sb.NrDisks)
	put(off0RaidDisks, sb.RaidDisks)
	put(off0MDMinor, sb.MDMinor)
	put(off0NotPersistent, sb.NotPersistent)
	put(off0UTime, uint32(sb.UTime))
	put(off0State, uint32(sb.State))
	put(off0ActiveDisks, sb.ActiveDisks)
	put(off0WorkingDisks, sb.WorkingDisks)
	put(off0FailedDisks, sb.FailedDisks)
	put(off0SpareDisks, sb.SpareDisks)
	bo.PutUint64(out[off0Events:], sb.Events)
	bo.PutUint64(out[off0CPEvents:], sb.CPEvents)
	put(off0RecoveryCP, sb.RecoveryCP)
	bo.PutUint64(out[off0ReshapePos:], sb.ReshapePosition)
	put(off0NewLevel, uint32(sb.NewLevel))
	put(off0DeltaDisks, uint32(sb.DeltaDisks))
	put(off0NewLayout, sb.NewLayout)
	put(off0NewChunk, uint32(sb.NewChunk))
	put(off0Layout, sb.Layout)
	put(off0ChunkSize, uint32(sb.ChunkSize))
	put(off0RootPV, sb.RootPV)
	put(off0RootBlock, sb.RootBlock)
	desc := func(off int, d Descriptor) {
		put(off+offDescNumber, d.Number)
		put(off+offDescMajor, d.Major)
		put(off+offDescMinor, d.Minor)
		put(off+offDescRaidDisk, d.RaidDisk)
		put(off+offDescState, uint32(d.State))
	}
	for i, d := range sb.Disks {
		desc(off0Disks+i*descSize, d)
	}
	desc(off0ThisDisk, sb.ThisDisk)
	if sb.Reserved090 != nil {
		reserved090(sb.Reserved090, func(off int, p *uint32) { put(off, *p) })
	}
	put(off0SBCsum, csum090(out, bo))
}

// ComputedChecksum returns the checksum the superblock's bytes should carry,
// as the kernel and mdadm compute it (the 32-bit value, before the 16-bit
// fold the kernel compares for 0.90). It returns 0 when sb cannot be
// encoded.
func (sb *Superblock) ComputedChecksum() uint32 {
	var buf [Size090]byte
	out, err := sb.AppendBinary(buf[:0])
	if err != nil {
		return 0
	}
	if sb.Version == Version090 {
		bo := sb.ByteOrder
		if bo == nil {
			bo = binary.LittleEndian
		}
		return bo.Uint32(out[off0SBCsum:])
	}
	return le.Uint32(out[off1SBCsum:])
}

// ChecksumValid reports whether the stored Checksum matches
// ComputedChecksum exactly (mdadm's "correct"). For 0.90 the kernel is more
// lenient: it compares 16-bit folds, which is what Decode checks.
func (sb *Superblock) ChecksumValid() bool { return sb.Checksum == sb.ComputedChecksum() }
