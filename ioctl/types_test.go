package ioctl

import (
	"testing"
	"unsafe"

	qt "github.com/frankban/quicktest"
)

// The C layouts come from linux/raid/md_u.h: every field is a 4-byte int or
// unsigned int, so the structs have no padding on any architecture.
func TestStructLayout(t *testing.T) {
	c := qt.New(t)

	c.Check(unsafe.Sizeof(Version{}), qt.Equals, uintptr(12)) // mdu_version_t
	var v Version
	c.Check(unsafe.Offsetof(v.Major), qt.Equals, uintptr(0))
	c.Check(unsafe.Offsetof(v.Minor), qt.Equals, uintptr(4))
	c.Check(unsafe.Offsetof(v.Patchlevel), qt.Equals, uintptr(8))

	c.Check(unsafe.Sizeof(DiskInfo{}), qt.Equals, uintptr(20)) // mdu_disk_info_t
	var d DiskInfo
	c.Check(unsafe.Offsetof(d.Number), qt.Equals, uintptr(0))
	c.Check(unsafe.Offsetof(d.Major), qt.Equals, uintptr(4))
	c.Check(unsafe.Offsetof(d.Minor), qt.Equals, uintptr(8))
	c.Check(unsafe.Offsetof(d.RaidDisk), qt.Equals, uintptr(12))
	c.Check(unsafe.Offsetof(d.State), qt.Equals, uintptr(16))

	c.Check(unsafe.Sizeof(ArrayInfo{}), qt.Equals, uintptr(72)) // mdu_array_info_t
	var a ArrayInfo
	for _, f := range []struct {
		name string
		got  uintptr
		want uintptr
	}{
		{"major_version", unsafe.Offsetof(a.MajorVersion), 0},
		{"minor_version", unsafe.Offsetof(a.MinorVersion), 4},
		{"patch_version", unsafe.Offsetof(a.PatchVersion), 8},
		{"ctime", unsafe.Offsetof(a.CTime), 12},
		{"level", unsafe.Offsetof(a.Level), 16},
		{"size", unsafe.Offsetof(a.Size), 20},
		{"nr_disks", unsafe.Offsetof(a.NrDisks), 24},
		{"raid_disks", unsafe.Offsetof(a.RaidDisks), 28},
		{"md_minor", unsafe.Offsetof(a.MDMinor), 32},
		{"not_persistent", unsafe.Offsetof(a.NotPersistent), 36},
		{"utime", unsafe.Offsetof(a.UTime), 40},
		{"state", unsafe.Offsetof(a.State), 44},
		{"active_disks", unsafe.Offsetof(a.ActiveDisks), 48},
		{"working_disks", unsafe.Offsetof(a.WorkingDisks), 52},
		{"failed_disks", unsafe.Offsetof(a.FailedDisks), 56},
		{"spare_disks", unsafe.Offsetof(a.SpareDisks), 60},
		{"layout", unsafe.Offsetof(a.Layout), 64},
		{"chunk_size", unsafe.Offsetof(a.ChunkSize), 68},
	} {
		c.Check(f.got, qt.Equals, f.want, qt.Commentf("mdu_array_info_t.%s", f.name))
	}
}

// The bit numbers are MD_DISK_* and MD_SB_* from linux/raid/md_p.h.
func TestStateBits(t *testing.T) {
	c := qt.New(t)
	for _, tt := range []struct {
		name string
		got  uint32
		bit  uint
	}{
		{"MD_DISK_FAULTY", uint32(DiskFaulty), 0},
		{"MD_DISK_ACTIVE", uint32(DiskActive), 1},
		{"MD_DISK_SYNC", uint32(DiskSync), 2},
		{"MD_DISK_REMOVED", uint32(DiskRemoved), 3},
		{"MD_DISK_CLUSTER_ADD", uint32(DiskClusterAdd), 4},
		{"MD_DISK_CANDIDATE", uint32(DiskCandidate), 5},
		{"MD_DISK_WRITEMOSTLY", uint32(DiskWriteMostly), 9},
		{"MD_DISK_FAILFAST", uint32(DiskFailFast), 10},
		{"MD_DISK_JOURNAL", uint32(DiskJournal), 18},
		{"MD_SB_CLEAN", uint32(ArrayClean), 0},
		{"MD_SB_CLUSTERED", uint32(ArrayClustered), 5},
		{"MD_SB_BITMAP_PRESENT", uint32(ArrayBitmapPresent), 8},
	} {
		c.Check(tt.got, qt.Equals, uint32(1)<<tt.bit, qt.Commentf("%s", tt.name))
	}
}

