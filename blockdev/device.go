package blockdev

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/go-mdraid/mdraid/sysfs"
)

// DefaultDevRoot is where device nodes normally live.
const DefaultDevRoot = "/dev"

// Device describes a block device (a whole disk or a partition) as sysfs
// shows it.
type Device struct {
	// Name is the kernel name, such as "vdb", "sda1" or "nvme0n1p2".
	Name string
	// Dir is the device's sysfs directory relative to the sysfs root,
	// with links resolved, such as
	// "devices/pci0000:00/0000:00:10.0/virtio2/block/vdb".
	Dir string
	// Node is the device node path below the dev root, such as
	// "/dev/vdb". It is only a name; the node need not exist.
	Node string
	// Dev is the device number.
	Dev sysfs.DevNum
	// Size is the size in bytes (sysfs size, in 512-byte sectors, × 512).
	Size uint64
	// LogicalBlockSize and PhysicalBlockSize are in bytes; a partition
	// reports its disk's.
	LogicalBlockSize, PhysicalBlockSize uint64
	// ReadOnly reports the ro attribute.
	ReadOnly bool
	// Partition is the partition number, or 0 for a whole disk.
	Partition int
	// Parent is the kernel name of the whole disk of a partition, or
	// empty.
	Parent string
	// Model, Serial and WWN identify the hardware where the device
	// exposes them (virtio-blk serial; SCSI/ATA model, wwid and VPD page
	// 0x80 serial; NVMe model, serial and wwid). They are empty
	// otherwise. A partition reports its disk's.
	Model, Serial, WWN string
	// Holders lists the kernel names of devices stacked on this one
	// (such as "md127").
	Holders []string
}

// Lookup describes the block device with kernel name name (such as "vdb"
// or "sda1") in the sysfs tree fsys; devRoot is the directory of device
// nodes (normally [DefaultDevRoot]). An unknown name gives an error
// matching fs.ErrNotExist.
func Lookup(fsys sysfs.FS, devRoot, name string) (*Device, error) {
	dir, err := deviceDir(fsys, name)
	if err != nil {
		return nil, err
	}
	return describe(fsys, devRoot, dir, false)
}

// LookupIdentity is [Lookup] for a report: it fills Name, Dir, Node, Dev,
// Size, Partition, Parent, Model, Serial and WWN, and leaves ReadOnly,
// the block sizes and Holders unset. It reads about half the attributes
// Lookup reads (each one an open, a read and a close of a sysfs file,
// which is what a status report over many members spends its time on).
func LookupIdentity(fsys sysfs.FS, devRoot, name string) (*Device, error) {
	dir, err := deviceDir(fsys, name)
	if err != nil {
		return nil, err
	}
	return describe(fsys, devRoot, dir, true)
}

// LookupIdentityAt is [LookupIdentity] for the device whose sysfs
// directory (relative to the root, as [sysfs.FS.Rel] gives it) is dir,
// such as the resolved block link of an md member (sysfs.BlockLink.Dir):
// it saves resolving class/block/NAME again.
func LookupIdentityAt(fsys sysfs.FS, devRoot, dir string) (*Device, error) {
	if dir == "" || path.IsAbs(dir) || strings.HasPrefix(dir, "../") || strings.Contains(dir, "\x00") {
		return nil, fmt.Errorf("blockdev: invalid device directory %q: %w", dir, fs.ErrInvalid)
	}
	return describe(fsys, devRoot, path.Clean(dir), true)
}

// LookupDev is [Lookup] by device number, through sysfs dev/block/MAJ:MIN.
func LookupDev(fsys sysfs.FS, devRoot string, dev sysfs.DevNum) (*Device, error) {
	dir, err := fsys.Rel(fsys.Path("dev", "block", dev.String()))
	if err != nil {
		return nil, fmt.Errorf("blockdev: device %s: %w", dev, err)
	}
	return describe(fsys, devRoot, dir, false)
}

// deviceDir finds the sysfs directory of the block device name, relative
// to the root: class/block/NAME covers partitions, block/NAME only whole
// disks (older layouts).
func deviceDir(fsys sysfs.FS, name string) (string, error) {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\x00") {
		return "", fmt.Errorf("blockdev: invalid device name %q: %w", name, fs.ErrInvalid)
	}
	var first error
	for _, p := range []string{fsys.Path("class", "block", name), fsys.Path("block", name)} {
		dir, err := fsys.Rel(p)
		if err == nil {
			return dir, nil
		}
		if first == nil {
			first = err
		}
	}
	return "", fmt.Errorf("blockdev: device %s: %w", name, first)
}

