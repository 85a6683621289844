//go:build linux

package ioctl

import "unsafe"

// direction is the data direction of an ioctl, seen from user space, before
// it is encoded for an architecture.
type direction uint8

const (
	dirNone  direction = 0
	dirWrite direction = 1 << 0 // _IOW: the kernel reads the argument
	dirRead  direction = 1 << 1 // _IOR: the kernel writes the argument
)

// iocEncoding is one of the kernel's _IOC layouts. The number and type fields
// are 8 bits each at bits 0 and 8 in every layout; the size field follows at
// bit 16 and the direction field sits above it.
type iocEncoding uint8

const (
	// iocGeneric is include/uapi/asm-generic/ioctl.h: 14 size bits,
	// direction in bits 30-31 with _IOC_NONE 0, _IOC_WRITE 1, _IOC_READ 2.
	iocGeneric iocEncoding = iota
	// iocPowerMIPSSparc is arch/{powerpc,mips,sparc}/include/uapi/asm/ioctl.h:
	// 13 size bits, direction in bits 29-31 with _IOC_NONE 1, _IOC_READ 2,
	// _IOC_WRITE 4.
	iocPowerMIPSSparc
)

// sizeBits returns the width of the size field.
func (e iocEncoding) sizeBits() uint {
	if e == iocPowerMIPSSparc {
		return 13
	}
	return 14
}

// dirBits returns the value of the direction field.
func (e iocEncoding) dirBits(d direction) uint32 {
	var none, write, read uint32 = 0, 1, 2
	if e == iocPowerMIPSSparc {
		none, write, read = 1, 4, 2
	}
	if d == dirNone {
		return none
	}
	var v uint32
	if d&dirWrite != 0 {
		v |= write
	}
	if d&dirRead != 0 {
		v |= read
	}
	return v
}

// ioc computes _IOC(dir, typ, nr, size) in encoding e. It panics if a field
// does not fit, which only a wrong request table can cause.
func (e iocEncoding) ioc(d direction, typ, nr uint8, size uintptr) uint32 {
	if size >= 1<<e.sizeBits() {
		panic("ioctl: argument size does not fit the _IOC size field")
	}
	return e.dirBits(d)<<(16+e.sizeBits()) | uint32(size)<<16 | uint32(typ)<<8 | uint32(nr)
}

// mdMajor is MD_MAJOR, the type field of every md ioctl.
const mdMajor = 9

// op is one md ioctl from linux/raid/md_u.h.
type op uint8

const (
	opRaidVersion    op = iota // RAID_VERSION     _IOR(MD_MAJOR, 0x10, mdu_version_t)
	opGetArrayInfo             // GET_ARRAY_INFO   _IOR(MD_MAJOR, 0x11, mdu_array_info_t)
	opGetDiskInfo              // GET_DISK_INFO    _IOR(MD_MAJOR, 0x12, mdu_disk_info_t)
	opAddNewDisk               // ADD_NEW_DISK     _IOW(MD_MAJOR, 0x21, mdu_disk_info_t)
	opSetArrayInfo             // SET_ARRAY_INFO   _IOW(MD_MAJOR, 0x23, mdu_array_info_t)
	opHotRemoveDisk            // HOT_REMOVE_DISK  _IO(MD_MAJOR, 0x22), dev_t by value
	opSetDiskFaulty            // SET_DISK_FAULTY  _IO(MD_MAJOR, 0x29), dev_t by value
	opRunArray                 // RUN_ARRAY        _IOW(MD_MAJOR, 0x30, mdu_param_t), argument ignored
	opStopArray                // STOP_ARRAY       _IO(MD_MAJOR, 0x32)
	opStopArrayRO              // STOP_ARRAY_RO    _IO(MD_MAJOR, 0x33)
	opRestartArrayRW           // RESTART_ARRAY_RW _IO(MD_MAJOR, 0x34)
	numOps
)

// sizeofParam is sizeof(mdu_param_t): three C ints. RUN_ARRAY encodes this
// size in its number although the kernel ignores the argument.
const sizeofParam = 12

// opSpec is how md_u.h declares an op.
type opSpec struct {
	name string
	dir  direction
	nr   uint8
	size uintptr
}

func (o op) spec() opSpec {
	switch o {
	case opRaidVersion:
		return opSpec{"RAID_VERSION", dirRead, 0x10, unsafe.Sizeof(Version{})}
	case opGetArrayInfo:
		return opSpec{"GET_ARRAY_INFO", dirRead, 0x11, unsafe.Sizeof(ArrayInfo{})}
	case opGetDiskInfo:
		return opSpec{"GET_DISK_INFO", dirRead, 0x12, unsafe.Sizeof(DiskInfo{})}
	case opAddNewDisk:
		return opSpec{"ADD_NEW_DISK", dirWrite, 0x21, unsafe.Sizeof(DiskInfo{})}
	case opSetArrayInfo:
		return opSpec{"SET_ARRAY_INFO", dirWrite, 0x23, unsafe.Sizeof(ArrayInfo{})}
	case opHotRemoveDisk:
		return opSpec{"HOT_REMOVE_DISK", dirNone, 0x22, 0}
	case opSetDiskFaulty:
		return opSpec{"SET_DISK_FAULTY", dirNone, 0x29, 0}
	case opRunArray:
		return opSpec{"RUN_ARRAY", dirWrite, 0x30, sizeofParam}
	case opStopArray:
		return opSpec{"STOP_ARRAY", dirNone, 0x32, 0}
	case opStopArrayRO:
		return opSpec{"STOP_ARRAY_RO", dirNone, 0x33, 0}
	case opRestartArrayRW:
		return opSpec{"RESTART_ARRAY_RW", dirNone, 0x34, 0}
	}
	panic("ioctl: unknown op")
}

// String returns the request's name from md_u.h.
func (o op) String() string { return o.spec().name }

// number returns the request number of o in encoding e.
func (o op) number(e iocEncoding) uint32 {
	s := o.spec()
	return e.ioc(s.dir, mdMajor, s.nr, s.size)
}

// request returns the request number of o on the architecture being built.
func (o op) request() uint32 { return o.number(nativeEncoding) }