func TestDiskStateString(t *testing.T) {
	for _, tt := range []struct {
		name string
		s    DiskState
		want string
	}{
		{"rebuilding or spare", 0, "0"},
		{"in sync", DiskActive | DiskSync, "active,sync"},
		{"faulty", DiskFaulty, "faulty"},
		{"removed", DiskRemoved, "removed"},
		{"write-mostly journal", DiskActive | DiskSync | DiskWriteMostly | DiskJournal, "active,sync,write_mostly,journal"},
		{"clustered", DiskClusterAdd | DiskCandidate | DiskFailFast, "cluster_add,candidate,failfast"},
		{"unknown bits", DiskSync | 1<<17 | 1<<31, "sync,0x80020000"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			qt.Assert(t, tt.s.String(), qt.Equals, tt.want)
		})
	}
}

func TestArrayStateString(t *testing.T) {
	for _, tt := range []struct {
		name string
		s    ArrayState
		want string
	}{
		{"dirty", 0, "0"},
		{"clean", ArrayClean, "clean"},
		{"all", ArrayClean | ArrayClustered | ArrayBitmapPresent, "clean,clustered,bitmap_present"},
		{"errors bit", ArrayClean | 1<<1, "clean,0x2"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			qt.Assert(t, tt.s.String(), qt.Equals, tt.want)
		})
	}
}

func TestVersionString(t *testing.T) {
	qt.Assert(t, Version{0, 90, 3}.String(), qt.Equals, "0.90.3")
}

// newEncodeDev is the kernel's new_encode_dev (include/linux/kdev_t.h) for
// a dev_t split into major (12 bits) and minor (20 bits), and newDecodeDev
// is new_decode_dev, which md applies to the HOT_REMOVE_DISK and
// SET_DISK_FAULTY argument.
func newEncodeDev(major, minor uint32) uint32 {
	return minor&0xff | major<<8 | (minor&^0xff)<<12
}

func newDecodeDev(v uint32) (major, minor uint32) {
	return (v & 0xfff00) >> 8, v&0xff | (v>>12)&0xfff00
}

func TestMkdevMatchesKernelEncoding(t *testing.T) {
	c := qt.New(t)
	for _, tt := range []struct{ major, minor uint32 }{
		{0, 0},
		{8, 16},           // sdb
		{9, 127},          // md127
		{259, 3},          // nvme/blkext
		{253, 255},        // dm, last one-byte minor
		{253, 256},        // first minor needing the high bits
		{4095, 1<<20 - 1}, // largest dev_t the kernel has
		{1234, 0xabcde},
	} {
		got := DiskInfo{Major: int32(tt.major), Minor: int32(tt.minor)}.Dev()
		c.Check(got, qt.Equals, BlockDevice{Major: tt.major, Minor: tt.minor}.Dev())
		c.Check(got <= 0xffffffff, qt.IsTrue, qt.Commentf("%d:%d", tt.major, tt.minor))
		c.Check(uint32(got), qt.Equals, newEncodeDev(tt.major, tt.minor), qt.Commentf("%d:%d", tt.major, tt.minor))
		major, minor := newDecodeDev(uint32(got))
		c.Check([2]uint32{major, minor}, qt.Equals, [2]uint32{tt.major, tt.minor})
	}
	// Numbers the kernel cannot hold need more than 32 bits, so they are
	// refused rather than truncated.
	c.Check(mkdev(4096, 0) > 0xffffffff, qt.IsTrue)
	c.Check(mkdev(0, 1<<20) > 0xffffffff, qt.IsTrue)
}
