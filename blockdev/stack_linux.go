//go:build linux

package blockdev

import (
	"os"

	"golang.org/x/sys/unix"

	"github.com/go-mdraid/mdraid/sysfs"
)

// statFile stats a loop device's backing file on this system.
func statFile(path string) (FileStat, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return FileStat{}, &os.PathError{Op: "stat", Path: path, Err: err}
	}
	fs := FileStat{Dev: sysfs.DevNum{Major: unix.Major(uint64(st.Dev)), Minor: unix.Minor(uint64(st.Dev))}}
	if st.Mode&unix.S_IFMT == unix.S_IFBLK {
		fs.Block = true
		fs.Rdev = sysfs.DevNum{Major: unix.Major(uint64(st.Rdev)), Minor: unix.Minor(uint64(st.Rdev))}
	}
	return fs, nil
}
