package md_test

import (
	"fmt"

	"github.com/go-mdraid/mdraid/md"
)

// A superblock's name comes from the disk, so whoever plugs it in chooses
// it: SafeName turns it into a /dev/md link name and a udev value, or
// refuses it.
func ExampleSafeName() {
	for _, name := range []string{"talos:boot", "my array/1", "a\nSYSTEMD_WANTS=evil", "..", "$(reboot)"} {
		safe, err := md.SafeName(name)
		if err != nil {
			fmt.Printf("%q: refused (%v)\n", name, err)
			continue
		}
		fmt.Printf("%q -> /dev/md/%s\n", name, safe)
	}
	// Output:
	// "talos:boot" -> /dev/md/talos:boot
	// "my array/1" -> /dev/md/my_array-1
	// "a\nSYSTEMD_WANTS=evil" -> /dev/md/a
	// "..": refused (md: array name cannot be used as a device name: ".." is a directory name)
	// "$(reboot)": refused (md: array name cannot be used as a device name: "$(reboot)" contains $)
}
