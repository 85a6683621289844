package superblock

// The on-disk layouts, one named offset per field of the kernel's
// include/uapi/linux/raid/md_p.h. layout_test.go pins every value.

// Common constants.
const (
	// Magic is MD_SB_MAGIC, the first word of every md superblock.
	Magic = 0xa92b4efc

	// Size090 is MD_SB_BYTES, the size of a 0.90 superblock.
	Size090 = 4096
	// Size1 is sizeof(struct mdp_superblock_1) without dev_roles.
	Size1 = 256
	// MaxDev1 is the largest max_dev the kernel accepts:
	// (4096-256)/2 = 1920.
	MaxDev1 = (4096 - Size1) / 2
	// Disks090 is MD_SB_DISKS, the size of the 0.90 disks[] table.
	Disks090 = 27
	// BlockSize is the size Read reads at a superblock location.
	BlockSize = 4096
)

// struct mdp_superblock_1 (all fields little-endian).
const (
	off1Magic          = 0
	off1MajorVersion   = 4
	off1FeatureMap     = 8
	off1Pad0           = 12
	off1SetUUID        = 16
	off1SetName        = 32
	off1CTime          = 64
	off1Level          = 72
	off1Layout         = 76
	off1Size           = 80
	off1ChunkSize      = 88
	off1RaidDisks      = 92
	off1BitmapOffset   = 96 // union with ppl.offset (s16) and ppl.size (u16)
	off1NewLevel       = 100
	off1ReshapePos     = 104
	off1DeltaDisks     = 112
	off1NewLayout      = 116
	off1NewChunk       = 120
	off1NewOffset      = 124
	off1DataOffset     = 128
	off1DataSize       = 136
	off1SuperOffset    = 144
	off1RecoveryOffset = 152 // union with journal_tail
	off1DevNumber      = 160
	off1CntCorrected   = 164
	off1DeviceUUID     = 168
	off1DevFlags       = 184
	off1BBLogShift     = 185
	off1BBLogSize      = 186
	off1BBLogOffset    = 188
	off1UTime          = 192
	off1Events         = 200
	off1ResyncOffset   = 208
	off1SBCsum         = 216
	off1MaxDev         = 220
	off1LogicalBlock   = 224 // Linux 6.19+; before that the start of pad3
	off1Pad3           = 228 // the 28 bytes of pad3 left since Linux 6.19
	off1DevRoles       = 256
)

// struct mdp_superblock_s (0.90), in bytes; each field is a u32 word in the
// byte order of the host that wrote it.
const (
	off0Magic          = 0
	off0MajorVersion   = 4
	off0MinorVersion   = 8
	off0PatchVersion   = 12
	off0GValidWords    = 16
	off0SetUUID0       = 20
	off0CTime          = 24
	off0Level          = 28
	off0Size           = 32
	off0NrDisks        = 36
	off0RaidDisks      = 40
	off0MDMinor        = 44
	off0NotPersistent  = 48
	off0SetUUID1       = 52
	off0SetUUID2       = 56
	off0SetUUID3       = 60
	off0GStateCReserve = 64 // 16 words
	off0UTime          = 128
	off0State          = 132
	off0ActiveDisks    = 136
	off0WorkingDisks   = 140
	off0FailedDisks    = 144
	off0SpareDisks     = 148
	off0SBCsum         = 152
	off0Events         = 156 // events_lo/hi in host order: one u64 in that order
	off0CPEvents       = 164
	off0RecoveryCP     = 172
	off0ReshapePos     = 176 // u64
	off0NewLevel       = 184
	off0DeltaDisks     = 188
	off0NewLayout      = 192
	off0NewChunk       = 196
	off0GStateSReserve = 200 // 14 words
	off0Layout         = 256
	off0ChunkSize      = 260
	off0RootPV         = 264
	off0RootBlock      = 268
	off0PStateReserved = 272 // 60 words
	off0Disks          = 512
	off0ThisDisk       = 3968

	// mdp_disk_t, 32 words.
	offDescNumber   = 0
	offDescMajor    = 4
	offDescMinor    = 8
	offDescRaidDisk = 12
	offDescState    = 16
	offDescReserved = 20 // 27 words
	descSize        = 128
)
