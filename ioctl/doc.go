// Package ioctl issues the Linux md (software RAID) ioctls on an md block
// device, one typed method per request.
//
// The package decides nothing: it converts Go values to the kernel's structs,
// makes one ioctl call and reports the kernel's answer. Policy, such as which
// member to fail or whether an array is safe to stop, belongs to the md
// package.
//
// # Sections
//
//   - Devices: [Open] and [NewDevice] wrap an open md block device such as
//     /dev/md0; [Device] has one method per ioctl.
//   - Kernel structs: [Version] mirrors mdu_version_t, [ArrayInfo] mirrors
//     mdu_array_info_t and [DiskInfo] mirrors mdu_disk_info_t from the uapi
//     header linux/raid/md_u.h. [DiskState] and [ArrayState] name the state
//     bits from linux/raid/md_p.h.
//   - Member devices: [StatBlockDevice] returns a block device's number and
//     size, which [Device.HotRemoveDisk], [Device.SetDiskFaulty] and
//     [Device.AddNewDisk] need.
//   - Errors: every kernel error is returned as an [*os.PathError] whose Op
//     names the request (for example "ioctl GET_ARRAY_INFO") and whose Err is
//     the [golang.org/x/sys/unix.Errno]. Check it with errors.Is, for example
//     errors.Is(err, unix.EBUSY), or errors.Is(err, fs.ErrPermission) for
//     EPERM and EACCES. Each method documents the errno values the kernel
//     returns for it. A request interrupted by a signal before the kernel
//     acted (EINTR) is retried.
//   - Platforms: the package builds everywhere, but only Linux implements
//     it. Elsewhere every call returns an error matching
//     [errors.ErrUnsupported].
//
// # Request numbers
//
// md ioctls are absent from golang.org/x/sys/unix. Their numbers are computed
// from linux/raid/md_u.h (type MD_MAJOR = 9) with the _IOC layout of the
// target architecture: asm-generic (2 direction bits at bit 30, 14 size bits)
// on amd64, 386, arm, arm64, riscv64, s390x and loong64, and the layout of
// powerpc, mips and sparc (3 direction bits at bit 29, 13 size bits) on those.
//
// # Privileges
//
// RAID_VERSION, GET_ARRAY_INFO and GET_DISK_INFO need only a file descriptor
// for the md device. Every other request needs CAP_SYS_ADMIN; without it the
// kernel returns EACCES.
//
// See https://docs.kernel.org/admin-guide/md.html for the kernel's md
// documentation.
package ioctl
