package ioctl

import "os"

// Device is an open md block device, such as /dev/md0 or /dev/md/name. Each
// method issues one md ioctl on it. Methods may be called from several
// goroutines. After Close, every method returns an error matching
// [os.ErrClosed].
type Device struct {
	f    *os.File
	path string
}

// Open opens the md block device at path read-only, which is enough for
// every md ioctl: the kernel checks CAP_SYS_ADMIN, not the open mode.
//
// Open does not check that path is an md device; requests on anything else
// fail, usually with an error matching [golang.org/x/sys/unix.ENOTTY].
func Open(path string) (*Device, error) {
	return open(path)
}

// NewDevice returns a Device for f, an open md block device. The Device
// owns f from then on: [Device.Close] closes it. Errors name f.Name().
//
// Use NewDevice to open the device with other flags, for example O_EXCL
// before [Device.StopArray] so that nobody else can open the array between
// the check and the stop.
func NewDevice(f *os.File) *Device {
	return &Device{f: f, path: f.Name()}
}

// Close closes the underlying file.
func (d *Device) Close() error {
	return d.f.Close()
}

// Version returns the md driver's version (RAID_VERSION), which does not
// depend on the array. It works on inactive arrays and needs no privileges.
func (d *Device) Version() (Version, error) {
	return d.version()
}

// ArrayInfo returns the array's description (GET_ARRAY_INFO). It needs no
// privileges.
//
// The kernel returns ENODEV while the array is inactive (no slots yet, for
// example while it is being assembled or after it has been stopped without
// being freed); read sysfs array_state to tell those cases apart.
func (d *Device) ArrayInfo() (ArrayInfo, error) {
	return d.arrayInfo()
}

// DiskInfo returns the member whose descriptor number is number
// (GET_DISK_INFO). number is the dev_number of a 1.x superblock or the
// disks[] index of 0.90 (the N in /proc/mdstat's "sdb1[N]"), not the slot.
// It needs no privileges.
//
// A number with no device is not an error: the result has Major and Minor 0,
// RaidDisk -1 and State [DiskRemoved]. To list the members, ask for numbers
// from 0 upwards until [ArrayInfo].NrDisks members have been found. Numbers
// can be sparse; they stay below 1920 with 1.x superblocks and below 27 with
// 0.90.
//
// The kernel returns ENODEV while the array is inactive. DiskInfo returns an
// error matching [golang.org/x/sys/unix.EINVAL], without calling the kernel,
// if number is negative or does not fit in a C int.
func (d *Device) DiskInfo(number int) (DiskInfo, error) {
	return d.diskInfo(number)
}

// AddNewDisk adds the block device info.Major:info.Minor to the array
// (ADD_NEW_DISK). It needs CAP_SYS_ADMIN.
//
// On a running array with persistent superblocks, the device must already
// carry a superblock of the array's version with a dev_number unused in the
// array; the kernel does not compare the array UUID. The kernel ignores
// info.Number and, unless info.State has [DiskSync], info.RaidDisk. With
// DiskSync the request is a re-add into slot info.RaidDisk. The
// [DiskWriteMostly], [DiskFailFast] and [DiskJournal] bits are honoured.
// The new device is a spare until md starts recovery onto it. Do not hold
// an O_EXCL descriptor of the new device during the call.
//
// Errors the kernel returns include EACCES without CAP_SYS_ADMIN; EBUSY if
// someone holds the device open exclusively, or its dev_number is in use by
// another member or too large; EEXIST if it is already a member; EINVAL if
// DiskSync was set but the superblock puts the device in another slot;
// ENOSPC if it is smaller than the array's component size; EROFS if the
// device is read-only, or the array is read-only and DiskSync is not set.
func (d *Device) AddNewDisk(info DiskInfo) error {
	return d.addNewDisk(info)
}

