//go:build !linux

package md

// oDirect is 0 where O_DIRECT does not exist; md arrays are Linux-only,
// this keeps the package building for tests of its pure parts.
const oDirect = 0
