//go:build !linux

package ioctl

import (
	"errors"
	"fmt"
	"os"
	"runtime"
)

// errUnsupported is returned by every call on systems other than Linux.
var errUnsupported = fmt.Errorf("ioctl: md ioctls are not supported on %s/%s: %w",
	runtime.GOOS, runtime.GOARCH, errors.ErrUnsupported)

func open(path string) (*Device, error) {
	return nil, &os.PathError{Op: "open", Path: path, Err: errUnsupported}
}

func (d *Device) version() (Version, error)             { return Version{}, errUnsupported }
func (d *Device) arrayInfo() (ArrayInfo, error)         { return ArrayInfo{}, errUnsupported }
func (d *Device) diskInfo(number int) (DiskInfo, error) { return DiskInfo{}, errUnsupported }
func (d *Device) addNewDisk(info DiskInfo) error        { return errUnsupported }
func (d *Device) setArrayInfo(info ArrayInfo) error     { return errUnsupported }
func (d *Device) hotRemoveDisk(dev uint64) error        { return errUnsupported }
func (d *Device) setDiskFaulty(dev uint64) error        { return errUnsupported }
func (d *Device) runArray() error                       { return errUnsupported }
func (d *Device) stopArray() error                      { return errUnsupported }
func (d *Device) stopArrayRO() error                    { return errUnsupported }
func (d *Device) restartArrayRW() error                 { return errUnsupported }

func statBlockDevice(path string) (BlockDevice, error) {
	return BlockDevice{}, &os.PathError{Op: "stat", Path: path, Err: errUnsupported}
}

func logicalBlockSize(f *os.File) (int64, error) {
	return 0, &os.PathError{Op: "ioctl BLKSSZGET", Path: f.Name(), Err: errUnsupported}
}

func deletePartitions(f *os.File, upTo int) ([]int, error) { return nil, errUnsupported }
