//go:build linux && (ppc || ppc64 || ppc64le || mips || mipsle || mips64 || mips64le || mips64p32 || mips64p32le || sparc || sparc64)

package ioctl

// nativeEncoding is the _IOC layout of this architecture (powerpc, mips and
// sparc use 3 direction bits and 13 size bits).
const nativeEncoding = iocPowerMIPSSparc
