package blockdev

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"

	qt "github.com/frankban/quicktest"

	"github.com/go-mdraid/mdraid/internal/sysfstree"
	"github.com/go-mdraid/mdraid/sysfs"
)

// The trees below are sysfstree manifests modelled on real sysfs layouts.
// These helpers write the repetitive lines: a device directory (uevent
// with DEVTYPE, subsystem link) and a block device (dev, size, class and
// dev links).

var classes = map[string]bool{"block": true, "nvme": true, "nvme-subsystem": true,
	"ata_port": true, "sas_device": true, "sas_port": true, "scsi_host": true}

func up(dir string) string { return strings.Repeat("../", strings.Count(dir, "/")+1) }

// dev writes a device directory on bus (or class) sub.
func dev(dir, sub, devtype string) string {
	kind := "bus/"
	if classes[sub] {
		kind = "class/"
	}
	s := fmt.Sprintf("f %q %q\n", dir+"/uevent", "DEVTYPE="+devtype+"\n")
	if sub != "" {
		s += fmt.Sprintf("l %q %q\n", dir+"/subsystem", up(dir)+kind+sub)
	}
	return s
}

// attr writes an attribute.
func attr(dir, name, val string) string { return fmt.Sprintf("f %q %q\n", dir+"/"+name, val+"\n") }

// link writes a class link class/SUB/NAME to dir.
func link(sub, dir string) string {
	l := "class/" + sub + "/" + path.Base(dir)
	return fmt.Sprintf("l %q %q\n", l, up(l)[3:]+dir)
}

// blk writes a block device (disk or partition) at dir.
func blk(dir, devnum string, sectors int, part int) string {
	name := path.Base(dir)
	dt := "disk"
	if part > 0 {
		dt = "partition"
	}
	s := fmt.Sprintf("f %q %q\n", dir+"/uevent", "MAJOR=0\nDEVNAME="+name+"\nDEVTYPE="+dt+"\n")
	s += fmt.Sprintf("l %q %q\n", dir+"/subsystem", up(dir)+"class/block")
	s += attr(dir, "dev", devnum) + attr(dir, "size", fmt.Sprint(sectors)) + attr(dir, "ro", "0")
	if part > 0 {
		s += attr(dir, "partition", fmt.Sprint(part))
	} else {
		s += attr(dir, "queue/logical_block_size", "512") + attr(dir, "queue/physical_block_size", "4096")
		s += fmt.Sprintf("d %q\n", dir+"/holders")
	}
	s += link("block", dir)
	s += fmt.Sprintf("l %q %q\n", "dev/block/"+devnum, "../../"+dir)
	return s
}

func materialize(c *qt.C, root, manifest string) sysfs.FS {
	c.Helper()
	fsys, err := sysfs.NewFS(sysfstree.TreeIn(c, root, manifest))
	c.Assert(err, qt.IsNil)
	return fsys
}

const (
	virtioPCI = "devices/pci0000:00/0000:00:10.0"
	virtioBlk = virtioPCI + "/virtio2/block/vdb"

	ahci     = "devices/pci0000:00/0000:00:1f.2"
	sataSCSI = ahci + "/ata3/host2/target2:0:0/2:0:0:0"
	sataDisk = sataSCSI + "/block/sda"

	pmpSCSI = ahci + "/ata4/host3/target3:1:0/3:1:0:0"

	sasHBA     = "devices/pci0000:00/0000:00:03.0/0000:02:00.0"
	sasEnd     = sasHBA + "/host0/port-0:1/end_device-0:1"
	sasSCSI    = sasEnd + "/target0:0:1/0:0:1:0"
	sasExpPort = sasHBA + "/host0/port-0:0/expander-0:0/port-0:0:5"
	sasExpEnd  = sasExpPort + "/end_device-0:0:5"
	sasExpSCSI = sasExpEnd + "/target0:0:5/0:0:5:0"

	nvmePCI  = "devices/pci0000:00/0000:00:1c.0/0000:01:00.0"
	nvmeCtrl = nvmePCI + "/nvme/nvme0"
	nvmeNS   = nvmeCtrl + "/nvme0n1"
	nvmeMP   = "devices/virtual/nvme-subsystem/nvme-subsys1/nvme1n2"
	nvmeCtl1 = "devices/pci0000:00/0000:00:1d.0/0000:3c:00.0/nvme/nvme1"

	usbPCI  = "devices/pci0000:00/0000:00:14.0"
	usbIf   = usbPCI + "/usb2/2-1/2-1.2/2-1.2:1.0"
	usbSCSI = usbIf + "/host6/target6:0:0/6:0:0:0"

	vscsiPCI  = "devices/pci0000:00/0000:00:05.0"
	vscsiSCSI = vscsiPCI + "/virtio1/host2/target2:0:0/2:0:0:3"
)

