// Package blockdev identifies block devices (md members and candidates)
// from sysfs alone, without udev: kernel name, device node, device
// number, size, block sizes, partition and parent disk, model, serial,
// WWN, holders, and the by-path identity of the port or bay a disk sits
// in.
//
// # Sources
//
// Everything is read below a [sysfs.FS] root (class/block, dev/block and
// the device directories), so a tree captured on another machine gives
// the same answers. Device node paths are built under a dev root
// ([DefaultDevRoot] normally) and are only names.
//
// # Identity
//
// [Lookup] and [LookupDev] describe a device. [PathID] computes the name
// udev's path_id builtin gives the device's /dev/disk/by-path link, from
// the sysfs tree only, following systemd 252; the rules and what is left
// out are listed on [PathID]. It is the identity of a slot (a port, a
// bay): a disk moved to another port gets another PathID, and a new disk
// in the same port the same one. [CheckByPath] compares it with links
// that exist under the dev root.
//
// # Neighbours and use
//
// [Ports] maps every by-path identity in the tree to the devices that
// have it (how heal finds the disk in a recorded port). [Partitions]
// lists the partitions the kernel knows of a disk, and Device.Holders
// the devices stacked on it; [WalkStack] follows the stack further
// (slaves, loop devices). [Mounts] reads a mountinfo file (an injectable
// path, normally [DefaultMountInfo]) for the mounts of given device
// numbers. [LogicalBlockSize] reads a device's queue attribute. Which of
// these make a disk unusable is md's decision, not this package's.
//
// # Errors
//
// An unknown device gives an error matching fs.ErrNotExist. A device
// without a by-path identity (a virtual device, or a bus not handled
// here) gives a [*PathIDError], matching [ErrNoPathID], which carries the
// part of the path that could be computed.
package blockdev
