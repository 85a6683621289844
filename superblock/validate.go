package superblock

import (
	"errors"
	"fmt"
)

func joinErrs(errs []error) error {
	switch len(errs) {
	case 0:
		return nil
	case 1:
		return errs[0]
	}
	return errors.Join(errs...)
}

// Validate applies the checks the kernel makes before it accepts a member
// (md.c super_90_load, super_1_load, super_1_validate) that Decode leaves
// out so that damaged superblocks can still be shown. devSize is the device
// size in bytes; pass 0 or less when it is unknown, which skips the checks
// that need it. The result is nil or an errors.Join of *FormatError values;
// use errors.Is with the sentinels or errors.As to inspect them.
//
// 1.x: unknown feature bits (ErrUnknownFeature); data_size < 10; for 1.1/1.2 data (and new data) starting inside the
// superblock; bad-block log with FeatureBadBlocks larger than 8 sectors
// (ErrOutOfRange) or at offset 0; FeatureRAID0Layout on a level other than
// 0; PPL together with a bitmap, a journal or multiple PPLs; data_size
// larger than the room on the device (1.0: before the superblock); and,
// with devSize, the superblock, bitmap, bad-block log or PPL lying beyond
// the device (ErrOutOfRange).
//
// Non-zero padding (pad0, and pad3 after logical_block_size) is not
// reported: every kernel refuses it, but it means a field of a newer
// kernel, not damage. UnknownFields and CheckKnown report it.
//
// logical_block_size: the kernel (Linux 6.19+) imports any value, then
// refuses to run the array unless the block layer accepts it as a logical
// block size (blk_validate_block_size: a power of two, at least 512, at
// most 64 KiB or the page size on older kernels) and md's own limit, the
// page size (mddev_stack_rdev_limits). 0 means not recorded. Validate
// therefore accepts any value, as the kernel's load does;
// ValidLogicalBlockSize says whether an array could run with it.
//
// 0.90: minor version other than 90 or 91 (ErrUnsupportedVersion);
// raid_disks not in 1..27 and this_disk.number above 26 (ErrOutOfRange);
// with devSize, a component size larger than the space before the
// superblock (libblkid's rule).
func (sb *Superblock) Validate(devSize int64) error {
	if sb.Version == Version090 {
		return sb.validate090(devSize)
	}
	if !sb.Version.Is1x() {
		return formatErr(-1, "version", sb.Version, ErrUnsupportedVersion)
	}
	return sb.validate1(devSize)
}

func (sb *Superblock) validate090(devSize int64) error {
	var errs []error
	add := func(off int64, field string, v any, err error) {
		errs = append(errs, formatErr(off, field, v, err))
	}
	if sb.MinorVersion != 90 && sb.MinorVersion != 91 {
		add(off0MinorVersion, "minor_version", sb.MinorVersion, ErrUnsupportedVersion)
	}
	if int32(sb.RaidDisks) <= 0 || sb.RaidDisks > Disks090 {
		add(off0RaidDisks, "raid_disks", int32(sb.RaidDisks), ErrOutOfRange)
	}
	if sb.ThisDisk.Number >= Disks090 {
		add(off0ThisDisk+offDescNumber, "this_disk.number", sb.ThisDisk.Number, ErrOutOfRange)
	}
	if devSize > 0 {
		if sb.Size*512+minSize090 > uint64(devSize) {
			add(off0Size, "size", sb.Size/2, fmt.Errorf("%w: %d KiB does not fit a device of %d bytes", ErrOutOfRange, sb.Size/2, devSize))
		}
	}
	return joinErrs(errs)
}

// MaxLogicalBlockSize is the largest logical block size the block layer
// allows: 64 KiB, the largest page size Linux runs with.
const MaxLogicalBlockSize = 64 << 10

// ValidLogicalBlockSize reports whether lbs is a logical block size the
// kernel can run an array with: a power of two from 512 to
// MaxLogicalBlockSize (and at most the page size). Validate does not
// check logical_block_size: Linux 6.19 and later import a superblock
// whatever it holds there, and only refuse to run the array when the
// larger of it and the members' block sizes is not such a size
// (docs/kernels.md); examine warns about it.
func ValidLogicalBlockSize(lbs uint32) bool {
	return lbs >= 512 && lbs <= MaxLogicalBlockSize && lbs&(lbs-1) == 0
}

