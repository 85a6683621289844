package superblock

import (
	"fmt"
	"math/bits"
	"strconv"
	"strings"
)

// Level is the RAID level (md_p.h "level", signed).
type Level int32

// RAID levels, as mdadm's pers table maps them.
const (
	LevelContainer Level = -100
	LevelFaulty    Level = -5
	LevelMultipath Level = -4
	LevelLinear    Level = -1
	LevelRAID0     Level = 0
	LevelRAID1     Level = 1
	LevelRAID4     Level = 4
	LevelRAID5     Level = 5
	LevelRAID6     Level = 6
	LevelRAID10    Level = 10
)

// Known reports whether l has a name in mdadm's level table.
func (l Level) Known() bool {
	switch l {
	case LevelContainer, LevelFaulty, LevelMultipath, LevelLinear,
		LevelRAID0, LevelRAID1, LevelRAID4, LevelRAID5, LevelRAID6, LevelRAID10:
		return true
	}
	return false
}

// String returns the name mdadm prints ("raid1", "linear", "multipath",
// "faulty", "container", ...), or "level(N)" for an unknown level. mdadm
// itself prints "-unknown-" for those.
func (l Level) String() string {
	switch l {
	case LevelContainer:
		return "container"
	case LevelFaulty:
		return "faulty"
	case LevelMultipath:
		return "multipath"
	case LevelLinear:
		return "linear"
	case LevelRAID0, LevelRAID1, LevelRAID4, LevelRAID5, LevelRAID6, LevelRAID10:
		return "raid" + strconv.Itoa(int(l))
	}
	return "level(" + strconv.Itoa(int(l)) + ")"
}

// Role is a 1.x dev_roles entry: a slot number, or one of the special
// values below.
type Role uint16

// Special roles (md_p.h MD_DISK_ROLE_*).
const (
	RoleSpare   Role = 0xffff
	RoleFaulty  Role = 0xfffe
	RoleJournal Role = 0xfffd
	// RoleMax is MD_DISK_ROLE_MAX: values below it are slots.
	RoleMax Role = 0xff00
)

// IsSlot reports whether r is a slot number (below RoleMax).
func (r Role) IsSlot() bool { return r < RoleMax }

// String returns the slot number, "spare", "faulty", "journal", or
// "role(0xNNNN)" for reserved values.
func (r Role) String() string {
	switch {
	case r.IsSlot():
		return strconv.Itoa(int(r))
	case r == RoleSpare:
		return "spare"
	case r == RoleFaulty:
		return "faulty"
	case r == RoleJournal:
		return "journal"
	}
	return fmt.Sprintf("role(%#04x)", uint16(r))
}

// FeatureMap is the 1.x feature_map.
type FeatureMap uint32

// Feature bits (md_p.h MD_FEATURE_*).
const (
	FeatureBitmapOffset      FeatureMap = 1 << 0
	FeatureRecoveryOffset    FeatureMap = 1 << 1
	FeatureReshapeActive     FeatureMap = 1 << 2
	FeatureBadBlocks         FeatureMap = 1 << 3
	FeatureReplacement       FeatureMap = 1 << 4
	FeatureReshapeBackwards  FeatureMap = 1 << 5
	FeatureNewOffset         FeatureMap = 1 << 6
	FeatureRecoveryBitmap    FeatureMap = 1 << 7
	FeatureClustered         FeatureMap = 1 << 8
	FeatureJournal           FeatureMap = 1 << 9
	FeaturePPL               FeatureMap = 1 << 10
	FeatureMultiplePPLs      FeatureMap = 1 << 11
	FeatureRAID0Layout       FeatureMap = 1 << 12
	FeatureAll               FeatureMap = 0x1fff // MD_FEATURE_ALL
	featureAnyPPL                       = FeaturePPL | FeatureMultiplePPLs
	featureBitmapPPLConflict            = FeatureBitmapOffset | FeatureJournal
)

var featureNames = [...]string{
	"bitmap-offset", "recovery-offset", "reshape-active", "bad-blocks",
	"replacement", "reshape-backwards", "new-offset", "recovery-bitmap",
	"clustered", "journal", "ppl", "multiple-ppls", "raid0-layout",
}

// Has reports whether all bits of f2 are set in f.
func (f FeatureMap) Has(f2 FeatureMap) bool { return f&f2 == f2 }

// Unknown returns the bits outside FeatureAll.
func (f FeatureMap) Unknown() FeatureMap { return f &^ FeatureAll }

// Names returns the names of the set bits, in bit order; unknown bits are
// named "0x...".
func (f FeatureMap) Names() []string {
	var out []string
	for v := uint32(f); v != 0; v &= v - 1 {
		i := bits.TrailingZeros32(v)
		if i < len(featureNames) {
			out = append(out, featureNames[i])
		} else {
			out = append(out, fmt.Sprintf("%#x", uint32(1)<<i))
		}
	}
	return out
}

// String returns the names of the set bits joined by "|", or "0".
func (f FeatureMap) String() string {
	if f == 0 {
		return "0"
	}
	return strings.Join(f.Names(), "|")
}

