// Package superblock decodes and encodes Linux MD software RAID member
// superblocks: the 0.90 format (struct mdp_superblock_s) and the 1.x
// formats (struct mdp_superblock_1) of the kernel's
// include/uapi/linux/raid/md_p.h, plus the structures they point to: the
// internal write-intent bitmap superblock, the bad-block log and the
// partial parity log header. See
// https://docs.kernel.org/admin-guide/md.html.
//
// The package does no I/O beyond io.ReaderAt and runs anywhere: a file, a
// block device or a bytes.Reader all work.
//
// # Decoding
//
// Decode turns the bytes at the start of a superblock into one
// version-independent Superblock value. UnmarshalBinary does the same into
// an existing value and does not allocate for 1.x superblocks. A 0.90
// superblock is read in the byte order of its magic, never the host's.
// Decode never modifies its input and never panics; bounds (max_dev, the
// buffer length) are checked before anything is sliced or allocated.
//
// # Locations
//
// Version names the four formats and, for 1.x, where the superblock lives;
// Version.Offset computes the byte offset on a device of a given size.
// Read reads one location; Probe reads all of them, reports every
// superblock it finds (a device can carry stale ones) and which one mdadm
// would use.
//
// # Fatal errors and warnings
//
// Decode fails only when the bytes cannot be interpreted: too short,
// no magic, unknown major version, or max_dev above 1920. A checksum
// mismatch is an error too (*ChecksumError) but the decoded value comes
// with it, so that tools can show a damaged superblock as mdadm --examine
// does. Read and Probe also refuse a superblock that is not where it
// belongs (ErrWrongLocation), as the kernel and blkid do, again returning
// the value.
//
// Everything else the kernel refuses when it loads a member (unknown
// feature bits, data_size < 10, an oversized bad-block log, conflicting
// features, data beyond the device, a 0.90 minor version other than
// 90/91, raid_disks outside 1..27, ...) is left to Validate, which returns
// all findings at once. mdadm --examine shows such superblocks; whether to
// accept them is the caller's decision.
//
// Non-zero 1.x padding is neither a decoding error nor a Validate finding:
// it is most likely a field added by a newer kernel, as logical_block_size
// (Linux 6.19) took the first four bytes of pad3. UnknownFields lists such
// words and CheckKnown turns them into errors, for callers that must not
// copy what they do not understand.
//
// For 0.90 checksums, Decode follows the kernel and compares 16-bit folds;
// ChecksumValid compares the full 32-bit value as mdadm does.
//
// # Errors
//
// Every error matches one sentinel (ErrNoSuperblock, ErrTruncated,
// ErrChecksum, ErrUnsupportedVersion, ErrUnknownFeature, ErrInvalid,
// ErrUnknownField, ErrOutOfRange, ErrWrongLocation, ErrDeviceTooSmall,
// ErrNoBitmap, ErrNoPPL) with errors.Is, and carries details in a *FormatError or
// *ChecksumError for errors.As. I/O errors from the io.ReaderAt are
// wrapped and can be matched too.
//
// # Encoding
//
// MarshalBinary and AppendBinary write a Superblock back, with its checksum
// recomputed: 4096 bytes for 0.90 in the superblock's byte order;
// 256 + 2*max_dev bytes rounded up to 512 for 1.x. Decoding, encoding and
// decoding again gives an equal value, and encoding a decoded superblock
// reproduces the input over the checksummed length. Clone makes a deep
// copy to modify, and Bitmap and AppendBadBlocks encode the structures a
// new member needs.
//
// # What examine shows
//
// The methods ArrayState, Role, RoleText, StateText, UnusedSpace,
// ArraySize and LayoutName, and Level.String, compute the values mdadm
// --examine prints, each in one place.
package superblock