var manifest = strings.Join([]string{
	// virtio-blk on PCI, with a partition and an md holder.
	dev(virtioPCI, "pci", ""), dev(virtioPCI+"/virtio2", "virtio", ""),
	blk(virtioBlk, "254:16", 131072, 0), attr(virtioBlk, "serial", "mdtest-0"),
	fmt.Sprintf("l %q %q\n", virtioBlk+"/holders/md127", "../../../../../../virtual/block/md127"),
	blk(virtioBlk+"/vdb1", "254:17", 4096, 1),

	// SATA disk on AHCI port 3; and one behind a port multiplier on port 4.
	dev(ahci, "pci", ""), dev(ahci+"/ata3", "", ""), dev(ahci+"/ata3/ata_port/ata3", "ata_port", ""),
	attr(ahci+"/ata3/ata_port/ata3", "port_no", "3"), link("ata_port", ahci+"/ata3/ata_port/ata3"),
	dev(ahci+"/ata3/host2", "scsi", "scsi_host"), dev(ahci+"/ata3/host2/target2:0:0", "scsi", "scsi_target"),
	dev(sataSCSI, "scsi", "scsi_device"), attr(sataSCSI, "model", "QEMU HARDDISK   "),
	attr(sataSCSI, "wwid", "t10.ATA     QEMU HARDDISK                           QM00005"),
	blk(sataDisk, "8:0", 2097152, 0), blk(sataDisk+"/sda2", "8:2", 1024, 2),
	fmt.Sprintf("l %q %q\n", sataDisk+"/device", "../../../2:0:0:0"),
	dev(ahci+"/ata4", "", ""), dev(ahci+"/ata4/ata_port/ata4", "ata_port", ""),
	attr(ahci+"/ata4/ata_port/ata4", "port_no", "4"), // no class link: found below ata4
	dev(ahci+"/ata4/host3", "scsi", "scsi_host"), dev(ahci+"/ata4/host3/target3:1:0", "scsi", "scsi_target"),
	dev(pmpSCSI, "scsi", "scsi_device"), blk(pmpSCSI+"/block/sdb", "8:16", 2097152, 0),

	// SAS: a disk on HBA phy 4 (narrow port), and one behind an expander.
	dev("devices/pci0000:00/0000:00:03.0", "pci", ""), dev(sasHBA, "pci", ""),
	dev(sasHBA+"/host0", "scsi", "scsi_host"),
	dev(sasHBA+"/host0/port-0:1", "", ""), dev(sasHBA+"/host0/port-0:1/sas_port/port-0:1", "sas_port", ""),
	attr(sasHBA+"/host0/port-0:1/sas_port/port-0:1", "num_phys", "1"),
	link("sas_port", sasHBA+"/host0/port-0:1/sas_port/port-0:1"),
	dev(sasEnd, "", ""), dev(sasEnd+"/sas_device/end_device-0:1", "sas_device", ""),
	attr(sasEnd+"/sas_device/end_device-0:1", "phy_identifier", "4"),
	attr(sasEnd+"/sas_device/end_device-0:1", "sas_address", "0x5000c500a1b2c3d4"),
	link("sas_device", sasEnd+"/sas_device/end_device-0:1"),
	dev(sasEnd+"/target0:0:1", "scsi", "scsi_target"), dev(sasSCSI, "scsi", "scsi_device"),
	blk(sasSCSI+"/block/sdc", "8:32", 2097152, 0),
	dev(sasHBA+"/host0/port-0:0", "", ""), dev(sasHBA+"/host0/port-0:0/expander-0:0", "", ""),
	dev(sasHBA+"/host0/port-0:0/expander-0:0/sas_device/expander-0:0", "sas_device", ""),
	attr(sasHBA+"/host0/port-0:0/expander-0:0/sas_device/expander-0:0", "sas_address", "0x500304801f3a7dff"),
	dev(sasExpPort, "", ""), dev(sasExpPort+"/sas_port/port-0:0:5", "sas_port", ""),
	attr(sasExpPort+"/sas_port/port-0:0:5", "num_phys", "1"),
	dev(sasExpEnd, "", ""), dev(sasExpEnd+"/sas_device/end_device-0:0:5", "sas_device", ""),
	attr(sasExpEnd+"/sas_device/end_device-0:0:5", "phy_identifier", "5"),
	dev(sasExpEnd+"/target0:0:5", "scsi", "scsi_target"), dev(sasExpSCSI, "scsi", "scsi_device"),
	blk(sasExpSCSI+"/block/sdd", "8:48", 2097152, 0),

	// NVMe behind a PCIe root port, with a partition; and a namespace
	// under native multipath.
	dev("devices/pci0000:00/0000:00:1c.0", "pci", ""), dev(nvmePCI, "pci", ""),
	dev(nvmeCtrl, "nvme", ""), attr(nvmeCtrl, "model", "Samsung SSD 980 1TB"),
	attr(nvmeCtrl, "serial", "S649NX0T123456"), link("nvme", nvmeCtrl),
	fmt.Sprintf("l %q %q\n", nvmeNS+"/device", "../../nvme0"),
	blk(nvmeNS, "259:0", 1953525168, 0), attr(nvmeNS, "nsid", "1"), attr(nvmeNS, "wwid", "eui.002538b111b2c3d4"),
	blk(nvmeNS+"/nvme0n1p2", "259:2", 2048, 2),
	dev("devices/virtual/nvme-subsystem/nvme-subsys1", "nvme-subsystem", ""),
	blk(nvmeMP, "259:5", 2048, 0), attr(nvmeMP, "nsid", "2"),
	dev("devices/pci0000:00/0000:00:1d.0", "pci", ""), dev("devices/pci0000:00/0000:00:1d.0/0000:3c:00.0", "pci", ""),
	dev(nvmeCtl1, "nvme", ""), link("nvme", nvmeCtl1),

	// USB storage behind a hub port.
	dev(usbPCI, "pci", ""), dev(usbPCI+"/usb2", "usb", "usb_device"),
	dev(usbPCI+"/usb2/2-1", "usb", "usb_device"), dev(usbPCI+"/usb2/2-1/2-1.2", "usb", "usb_device"),
	dev(usbIf, "usb", "usb_interface"), dev(usbIf+"/host6", "scsi", "scsi_host"),
	dev(usbIf+"/host6/target6:0:0", "scsi", "scsi_target"), dev(usbSCSI, "scsi", "scsi_device"),
	blk(usbSCSI+"/block/sde", "8:64", 2097152, 0),

	// virtio-scsi: host2 is the lowest host on the controller, LUN 3.
	dev(vscsiPCI, "pci", ""), dev(vscsiPCI+"/virtio1", "virtio", ""),
	dev(vscsiPCI+"/virtio1/host2", "scsi", "scsi_host"), dev(vscsiPCI+"/virtio1/host2/target2:0:0", "scsi", "scsi_target"),
	dev(vscsiSCSI, "scsi", "scsi_device"), blk(vscsiSCSI+"/block/sdf", "8:80", 2097152, 0),

	// Virtual devices.
	blk("devices/virtual/block/loop0", "7:0", 0, 0),
	blk("devices/virtual/block/md127", "9:127", 261632, 0),

	// A disk on a bus path_id knows but this package does not.
	dev("devices/pci0000:00/0000:00:07.0", "pci", ""), dev("devices/pci0000:00/0000:00:07.0/c0d0", "cciss", ""),
	blk("devices/pci0000:00/0000:00:07.0/c0d0/block/cciss!c0d0", "104:0", 2048, 0),
}, "")

