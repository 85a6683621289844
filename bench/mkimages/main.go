// Command mkimages writes n member images, cycling through the members of
// the real captures in testdata/fixtures, as sparse files in a directory.
// bench/examine.sh uses it.
//
//	go run ./bench/mkimages -n 1000 -out DIR
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/go-mdraid/mdraid/internal/fixture"
	"github.com/go-mdraid/mdraid/internal/vmtest"
)

func main() {
	n := flag.Int("n", 1000, "number of images")
	out := flag.String("out", "", "output directory (must exist)")
	flag.Parse()
	if err := run(*n, *out); err != nil {
		fmt.Fprintln(os.Stderr, "mkimages:", err)
		os.Exit(1)
	}
}

func run(n int, out string) error {
	if out == "" {
		return fmt.Errorf("-out is required")
	}
	root, err := vmtest.ModuleRoot()
	if err != nil {
		return err
	}
	cases, err := fixture.LoadAll(filepath.Join(root, "testdata", "fixtures"))
	if err != nil {
		return err
	}
	var images []*fixture.Image
	var names []string
	for _, c := range cases {
		for _, m := range c.Members {
			im, err := m.Open()
			if err != nil {
				return err
			}
			images = append(images, im)
			names = append(names, filepath.Base(c.Dir)+"-"+m.Name)
		}
	}
	if len(images) == 0 {
		return fmt.Errorf("no fixtures")
	}
	for i := 0; i < n; i++ {
		j := i % len(images)
		if err := images[j].WriteSparseFile(filepath.Join(out, fmt.Sprintf("%04d-%s.img", i, names[j]))); err != nil {
			return err
		}
	}
	return nil
}
