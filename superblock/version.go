package superblock

import (
	"fmt"
	"strings"
)

// Version is a superblock format and, for 1.x, its location on the member
// device. The zero value is not a valid version.
type Version uint8

// Superblock versions. mdadm names them 0.90, 1.0, 1.1 and 1.2.
const (
	Version090 Version = iota + 1 // at the end of the device, 64 KiB aligned
	Version10                     // 8-12 KiB from the end, 4 KiB aligned
	Version11                     // at sector 0
	Version12                     // at 4 KiB
)

// Versions lists every version in the order libblkid probes them (0.90,
// 1.0, 1.1, 1.2).
var Versions = [...]Version{Version090, Version10, Version11, Version12}

// String returns "0.90", "1.0", "1.1", "1.2", or "Version(N)".
func (v Version) String() string {
	switch v {
	case Version090:
		return "0.90"
	case Version10:
		return "1.0"
	case Version11:
		return "1.1"
	case Version12:
		return "1.2"
	}
	return fmt.Sprintf("Version(%d)", uint8(v))
}

// Is1x reports whether v is one of the 1.x versions.
func (v Version) Is1x() bool { return v >= Version10 && v <= Version12 }

// ParseVersion parses a metadata name as mdadm's --metadata accepts it for
// native superblocks: "0.90", "1.0", "1.1", "1.2", also written "1.00",
// "1.01", "1.02". The error matches ErrUnsupportedVersion.
func ParseVersion(s string) (Version, error) {
	switch strings.TrimSpace(s) {
	case "0.90", "00.90":
		return Version090, nil
	case "1.0", "1.00":
		return Version10, nil
	case "1.1", "1.01":
		return Version11, nil
	case "1.2", "1.02":
		return Version12, nil
	}
	return 0, fmt.Errorf("%w: %q", ErrUnsupportedVersion, s)
}

// MarshalText implements encoding.TextMarshaler.
func (v Version) MarshalText() ([]byte, error) {
	if v < Version090 || v > Version12 {
		return nil, fmt.Errorf("%w: %d", ErrUnsupportedVersion, uint8(v))
	}
	return []byte(v.String()), nil
}

// UnmarshalText implements encoding.TextUnmarshaler using ParseVersion.
func (v *Version) UnmarshalText(b []byte) error {
	p, err := ParseVersion(string(b))
	if err != nil {
		return err
	}
	*v = p
	return nil
}

// Minimum device sizes: the kernel's MD_RESERVED_BYTES for 0.90, and mdadm's
// 24 sectors for 1.x (load_super1 "too small for md").
const (
	minSize090 = 64 << 10
	minSize1   = 24 * 512
)

// Offset returns the byte offset of a superblock of version v on a device
// of devSize bytes:
//
//   - 0.90: (devSize &^ 0xFFFF) - 0x10000 (md_p.h MD_NEW_SIZE_SECTORS)
//   - 1.0: ((devSize/512 - 16) &^ 7) sectors, "at least 8K, less than 12K
//     from the end"
//   - 1.1: 0
//   - 1.2: 4096
//
// A device too small for v gives an error matching ErrDeviceTooSmall; an
// unknown v gives ErrUnsupportedVersion.
func (v Version) Offset(devSize int64) (int64, error) {
	min := int64(minSize1)
	if v == Version090 {
		min = minSize090
	}
	if v < Version090 || v > Version12 {
		return 0, fmt.Errorf("%w: %d", ErrUnsupportedVersion, uint8(v))
	}
	if devSize < min {
		return 0, formatErr(-1, "device size", devSize, ErrDeviceTooSmall)
	}
	switch v {
	case Version090:
		return (devSize &^ 0xFFFF) - 0x10000, nil
	case Version10:
		return ((devSize/512 - 16) &^ 7) * 512, nil
	case Version11:
		return 0, nil
	default:
		return 8 * 512, nil
	}
}

// versionFromSuperOffset is mdadm's rule (super1.c examine_super1 and
// brief_examine_super1): super_offset <= 4 is 1.1, <= 8 is 1.2, else 1.0.
func versionFromSuperOffset(so uint64) Version {
	switch {
	case so <= 4:
		return Version11
	case so <= 8:
		return Version12
	}
	return Version10
}
