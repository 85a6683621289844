package md_test

import (
	"context"
	"fmt"
	"log"

	"github.com/go-mdraid/mdraid/md"
	"github.com/go-mdraid/mdraid/md/mdtest"
)

// Plan a scrub of every array without writing anything: the dry run
// decides as the real check does. On the capture of a clean RAID1 the
// check would start; after its member vdb fails, the array is skipped
// (a degraded array has nothing to compare). Without DryRun, Check
// writes "check" to sync_action (and with Wait follows it to the end).
func ExampleManager_Check() {
	sys, err := mdtest.New("raid1-v1.2")
	if err != nil {
		log.Fatal(err)
	}
	defer sys.Close()
	m, err := md.Open(sys.Config())
	if err != nil {
		log.Fatal(err)
	}
	plan := func() {
		res, err := m.PlanCheck(context.Background(), md.CheckRequest{All: true})
		if err != nil {
			log.Fatal(err)
		}
		for _, r := range res {
			if r.Result == md.CheckSkipped {
				fmt.Printf("%s skipped: %s\n", r.Array, r.Skipped)
				continue
			}
			fmt.Println(r.Array, r.Action, r.Result)
		}
	}
	plan()
	sys.Fail("vdb")
	plan()
	// Output:
	// md0 check would-start
	// md0 skipped: it is degraded (degraded 1, redundancy none): recover it first
}
