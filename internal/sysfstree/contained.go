package sysfstree

import (
	"fmt"
	"path"
	"strings"
)

// Contained reports, with a nil error, that materializing entries cannot
// create anything that resolves outside the directory they are
// materialized in, however the links chain. Fuzz targets build trees from
// arbitrary manifests and must never make the code under test read the
// host's files (a link to /dev/stdin would block a read forever).
//
// The rule is enforced syntactically, so that it holds by induction over
// any chain of links: no entry's path passes through a link of the
// manifest (so every link sits in a real directory at its manifest path),
// and every link target is some "../" elements, no more than the link's
// directory is deep, followed by elements that are not "..". A target
// that names another link resolves inside again by the same rule. Loops,
// dangling links and deep chains are allowed: they stay inside.
func Contained(entries []Entry) error {
	links := map[string]bool{}
	for _, e := range entries {
		if e.Kind == Link {
			links[e.Path] = true
		}
	}
	for _, e := range entries {
		if err := checkPath(e.Path); err != nil {
			return fmt.Errorf("sysfstree: %w", err)
		}
		for p := path.Dir(e.Path); p != "."; p = path.Dir(p) {
			if links[p] {
				return fmt.Errorf("sysfstree: %q passes through the link %q", e.Path, p)
			}
		}
		if e.Kind != Link {
			continue
		}
		if e.Data == "" || path.IsAbs(e.Data) {
			return fmt.Errorf("sysfstree: link %q has target %q", e.Path, e.Data)
		}
		depth := strings.Count(e.Path, "/") // of the link's directory
		elems := strings.Split(e.Data, "/")
		up := 0
		for up < len(elems) && elems[up] == ".." {
			up++
		}
		if up > depth {
			return fmt.Errorf("sysfstree: link %q: target %q leaves the root", e.Path, e.Data)
		}
		for _, el := range elems[up:] {
			if el == ".." {
				return fmt.Errorf("sysfstree: link %q: target %q has \"..\" after a name", e.Path, e.Data)
			}
		}
	}
	return nil
}
