package superblock

import (
	"encoding/binary"
)

var le = binary.LittleEndian

// Decode decodes the superblock at the start of b. b must hold the whole
// superblock: 4096 bytes for 0.90, 256 + 2*max_dev bytes for 1.x (a 4 KiB
// block always suffices). Decode never modifies b and never panics.
//
// The byte order of a 0.90 superblock comes from its magic; the 1.x minor
// version from super_offset (see Superblock.Version). DiskOffset is set to
// -1.
//
// Decode fails only when the bytes cannot be interpreted: too short
// (ErrTruncated), no magic (ErrNoSuperblock), a major version other than 0
// or 1 (ErrUnsupportedVersion), or max_dev above 1920 (ErrOutOfRange),
// each as a *FormatError. A checksum mismatch gives a *ChecksumError,
// returned together with the decoded value. Everything else the kernel
// would refuse is reported by Validate, so that a damaged superblock can
// still be shown, as mdadm --examine does.
func Decode(b []byte) (*Superblock, error) {
	sb := new(Superblock)
	if err := sb.UnmarshalBinary(b); err != nil {
		if _, ok := err.(*ChecksumError); ok {
			return sb, err
		}
		return nil, err
	}
	return sb, nil
}

// UnmarshalBinary is Decode into sb. It reuses the capacity of sb.DevRoles
// and, for a 1.x superblock with a valid checksum, does not allocate. On a
// *ChecksumError, sb holds the decoded value. On other errors sb is left
// unchanged.
func (sb *Superblock) UnmarshalBinary(b []byte) error {
	if len(b) < 8 {
		return formatErr(0, "magic", len(b), ErrTruncated)
	}
	switch {
	case le.Uint32(b) == Magic:
		switch major := le.Uint32(b[off1MajorVersion:]); major {
		case 0:
			return sb.decode090(b, binary.LittleEndian)
		case 1:
			return sb.decode1(b)
		default:
			return formatErr(off1MajorVersion, "major_version", major, ErrUnsupportedVersion)
		}
	case binary.BigEndian.Uint32(b) == Magic:
		// A big-endian magic can only be a 0.90 superblock written by a
		// big-endian host; 1.x is always little-endian.
		if major := binary.BigEndian.Uint32(b[off0MajorVersion:]); major != 0 {
			return formatErr(off0MajorVersion, "major_version", major, ErrUnsupportedVersion)
		}
		return sb.decode090(b, binary.BigEndian)
	}
	return formatErr(0, "magic", le.Uint32(b), ErrNoSuperblock)
}

// size1 returns the checksummed length of a 1.x superblock, 256+2*max_dev,
// after checking max_dev.
func size1(b []byte) (int, error) {
	maxDev := le.Uint32(b[off1MaxDev:])
	if maxDev > MaxDev1 {
		return 0, formatErr(off1MaxDev, "max_dev", maxDev, ErrOutOfRange)
	}
	return Size1 + 2*int(maxDev), nil
}

