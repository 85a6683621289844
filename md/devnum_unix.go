//go:build unix

package md

import (
	"io/fs"
	"os"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/go-mdraid/mdraid/sysfs"
)

// devNumOf returns the device number of the block device node at p,
// following links (/dev/md/boot -> ../md127).
func devNumOf(p string) (sysfs.DevNum, bool) {
	fi, err := os.Stat(p)
	if err != nil || fi.Mode()&fs.ModeDevice == 0 || fi.Mode()&fs.ModeCharDevice != 0 {
		return sysfs.DevNum{}, false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return sysfs.DevNum{}, false
	}
	rdev := uint64(st.Rdev)
	return sysfs.DevNum{Major: unix.Major(rdev), Minor: unix.Minor(rdev)}, true
}
