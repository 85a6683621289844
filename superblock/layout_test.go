package superblock

import (
	"testing"
	"unsafe"

	qt "github.com/frankban/quicktest"
)

// mdpSuperblock1 mirrors struct mdp_superblock_1 from md_p.h field by
// field; it only documents the layout (as debug/elf's Header32 does).
type mdpSuperblock1 struct {
	Magic, MajorVersion, FeatureMap, Pad0 uint32
	SetUUID                               [16]byte
	SetName                               [32]byte
	CTime                                 uint64
	Level, Layout                         uint32
	Size                                  uint64
	ChunkSize, RaidDisks                  uint32
	BitmapOffset                          uint32
	NewLevel                              uint32
	ReshapePosition                       uint64
	DeltaDisks, NewLayout, NewChunk       uint32
	NewOffset                             uint32
	DataOffset, DataSize, SuperOffset     uint64
	RecoveryOffset                        uint64
	DevNumber, CntCorrectedRead           uint32
	DeviceUUID                            [16]byte
	DevFlags, BBLogShift                  uint8
	BBLogSize                             uint16
	BBLogOffset                           uint32
	UTime, Events, ResyncOffset           uint64
	SBCsum, MaxDev                        uint32
	LogicalBlockSize                      uint32 // Linux 6.19+
	Pad3                                  [28]byte
}

// TestLayout1 pins every 1.x offset to the md_p.h values recorded in
// md-format.md §2 and to the mirror struct.
func TestLayout1(t *testing.T) {
	c := qt.New(t)
	var m mdpSuperblock1
	tests := []struct {
		name      string
		got, want int
		mirror    uintptr
	}{
		{"magic", off1Magic, 0, unsafe.Offsetof(m.Magic)},
		{"major_version", off1MajorVersion, 4, unsafe.Offsetof(m.MajorVersion)},
		{"feature_map", off1FeatureMap, 8, unsafe.Offsetof(m.FeatureMap)},
		{"pad0", off1Pad0, 12, unsafe.Offsetof(m.Pad0)},
		{"set_uuid", off1SetUUID, 16, unsafe.Offsetof(m.SetUUID)},
		{"set_name", off1SetName, 32, unsafe.Offsetof(m.SetName)},
		{"ctime", off1CTime, 64, unsafe.Offsetof(m.CTime)},
		{"level", off1Level, 72, unsafe.Offsetof(m.Level)},
		{"layout", off1Layout, 76, unsafe.Offsetof(m.Layout)},
		{"size", off1Size, 80, unsafe.Offsetof(m.Size)},
		{"chunksize", off1ChunkSize, 88, unsafe.Offsetof(m.ChunkSize)},
		{"raid_disks", off1RaidDisks, 92, unsafe.Offsetof(m.RaidDisks)},
		{"bitmap_offset", off1BitmapOffset, 96, unsafe.Offsetof(m.BitmapOffset)},
		{"new_level", off1NewLevel, 100, unsafe.Offsetof(m.NewLevel)},
		{"reshape_position", off1ReshapePos, 104, unsafe.Offsetof(m.ReshapePosition)},
		{"delta_disks", off1DeltaDisks, 112, unsafe.Offsetof(m.DeltaDisks)},
		{"new_layout", off1NewLayout, 116, unsafe.Offsetof(m.NewLayout)},
		{"new_chunk", off1NewChunk, 120, unsafe.Offsetof(m.NewChunk)},
		{"new_offset", off1NewOffset, 124, unsafe.Offsetof(m.NewOffset)},
		{"data_offset", off1DataOffset, 128, unsafe.Offsetof(m.DataOffset)},
		{"data_size", off1DataSize, 136, unsafe.Offsetof(m.DataSize)},
		{"super_offset", off1SuperOffset, 144, unsafe.Offsetof(m.SuperOffset)},
		{"recovery_offset", off1RecoveryOffset, 152, unsafe.Offsetof(m.RecoveryOffset)},
		{"dev_number", off1DevNumber, 160, unsafe.Offsetof(m.DevNumber)},
		{"cnt_corrected_read", off1CntCorrected, 164, unsafe.Offsetof(m.CntCorrectedRead)},
		{"device_uuid", off1DeviceUUID, 168, unsafe.Offsetof(m.DeviceUUID)},
		{"devflags", off1DevFlags, 184, unsafe.Offsetof(m.DevFlags)},
		{"bblog_shift", off1BBLogShift, 185, unsafe.Offsetof(m.BBLogShift)},
		{"bblog_size", off1BBLogSize, 186, unsafe.Offsetof(m.BBLogSize)},
		{"bblog_offset", off1BBLogOffset, 188, unsafe.Offsetof(m.BBLogOffset)},
		{"utime", off1UTime, 192, unsafe.Offsetof(m.UTime)},
		{"events", off1Events, 200, unsafe.Offsetof(m.Events)},
		{"resync_offset", off1ResyncOffset, 208, unsafe.Offsetof(m.ResyncOffset)},
		{"sb_csum", off1SBCsum, 216, unsafe.Offsetof(m.SBCsum)},
		{"max_dev", off1MaxDev, 220, unsafe.Offsetof(m.MaxDev)},
		{"logical_block_size", off1LogicalBlock, 224, unsafe.Offsetof(m.LogicalBlockSize)},
		{"pad3", off1Pad3, 228, unsafe.Offsetof(m.Pad3)},
	}
	for _, tt := range tests {
		c.Check(tt.got, qt.Equals, tt.want, qt.Commentf("%s", tt.name))
		c.Check(int(tt.mirror), qt.Equals, tt.want, qt.Commentf("%s (mirror)", tt.name))
	}
	c.Check(int(unsafe.Sizeof(m)), qt.Equals, 256)
	c.Check(off1Pad3+len(m.Pad3), qt.Equals, off1DevRoles)
	c.Check(len(Superblock{}.Pad3), qt.Equals, len(m.Pad3))
	c.Check(Size1, qt.Equals, 256)
	c.Check(off1DevRoles, qt.Equals, 256)
	c.Check(MaxDev1, qt.Equals, 1920)
}

