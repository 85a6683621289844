package superblock

import (
	"fmt"
	"sort"

	"github.com/google/uuid"
)

// SizeError says why a device cannot hold a member of an array: the
// data does not fit beside the metadata. It matches ErrDeviceTooSmall.
type SizeError struct {
	// Reason says what does not fit: "no room for data before the
	// superblock", ...
	Reason string
}

var _ error = (*SizeError)(nil)

// Error is ErrDeviceTooSmall's message and the reason.
func (e *SizeError) Error() string { return ErrDeviceTooSmall.Error() + ": " + e.Reason }

// Is matches ErrDeviceTooSmall.
func (e *SizeError) Is(target error) bool { return target == ErrDeviceTooSmall }

// Reshaping reports whether sb records a reshape in progress: for 1.x the
// reshape-active feature bit, for 0.90 a minor version above 90 with a
// reshape position set (mdadm's test).
func (sb *Superblock) Reshaping() bool {
	if sb.Version == Version090 {
		return sb.MinorVersion > 90 && sb.ReshapePosition != ^uint64(0)
	}
	return sb.Features&FeatureReshapeActive != 0
}

// DataStart is the sector of the device where the member's data starts:
// DataOffset for 1.x, 0 for 0.90 (whose data starts at the start of the
// device).
func (sb *Superblock) DataStart() uint64 {
	if sb.Version == Version090 {
		return 0
	}
	return sb.DataOffset
}

// DataRoom is the number of sectors the member holds for data: DataSize
// for 1.x; for 0.90 everything before the superblock (DiskOffset/512),
// as 0.90 records no data size.
func (sb *Superblock) DataRoom() uint64 {
	if sb.Version == Version090 {
		return uint64(sb.DiskOffset / 512)
	}
	return sb.DataSize
}

// MinDeviceBytes is the size of the smallest device that holds a member
// with component sectors of data and sb's metadata layout: for 0.90 the
// component rounded up to 64 KiB plus the 64 KiB reserved area; for 1.0
// the data, the gap sb keeps between its data and its superblock, and the
// superblock at the end rounded as Version.Offset rounds it; for 1.1 and
// 1.2 the data offset plus the component.
func (sb *Superblock) MinDeviceBytes(component uint64) int64 {
	switch sb.Version {
	case Version090:
		return int64((component*512+0xffff)&^0xffff) + 0x10000
	case Version10:
		gap := sb.SuperOffset - sb.DataOffset - sb.DataSize
		return int64((sb.DataOffset+component+gap+16+7)&^7) * 512
	default:
		return int64(sb.DataOffset+component) * 512
	}
}

// NewMember builds the superblock of a new member of the array that sb
// (an in-sync member's superblock) belongs to, for a device of devSize
// bytes with device number major:minor: a clone with dev_number n (grown
// dev_roles if needed) whose role is spare, events 0, device UUID devUUID,
// no device flags, the bad-block, replacement and recovery features
// cleared, and the data and superblock offsets computed for this device.
// Everything else is kept, logical_block_size (Linux 6.19+) among it: the
// array's logical block size is the same on every member. For 0.90,
// this_disk (and disks[n]) is descriptor n with state 0. The kernel adds
// such a device as a spare. For 1.0 the gap between the data and the
// superblock at the end, which holds the bitmap and the bad-block log at
// offsets relative to the superblock, is kept.
//
// sb is not changed. A device too small for the superblock gives an
// error matching ErrDeviceTooSmall (a *FormatError from Version.Offset,
// or a *SizeError when the data does not fit); n out of range for the
// format matches ErrOutOfRange, and a 1.0 source whose data runs past its
// own superblock matches ErrInvalid.
func (sb *Superblock) NewMember(devSize int64, n uint32, devUUID uuid.UUID, major, minor uint32) (*Superblock, error) {
	src := sb
	nsb := src.Clone()
	off, err := nsb.Version.Offset(devSize)
	if err != nil {
		return nil, err
	}
	nsb.DiskOffset = off
	nsb.Events = 0
	if nsb.Version == Version090 {
		if n >= Disks090 {
			return nil, fmt.Errorf("%w: 0.90 descriptor number %d", ErrOutOfRange, n)
		}
		d := Descriptor{Number: n, Major: major, Minor: minor, RaidDisk: n, State: 0}
		nsb.ThisDisk = d
		nsb.Disks[n] = d
		nsb.CPEvents = 0
		return nsb, nil
	}
	nsb.Features &^= FeatureBadBlocks | FeatureReplacement |
		FeatureRecoveryOffset | FeatureRecoveryBitmap
	nsb.RecoveryOffset = 0
	nsb.CntCorrectedRead = 0
	nsb.DevFlags = 0
	nsb.DeviceUUID = devUUID
	nsb.DevNumber = n
	if int(n) >= MaxDev1 {
		return nil, fmt.Errorf("%w: dev_number %d", ErrOutOfRange, n)
	}
	for len(nsb.DevRoles) <= int(n) {
		nsb.DevRoles = append(nsb.DevRoles, RoleFaulty) // the kernel's "unused"
	}
	nsb.DevRoles[n] = RoleSpare
	sectors := uint64(devSize / 512)
	nsb.SuperOffset = uint64(off / 512)
	switch nsb.Version {
	case Version10:
		if src.SuperOffset < src.DataOffset+src.DataSize {
			return nil, fmt.Errorf("%w: the source superblock has data past its superblock", ErrInvalid)
		}
		gap := src.SuperOffset - src.DataOffset - src.DataSize
		if nsb.SuperOffset < gap+nsb.DataOffset {
			return nil, &SizeError{Reason: "no room for data before the superblock"}
		}
		nsb.DataSize = nsb.SuperOffset - gap - nsb.DataOffset
	default:
		if sectors <= nsb.DataOffset {
			return nil, &SizeError{Reason: fmt.Sprintf("the device ends before the data offset %d", nsb.DataOffset)}
		}
		nsb.DataSize = sectors - nsb.DataOffset
	}
	return nsb, nil
}

// BitmapRoom is the number of bytes from a bitmap at byte loc of the
// device up to the next metadata area (superblock, bad-block log, data)
// or, for 0.90, the end of the 64 KiB reserved area; 0 when loc is past
// them all. For 1.0, whose superblock sits at the end, the area ends with
// the superblock's own 4 KiB-rounded size.
func (sb *Superblock) BitmapRoom(loc int64) uint64 {
	if sb.Version == Version090 {
		return uint64(sb.DiskOffset + 64<<10 - loc)
	}
	base := int64(sb.SuperOffset) * 512
	ends := []int64{base, int64(sb.DataOffset) * 512}
	if sb.BBLogSize > 0 && sb.BBLogOffset != 0 {
		ends = append(ends, base+int64(sb.BBLogOffset)*512)
	}
	if sb.Version == Version10 {
		ends = append(ends, base+int64(sb.EncodedSize()+4095)&^4095) // nothing after the sb but the end
	}
	sort.Slice(ends, func(i, j int) bool { return ends[i] < ends[j] })
	for _, e := range ends {
		if e > loc {
			return uint64(e - loc)
		}
	}
	return 0
}
