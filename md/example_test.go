package md_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"strconv"

	"github.com/go-mdraid/mdraid/md"
	"github.com/go-mdraid/mdraid/md/mdtest"
	"github.com/go-mdraid/mdraid/md/store"
)

// Discover every array and print its health and slots. The example runs
// against a capture of a real kernel (a RAID1 whose member 1 failed),
// rebuilt in a temporary directory by md/mdtest; on a live system pass
// nil to md.Open.
func ExampleManager_Discover() {
	sys, err := mdtest.New("raid1-failed")
	if err != nil {
		log.Fatal(err)
	}
	defer sys.Close()

	m, err := md.Open(sys.Config())
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

// Read one array by its name. An array is named as in the package
// documentation ("Naming arrays"): its kernel name, device node, name or
// UUID. This is the boot mirror of a Talos-style node, captured on Linux
// 7.2.
func ExampleManager_Status() {
	sys, err := mdtest.New("boot-mirror-k7.2")
	if err != nil {
		log.Fatal(err)
	}
	defer sys.Close()
	m, err := md.Open(sys.Config())
	if err != nil {
		log.Fatal(err)
	}

	a, err := m.Status(context.Background(), "boot")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(a.Device, a.Name, a.Metadata, a.Level, a.Availability)
	_, err = m.Status(context.Background(), "data")
	fmt.Println(errors.Is(err, md.ErrNoArray))
	// Output:
	// md127 boot 1.0 raid1 online
	// true
}

// Plan the replacement of a failed member without writing anything: the
// plan lists every check and every step the executor would take
// (Manager.ExecuteReplace plans again under the array's lock and carries
// it out). The new disk is a blank image that md/mdtest put in a free
// port; AllowImageFile, which only tests set, accepts an image file as
// the disk.
func ExampleManager_PlanReplace() {
	sys, err := mdtest.New("raid1-failed")
	if err != nil {
		log.Fatal(err)
	}
	defer sys.Close()
	disk := sys.AddDisk("vdz", "pci-0000:00:18.0", 64<<20)
	m, err := md.Open(sys.Config())
	if err != nil {
		log.Fatal(err)
	}

	plan, err := m.PlanReplace(context.Background(), md.ReplaceRequest{
		Array: "md0", Member: "vdb", With: disk, AllowImageFile: true,
	})
	if err != nil {
		log.Fatal(err) // a *md.RefusedError (errors.Is(err, md.ErrRefused)) says why
	}
	fmt.Println("slot", plan.Slot, "remove", plan.Remove.Device)
	for _, s := range plan.Steps {
		fmt.Println(" ", s.Kind)
	}
	// Output:
	// slot 1 remove vdb
	//   freeze
	//   claim
	//   remove
	//   write-superblock
	//   add
	//   set-slot
	//   unfreeze
	//   verify
}

// Heal passes in dry-run mode (PlanHeal) over an array recorded while healthy:
// the record (kept in a store; md/store.File on a node) names the port
// of each slot, and heal looks there for a disk to rebuild onto. It
// writes nothing and says what it would do for each slot, and why.
func ExampleManager_Heal() {
	sys, err := mdtest.New("raid1-v1.2")
	if err != nil {
		log.Fatal(err)
	}
	defer sys.Close()
	m, err := md.Open(sys.Config())
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	records := &store.Memory{}
	if _, err := m.Record(ctx, md.RecordOptions{Store: records}); err != nil {
		log.Fatal(err)
	}

	pass := func() {
		// AllowImageFile: md/mdtest's disks are image files.
		decisions, err := m.PlanHeal(ctx, md.HealOptions{Store: records, AllowImageFile: true})
		if err != nil {
			log.Fatal(err)
		}
		for _, d := range decisions {
			fmt.Println(d.Array, "slot", d.Slot, d.ByPath, d.Device, d.Outcome, errors.Is(d.Err, md.ErrRefused))
		}
	}
	pass()
	// The kernel fails vdb, which stays in its port: heal offers the disk
	// it finds there to the replace planner, which refuses it (a disk
	// that is no blank disk is never written to).
	sys.Fail("vdb")
	pass()
	// vdb is swapped offline for a blank disk of its size in the same
	// port: heal would rebuild slot 1 onto it.
	sectors, err := strconv.ParseInt(sys.Get("md/dev-vdb/block/size"), 10, 64)
	if err != nil {
		log.Fatal(err)
	}
	sys.Pull("vdb")
	sys.AddDisk("vdz", "pci-0000:00:11.0", sectors*512)
	pass()
	// Output:
	// md0 slot -1   skipped false
	// md0 slot 1 pci-0000:00:11.0 vdb refused true
	// md0 slot 1 pci-0000:00:11.0 vdz would-heal false
}

// Poll the arrays as a controller's loop would: the Poller reads the
// members' superblocks on its first report and then only for an array
// whose sysfs facts changed. Here a member of the captured mirror fails
// between two polls (md/mdtest plays the kernel's part).
func ExamplePoller() {
	sys, err := mdtest.New("raid1-v1.2")
	if err != nil {
		log.Fatal(err)
	}
	defer sys.Close()
	m, err := md.Open(sys.Config())
	if err != nil {
		log.Fatal(err)
	}
	p := m.NewPoller()
	poll := func() {
		report, err := p.Discover(context.Background())
		if err != nil {
			log.Fatal(err)
		}
		for _, a := range report.Arrays {
			fmt.Printf("%s %s; superblocks read so far: %d\n", a.Device, a.Availability, p.SuperblockReads())
		}
	}
	poll()
	poll()
	sys.Fail("vdb")
	poll()
	poll()
	// Output:
	// md0 online; superblocks read so far: 2
	// md0 online; superblocks read so far: 2
	// md0 degraded; superblocks read so far: 4
	// md0 degraded; superblocks read so far: 4
}
