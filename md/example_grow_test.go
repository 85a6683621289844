package md_test

import (
	"context"
	"fmt"
	"log"

	"github.com/go-mdraid/mdraid/md"
	"github.com/go-mdraid/mdraid/md/mdtest"
)

// Using all the space of the members: the last step after each member
// of a mirror was replaced by a bigger disk. The captured 1.0 mirror's
// members give 65520 KiB (md keeps room for the superblock, a bitmap and
// the bad-block log at each disk's end); the array uses 65472 KiB.
func ExampleManager_Grow() {
	sys, err := mdtest.New("raid1-v1.0")
	if err != nil {
		log.Fatal(err)
	}
	defer sys.Close()
	m, err := md.Open(sys.Config())
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	p, err := m.PlanGrow(ctx, md.GrowRequest{Array: "md0"}) // SizeKiB 0: max
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s: %d -> %d KiB, members to raise first: %v\n", p.Array, p.FromKiB, p.ToKiB, p.Resize)
	res, err := m.Grow(ctx, md.GrowRequest{Array: "md0"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("component size now %d KiB\n", res.ComponentKiB)
	_, err = m.Grow(ctx, md.GrowRequest{Array: "md0", SizeKiB: 1024})
	fmt.Println(err)
	// Output:
	// md0: 65472 -> 65520 KiB, members to raise first: []
	// component size now 65520 KiB
	// md: refusing to resize in md0: 1024 KiB is less than the 65520 KiB each member gives now: md would cut off the end of the array
}
