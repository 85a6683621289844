package ioctl

import (
	"strconv"
	"strings"
)

// Version is the md driver's version, returned by [Device.Version]. It
// mirrors mdu_version_t; current kernels report 0.90.3.
type Version struct {
	Major      int32
	Minor      int32
	Patchlevel int32
}

// String returns the version as "major.minor.patchlevel".
func (v Version) String() string {
	return strconv.Itoa(int(v.Major)) + "." + strconv.Itoa(int(v.Minor)) + "." + strconv.Itoa(int(v.Patchlevel))
}

// ArrayInfo describes a running md array, as returned by [Device.ArrayInfo].
// It mirrors mdu_array_info_t (72 bytes); every field is a C int or unsigned
// int. Prefer sysfs for anything it also exposes: Size and the times are
// limited to 32 bits.
type ArrayInfo struct {
	MajorVersion int32  // superblock major version: 0 for 0.90, 1 for 1.x
	MinorVersion int32  // superblock minor version: 90, or 0, 1, 2 for 1.x
	PatchVersion int32  // superblock patch version
	CTime        uint32 // creation time in seconds since the epoch, clamped to 32 bits
	Level        int32  // RAID level: -1 linear, 0, 1, 4, 5, 6, 10; -4 multipath, -5 faulty
	// Size is the space used on each member in KiB, or -1 when it does not
	// fit in an int32. Use sysfs component_size instead.
	Size          int32
	NrDisks       int32      // member devices known to the array, including spares and faulty ones
	RaidDisks     int32      // slots in the array
	MDMinor       int32      // minor number of the md device
	NotPersistent int32      // 1 if the array has no superblocks
	UTime         uint32     // last superblock update in seconds since the epoch, clamped to 32 bits
	State         ArrayState // ArrayClean, ArrayBitmapPresent, ArrayClustered
	ActiveDisks   int32      // members that are in sync
	WorkingDisks  int32      // members that are not faulty
	FailedDisks   int32      // faulty members
	// SpareDisks counts working members that are neither in sync nor a
	// journal. A member being rebuilt counts as a spare.
	SpareDisks int32
	Layout     int32 // personality-specific layout
	ChunkSize  int32 // chunk size in bytes
}

// DiskInfo describes one member device of an md array. It mirrors
// mdu_disk_info_t (20 bytes). [Device.DiskInfo] fills it in and
// [Device.AddNewDisk] takes it as input.
type DiskInfo struct {
	// Number is the member's descriptor number: the dev_number of a 1.x
	// superblock or the disks[] index of 0.90. It is not the slot.
	Number int32
	Major  int32 // major number of the member block device
	Minor  int32 // minor number of the member block device
	// RaidDisk is the member's slot, or -1 for a spare or a number that has
	// no device. A member being rebuilt already has its slot.
	RaidDisk int32
	State    DiskState
}

// Dev returns the member's device number in the encoding that
// [Device.HotRemoveDisk] and [Device.SetDiskFaulty] take. It equals
// unix.Mkdev(Major, Minor) on Linux.
func (d DiskInfo) Dev() uint64 {
	return mkdev(uint32(d.Major), uint32(d.Minor))
}

// mkdev encodes a Linux device number the way glibc's makedev and
// golang.org/x/sys/unix.Mkdev do on Linux. It is written out here because
// unix.Mkdev uses the host's encoding on other systems. For major < 4096 and
// minor < 1<<20, the only numbers the kernel's 32-bit dev_t can hold, the
// result fits in 32 bits and equals the kernel's new_encode_dev.
func mkdev(major, minor uint32) uint64 {
	return uint64(major&0x00000fff)<<8 |
		uint64(major&0xfffff000)<<32 |
		uint64(minor&0x000000ff) |
		uint64(minor&0xffffff00)<<12
}

// DiskState is the state bit set of a member device (MD_DISK_* bit numbers
// in linux/raid/md_p.h).
//
// GET_DISK_INFO reports DiskFaulty for a faulty member, DiskActive|DiskSync
// for an in-sync member, 0 for a spare or a member being rebuilt, and
// DiskRemoved for a number that has no device; DiskWriteMostly,
// DiskFailFast and DiskJournal may be added. ADD_NEW_DISK honours DiskSync
// (re-add into DiskInfo.RaidDisk), DiskWriteMostly, DiskFailFast and
// DiskJournal.
type DiskState uint32

// Member state bits.
const (
	DiskFaulty      DiskState = 1 << 0  // MD_DISK_FAULTY: the member has failed
	DiskActive      DiskState = 1 << 1  // MD_DISK_ACTIVE
	DiskSync        DiskState = 1 << 2  // MD_DISK_SYNC: in sync with the array
	DiskRemoved     DiskState = 1 << 3  // MD_DISK_REMOVED: no device has this number
	DiskClusterAdd  DiskState = 1 << 4  // MD_DISK_CLUSTER_ADD: clustered arrays only
	DiskCandidate   DiskState = 1 << 5  // MD_DISK_CANDIDATE: clustered arrays only
	DiskWriteMostly DiskState = 1 << 9  // MD_DISK_WRITEMOSTLY: raid1 reads avoid it
	DiskFailFast    DiskState = 1 << 10 // MD_DISK_FAILFAST: fewer retries, faster failure
	DiskJournal     DiskState = 1 << 18 // MD_DISK_JOURNAL: raid4/5/6 write journal
)

// String returns the names of the set bits separated by commas, for example
// "active,sync". Unknown bits are shown in hexadecimal and an empty set as
// "0".
func (s DiskState) String() string {
	return formatFlags(uint32(s), []flagName{
		{uint32(DiskFaulty), "faulty"},
		{uint32(DiskActive), "active"},
		{uint32(DiskSync), "sync"},
		{uint32(DiskRemoved), "removed"},
		{uint32(DiskClusterAdd), "cluster_add"},
		{uint32(DiskCandidate), "candidate"},
		{uint32(DiskWriteMostly), "write_mostly"},
		{uint32(DiskFailFast), "failfast"},
		{uint32(DiskJournal), "journal"},
	})
}

// ArrayState is the state bit set of an array (MD_SB_* bit numbers in
// linux/raid/md_p.h). GET_ARRAY_INFO reports only the bits below.
type ArrayState uint32

// Array state bits.
const (
	ArrayClean         ArrayState = 1 << 0 // MD_SB_CLEAN: no writes in flight
	ArrayClustered     ArrayState = 1 << 5 // MD_SB_CLUSTERED: md-cluster array
	ArrayBitmapPresent ArrayState = 1 << 8 // MD_SB_BITMAP_PRESENT: the array has an internal bitmap
)

// String returns the names of the set bits separated by commas, for example
// "clean,bitmap_present". Unknown bits are shown in hexadecimal and an empty
// set as "0".
func (s ArrayState) String() string {
	return formatFlags(uint32(s), []flagName{
		{uint32(ArrayClean), "clean"},
		{uint32(ArrayClustered), "clustered"},
		{uint32(ArrayBitmapPresent), "bitmap_present"},
	})
}

type flagName struct {
	bit  uint32
	name string
}

// formatFlags names the bits of v that appear in names, in order, and shows
// the rest in hexadecimal.
func formatFlags(v uint32, names []flagName) string {
	var parts []string
	for _, n := range names {
		if v&n.bit != 0 {
			parts = append(parts, n.name)
			v &^= n.bit
		}
	}
	if v != 0 {
		parts = append(parts, "0x"+strconv.FormatUint(uint64(v), 16))
	}
	if len(parts) == 0 {
		return "0"
	}
	return strings.Join(parts, ",")
}
