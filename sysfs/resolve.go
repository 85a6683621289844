package sysfs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// maxLinks bounds the links followed in one resolution, as the kernel's
// own limit of 40 does.
const maxLinks = 40

// resolveCache remembers, for one pass over the tree, where each path
// resolved to. sysfs paths share long prefixes (devices/pci0000:00/...),
// so a pass that describes many devices saves most of its lstat calls.
type resolveCache struct {
	mu   sync.Mutex
	m    map[string]string // clean absolute path -> resolved absolute path
	memo map[string]any    // Memo's values by key
}

// WithCache returns a copy of fs that remembers resolved links and
// directories. Use it for one pass over a tree that does not change during
// the pass (one status report); links change when devices come and go, so
// do not keep it.
func (fsys FS) WithCache() FS {
	fsys.cache = &resolveCache{m: make(map[string]string)}
	return fsys
}

// Memo returns the value f gives for key, calling f once per cache made
// by WithCache (on an FS without one, on every call). It is for facts
// derived from the tree that one pass needs many times, such as a whole
// disk's identity for each of its partitions; a key names what the value
// derives from (a package prefix and a path). Two goroutines asking for a
// key at once may both call f; the first value stored is kept.
func (fsys FS) Memo(key string, f func() any) any {
	c := fsys.cache
	if c == nil {
		return f()
	}
	c.mu.Lock()
	v, ok := c.memo[key]
	c.mu.Unlock()
	if ok {
		return v
	}
	v = f()
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.memo[key]; ok {
		return old
	}
	if c.memo == nil {
		c.memo = map[string]any{}
	}
	c.memo[key] = v
	return v
}

// resolve returns the path p with every link resolved, like
// filepath.EvalSymlinks, using and filling the cache when there is one.
func (fsys FS) resolve(p string) (string, error) {
	p, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	links := 0
	return fsys.resolveAbs(p, &links)
}

func (fsys FS) resolveAbs(p string, links *int) (string, error) {
	if p == "/" {
		return p, nil
	}
	if c := fsys.cache; c != nil {
		c.mu.Lock()
		r, ok := c.m[p]
		c.mu.Unlock()
		if ok {
			return r, nil
		}
	}
	parent, err := fsys.resolveAbs(filepath.Dir(p), links)
	if err != nil {
		return "", err
	}
	cand := filepath.Join(parent, filepath.Base(p))
	fi, err := os.Lstat(cand)
	if err != nil {
		return "", err
	}
	r := cand
	if fi.Mode()&fs.ModeSymlink != 0 {
		if *links++; *links > maxLinks {
			return "", &fs.PathError{Op: "resolve", Path: p, Err: errors.New("too many links")}
		}
		t, err := os.Readlink(cand)
		if err != nil {
			return "", err
		}
		if !filepath.IsAbs(t) {
			// parent is fully resolved, so ".." in the target is
			// lexical from here.
			t = filepath.Join(parent, t)
		}
		if r, err = fsys.resolveAbs(filepath.Clean(t), links); err != nil {
			return "", err
		}
	}
	if c := fsys.cache; c != nil {
		c.mu.Lock()
		c.m[p] = r
		c.mu.Unlock()
	}
	return r, nil
}

// Rel resolves every link in p, which must be below the root, and returns
// the result relative to the root with '/' separators. It fails if the
// result lies outside the root.
func (fsys FS) Rel(p string) (string, error) {
	real, err := fsys.resolve(p)
	if err != nil {
		return "", err
	}
	root, err := fsys.resolve(fsys.root)
	if err != nil {
		return "", err
	}
	r, err := filepath.Rel(root, real)
	if err != nil {
		return "", err
	}
	r = filepath.ToSlash(r)
	if r == ".." || strings.HasPrefix(r, "../") {
		return "", fmt.Errorf("sysfs: %s resolves outside %s", p, fsys.root)
	}
	return r, nil
}
