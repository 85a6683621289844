//go:build !linux

package blockdev

import (
	"errors"
	"io"
	"os"
)

func isEINVAL(error) bool { return false }

const oDirect = 0

// rawFile is an os.File where there is no O_DIRECT: block devices are
// read on Linux only, image files through the page cache.
type rawFile struct{ f *os.File }

func openRaw(path string, _ int) (rawFile, error) {
	f, err := os.Open(path)
	return rawFile{f: f}, err
}

func (f rawFile) stat() (dev bool, size int64, err error) {
	fi, err := f.f.Stat()
	if err != nil {
		return false, 0, err
	}
	switch {
	case fi.Mode()&os.ModeDevice != 0 && fi.Mode()&os.ModeCharDevice == 0:
		return true, 0, nil
	case fi.Mode().IsRegular():
		return false, fi.Size(), nil
	}
	return false, 0, errors.New("neither a block device nor a regular file")
}

func (rawFile) logicalBlockSize() (int64, error) {
	return 0, errors.New("blockdev: block devices are read on Linux only")
}

func (f rawFile) pread(_ string, buf []byte, off int64, _ bool) (int, error) {
	n, err := f.f.ReadAt(buf, off)
	if err == nil && n < len(buf) {
		err = io.EOF
	}
	return n, err
}

func (f rawFile) seekEnd() (int64, error) { return f.f.Seek(0, io.SeekEnd) }

func (f rawFile) close() error { return f.f.Close() }
