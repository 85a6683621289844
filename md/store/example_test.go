package store_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/go-mdraid/mdraid/md"
	"github.com/go-mdraid/mdraid/md/mdtest"
	"github.com/go-mdraid/mdraid/md/store"
)

// Record a healthy array's slots in a file store, as a node agent does
// at boot, then read the records back: each slot's port (by-path) is
// where heal looks for a new disk once the array is degraded. The
// system is a capture of a real kernel rebuilt by md/mdtest.
func ExampleFile() {
	sys, err := mdtest.New("boot-mirror-k7.2")
	if err != nil {
		log.Fatal(err)
	}
	defer sys.Close()
	m, err := md.Open(sys.Config())
	if err != nil {
		log.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "store-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()

	records := store.NewFile(filepath.Join(dir, "slots.json"))
	if _, err := m.Record(ctx, md.RecordOptions{Store: records}); err != nil {
		log.Fatal(err)
	}
	rs, err := records.Load(ctx)
	if err != nil {
		log.Fatal(err)
	}
	for _, r := range rs.Arrays {
		fmt.Println(r.Name, r.Level, r.Metadata, r.RaidDisks, "slots")
		for _, s := range r.Slots {
			fmt.Println("  slot", s.Slot, s.ByPath)
		}
	}
	// Output:
	// boot raid1 1.0 2 slots
	//   slot 0 pci-0000:00:10.0
	//   slot 1 pci-0000:00:11.0
}