// describe reads the device at dir; brief leaves out what LookupIdentity
// leaves out.
func describe(fsys sysfs.FS, devRoot, dir string, brief bool) (*Device, error) {
	t := tree{fsys}
	d := &Device{Name: path.Base(dir), Dir: dir}
	// The uevent file holds the device number, node name and partition
	// number in one read (MAJOR, MINOR, DEVNAME, DEVTYPE, PARTN); the
	// single attributes are the fallback for a tree without it.
	ev := t.uevent(dir)
	var err error
	if maj, min, ok := ueventDev(ev); ok {
		d.Dev = sysfs.DevNum{Major: maj, Minor: min}
	} else {
		devStr, err := t.read(dir, "dev")
		if err != nil {
			return nil, fmt.Errorf("blockdev: %s: %w", d.Name, err)
		}
		if d.Dev, err = sysfs.ParseDevNum(devStr); err != nil {
			return nil, fmt.Errorf("blockdev: %s: %w", d.Name, err)
		}
	}
	if d.Size, err = t.uint(dir, "size"); err != nil {
		return nil, fmt.Errorf("blockdev: %s: %w", d.Name, err)
	}
	d.Size *= 512
	devName := strings.ReplaceAll(d.Name, "!", "/")
	if v, ok := ev["DEVNAME"]; ok && v != "" {
		devName = v
	}
	d.Node = filepath.Join(devRoot, filepath.FromSlash(devName))
	if !brief {
		if ro, err := t.read(dir, "ro"); err == nil {
			d.ReadOnly = ro == "1"
		}
	}
	disk := dir
	partn, known := ueventPartition(ev)
	if !known {
		if n, err := t.uint(dir, "partition"); err == nil {
			partn = int(n)
		}
	}
	if partn > 0 {
		d.Partition = partn
		disk = path.Dir(dir)
		d.Parent = path.Base(disk)
	}
	// The partitions of a disk share its identity: read once per pass.
	id := fsys.Memo("blockdev.identity:"+disk, func() any {
		var id [3]string
		id[0], id[1], id[2] = identity(t, disk)
		return id
	}).([3]string)
	d.Model, d.Serial, d.WWN = id[0], id[1], id[2]
	if brief {
		return d, nil
	}
	d.LogicalBlockSize, _ = t.uint(disk, "queue/logical_block_size")
	d.PhysicalBlockSize, _ = t.uint(disk, "queue/physical_block_size")
	if ents, err := os.ReadDir(t.abs(dir, "holders")); err == nil {
		for _, e := range ents {
			d.Holders = append(d.Holders, e.Name())
		}
		sort.Strings(d.Holders)
	}
	return d, nil
}

// identity reads model, serial and WWN of the whole disk at dir, taking
// the first attribute present of each list.
func identity(t tree, dir string) (model, serial, wwn string) {
	// virtio-blk names its disk with the disk's own serial attribute
	// and nothing else: its gendisk has serial and cache_type, the
	// virtio device (device/) device, vendor, status, features and
	// modalias (the real captures of 6.1 and 7.2 under
	// testdata/fixtures). One readlink of the bus saves three opens that
	// would fail, each as dear as a read (docs/performance.md §1).
	if bus, err := os.Readlink(t.abs(dir, "device/subsystem")); err == nil && path.Base(bus) == "virtio" {
		serial, _ = t.read(dir, "serial")
		return "", serial, ""
	}
	return probeIdentity(t, dir)
}

// probeIdentity is identity for any disk: it tries every attribute that
// names a disk on some bus.
func probeIdentity(t tree, dir string) (model, serial, wwn string) {
	first := func(names ...string) string {
		for _, n := range names {
			if v, err := t.read(dir, n); err == nil && v != "" {
				return v
			}
		}
		return ""
	}
	// nvme0n1/device is the controller (model, serial); sdX/device is
	// the SCSI device (model, wwid, vpd_pg80); vdX has its own serial.
	model = first("device/model")
	serial = first("serial", "device/serial")
	if serial == "" {
		serial = vpdSerial(t, dir)
	}
	wwn = first("wwid", "device/wwid")
	return model, serial, wwn
}

// vpdSerial returns the unit serial number from the SCSI VPD page 0x80
// (device/vpd_pg80): a 4-byte header whose byte 3 is the length, then
// ASCII.
func vpdSerial(t tree, dir string) string {
	b, err := readRaw(t.abs(dir, "device/vpd_pg80"))
	if err != nil || len(b) < 4 || b[1] != 0x80 {
		return ""
	}
	n := int(b[3])
	if 4+n > len(b) {
		n = len(b) - 4
	}
	return strings.TrimSpace(string(b[4 : 4+n]))
}

// tree reads a sysfs tree by paths relative to its root.
type tree struct{ fsys sysfs.FS }

func (t tree) abs(dir, name string) string { return t.fsys.Path(dir, name) }

func (t tree) read(dir, name string) (string, error) {
	b, err := readRaw(t.abs(dir, name))
	return strings.TrimSpace(string(b)), err
}

func (t tree) uint(dir, name string) (uint64, error) {
	s, err := t.read(dir, name)
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: %s/%s: %q", sysfs.ErrFormat, dir, name, s)
	}
	return v, nil
}

// ueventDev returns the device number of a uevent's MAJOR and MINOR.
func ueventDev(ev map[string]string) (major, minor uint32, ok bool) {
	ma, err1 := strconv.ParseUint(ev["MAJOR"], 10, 32)
	mi, err2 := strconv.ParseUint(ev["MINOR"], 10, 32)
	if err1 != nil || err2 != nil {
		return 0, 0, false
	}
	return uint32(ma), uint32(mi), true
}

// ueventPartition returns the partition number a uevent gives: DEVTYPE
// "disk" is a whole disk, "partition" with PARTN a partition. known is
// false when the uevent does not say (no DEVTYPE, or a partition without
// a number).
func ueventPartition(ev map[string]string) (n int, known bool) {
	switch ev["DEVTYPE"] {
	case "disk":
		return 0, true
	case "partition":
		if p, err := strconv.Atoi(ev["PARTN"]); err == nil && p > 0 {
			return p, true
		}
	}
	return 0, false
}

// uevent returns the KEY=value lines of dir/uevent.
func (t tree) uevent(dir string) map[string]string {
	s, err := t.read(dir, "uevent")
	if err != nil {
		return nil
	}
	m := map[string]string{}
	for line := range strings.Lines(s) {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), "="); ok {
			m[k] = v
		}
	}
	return m
}

// readRaw reads an attribute with one read of up to a page, as sysfs
// attributes are meant to be read (see package sysfs).
func readRaw(p string) ([]byte, error) { return sysfs.ReadFile(p) }
