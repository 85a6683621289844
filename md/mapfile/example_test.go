package mapfile_test

import (
	"fmt"
	"log"
	"os"

	"github.com/go-mdraid/mdraid/md/mapfile"
)

// Read mdadm's map file and find which md device holds an array. The
// example writes a map in a temporary directory; on a live system use
// mapfile.Map{Dir: mapfile.DefaultDir}.
func Example() {
	dir, err := os.MkdirTemp("", "mapfile-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	m := mapfile.Map{Dir: dir}
	err = m.Update(mapfile.Entry{Dev: "md127", Metadata: "1.0", UUID: "ee388ce3:3d4b9bc8:4d24157f:c43c6976", Path: "/dev/md/boot"})
	if err != nil {
		log.Fatal(err)
	}
	entries, err := m.Read()
	if err != nil {
		log.Fatal(err)
	}
	if e, ok := mapfile.Find(entries, "md127"); ok {
		fmt.Println(e.Path, e.Metadata)
	}
	// Output: /dev/md/boot 1.0
}
