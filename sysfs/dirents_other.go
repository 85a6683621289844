//go:build !linux

package sysfs

import (
	"fmt"
	"os"
	"strings"
)

// listDir returns the names in directory p that start with prefix and are
// directories (dirs) or anything (!dirs).
func listDir(p, prefix string, dirs bool) ([]string, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	ents, err := f.ReadDir(-1)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	var out []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), prefix) && (!dirs || e.IsDir()) {
			out = append(out, e.Name())
		}
	}
	return out, nil
}
