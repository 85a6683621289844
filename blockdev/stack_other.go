//go:build !linux

package blockdev

import (
	"fmt"
	"runtime"
)

// statFile is only implemented on Linux, where loop devices are.
func statFile(path string) (FileStat, error) {
	return FileStat{}, fmt.Errorf("blockdev: stat %s: not supported on %s", path, runtime.GOOS)
}
