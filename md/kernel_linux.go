package md

import "golang.org/x/sys/unix"

// oDirect is O_DIRECT: read-back after a superblock write bypasses the
// page cache.
const oDirect = unix.O_DIRECT
