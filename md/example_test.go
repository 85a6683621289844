package md_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/go-mdraid/mdraid/internal/fixture"
	"github.com/go-mdraid/mdraid/md"
)

// Discover every array and print its health and slots. The example runs
// against a capture of a real kernel (a RAID1 whose member 1 failed),
// rebuilt in a temporary directory; on a live system pass nil to md.Open.
func ExampleManager_Discover() {
	dir, err := os.MkdirTemp("", "md-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	capture, err := fixture.LoadCase(filepath.Join("..", "testdata", "fixtures", "raid1-failed"))
	if err != nil {
		log.Fatal(err)
	}
	sys, dev, err := capture.Materialize(dir)
	if err != nil {
		log.Fatal(err)
	}

	m, err := md.Open(&md.Config{SysRoot: sys, DevRoot: dev})
	if err != nil {
		log.Fatal(err)
	}
	report, err := m.Discover(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	for _, a := range report.Arrays {
		fmt.Println(a.Device, a.Level, a.Availability, "redundancy", a.Redundancy)
		for _, s := range a.Slots {
			if s.Member != nil {
				fmt.Println("  slot", s.Slot, s.State, s.Member.Device, s.Member.ByPath)
			} else {
				fmt.Println("  slot", s.Slot, s.State)
			}
		}
		for _, f := range a.Faulty {
			fmt.Println("  faulty", f.Device, f.ByPath)
		}
	}
	// Output:
	// md0 raid1 degraded redundancy none
	//   slot 0 active vda pci-0000:00:10.0
	//   slot 1 missing
	//   faulty vdb pci-0000:00:11.0
}