func TestPathID(t *testing.T) {
	tests := []struct {
		name  string
		dev   string
		want  string
		isErr error
	}{
		{"virtio-blk on pci", "vdb", "pci-0000:00:10.0", nil},
		{"virtio-blk partition", "vdb1", "pci-0000:00:10.0-part1", nil},
		{"sata", "sda", "pci-0000:00:1f.2-ata-3.0", nil},
		{"sata partition", "sda2", "pci-0000:00:1f.2-ata-3.0-part2", nil},
		{"sata port multiplier", "sdb", "pci-0000:00:1f.2-ata-4.1.0", nil},
		{"sas direct", "sdc", "pci-0000:02:00.0-sas-phy4-lun-0", nil},
		{"sas expander", "sdd", "pci-0000:02:00.0-sas-exp0x500304801f3a7dff-phy5-lun-0", nil},
		{"nvme behind bridge", "nvme0n1", "pci-0000:01:00.0-nvme-1", nil},
		{"nvme partition", "nvme0n1p2", "pci-0000:01:00.0-nvme-1-part2", nil},
		{"nvme multipath", "nvme1n2", "pci-0000:3c:00.0-nvme-2", nil},
		{"usb storage", "sde", "pci-0000:00:14.0-usb-0:1.2:1.0-scsi-0:0:0:0", nil},
		{"virtio-scsi rebased host", "sdf", "pci-0000:00:05.0-scsi-0:0:0:3", nil},
		{"loop is virtual", "loop0", "", ErrNoPathID},
		{"md is virtual", "md127", "", ErrNoPathID},
		{"unsupported bus keeps partial", "cciss!c0d0", "pci-0000:00:07.0", ErrNoPathID},
		{"unknown device", "sdz", "", fs.ErrNotExist},
	}
	c := qt.New(t)
	// The root's own path contains "/ata": only the part inside the tree
	// may select the ATA rules.
	fsys := materialize(c, filepath.Join(c.TempDir(), "ata9", "sys"), manifest)
	for _, tt := range tests {
		c.Run(tt.name, func(c *qt.C) {
			got, err := PathID(fsys, tt.dev)
			c.Assert(got, qt.Equals, tt.want)
			// The method on a described device gives the same answer
			// without the partition probe.
			if d, lerr := LookupIdentity(fsys, "/dev", tt.dev); lerr == nil {
				got2, err2 := d.PathID(fsys)
				c.Assert(got2, qt.Equals, got)
				c.Assert(err2 == nil, qt.Equals, err == nil, qt.Commentf("%v, %v", err2, err))
				// Described at its directory, the device is the same.
				d2, err := LookupIdentityAt(fsys, "/dev", d.Dir)
				c.Assert(err, qt.IsNil)
				c.Assert(d2, qt.DeepEquals, d)
			}
			if tt.isErr != nil {
				c.Assert(err, qt.ErrorIs, tt.isErr)
				return
			}
			c.Assert(err, qt.IsNil)
		})
	}

	for _, dir := range []string{"", "/devices/x", "../sys/devices"} {
		_, err := LookupIdentityAt(fsys, "/dev", dir)
		c.Assert(err, qt.ErrorIs, fs.ErrInvalid, qt.Commentf("%q", dir))
	}

	_, err := PathID(fsys, "cciss!c0d0")
	var pe *PathIDError
	c.Assert(err, qt.ErrorAs, &pe)
	c.Assert(pe.Partial, qt.Equals, "pci-0000:00:07.0")
	c.Assert(pe.Reason, qt.Contains, "cciss")

	_, compat, err := pathIDs(fsys, "sda2")
	c.Assert(err, qt.IsNil)
	c.Assert(compat, qt.Equals, "pci-0000:00:1f.2-ata-3-part2")
}