func (sb *Superblock) decode1(b []byte) error {
	if len(b) < Size1 {
		return formatErr(-1, "superblock length", len(b), ErrTruncated)
	}
	n, err := size1(b)
	if err != nil {
		return err
	}
	if len(b) < n {
		return formatErr(off1DevRoles, "dev_roles length", len(b), ErrTruncated)
	}
	maxDev := (n - Size1) / 2
	roles := sb.DevRoles[:0]
	switch {
	case maxDev == 0:
		roles = nil
	case cap(roles) >= maxDev:
		roles = roles[:maxDev]
	default:
		roles = make([]Role, maxDev)
	}
	decodeRoles(roles, b[off1DevRoles:n])

	*sb = Superblock{
		Version:          versionFromSuperOffset(le.Uint64(b[off1SuperOffset:])),
		ByteOrder:        binary.LittleEndian,
		DiskOffset:       -1,
		Features:         FeatureMap(le.Uint32(b[off1FeatureMap:])),
		Pad0:             le.Uint32(b[off1Pad0:]),
		CTime:            le.Uint64(b[off1CTime:]),
		Level:            Level(int32(le.Uint32(b[off1Level:]))),
		Layout:           le.Uint32(b[off1Layout:]),
		Size:             le.Uint64(b[off1Size:]),
		ChunkSize:        uint64(le.Uint32(b[off1ChunkSize:])) * 512,
		RaidDisks:        le.Uint32(b[off1RaidDisks:]),
		BitmapOffset:     int32(le.Uint32(b[off1BitmapOffset:])),
		NewLevel:         Level(int32(le.Uint32(b[off1NewLevel:]))),
		ReshapePosition:  le.Uint64(b[off1ReshapePos:]),
		DeltaDisks:       int32(le.Uint32(b[off1DeltaDisks:])),
		NewLayout:        le.Uint32(b[off1NewLayout:]),
		NewChunk:         uint64(le.Uint32(b[off1NewChunk:])) * 512,
		NewOffset:        int32(le.Uint32(b[off1NewOffset:])),
		DataOffset:       le.Uint64(b[off1DataOffset:]),
		DataSize:         le.Uint64(b[off1DataSize:]),
		SuperOffset:      le.Uint64(b[off1SuperOffset:]),
		RecoveryOffset:   le.Uint64(b[off1RecoveryOffset:]),
		DevNumber:        le.Uint32(b[off1DevNumber:]),
		CntCorrectedRead: le.Uint32(b[off1CntCorrected:]),
		DevFlags:         DevFlags(b[off1DevFlags]),
		BBLogShift:       b[off1BBLogShift],
		BBLogSize:        le.Uint16(b[off1BBLogSize:]),
		BBLogOffset:      int32(le.Uint32(b[off1BBLogOffset:])),
		UTime:            le.Uint64(b[off1UTime:]),
		Events:           le.Uint64(b[off1Events:]),
		ResyncOffset:     le.Uint64(b[off1ResyncOffset:]),
		Checksum:         le.Uint32(b[off1SBCsum:]),
		LogicalBlockSize: le.Uint32(b[off1LogicalBlock:]),
		DevRoles:         roles,
	}
	copy(sb.SetUUID[:], b[off1SetUUID:])
	copy(sb.SetName[:], b[off1SetName:])
	copy(sb.DeviceUUID[:], b[off1DeviceUUID:])
	copy(sb.Pad3[:], b[off1Pad3:])

	if sum := csum1(b[:n]); sum != sb.Checksum {
		return &ChecksumError{Superblock: sb, Stored: sb.Checksum, Computed: sum}
	}
	return nil
}

// decodeRoles fills roles from the little-endian u16 values in rb, four at
// a time; written so that the compiler drops the bounds checks.
func decodeRoles(roles []Role, rb []byte) {
	for len(roles) >= 4 && len(rb) >= 8 {
		v := le.Uint64(rb)
		roles[0], roles[1], roles[2], roles[3] = Role(v), Role(v>>16), Role(v>>32), Role(v>>48)
		roles, rb = roles[4:], rb[8:]
	}
	for len(roles) >= 1 && len(rb) >= 2 {
		roles[0] = Role(le.Uint16(rb))
		roles, rb = roles[1:], rb[2:]
	}
}

// csum1 is the 1.x checksum (kernel calc_sb_1_csum): the sum of the
// little-endian u32 words of b with sb_csum taken as zero, plus a trailing
// u16 when len(b) is not a multiple of 4, in a 64-bit accumulator folded
// once to 32 bits.
func csum1(b []byte) uint32 {
	var sum uint64
	p := b
	for len(p) >= 16 {
		sum += uint64(le.Uint32(p)) + uint64(le.Uint32(p[4:])) +
			uint64(le.Uint32(p[8:])) + uint64(le.Uint32(p[12:]))
		p = p[16:]
	}
	for len(p) >= 4 {
		sum += uint64(le.Uint32(p))
		p = p[4:]
	}
	if len(p) >= 2 {
		sum += uint64(le.Uint16(p))
	}
	sum -= uint64(le.Uint32(b[off1SBCsum:]))
	return uint32(sum) + uint32(sum>>32)
}

// csum090 is the 0.90 checksum (kernel calc_sb_csum, mdadm calc_csum): the
// sum of the 1024 u32 words in the superblock's byte order with sb_csum
// taken as zero, in a 64-bit accumulator folded once to 32 bits.
func csum090(b []byte, bo binary.ByteOrder) uint32 {
	var sum uint64
	for i := 0; i < Size090; i += 4 {
		sum += uint64(bo.Uint32(b[i:]))
	}
	sum -= uint64(bo.Uint32(b[off0SBCsum:]))
	return uint32(sum) + uint32(sum>>32)
}

// fold16 is the kernel's md_csum_fold: the 32-bit value folded to 16 bits
// twice. The kernel accepts a 0.90 superblock when the folds agree.
func fold16(x uint32) uint32 {
	x = x&0xffff + x>>16
	return x&0xffff + x>>16
}