// SetArrayInfo starts assembling an array from existing superblocks
// (SET_ARRAY_INFO), as mdadm does: set only info.MajorVersion and
// info.MinorVersion (0 and 90 for 0.90; 1 and 0, 1 or 2 for 1.0, 1.1,
// 1.2, which tells the kernel where each member's superblock is) and
// leave every other field zero; the members are then added with
// [Device.AddNewDisk] and the array started with [Device.RunArray]. It
// needs CAP_SYS_ADMIN.
//
// Errors the kernel returns include EBUSY if the array already has
// members or slots, and EINVAL for a major version other than 0 or 1.
// With RaidDisks set the kernel would instead create a new array without
// superblocks from info; this package never does that.
func (d *Device) SetArrayInfo(info ArrayInfo) error {
	return d.setArrayInfo(info)
}

// HotRemoveDisk removes the member with device number dev from the array
// (HOT_REMOVE_DISK). dev is encoded as by [golang.org/x/sys/unix.Mkdev];
// [DiskInfo.Dev] and [BlockDevice.Dev] return it. It needs CAP_SYS_ADMIN.
//
// A member can be removed only once it has no slot: fail it first with
// [Device.SetDiskFaulty]. The kernel first waits up to 5 seconds for a
// pending recovery check to run.
//
// Errors the kernel returns include EACCES without CAP_SYS_ADMIN; ENODEV if
// the array is not running; ENXIO if dev is not a member; EBUSY if the member
// still has a slot: it is not faulty, has I/O pending or blocked, or a
// resync or recovery is running. EBUSY can be transient; mdadm retries it a
// few times, 10 ms apart. HotRemoveDisk returns an error matching
// [golang.org/x/sys/unix.EINVAL], without calling the kernel, if dev does
// not fit the kernel's 32-bit encoding.
func (d *Device) HotRemoveDisk(dev uint64) error {
	return d.hotRemoveDisk(dev)
}

// SetDiskFaulty marks the member with device number dev as faulty
// (SET_DISK_FAULTY), as a failed write would. dev is encoded as by
// [golang.org/x/sys/unix.Mkdev]. It needs CAP_SYS_ADMIN.
//
// Errors the kernel returns include EACCES without CAP_SYS_ADMIN; ENODEV if
// the array is not running or dev is not a member; EBUSY if failing the
// member would break the array, for example the last in-sync member of a
// raid1 or raid10 (unless the array's fail_last_dev is set).
// SetDiskFaulty returns an error matching [golang.org/x/sys/unix.EINVAL],
// without calling the kernel, if dev does not fit the kernel's 32-bit
// encoding.
func (d *Device) SetDiskFaulty(dev uint64) error {
	return d.setDiskFaulty(dev)
}

// RunArray starts an assembled array (RUN_ARRAY) with the members added to
// it. It passes a NULL argument, as mdadm does: the kernel ignores it. It
// needs CAP_SYS_ADMIN.
//
// Errors the kernel returns include EACCES without CAP_SYS_ADMIN; EINVAL if
// the array has no members; EBUSY if it is already running.
func (d *Device) RunArray() error {
	return d.runArray()
}

// StopArray stops the array and frees its members (STOP_ARRAY). It needs
// CAP_SYS_ADMIN.
//
// The kernel returns EBUSY if anyone else has the md device open or mounted:
// this Device's own descriptor is allowed. udev and blkid probes can cause a
// transient EBUSY; mdadm opens the device with O_EXCL first (see
// [NewDevice]). EACCES means no CAP_SYS_ADMIN.
func (d *Device) StopArray() error {
	return d.stopArray()
}

// StopArrayRO switches the array to read-only (STOP_ARRAY_RO), keeping it
// assembled. It needs CAP_SYS_ADMIN.
//
// Like [Device.StopArray] it fails with EBUSY if anyone else has the md
// device open; EACCES means no CAP_SYS_ADMIN.
func (d *Device) StopArrayRO() error {
	return d.stopArrayRO()
}

// RestartArrayRW switches a read-only array back to read-write
// (RESTART_ARRAY_RW). It needs CAP_SYS_ADMIN.
//
// Errors the kernel returns include EACCES without CAP_SYS_ADMIN; EINVAL if
// the array is not running; EBUSY if it is already read-write; ENXIO if it
// has no members; EROFS, on newer kernels, if a member device is read-only.
func (d *Device) RestartArrayRW() error {
	return d.restartArrayRW()
}