func TestLun(t *testing.T) {
	c := qt.New(t)
	c.Assert(lun("0:0:0:7"), qt.Equals, "lun-7")
	c.Assert(lun("0:0:0:256"), qt.Equals, "lun-0x0100000000000000")
	c.Assert(lun("0:0:0:65537"), qt.Equals, "lun-0x0001000100000000")
}

func TestLookup(t *testing.T) {
	c := qt.New(t)
	fsys := materialize(c, c.TempDir(), manifest)

	d, err := Lookup(fsys, "/dev", "vdb")
	c.Assert(err, qt.IsNil)
	c.Assert(d, qt.DeepEquals, &Device{
		Name: "vdb", Dir: virtioBlk, Node: "/dev/vdb", Dev: sysfs.DevNum{Major: 254, Minor: 16},
		Size: 131072 * 512, LogicalBlockSize: 512, PhysicalBlockSize: 4096,
		Serial: "mdtest-0", Holders: []string{"md127"},
	})

	d, err = LookupDev(fsys, "/tmp/dev", sysfs.DevNum{Major: 8, Minor: 2})
	c.Assert(err, qt.IsNil)
	c.Assert(d.Name, qt.Equals, "sda2")
	c.Assert(d.Node, qt.Equals, "/tmp/dev/sda2")
	c.Assert(d.Partition, qt.Equals, 2)
	c.Assert(d.Parent, qt.Equals, "sda")
	c.Assert(d.Size, qt.Equals, uint64(1024*512))
	c.Assert(d.LogicalBlockSize, qt.Equals, uint64(512))
	c.Assert(d.Model, qt.Equals, "QEMU HARDDISK")
	c.Assert(d.WWN, qt.Equals, "t10.ATA     QEMU HARDDISK                           QM00005")

	d, err = Lookup(fsys, "/dev", "nvme0n1p2")
	c.Assert(err, qt.IsNil)
	c.Assert([]string{d.Model, d.Serial, d.WWN, d.Parent}, qt.DeepEquals,
		[]string{"Samsung SSD 980 1TB", "S649NX0T123456", "eui.002538b111b2c3d4", "nvme0n1"})

	d, err = Lookup(fsys, "/dev", "cciss!c0d0")
	c.Assert(err, qt.IsNil)
	c.Assert(d.Node, qt.Equals, "/dev/cciss!c0d0") // DEVNAME in this fake uevent

	_, err = Lookup(fsys, "/dev", "sdz")
	c.Assert(err, qt.ErrorIs, fs.ErrNotExist)
	_, err = LookupDev(fsys, "/dev", sysfs.DevNum{Major: 1, Minor: 1})
	c.Assert(err, qt.ErrorIs, fs.ErrNotExist)
	_, err = Lookup(fsys, "/dev", "../sda")
	c.Assert(err, qt.ErrorIs, fs.ErrInvalid)
}

