package md_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/go-mdraid/mdraid/md"
)

// Assemble every array on this machine at boot, as udev's incremental
// pass would, and say what each device did. On a machine without udev
// (an initramfs) set NoUdev so that /dev/mdN and /dev/md/NAME are made
// too. The example does not run here: it needs the md driver.
func ExampleManager_Assemble() {
	m, err := md.Open(&md.Config{NoUdev: true})
	if err != nil {
		log.Fatal(err)
	}
	res, err := m.Assemble(context.Background(), md.AssembleRequest{})
	if err != nil {
		// Only what stops every array: ctx, the map file.
		log.Fatal(err)
	}
	for _, r := range res.Added {
		fmt.Printf("%s -> %s (%s): %s\n", r.Device, r.Array, r.Path, r.Started)
	}
	for _, s := range res.Skipped {
		if !errors.Is(s.Reason, md.ErrInUse) {
			fmt.Printf("%s not added: %v\n", s.Device, s.Reason)
		}
	}
	// A failure is one device's or one array's; the others are up.
	for _, f := range res.Failed {
		fmt.Printf("%s failed: %v\n", f.Device, f.Err)
	}
}