func (sb *Superblock) decode090(b []byte, bo binary.ByteOrder) error {
	if len(b) < Size090 {
		return formatErr(-1, "superblock length", len(b), ErrTruncated)
	}
	u32 := func(off int) uint32 { return bo.Uint32(b[off:]) }
	*sb = Superblock{
		Version:         Version090,
		ByteOrder:       bo,
		DiskOffset:      -1,
		MinorVersion:    u32(off0MinorVersion),
		PatchVersion:    u32(off0PatchVersion),
		GValidWords:     u32(off0GValidWords),
		CTime:           uint64(u32(off0CTime)),
		Level:           Level(int32(u32(off0Level))),
		Size:            uint64(u32(off0Size)) * 2,
		NrDisks:         u32(off0NrDisks),
		RaidDisks:       u32(off0RaidDisks),
		MDMinor:         u32(off0MDMinor),
		NotPersistent:   u32(off0NotPersistent),
		UTime:           uint64(u32(off0UTime)),
		State:           ArrayFlags(u32(off0State)),
		ActiveDisks:     u32(off0ActiveDisks),
		WorkingDisks:    u32(off0WorkingDisks),
		FailedDisks:     u32(off0FailedDisks),
		SpareDisks:      u32(off0SpareDisks),
		Checksum:        u32(off0SBCsum),
		Events:          bo.Uint64(b[off0Events:]),
		CPEvents:        bo.Uint64(b[off0CPEvents:]),
		RecoveryCP:      u32(off0RecoveryCP),
		ReshapePosition: bo.Uint64(b[off0ReshapePos:]),
		NewLevel:        Level(int32(u32(off0NewLevel))),
		DeltaDisks:      int32(u32(off0DeltaDisks)),
		NewLayout:       u32(off0NewLayout),
		NewChunk:        uint64(u32(off0NewChunk)),
		Layout:          u32(off0Layout),
		ChunkSize:       uint64(u32(off0ChunkSize)),
		RootPV:          u32(off0RootPV),
		RootBlock:       u32(off0RootBlock),
	}
	for i, off := range [4]int{off0SetUUID0, off0SetUUID1, off0SetUUID2, off0SetUUID3} {
		binary.BigEndian.PutUint32(sb.SetUUID[4*i:], u32(off))
	}
	desc := func(off int) Descriptor {
		return Descriptor{
			Number:   u32(off + offDescNumber),
			Major:    u32(off + offDescMajor),
			Minor:    u32(off + offDescMinor),
			RaidDisk: u32(off + offDescRaidDisk),
			State:    DiskState(u32(off + offDescState)),
		}
	}
	for i := range sb.Disks {
		sb.Disks[i] = desc(off0Disks + i*descSize)
	}
	sb.ThisDisk = desc(off0ThisDisk)
	if hasReserved090(b) {
		sb.Reserved090 = decodeReserved090(b, bo)
	}

	sum := csum090(b, bo)
	if fold16(sum) != fold16(sb.Checksum) {
		return &ChecksumError{Superblock: sb, Stored: sb.Checksum, Computed: sum}
	}
	return nil
}

// reserved090 visits every reserved word of a 0.90 superblock with a
// pointer into r, which may be nil to only visit offsets.
func reserved090(r *Reserved090, f func(off int, p *uint32)) {
	var dummy uint32
	ptr := func(p *uint32) *uint32 {
		if r == nil {
			return &dummy
		}
		return p
	}
	for i := 0; i < 16; i++ {
		var p *uint32
		if r != nil {
			p = &r.Generic[i]
		}
		f(off0GStateCReserve+4*i, ptr(p))
	}
	for i := 0; i < 14; i++ {
		var p *uint32
		if r != nil {
			p = &r.State[i]
		}
		f(off0GStateSReserve+4*i, ptr(p))
	}
	for i := 0; i < 60; i++ {
		var p *uint32
		if r != nil {
			p = &r.Personality[i]
		}
		f(off0PStateReserved+4*i, ptr(p))
	}
	for d := 0; d < Disks090; d++ {
		for i := 0; i < 27; i++ {
			var p *uint32
			if r != nil {
				p = &r.Disks[d][i]
			}
			f(off0Disks+d*descSize+offDescReserved+4*i, ptr(p))
		}
	}
	for i := 0; i < 27; i++ {
		var p *uint32
		if r != nil {
			p = &r.ThisDisk[i]
		}
		f(off0ThisDisk+offDescReserved+4*i, ptr(p))
	}
}

func hasReserved090(b []byte) bool {
	found := false
	reserved090(nil, func(off int, _ *uint32) {
		if !found && (b[off]|b[off+1]|b[off+2]|b[off+3]) != 0 {
			found = true
		}
	})
	return found
}

func decodeReserved090(b []byte, bo binary.ByteOrder) *Reserved090 {
	r := new(Reserved090)
	reserved090(r, func(off int, p *uint32) { *p = bo.Uint32(b[off:]) })
	return r
}