// TestLayout090 pins every 0.90 offset to md_p.h (md-format.md §1: word
// numbers times 4).
func TestLayout090(t *testing.T) {
	c := qt.New(t)
	words := []struct {
		name string
		got  int
		word int
	}{
		{"md_magic", off0Magic, 0},
		{"major_version", off0MajorVersion, 1},
		{"minor_version", off0MinorVersion, 2},
		{"patch_version", off0PatchVersion, 3},
		{"gvalid_words", off0GValidWords, 4},
		{"set_uuid0", off0SetUUID0, 5},
		{"ctime", off0CTime, 6},
		{"level", off0Level, 7},
		{"size", off0Size, 8},
		{"nr_disks", off0NrDisks, 9},
		{"raid_disks", off0RaidDisks, 10},
		{"md_minor", off0MDMinor, 11},
		{"not_persistent", off0NotPersistent, 12},
		{"set_uuid1", off0SetUUID1, 13},
		{"set_uuid2", off0SetUUID2, 14},
		{"set_uuid3", off0SetUUID3, 15},
		{"gstate_creserved", off0GStateCReserve, 16},
		{"utime", off0UTime, 32},
		{"state", off0State, 33},
		{"active_disks", off0ActiveDisks, 34},
		{"working_disks", off0WorkingDisks, 35},
		{"failed_disks", off0FailedDisks, 36},
		{"spare_disks", off0SpareDisks, 37},
		{"sb_csum", off0SBCsum, 38},
		{"events", off0Events, 39},
		{"cp_events", off0CPEvents, 41},
		{"recovery_cp", off0RecoveryCP, 43},
		{"reshape_position", off0ReshapePos, 44},
		{"new_level", off0NewLevel, 46},
		{"delta_disks", off0DeltaDisks, 47},
		{"new_layout", off0NewLayout, 48},
		{"new_chunk", off0NewChunk, 49},
		{"gstate_sreserved", off0GStateSReserve, 50},
		{"layout", off0Layout, 64},
		{"chunk_size", off0ChunkSize, 65},
		{"root_pv", off0RootPV, 66},
		{"root_block", off0RootBlock, 67},
		{"pstate_reserved", off0PStateReserved, 68},
		{"disks", off0Disks, 128},
		{"this_disk", off0ThisDisk, 992},
		{"disk.number", offDescNumber, 0},
		{"disk.major", offDescMajor, 1},
		{"disk.minor", offDescMinor, 2},
		{"disk.raid_disk", offDescRaidDisk, 3},
		{"disk.state", offDescState, 4},
		{"disk.reserved", offDescReserved, 5},
	}
	for _, w := range words {
		c.Check(w.got, qt.Equals, 4*w.word, qt.Commentf("%s", w.name))
	}
	c.Check(descSize, qt.Equals, 32*4)
	c.Check(off0Disks+Disks090*descSize, qt.Equals, off0ThisDisk)
	c.Check(off0ThisDisk+descSize, qt.Equals, Size090)
	c.Check(Size090, qt.Equals, 4096)
	// Reserved areas end where the next field starts.
	c.Check(off0GStateCReserve+16*4, qt.Equals, off0UTime)
	c.Check(off0GStateSReserve+14*4, qt.Equals, off0Layout)
	c.Check(off0PStateReserved+60*4, qt.Equals, off0Disks)
	c.Check(offDescReserved+27*4, qt.Equals, descSize)
}

func TestLayoutOthers(t *testing.T) {
	c := qt.New(t)
	c.Check(offBitmapPad, qt.Equals, 136)
	c.Check(offBitmapClusterName+64, qt.Equals, offBitmapPad)
	c.Check(PPLMaxEntries, qt.Equals, 148)
	c.Check(offPPLEntry0+PPLMaxEntries*pplEntrySize <= PPLHeaderSize, qt.IsTrue)
}