// DevFlags is the 1.x devflags byte.
type DevFlags uint8

// Device flags (md_p.h).
const (
	DevFlagWriteMostly DevFlags = 1
	DevFlagFailFast    DevFlags = 2
)

// String returns "write-mostly", "failfast", both separated by a space
// (as mdadm's "Flags :" line), or "" when none is set. Unknown bits are
// shown in hex.
func (d DevFlags) String() string {
	var parts []string
	if d&DevFlagWriteMostly != 0 {
		parts = append(parts, "write-mostly")
	}
	if d&DevFlagFailFast != 0 {
		parts = append(parts, "failfast")
	}
	if rest := d &^ (DevFlagWriteMostly | DevFlagFailFast); rest != 0 {
		parts = append(parts, fmt.Sprintf("%#x", uint8(rest)))
	}
	return strings.Join(parts, " ")
}

// ArrayFlags is the 0.90 superblock "state" word.
type ArrayFlags uint32

// 0.90 state bits (md_p.h MD_SB_*).
const (
	ArrayClean                 ArrayFlags = 1 << 0
	ArrayErrors                ArrayFlags = 1 << 1
	ArrayBBMErrors             ArrayFlags = 1 << 2
	ArrayBlockContainerReshape ArrayFlags = 1 << 3
	ArrayBlockVolume           ArrayFlags = 1 << 4
	ArrayClustered             ArrayFlags = 1 << 5
	ArrayBitmapPresent         ArrayFlags = 1 << 8
)

var arrayFlagNames = map[int]string{
	0: "clean", 1: "errors", 2: "bbm-errors", 3: "block-container-reshape",
	4: "block-volume", 5: "clustered", 8: "bitmap-present",
}

// String returns the names of the set bits joined by "|", or "0".
func (a ArrayFlags) String() string { return flagString(uint32(a), arrayFlagNames) }

// DiskState is the state word of a 0.90 disk descriptor (md_p.h
// MD_DISK_*).
type DiskState uint32

// Disk state bits.
const (
	DiskFaulty      DiskState = 1 << 0
	DiskActive      DiskState = 1 << 1
	DiskSync        DiskState = 1 << 2
	DiskRemoved     DiskState = 1 << 3
	DiskClusterAdd  DiskState = 1 << 4
	DiskCandidate   DiskState = 1 << 5
	DiskWriteMostly DiskState = 1 << 9
	DiskFailFast    DiskState = 1 << 10
	DiskJournal     DiskState = 1 << 18
)

var diskStateNames = map[int]string{
	0: "faulty", 1: "active", 2: "sync", 3: "removed", 4: "cluster-add",
	5: "candidate", 9: "write-mostly", 10: "failfast", 18: "journal",
}

// String returns the names of the set bits joined by "|", or "0".
func (d DiskState) String() string { return flagString(uint32(d), diskStateNames) }

// Words returns the words mdadm's 0.90 --examine prints for the state, in
// its order: faulty, active, sync, removed, write-mostly, failfast, and
// "spare" when no other of these bits is set.
func (d DiskState) Words() []string {
	var w []string
	rest := d &^ (DiskWriteMostly | DiskFailFast)
	for _, b := range []struct {
		bit  DiskState
		name string
	}{{DiskFaulty, "faulty"}, {DiskActive, "active"}, {DiskSync, "sync"}, {DiskRemoved, "removed"}} {
		if rest&b.bit != 0 {
			w = append(w, b.name)
		}
	}
	if d&DiskWriteMostly != 0 {
		w = append(w, "write-mostly")
	}
	if d&DiskFailFast != 0 {
		w = append(w, "failfast")
	}
	if rest == 0 {
		w = append(w, "spare")
	}
	return w
}

func flagString(v uint32, names map[int]string) string {
	if v == 0 {
		return "0"
	}
	var parts []string
	for x := v; x != 0; x &= x - 1 {
		i := bits.TrailingZeros32(x)
		if n, ok := names[i]; ok {
			parts = append(parts, n)
		} else {
			parts = append(parts, fmt.Sprintf("%#x", uint32(1)<<i))
		}
	}
	return strings.Join(parts, "|")
}

// Descriptor is a 0.90 disk descriptor (md_p.h mdp_disk_t), used for the
// disks[27] table and this_disk.
type Descriptor struct {
	Number   uint32 // descriptor index (kernel desc_nr)
	Major    uint32 // device major number when last written
	Minor    uint32 // device minor number
	RaidDisk uint32 // slot in the array
	State    DiskState
}

// Reserved090 holds the reserved words of a 0.90 superblock. The kernel
// and mdadm write them as zero; they are kept only so that a superblock
// with non-zero reserved words encodes back to the same bytes. Decode
// leaves Superblock.Reserved090 nil when all of them are zero.
type Reserved090 struct {
	Generic     [16]uint32     // gstate_creserved, words 16-31
	State       [14]uint32     // gstate_sreserved, words 50-63
	Personality [60]uint32     // pstate_reserved, words 68-127
	Disks       [27][27]uint32 // reserved words of disks[i]
	ThisDisk    [27]uint32     // reserved words of this_disk
}
