package signature_test

import (
	"bytes"
	"fmt"
	"log"

	"github.com/go-mdraid/mdraid/signature"
)

// Scan an image that holds an XFS file system in a partition at 1 MiB,
// its partition table wiped.
func Example() {
	disk := make([]byte, 8<<20)
	copy(disk[1<<20:], "XFSB")
	findings, err := signature.Scan(bytes.NewReader(disk), int64(len(disk)))
	if err != nil {
		log.Fatal(err)
	}
	for _, f := range findings {
		fmt.Printf("%s: %s at byte %d\n", f.Kind, f.What, f.Offset)
	}
	// Output:
	// volume: XFS superblock in a partition at byte 1048576 at byte 1048576
}
