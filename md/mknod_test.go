//go:build linux

package md

import "golang.org/x/sys/unix"

func mknodBlock(path string, major, minor uint32) error {
	return unix.Mknod(path, unix.S_IFBLK|0o600, int(unix.Mkdev(major, minor)))
}
