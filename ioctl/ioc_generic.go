//go:build linux && !(ppc || ppc64 || ppc64le || mips || mipsle || mips64 || mips64le || mips64p32 || mips64p32le || sparc || sparc64)

package ioctl

// nativeEncoding is the _IOC layout of this architecture (asm-generic: amd64,
// 386, arm, arm64, riscv64, s390x, loong64 and the rest).
const nativeEncoding = iocGeneric
