package sysfs

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// DefaultRoot is where sysfs is normally mounted.
const DefaultRoot = "/sys"

// FS is a sysfs tree mounted at some root. Use [NewFS]; the zero value is
// not usable. An FS holds no open files and is safe for concurrent use.
type FS struct {
	root string
	// hostOrder is the byte order of the kernel whose sysfs this is. It
	// only matters for the 0.90 UUID rule (see [CanonicalUUID]).
	hostOrder binary.ByteOrder
	// cache, when set by WithCache, remembers resolved paths.
	cache *resolveCache
}

// NewFS returns an FS for the sysfs tree at root, which must be a
// directory. Pass [DefaultRoot] for the running system. The kernel's byte
// order is taken to be the host's (see [FS.WithByteOrder]).
func NewFS(root string) (FS, error) {
	fi, err := os.Stat(root)
	if err != nil {
		return FS{}, fmt.Errorf("sysfs: %w", err)
	}
	if !fi.IsDir() {
		return FS{}, fmt.Errorf("sysfs: root %s is not a directory", root)
	}
	return FS{root: root, hostOrder: hostByteOrder()}, nil
}

// hostByteOrder reports the byte order of this host, detected once. It is
// only used for in-memory kernel data shown through sysfs (the 0.90 UUID
// words), never for data read from disk.
func hostByteOrder() binary.ByteOrder {
	if binary.NativeEndian.Uint16([]byte{1, 0}) == 1 {
		return binary.LittleEndian
	}
	return binary.BigEndian
}

// WithByteOrder returns a copy of fs that reads the tree as if the kernel
// ran with byte order bo: use it on a tree captured on another host.
func (fsys FS) WithByteOrder(bo binary.ByteOrder) FS {
	fsys.hostOrder = bo
	return fsys
}

// ByteOrder returns the kernel byte order that fs assumes.
func (fsys FS) ByteOrder() binary.ByteOrder { return fsys.hostOrder }

// Root returns the directory fs reads from.
func (fsys FS) Root() string { return fsys.root }

// Path joins elem below the root. It is the only place that builds a path
// into the tree; elem uses '/' separators.
func (fsys FS) Path(elem ...string) string {
	return join(fsys.root, elem...)
}

// ErrFormat is matched by every error for an attribute whose content
// could not be parsed.
var ErrFormat = errors.New("sysfs: unexpected attribute value")

// ParseError describes an attribute whose content could not be parsed.
// It matches [ErrFormat] with errors.Is.
type ParseError struct {
	Path  string // the attribute
	Value string // its trimmed content
	Err   error  // what went wrong, if more is known
}

