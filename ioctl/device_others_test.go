//go:build !linux

package ioctl

import (
	"errors"
	"os"
	"testing"

	qt "github.com/frankban/quicktest"
)

func TestUnsupported(t *testing.T) {
	c := qt.New(t)
	_, err := Open("/dev/md0")
	c.Check(err, qt.ErrorIs, errors.ErrUnsupported)
	_, err = StatBlockDevice("/dev/sda")
	c.Check(err, qt.ErrorIs, errors.ErrUnsupported)

	f, err := os.Open(os.DevNull)
	c.Assert(err, qt.IsNil)
	d := NewDevice(f)
	defer d.Close()
	_, err = d.ArrayInfo()
	c.Check(err, qt.ErrorIs, errors.ErrUnsupported)
	c.Check(err, qt.ErrorMatches, `ioctl: md ioctls are not supported on .*/.*: unsupported operation`)
	c.Check(d.StopArray(), qt.ErrorIs, errors.ErrUnsupported)
}
