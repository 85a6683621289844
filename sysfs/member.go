package sysfs

import (
	"fmt"
	"path/filepath"
	"strings"
)

// Member is one dev-* directory of an array: a device bound to it,
// whatever its role (active, spare, faulty, journal, replacement). Get
// members from [Array.Members] or [Array.Member].
//
// Getters behave as for [Array]: a missing attribute matches
// fs.ErrNotExist, a malformed one [ErrFormat].
type Member struct {
	array Array
	dir   string // "dev-vdb"
}

// Array returns the array the member belongs to.
func (m Member) Array() Array { return m.array }

// Dir returns the member's directory name, such as "dev-vdb" (a '/' in
// the device name shows as '!').
func (m Member) Dir() string { return m.dir }

// Name returns the device name taken from the directory name, such as
// "vdb". [Member.Block] reads the same name from the block link.
func (m Member) Name() string {
	return strings.ReplaceAll(strings.TrimPrefix(m.dir, "dev-"), "!", "/")
}

// Path returns the path of an attribute of the member.
func (m Member) Path(attr string) string { return m.array.Path(m.dir, attr) }

// State returns state, the comma-separated flag list. Unknown flags are
// kept. A member being rebuilt reads "spare" but already has a slot.
func (m Member) State() (MemberState, error) {
	return parseAt(m.Path("state"), func(s string) (MemberState, error) { return ParseMemberState(s), nil })
}

// Slot returns slot: the role number, [SlotNone] or [SlotJournal]. A
// faulty member reads none, except while recovery is frozen; a
// replacement shares the slot of the member it replaces.
func (m Member) Slot() (Slot, error) { return parseAt(m.Path("slot"), parseSlot) }

// Errors returns errors, the count of read errors corrected.
func (m Member) Errors() (uint64, error) { return parseAt(m.Path("errors"), parseUint) }

// Offset returns offset, the data offset in sectors.
func (m Member) Offset() (uint64, error) { return parseAt(m.Path("offset"), parseUint) }

// NewOffset returns new_offset, the data offset after the running
// reshape, in sectors; it equals Offset when none runs.
func (m Member) NewOffset() (uint64, error) { return parseAt(m.Path("new_offset"), parseUint) }

// Size returns size, the space for data on this member in KiB. It can be
// larger than the array's component size.
func (m Member) Size() (uint64, error) { return parseAt(m.Path("size"), parseUint) }

// RecoveryStart returns recovery_start in sectors: how far recovery has
// rebuilt this member. It is not Valid ("none") for an in-sync member and
// reads 0 on an idle spare; during recovery it lags sync_completed.
func (m Member) RecoveryStart() (Optional[uint64], error) {
	return parseAt(m.Path("recovery_start"), optionalUint("none"))
}

// BadBlocks returns bad_blocks, the acknowledged bad-block list. The
// kernel shows at most one page of it.
func (m Member) BadBlocks() ([]BadBlock, error) { return parseAt(m.Path("bad_blocks"), parseBadBlocks) }

// UnacknowledgedBadBlocks returns unacknowledged_bad_blocks. While it is
// not empty the member also reads faulty.
func (m Member) UnacknowledgedBadBlocks() ([]BadBlock, error) {
	return parseAt(m.Path("unacknowledged_bad_blocks"), parseBadBlocks)
}

// PPLSector returns ppl_sector, where the partial parity log starts, in
// sectors.
func (m Member) PPLSector() (uint64, error) { return parseAt(m.Path("ppl_sector"), parseUint) }

// PPLSize returns ppl_size in sectors.
func (m Member) PPLSize() (uint64, error) { return parseAt(m.Path("ppl_size"), parseUint) }

// BlockLink is where a member's block link leads.
type BlockLink struct {
	// Name is the kernel name of the block device, such as "vdb" or
	// "sda1".
	Name string
	// Dir is the device's directory relative to the sysfs root, with
	// every link resolved, such as
	// "devices/pci0000:00/0000:00:10.0/virtio2/block/vdb".
	Dir string
}

// Block follows the member's block link.
func (m Member) Block() (BlockLink, error) {
	p := m.Path("block")
	dir, err := m.array.fs.Rel(p)
	if err != nil {
		return BlockLink{}, fmt.Errorf("sysfs: %w", err)
	}
	return BlockLink{Name: filepath.Base(filepath.FromSlash(dir)), Dir: dir}, nil
}
