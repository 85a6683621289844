// Package sysfs reads and writes the Linux MD attributes in sysfs
// (/sys/block/mdX/md) under an injectable root, with typed values and no
// policy. It is the source of truth for array state; /proc/mdstat is not
// read.
//
// Kernel documentation: https://docs.kernel.org/admin-guide/md.html. The
// values and quirks below were read from drivers/md/md.c (the *_show and
// *_store functions) and checked on a real kernel where noted in the
// project's md-format notes.
//
// # Roots
//
// [NewFS] takes the directory sysfs is mounted at ([DefaultRoot] for the
// running system, a temporary directory in tests). Every path is built by
// [FS.Path]; nothing is global. Tests build trees with the
// internal/sysfstree manifests, including real captures.
//
// # Reading
//
// Each attribute is read with one read(2) into a page-sized buffer (sysfs
// caps output at one page and reports meaningless file sizes) and then
// trimmed. Getters return typed values:
//
//   - enumerations ([ArrayState], [SyncAction], [Level],
//     [ConsistencyPolicy], [MemberFlag]) are strings with constants and a
//     Known method; unknown future values are kept, never rejected;
//   - numbers that can read "none", "max" or "default" are [Optional];
//   - raid_disks, layout and chunk_size read "new (old)" during a reshape
//     and give a [Reshaped];
//   - sync_completed is a [Progress] ("none", "delayed" or "done / total");
//   - sync_speed_min/max are a [Speed] ("N (system)");
//   - metadata_version is a [MetadataVersion], which knows containers
//     ("external:/md127/0").
//
// A missing attribute gives the *fs.PathError from open, which matches
// fs.ErrNotExist. That is normal for the redundancy attributes (sync_*,
// degraded, mismatch_cnt, last_sync_action), which exist only while a
// raid1/4/5/6/10 personality runs: raid0, linear, containers and inactive
// arrays lack them. A container also reads an empty raid_disks, and an
// array whose level is not set yet an empty level.
//
// # Writing
//
// Writes are typed methods ([Array.SetSyncAction], [Array.SetState],
// [Array.NewDev], [Array.SetSyncMax], [Member.WriteState],
// [Member.SetSlot], ...). They open the attribute O_WRONLY without
// O_CREATE or O_TRUNC and write once, so a missing attribute fails as on
// a real system and the kernel's errno reaches the caller wrapped in an
// *fs.PathError (errors.Is(err, unix.EBUSY) works). The write tokens of
// dev-*/state differ from the read tokens: write "writemostly" and
// "insync", read "write_mostly" and "in_sync" ([MemberCommand]).
//
// # Members and slots
//
// [Array.Members] lists the dev-* directories. The slot of a member is
// [Member.Slot]; the rdN links ([Array.SlotLinks]) are unreliable (a
// replacement has none, and one can vanish after a replace). The block
// link gives the member's kernel name and device directory
// ([Member.Block]); package blockdev turns that into an identity.
//
// # UUIDs
//
// [Array.UUID] returns the UUID that mdadm and blkid print. For 0.90
// metadata on a little-endian kernel the sysfs form has each 32-bit word
// byte-reversed; [CanonicalUUID] documents and applies the rule, using
// the kernel byte order of the [FS] (the host's unless set with
// [FS.WithByteOrder]).
package sysfs
