package sysfs

import (
	"encoding/binary"

	"github.com/google/uuid"
)

// RawUUID returns uuid as the kernel shows it (%pU of mddev->uuid).
// Prefer [Array.UUID], which returns the form mdadm prints.
func (a Array) RawUUID() (uuid.UUID, error) { return parseAt(a.Path("uuid"), uuid.Parse) }

// UUID returns the array's canonical UUID: the one mdadm --detail and
// blkid print, whatever the metadata version. See [CanonicalUUID].
func (a Array) UUID() (uuid.UUID, error) {
	raw, err := a.RawUUID()
	if err != nil {
		return uuid.UUID{}, err
	}
	mv, err := a.MetadataVersion()
	if err != nil {
		return uuid.UUID{}, err
	}
	return CanonicalUUID(raw, mv, a.fs.hostOrder), nil
}

// swap090OnLittleEndian and swap090OnBigEndian say whether the 0.90 rule
// below reverses the words on hosts of each byte order. They are the one
// switch to flip if a real kernel disagrees.
const (
	swap090OnLittleEndian = true
	swap090OnBigEndian    = false
)

// CanonicalUUID converts a UUID read from md/uuid into the form mdadm
// prints, for an array with metadata mv on a kernel of byte order host.
//
// The rule: 1.x superblocks store the set UUID as 16 bytes, which the
// kernel copies and prints in order, so the sysfs form is already
// canonical. A 0.90 superblock stores it as four host-endian 32-bit words
// (set_uuid0..3); mdadm prints each word with %08x, while the kernel
// copies the words' memory into mddev->uuid and prints its bytes in
// order. On a little-endian host each 4-byte group of the sysfs form is
// therefore byte-reversed relative to mdadm and blkid, and this function
// reverses it back; on a big-endian host the two agree. External metadata
// and "none" are returned unchanged (the kernel does not know the UUID of
// external metadata and shows zeros).
func CanonicalUUID(raw uuid.UUID, mv MetadataVersion, host binary.ByteOrder) uuid.UUID {
	if !mv.Is090() {
		return raw
	}
	little := host.Uint16([]byte{1, 0}) == 1
	if (little && !swap090OnLittleEndian) || (!little && !swap090OnBigEndian) {
		return raw
	}
	return swapWords(raw)
}

// swapWords reverses the bytes of each 32-bit word.
func swapWords(u uuid.UUID) uuid.UUID {
	var out uuid.UUID
	for w := 0; w < 16; w += 4 {
		binary.BigEndian.PutUint32(out[w:], binary.LittleEndian.Uint32(u[w:]))
	}
	return out
}
