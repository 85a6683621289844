package blockdev

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/go-mdraid/mdraid/sysfs"
)

// Ports maps every by-path identity ([PathID]) of the block devices in
// class/block of fsys to the kernel names of the devices that have it:
// normally one, a whole disk and its partitions each have their own.
// Devices without an identity are left out. An error (class/block cannot
// be listed) comes with an empty map.
func Ports(fsys sysfs.FS) (map[string][]string, error) {
	out := map[string][]string{}
	ents, err := os.ReadDir(fsys.Path("class", "block"))
	if err != nil {
		return out, fmt.Errorf("blockdev: listing block devices: %w", err)
	}
	for _, e := range ents {
		name := strings.ReplaceAll(e.Name(), "!", "/")
		id, err := PathID(fsys, name)
		if err != nil {
			continue
		}
		out[id] = append(out[id], name)
	}
	return out, nil
}

// Partitions lists the kernel names of the partitions the kernel knows of
// the disk name: the entries of its class/block directory that have a
// "partition" attribute, sorted by name. An unknown disk gives an error
// matching fs.ErrNotExist.
func Partitions(fsys sysfs.FS, name string) ([]string, error) {
	if !validName(name) {
		return nil, fmt.Errorf("blockdev: invalid device name %q: %w", name, fs.ErrInvalid)
	}
	dir := fsys.Path("class", "block", name)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("blockdev: partitions of %s: %w", name, err)
	}
	var out []string
	for _, e := range ents {
		if _, err := os.Stat(filepath.Join(dir, e.Name(), "partition")); err == nil {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

// LogicalBlockSize reads the queue/logical_block_size attribute of the
// block device name (a whole disk or an md array) in block/: a power of
// two from 512 bytes to 64 KiB, or an error (one matching fs.ErrNotExist
// when the attribute is missing).
func LogicalBlockSize(fsys sysfs.FS, name string) (int64, error) {
	if !validName(name) {
		return 0, fmt.Errorf("blockdev: invalid device name %q: %w", name, fs.ErrInvalid)
	}
	return readBlockSize(fsys.Path("block", name, "queue", "logical_block_size"))
}

// readBlockSize reads a queue/logical_block_size attribute at path.
func readBlockSize(path string) (int64, error) {
	b, err := sysfs.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("blockdev: reading the logical block size: %w", err)
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil || n < 512 || n > 64<<10 || n&(n-1) != 0 {
		return 0, fmt.Errorf("blockdev: %s: %q is not a logical block size", path, bytes.TrimSpace(b))
	}
	return n, nil
}

// validName reports whether name can be one element of a path.
func validName(name string) bool {
	return name != "" && name != "." && name != ".." && !strings.ContainsAny(name, "/\x00")
}
