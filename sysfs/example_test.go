package sysfs_test

import (
	"errors"
	"fmt"
	"io/fs"
	"log"
	"os"
	"path/filepath"

	"github.com/go-mdraid/mdraid/sysfs"
)

// writeTree writes files (path relative to root: content) below root, the
// way the kernel shows a degraded raid1 recovering onto a new disk.
func writeTree(root string, files map[string]string) {
	for p, content := range files {
		p = filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			log.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content+"\n"), 0o644); err != nil {
			log.Fatal(err)
		}
	}
}

// Read an array's state and its members from a sysfs tree. The tree here
// is built in a temporary directory; on a real system pass
// sysfs.DefaultRoot ("/sys") to NewFS.
func Example() {
	root, err := os.MkdirTemp("", "sysfs-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(root)
	writeTree(root, map[string]string{
		"block/md0/dev":               "9:0",
		"block/md0/md/level":          "raid1",
		"block/md0/md/raid_disks":     "2",
		"block/md0/md/array_state":    "clean",
		"block/md0/md/degraded":       "1",
		"block/md0/md/sync_action":    "recover",
		"block/md0/md/sync_completed": "32768 / 129024",
		"block/md0/md/dev-vda/state":  "in_sync",
		"block/md0/md/dev-vda/slot":   "0",
		"block/md0/md/dev-vdc/state":  "spare",
		"block/md0/md/dev-vdc/slot":   "1",
	})

	fsys, err := sysfs.NewFS(root)
	if err != nil {
		log.Fatal(err)
	}
	names, err := fsys.Arrays()
	if err != nil {
		log.Fatal(err)
	}
	for _, name := range names {
		a, err := fsys.Array(name)
		if err != nil {
			log.Fatal(err)
		}
		dev, _ := a.Dev()
		level, _ := a.Level()
		disks, _ := a.RaidDisks()
		state, _ := a.State()
		fmt.Printf("%s (%s): %s, %s slots, %s\n", name, dev, level, disks, state)

		act, _ := a.SyncAction()
		prog, err := a.SyncCompleted()
		if err == nil && prog.State == sysfs.ProgressRunning {
			fmt.Printf("  %s: %d of %d sectors\n", act, prog.Done, prog.Total)
		}

		members, err := a.Members()
		if err != nil {
			log.Fatal(err)
		}
		for _, m := range members {
			st, _ := m.State()
			slot, _ := m.Slot()
			fmt.Printf("  %s: slot %s, state %s\n", m.Name(), slot, st)
		}
	}
	// Output:
	// md0 (9:0): raid1, 2 slots, clean
	//   recover: 32768 of 129024 sectors
	//   vda: slot 0, state in_sync
	//   vdc: slot 1, state spare
}

// An attribute the kernel does not show (here, the redundancy attributes
// of a raid0) is an error matching fs.ErrNotExist; a value that cannot be
// parsed matches sysfs.ErrFormat.
func ExampleArray_SyncAction() {
	root, err := os.MkdirTemp("", "sysfs-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(root)
	writeTree(root, map[string]string{
		"block/md1/md/level":      "raid0",
		"block/md1/md/raid_disks": "garbage",
	})

	fsys, err := sysfs.NewFS(root)
	if err != nil {
		log.Fatal(err)
	}
	a, err := fsys.Array("md1")
	if err != nil {
		log.Fatal(err)
	}
	_, err = a.SyncAction()
	fmt.Println("sync_action missing:", errors.Is(err, fs.ErrNotExist))
	_, err = a.RaidDisks()
	fmt.Println("raid_disks malformed:", errors.Is(err, sysfs.ErrFormat))
	// Output:
	// sync_action missing: true
	// raid_disks malformed: true
}