// Error returns the path, the value and the cause.
func (e *ParseError) Error() string {
	s := fmt.Sprintf("sysfs: %s: unexpected value %s", e.Path, quoteShort(e.Value))
	var ne *strconv.NumError
	switch {
	case errors.As(e.Err, &ne):
		// Its message quotes the whole value again.
		s += ": " + ne.Err.Error()
	case e.Err != nil:
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the underlying cause.
func (e *ParseError) Unwrap() error { return e.Err }

// Is reports whether target is [ErrFormat].
func (e *ParseError) Is(target error) bool { return target == ErrFormat }

var _ error = (*ParseError)(nil)

// pageSize is what one sysfs attribute can hold at most.
var pageSize = os.Getpagesize()

// readAttr reads one attribute with a single read into a page-sized
// buffer and trims surrounding white space.
//
// Quirks: sysfs files report a size of 0 or 4096 whatever they hold, so
// the size is not consulted; show() output is capped at one page, so one
// read gets everything; and some drivers return EAGAIN on a second read,
// which would make a read-until-EOF loop spin. A missing attribute
// returns the *fs.PathError from open, which matches fs.ErrNotExist.
func readAttr(p string) (string, error) {
	b, err := ReadFile(p)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

// ReadFile reads a sysfs attribute at path p with one read of up to a
// page, as sysfs attributes are meant to be read (their reported sizes are
// meaningless). Errors are *fs.PathError values wrapping the errno.
func ReadFile(p string) ([]byte, error) {
	// The page lives on the stack and only what was read is copied out:
	// a status report reads hundreds of attributes of a few bytes each,
	// and a fresh page for every one of them kept the garbage collector
	// busy (under emulation, as costly as the reads themselves).
	var page [4096]byte
	buf := page[:]
	if pageSize > len(page) {
		buf = make([]byte, pageSize)
	}
	n, err := readRaw(p, buf)
	if err != nil {
		return nil, err
	}
	return append([]byte(nil), buf[:n]...), nil
}

// writeAttr writes val to an attribute with a single write.
//
// The file is opened O_WRONLY without O_CREATE or O_TRUNC, so writing an
// attribute that does not exist fails with fs.ErrNotExist exactly as on a
// real sysfs, instead of creating a file in a test tree. The kernel's
// store() result comes back as the *fs.PathError from write, wrapping the
// errno: errors.Is(err, unix.EBUSY) works. No newline is appended; md's
// store functions accept the value with or without one.
func writeAttr(p, val string) error {
	f, err := os.OpenFile(p, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, werr := f.Write([]byte(val))
	cerr := f.Close()
	if werr != nil {
		return werr
	}
	return cerr
}

// readLinkBase returns the last element of the target of the link at p.
func readLinkBase(p string) (string, error) {
	t, err := os.Readlink(p)
	if err != nil {
		return "", err
	}
	return filepath.Base(t), nil
}

// validName reports whether name can be one element of a path.
func validName(name string) bool {
	return name != "" && name != "." && name != ".." && !strings.ContainsAny(name, "/\x00")
}

// Arrays lists the md devices in block/: the entries named md* that have
// an md/ directory. Inactive arrays and containers are included. The
// names are sorted.
func (fsys FS) Arrays() ([]string, error) {
	ents, err := os.ReadDir(fsys.Path("block"))
	if err != nil {
		return nil, fmt.Errorf("sysfs: %w", err)
	}
	var out []string
	for _, e := range ents {
		n := e.Name()
		if !strings.HasPrefix(n, "md") {
			continue
		}
		if fi, err := os.Stat(fsys.Path("block", n, "md")); err == nil && fi.IsDir() {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out, nil
}

// Array returns the md array name (such as "md127"). An unknown name, or
// a block device that is not an md array, gives an error matching
// fs.ErrNotExist.
func (fsys FS) Array(name string) (Array, error) {
	if !validName(name) {
		return Array{}, fmt.Errorf("sysfs: invalid array name %q: %w", name, fs.ErrInvalid)
	}
	a := Array{fs: fsys, name: name}
	p := fsys.Path("block", name, "md")
	// The array's directory is resolved anyway (a.block); a stat of the
	// resolved md/ costs less than one through the block/NAME link.
	if r, err := fsys.resolve(fsys.Path("block", name)); err == nil {
		a.block, p = r, filepath.Join(r, "md")
	}
	fi, err := os.Stat(p)
	if err != nil {
		return Array{}, fmt.Errorf("sysfs: array %s: %w", name, err)
	}
	if !fi.IsDir() {
		return Array{}, fmt.Errorf("sysfs: array %s: %s is not a directory: %w", name, p, fs.ErrNotExist)
	}
	return a, nil
}

// join is filepath.Join(base, elem...) with one allocation when base and
// every element are already clean (no empty, "." or ".." element, no
// doubled or trailing slash), which the attribute paths of a status report
// are: a report builds hundreds of them.
func join(base string, elem ...string) string {
	n := len(base)
	clean := base != "" && (base == "/" || !strings.HasSuffix(base, "/")) && !strings.Contains(base, "//") && !strings.Contains(base, "/.")
	for _, e := range elem {
		if !clean {
			break
		}
		n += 1 + len(e)
		clean = e != "" && e[0] != '/' && e[len(e)-1] != '/' && e[0] != '.' && !strings.Contains(e, "//") && !strings.Contains(e, "/.")
	}
	if !clean || base == "/" {
		return filepath.Join(append([]string{base}, elem...)...)
	}
	var b strings.Builder
	b.Grow(n)
	b.WriteString(base)
	for _, e := range elem {
		b.WriteByte('/')
		b.WriteString(e)
	}
	return b.String()
}
