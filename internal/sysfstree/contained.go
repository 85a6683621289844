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
	_, err := contain(entries, true)
	return err
}

// Contain returns the entries that Contained accepts: it drops each link
// whose target could leave the root and each entry whose path passes
// through a remaining link. Contained(Contain(entries)) is nil. Fuzz
// targets use it so that most mutations of a manifest still build a tree.
func Contain(entries []Entry) []Entry {
	out, _ := contain(entries, false)
	return out
}

func contain(entries []Entry, strict bool) ([]Entry, error) {
	var kept []Entry
	links := map[string]bool{}
	for _, e := range entries {
		if err := checkEntry(e); err != nil {
			if strict {
				return nil, err
			}
			continue
		}
		kept = append(kept, e)
		if e.Kind == Link {
			links[e.Path] = true
		}
	}
	out := kept[:0]
next:
	for _, e := range kept {
		for p := path.Dir(e.Path); p != "."; p = path.Dir(p) {
			if links[p] {
				if strict {
					return nil, fmt.Errorf("sysfstree: %q passes through the link %q", e.Path, p)
				}
				continue next
			}
		}
		out = append(out, e)
	}
	return out, nil
}

// checkEntry checks one entry's path and, for a link, its target.
func checkEntry(e Entry) error {
	if err := checkPath(e.Path); err != nil {
		return fmt.Errorf("sysfstree: %w", err)
	}
	if e.Kind != Link {
		return nil
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
	return nil
}

// ParseLoose reads the entries of a manifest, skipping the header,
// comments and every malformed line instead of failing, so that a fuzzed
// manifest keeps most of its lines.
func ParseLoose(b []byte) []Entry {
	var out []Entry
	for line := range strings.Lines(string(b)) {
		line = strings.TrimSuffix(line, "\n")
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if e, err := parseLine(line); err == nil {
			out = append(out, e)
		}
	}
	return out
}

// MaterializeLoose is Materialize that skips the entries it cannot create
// (a file where a directory already is, a second link at one path)
// instead of failing. Combine it with Contain for fuzzed manifests.
func MaterializeLoose(dir string, entries []Entry) {
	for _, e := range entries {
		_ = Materialize(dir, []Entry{e})
	}
}
