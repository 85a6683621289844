package watch_test

import (
	"context"
	"fmt"
	"log"
	"strings"
	"time"

	"github.com/go-mdraid/mdraid/md"
	"github.com/go-mdraid/mdraid/md/mdtest"
	"github.com/go-mdraid/mdraid/md/store"
	"github.com/go-mdraid/mdraid/md/watch"
)

// Watch a boot mirror (a capture of a real kernel, rebuilt by md/mdtest)
// and receive its events on a channel: the healthy array is recorded
// first, then a member fails. The watch stops when its context is
// cancelled, and then closes the channel.
func ExampleStart() {
	sys, err := mdtest.New("boot-mirror-k7.2")
	if err != nil {
		log.Fatal(err)
	}
	defer sys.Close()
	m, err := md.Open(sys.Config())
	if err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	ready := make(chan struct{})
	events, err := watch.Start(ctx, m, &watch.Options{
		Mdstat: sys.Mdstat(),
		Store:  &store.Memory{}, // where healthy arrays are recorded
		Rescan: 50 * time.Millisecond,
		Ready:  func() { close(ready) },
	})
	if err != nil {
		log.Fatal(err)
	}
	show := func(e watch.Event) {
		fmt.Println(strings.TrimSpace(fmt.Sprintln(e.Type, e.Array, e.Member, e.ByPath)))
	}
	<-ready
	show(<-events)

	sys.Fail("vdb") // as the kernel fails a member on a write error
	show(<-events)
	show(<-events)

	cancel()
	for range events { // drained until the watch has stopped
	}
	// Output:
	// SlotRecorded md127
	// Fail md127 vdb pci-0000:00:11.0
	// DegradedArray md127
}