func TestVPDSerial(t *testing.T) {
	c := qt.New(t)
	root := c.TempDir()
	fsys := materialize(c, root, manifest)
	page := append([]byte{0, 0x80, 0, 10}, []byte("  ZA1B2C3D")...)
	c.Assert(os.WriteFile(fsys.Path(sataSCSI, "vpd_pg80"), page, 0o444), qt.IsNil)
	d, err := Lookup(fsys, "/dev", "sda")
	c.Assert(err, qt.IsNil)
	c.Assert(d.Serial, qt.Equals, "ZA1B2C3D")
}

func TestCheckByPath(t *testing.T) {
	c := qt.New(t)
	fsys := materialize(c, c.TempDir(), manifest)
	devRoot := c.TempDir()
	bp := filepath.Join(devRoot, "disk", "by-path")
	c.Assert(os.MkdirAll(bp, 0o755), qt.IsNil)
	for name, target := range map[string]string{
		"pci-0000:00:10.0":         "../../vdb",
		"virtio-pci-0000:00:10.0":  "../../vdb",
		"pci-0000:00:1f.2-ata-3.0": "../../sda",
		"pci-0000:00:1f.2-ata-3":   "../../sda",
		"pci-0000:00:99.0":         "../../sda",
	} {
		c.Assert(os.Symlink(target, filepath.Join(bp, name)), qt.IsNil)
	}
	res, err := CheckByPath(fsys, devRoot, "vdb")
	c.Assert(err, qt.IsNil)
	c.Assert(res, qt.DeepEquals, ByPathCheck{
		Want: "pci-0000:00:10.0", Links: []string{"pci-0000:00:10.0", "virtio-pci-0000:00:10.0"}, Match: true,
	})
	res, err = CheckByPath(fsys, devRoot, "sda")
	c.Assert(err, qt.IsNil)
	c.Assert(res.Match, qt.IsTrue)
	c.Assert(res.Unexpected, qt.DeepEquals, []string{"pci-0000:00:99.0"})
	res, err = CheckByPath(fsys, devRoot, "sdc")
	c.Assert(err, qt.IsNil)
	c.Assert(res.Match, qt.IsFalse)
	_, err = CheckByPath(fsys, c.TempDir(), "vdb")
	c.Assert(err, qt.ErrorIs, fs.ErrNotExist)
}
