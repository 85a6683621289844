package blockdev_test

import (
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/go-mdraid/mdraid/blockdev"
	"github.com/go-mdraid/mdraid/sysfs"
)

// virtioTree builds, below root, the sysfs of a virtio disk vdb in PCI
// slot 00:10.0 that md0 holds, as Linux shows it: the device directory
// under devices/, reached through class/block and dev/block links, and a
// subsystem link on every device on the way up.
func virtioTree(root string) {
	const disk = "devices/pci0000:00/0000:00:10.0/virtio2/block/vdb"
	files := map[string]string{
		"devices/pci0000:00/0000:00:10.0/uevent":         "PCI_SLOT_NAME=0000:00:10.0",
		"devices/pci0000:00/0000:00:10.0/virtio2/uevent": "DRIVER=virtio_blk",
		disk + "/uevent":                    "MAJOR=254\nMINOR=16\nDEVNAME=vdb\nDEVTYPE=disk",
		disk + "/dev":                       "254:16",
		disk + "/size":                      "131072",
		disk + "/ro":                        "0",
		disk + "/serial":                    "disk-7",
		disk + "/queue/logical_block_size":  "512",
		disk + "/queue/physical_block_size": "4096",
	}
	links := map[string]string{
		"devices/pci0000:00/0000:00:10.0/subsystem":         "../../../bus/pci",
		"devices/pci0000:00/0000:00:10.0/virtio2/subsystem": "../../../../bus/virtio",
		disk + "/subsystem":                                 "../../../../../../class/block",
		disk + "/holders/md0":                               "../../../../../../virtual/block/md0",
		"class/block/vdb":                                   "../../" + disk,
		"dev/block/254:16":                                  "../../" + disk,
	}
	for p, content := range files {
		p = filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			log.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content+"\n"), 0o644); err != nil {
			log.Fatal(err)
		}
	}
	for p, target := range links {
		p = filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			log.Fatal(err)
		}
		if err := os.Symlink(target, p); err != nil {
			log.Fatal(err)
		}
	}
}

// Describe a disk and compute its by-path identity, the name udev gives
// its /dev/disk/by-path link, from sysfs alone. The tree here is built in
// a temporary directory; on a real system pass sysfs.DefaultRoot to
// sysfs.NewFS and blockdev.DefaultDevRoot as the dev root.
func Example() {
	root, err := os.MkdirTemp("", "blockdev-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(root)
	virtioTree(root)

	fsys, err := sysfs.NewFS(root)
	if err != nil {
		log.Fatal(err)
	}
	d, err := blockdev.Lookup(fsys, blockdev.DefaultDevRoot, "vdb")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s (%s): %d bytes, logical blocks %d, serial %s, held by %v\n",
		d.Node, d.Dev, d.Size, d.LogicalBlockSize, d.Serial, d.Holders)

	id, err := blockdev.PathID(fsys, "vdb")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("by-path:", id)

	// The same disk by device number, as an md member's dev file names it.
	d, err = blockdev.LookupDev(fsys, blockdev.DefaultDevRoot, sysfs.DevNum{Major: 254, Minor: 16})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("254:16 is", d.Name)
	// Output:
	// /dev/vdb (254:16): 67108864 bytes, logical blocks 512, serial disk-7, held by [md0]
	// by-path: pci-0000:00:10.0
	// 254:16 is vdb
}

// A device that udev gives no by-path link, such as an md array under
// devices/virtual, gives an error matching ErrNoPathID.
func ExamplePathID_virtual() {
	root, err := os.MkdirTemp("", "blockdev-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(root)
	md0 := filepath.Join(root, "devices", "virtual", "block", "md0")
	if err := os.MkdirAll(md0, 0o755); err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(md0, "dev"), []byte("9:0\n"), 0o644); err != nil {
		log.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "class", "block"), 0o755); err != nil {
		log.Fatal(err)
	}
	if err := os.Symlink("../../devices/virtual/block/md0", filepath.Join(root, "class", "block", "md0")); err != nil {
		log.Fatal(err)
	}

	fsys, err := sysfs.NewFS(root)
	if err != nil {
		log.Fatal(err)
	}
	_, err = blockdev.PathID(fsys, "md0")
	fmt.Println(errors.Is(err, blockdev.ErrNoPathID))
	// Output:
	// true
}
