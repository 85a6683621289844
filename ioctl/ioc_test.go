//go:build linux

package ioctl

import (
	"fmt"
	"testing"
	"unsafe"

	qt "github.com/frankban/quicktest"
	"golang.org/x/sys/unix"
)

// wantRequests holds the md request numbers for both _IOC layouts. The
// generic column is the table of md-format.md §5 (x86, arm, arm64, riscv,
// s390x); the powerpc/mips/sparc column follows from their layout
// (direction NONE=1, READ=2, WRITE=4 at bit 29).
var wantRequests = []struct {
	op      op
	generic uint32
	pms     uint32
}{
	{opRaidVersion, 0x800c0910, 0x400c0910},
	{opGetArrayInfo, 0x80480911, 0x40480911},
	{opGetDiskInfo, 0x80140912, 0x40140912},
	{opAddNewDisk, 0x40140921, 0x80140921},
	{opSetArrayInfo, 0x40480923, 0x80480923},
	{opHotRemoveDisk, 0x00000922, 0x20000922},
	{opSetDiskFaulty, 0x00000929, 0x20000929},
	{opRunArray, 0x400c0930, 0x800c0930},
	{opStopArray, 0x00000932, 0x20000932},
	{opStopArrayRO, 0x00000933, 0x20000933},
	{opRestartArrayRW, 0x00000934, 0x20000934},
}

func TestRequestNumbers(t *testing.T) {
	c := qt.New(t)
	c.Assert(wantRequests, qt.HasLen, int(numOps))
	seen := map[uint32]op{}
	for _, tt := range wantRequests {
		c.Run(tt.op.String(), func(c *qt.C) {
			c.Check(fmt.Sprintf("%#08x", tt.op.number(iocGeneric)), qt.Equals, fmt.Sprintf("%#08x", tt.generic))
			c.Check(fmt.Sprintf("%#08x", tt.op.number(iocPowerMIPSSparc)), qt.Equals, fmt.Sprintf("%#08x", tt.pms))
			want := tt.generic
			if nativeEncoding == iocPowerMIPSSparc {
				want = tt.pms
			}
			c.Check(tt.op.request(), qt.Equals, want)
		})
		prev, dup := seen[tt.op.request()]
		c.Check(dup, qt.IsFalse, qt.Commentf("%v and %v share a number", prev, tt.op))
		seen[tt.op.request()] = tt.op
	}
}

// TestEncoderAgainstXSys checks the encoder against request numbers that
// golang.org/x/sys/unix generates from the kernel headers: the values of
// its zerrors_linux_*.go files for both layouts, and the constants compiled
// in for the architecture under test.
func TestEncoderAgainstXSys(t *testing.T) {
	const (
		blkRRPART    = 0x5f // _IO(0x12, 95)
		blkBSZSET    = 0x71 // _IOW(0x12, 113, size_t)
		blkGETSIZE64 = 0x72 // _IOR(0x12, 114, size_t)
		blkFLSBUF    = 0x61 // _IO(0x12, 97)
	)
	for _, tt := range []struct {
		name     string
		enc      iocEncoding
		dir      direction
		nr       uint8
		sizeofSz uintptr
		want     uint32
	}{
		// zerrors_linux_amd64.go, arm64, riscv64, s390x, loong64
		{"BLKGETSIZE64 amd64", iocGeneric, dirRead, blkGETSIZE64, 8, 0x80081272},
		{"BLKBSZSET amd64", iocGeneric, dirWrite, blkBSZSET, 8, 0x40081271},
		{"BLKRRPART amd64", iocGeneric, dirNone, blkRRPART, 0, 0x125f},
		{"BLKFLSBUF amd64", iocGeneric, dirNone, blkFLSBUF, 0, 0x1261},
		// zerrors_linux_386.go, arm
		{"BLKGETSIZE64 386", iocGeneric, dirRead, blkGETSIZE64, 4, 0x80041272},
		{"BLKBSZSET 386", iocGeneric, dirWrite, blkBSZSET, 4, 0x40041271},
		// zerrors_linux_ppc64.go, ppc64le, mips64, mips64le, sparc64
		{"BLKGETSIZE64 ppc64", iocPowerMIPSSparc, dirRead, blkGETSIZE64, 8, 0x40081272},
		{"BLKBSZSET ppc64", iocPowerMIPSSparc, dirWrite, blkBSZSET, 8, 0x80081271},
		{"BLKRRPART ppc64", iocPowerMIPSSparc, dirNone, blkRRPART, 0, 0x2000125f},
		{"BLKFLSBUF ppc64", iocPowerMIPSSparc, dirNone, blkFLSBUF, 0, 0x20001261},
		// zerrors_linux_mips.go, mipsle, ppc
		{"BLKGETSIZE64 mips", iocPowerMIPSSparc, dirRead, blkGETSIZE64, 4, 0x40041272},
		{"BLKBSZSET mips", iocPowerMIPSSparc, dirWrite, blkBSZSET, 4, 0x80041271},
	} {
		t.Run(tt.name, func(t *testing.T) {
			qt.Assert(t, tt.enc.ioc(tt.dir, 0x12, tt.nr, tt.sizeofSz), qt.Equals, tt.want)
		})
	}

	t.Run("native", func(t *testing.T) {
		c := qt.New(t)
		sizeT := unsafe.Sizeof(uintptr(0))
		c.Check(nativeEncoding.ioc(dirRead, 0x12, blkGETSIZE64, sizeT), qt.Equals, uint32(unix.BLKGETSIZE64))
		c.Check(nativeEncoding.ioc(dirWrite, 0x12, blkBSZSET, sizeT), qt.Equals, uint32(unix.BLKBSZSET))
		c.Check(nativeEncoding.ioc(dirNone, 0x12, blkRRPART, 0), qt.Equals, uint32(unix.BLKRRPART))
		c.Check(nativeEncoding.ioc(dirNone, 0x12, blkFLSBUF, 0), qt.Equals, uint32(unix.BLKFLSBUF))
	})
}

func TestEncoderFields(t *testing.T) {
	c := qt.New(t)
	// _IOWR sets both direction bits.
	c.Check(iocGeneric.ioc(dirRead|dirWrite, 0xff, 0xee, 0x3fff), qt.Equals, uint32(0xffffffee))
	c.Check(iocPowerMIPSSparc.ioc(dirRead|dirWrite, 0xff, 0xee, 0x1fff), qt.Equals, uint32(0xdfffffee))
	// A size that does not fit the field is a bug in the request table.
	c.Check(func() { iocGeneric.ioc(dirRead, 9, 1, 1<<14) }, qt.PanicMatches, ".*size.*")
	c.Check(func() { iocPowerMIPSSparc.ioc(dirRead, 9, 1, 1<<13) }, qt.PanicMatches, ".*size.*")
}

func TestMkdevMatchesXSys(t *testing.T) {
	c := qt.New(t)
	for _, m := range [][2]uint32{{0, 0}, {8, 16}, {9, 127}, {259, 3}, {4095, 1<<20 - 1}, {4096, 1 << 20}, {0xffffffff, 0xffffffff}} {
		c.Check(mkdev(m[0], m[1]), qt.Equals, unix.Mkdev(m[0], m[1]), qt.Commentf("%d:%d", m[0], m[1]))
	}
}
