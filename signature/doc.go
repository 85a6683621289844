// Package signature recognises what a disk holds by its magic numbers:
// md superblocks, partition tables, file systems, volume managers,
// encryption, swap and caches. Bytes in, findings out: like superblock,
// it does no I/O beyond io.ReaderAt, so a file, a block device or a
// bytes.Reader all work.
//
// Scan reads a device and returns a [Finding] for each magic it
// recognises, with the byte offset where it sits. It decides nothing: an
// empty result does not make a disk blank (unknown content, plain
// dm-crypt or a raw image carry no magic). That decision is md's.
//
// # Where Scan looks
//
// Magics measured from the start are looked for at the start of the disk
// and again at each usual partition start (sector 63 and 1, 2, 4, 8 and
// 16 MiB, see [PartitionStarts]), offset by it: a disk whose partition
// table was wiped (an MBR has no backup) still has its file systems
// there. A finding at a partition start says so in its What. The Btrfs
// mirrors are looked for at the start of the disk only, and md 1.1 and
// 1.2 superblocks of a partition at the partition starts only (the
// disk's own are superblock.Probe's). "end" below is the device size.
//
// # Signatures
//
// The magics, with their byte offsets (from libblkid, the kernel and the
// formats' own headers), each named as its Finding's What:
//
//   - md superblock 0.90, 1.0, 1.1, 1.2 (superblock.Probe): magic
//     0xa92b4efc at 0.90 (end&^64KiB)-64KiB, 1.0 ((end/512-16)&^7)*512,
//     1.1 0, 1.2 4096, in either byte order. Stale, damaged or misplaced
//     superblocks count. At partition starts: "md superblock 1.1" at 0 and
//     "md superblock 1.2" at 4096.
//   - MBR boot signature (DOS partition table or boot sector): 0x55 0xaa
//     at 510; reported as a protective MBR (GPT) when a partition entry
//     has type 0xee.
//   - GPT header: "EFI PART" at 512; GPT header (4K blocks) at 4096; GPT
//     header (backup) at end-512; GPT header (backup, 4K blocks) at
//     end-4096.
//   - ext2/3/4 superblock: 0xef53 (little-endian) at 1080.
//   - XFS superblock: "XFSB" at 0.
//   - Btrfs superblock: "_BHRfS_M" at 65600 (64 KiB + 0x40); Btrfs
//     superblock (mirror) at 64 MiB + 0x40 and 256 GiB + 0x40 when the
//     device is that big.
//   - FAT12 boot sector: "FAT12   " at 54; FAT16 boot sector: "FAT16   "
//     at 54; FAT boot sector: "FAT     " or "MSDOS" at 54; FAT32 boot
//     sector: "FAT32   " or "MSWIN" at 82.
//   - exFAT boot sector: "EXFAT   " at 3; NTFS boot sector: "NTFS    " at
//     3; BitLocker volume: "-FVE-FS-" at 3.
//   - ISO 9660 volume descriptor: "CD001" at 32769; UDF volume
//     recognition: "BEA01", "NSR02" or "NSR03" at 32769.
//   - SquashFS superblock: "hsqs" at 0; SquashFS superblock (big-endian):
//     "sqsh" at 0.
//   - F2FS superblock: 0xf2f52010 (little-endian) at 1024.
//   - JFS superblock: "JFS1" at 32768.
//   - ReiserFS superblock: "ReIsErFs", "ReIsEr2Fs" or "ReIsEr3Fs" at
//     65536+52; ReiserFS 3.5 superblock: "ReIsErFs" at 8192+52.
//   - NILFS2 superblock: 0x3434 (little-endian, "44") at 1030.
//   - LVM2 physical volume label: "LABELONE" at the start of sector 0, 1,
//     2 or 3.
//   - LUKS header: "LUKS\xba\xbe" at 0; LUKS2 secondary header:
//     "SKUL\xba\xbe" at 16, 32, 64, 128, 256, 512 KiB and 1, 2, 4 MiB.
//   - swap signature: "SWAPSPACE2" or "SWAP-SPACE" ending at each page
//     size (4, 8, 16, 32, 64 KiB: offset pagesize-10); hibernation image:
//     "S1SUSPEND", "S2SUSPEND", "ULSUSPEND" or "LINHIB0001" there.
//   - bcache superblock and bcachefs superblock: their 16-byte magics at
//     4096+24.
//   - md external metadata: Intel IMSM metadata "Intel Raid ISM Cfg Sig. "
//     at end-1024; DDF anchor 0xde11de11 (big-endian) at end-512.
//   - ZFS uberblock: magic 0x00bab10c (either byte order) at every 1 KiB
//     of the uberblock area (128 KiB into each label) of the four 256 KiB
//     labels: two at the start (0, 256 KiB) and two at the end of the
//     device rounded down to 256 KiB (end-512 KiB, end-256 KiB).
//
// ZFS cache and spare vdevs that carry only an nvlist and no uberblock
// are not recognised.
package signature
