//go:build !linux

package blockdev

import (
	"errors"
	"io"
	"os"
)

func isEINVAL(error) bool { return false }

func logicalBlockSize(*os.File) (int64, error) {
	return 0, errors.New("blockdev: block devices are read on Linux only")
}

func preadFull(f *os.File, buf []byte, off int64) (int, error) {
	n, err := f.ReadAt(buf, off)
	if err == nil && n < len(buf) {
		err = io.EOF
	}
	return n, err
}

const oDirect = 0