func (sb *Superblock) validate1(devSize int64) error {
	var errs []error
	add := func(off int64, field string, v any, err error) {
		errs = append(errs, formatErr(off, field, v, err))
	}
	f := sb.Features
	if u := f.Unknown(); u != 0 {
		add(off1FeatureMap, "feature_map", fmt.Sprintf("%#x", uint32(f)), fmt.Errorf("%w %#x", ErrUnknownFeature, uint32(u)))
	}
	if sb.DataSize < 10 {
		add(off1DataSize, "data_size", sb.DataSize, ErrInvalid)
	}
	sbSectors := uint64(Size1+2*len(sb.DevRoles)+511) / 512
	if sb.Version != Version10 {
		if sb.DataOffset < sb.SuperOffset+sbSectors {
			add(off1DataOffset, "data_offset", sb.DataOffset, fmt.Errorf("%w: data starts inside the superblock", ErrInvalid))
		}
		if f&FeatureNewOffset != 0 && sb.DataOffset+uint64(int64(sb.NewOffset)) < sb.SuperOffset+sbSectors {
			add(off1NewOffset, "new_offset", sb.NewOffset, fmt.Errorf("%w: new data starts inside the superblock", ErrInvalid))
		}
	}
	if f&FeatureBadBlocks != 0 {
		if sb.BBLogSize > 8 {
			add(off1BBLogSize, "bblog_size", sb.BBLogSize, fmt.Errorf("%w: more than one page", ErrOutOfRange))
		}
		if sb.BBLogOffset == 0 {
			add(off1BBLogOffset, "bblog_offset", sb.BBLogOffset, ErrInvalid)
		}
	}
	if f&FeatureRAID0Layout != 0 && sb.Level != LevelRAID0 {
		add(off1FeatureMap, "feature_map", "raid0-layout", fmt.Errorf("%w: raid0 layout on %v", ErrInvalid, sb.Level))
	}
	if f&FeaturePPL != 0 {
		if f&featureBitmapPPLConflict != 0 {
			add(off1FeatureMap, "feature_map", f, fmt.Errorf("%w: PPL with bitmap or journal", ErrInvalid))
		}
		if f&FeatureMultiplePPLs != 0 {
			add(off1FeatureMap, "feature_map", f, fmt.Errorf("%w: PPL with multiple PPLs", ErrInvalid))
		}
	}
	if sb.Version == Version10 && sb.DataSize > sb.SuperOffset {
		add(off1DataSize, "data_size", sb.DataSize, fmt.Errorf("%w: data runs into the superblock at sector %d", ErrOutOfRange, sb.SuperOffset))
	}
	if devSize > 0 {
		dev := uint64(devSize) / 512
		if sb.Version != Version10 && (sb.DataOffset > dev || dev-sb.DataOffset < sb.DataSize) {
			add(off1DataSize, "data_size", sb.DataSize, fmt.Errorf("%w: data ends beyond the device (%d sectors)", ErrOutOfRange, dev))
		}
		if sb.SuperOffset+sbSectors > dev {
			add(off1SuperOffset, "super_offset", sb.SuperOffset, fmt.Errorf("%w: beyond the device (%d sectors)", ErrOutOfRange, dev))
		}
		checkRegion := func(off int64, field string, delta int64, n uint64) {
			start := int64(sb.SuperOffset) + delta
			if sb.SuperOffset > 1<<54 || start < 0 || uint64(start)+n > dev {
				add(off, field, delta, fmt.Errorf("%w: region of %d sectors beyond the device (%d sectors)", ErrOutOfRange, n, dev))
			}
		}
		if f&FeatureBitmapOffset != 0 {
			checkRegion(off1BitmapOffset, "bitmap_offset", int64(sb.BitmapOffset), BitmapSize/512+1)
		} else if f&featureAnyPPL != 0 {
			checkRegion(off1BitmapOffset, "ppl.offset", int64(sb.PPLOffset()), uint64(max(sb.PPLSize(), PPLHeaderSize/512)))
		}
		if sb.BBLogSize != 0 && sb.BBLogOffset != 0 {
			checkRegion(off1BBLogOffset, "bblog_offset", int64(sb.BBLogOffset), uint64(sb.BBLogSize))
		}
	}
	return joinErrs(errs)
}
