//go:build !unix

package sysfs

import (
	"errors"
	"io"
	"os"
)

func readRaw(p string, buf []byte) (int, error) {
	f, err := os.Open(p)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	n, err := f.Read(buf)
	if err != nil && !errors.Is(err, io.EOF) {
		return 0, err
	}
	return n, nil
}
