package mdtest_test

import (
	"context"
	"fmt"
	"log"

	"github.com/go-mdraid/mdraid/md"
	"github.com/go-mdraid/mdraid/md/mdtest"
)

// Rebuild a captured boot mirror, fail a member as the kernel would, and
// read the array again. In a test, mdtest.Capture(t, name) does the same
// and removes the system when the test ends.
func ExampleNew() {
	sys, err := mdtest.New("boot-mirror-k7.2")
	if err != nil {
		log.Fatal(err)
	}
	defer sys.Close()
	m, err := md.Open(sys.Config())
	if err != nil {
		log.Fatal(err)
	}
	show := func() {
		a, err := m.Status(context.Background(), sys.Array())
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(a.Device, a.Availability, a.Redundancy, len(a.Faulty), "faulty")
	}
	show()
	sys.Fail("vdb")
	show()
	// Output:
	// md127 online full 0 faulty
	// md127 degraded none 1 faulty
}
