// Package sysfstree captures a part of a sysfs tree into a plain-text
// manifest and recreates it in a directory, so that tests of the sysfs and
// md packages can run against real captures from a real kernel.
//
// # Why a manifest
//
// sysfs is full of symbolic links (block/md127 -> ../devices/virtual/...),
// and Go module zips drop symbolic links, so a captured tree cannot be
// committed as files. The manifest records every directory, readable
// attribute, unreadable attribute and link target as one line of text, and
// [Materialize] builds the tree again (links included) under a temporary
// directory.
//
// # Format
//
// The first line is "# sysfstree v1". Each other non-empty line that does
// not start with '#' is
//
//	KIND QUOTED-PATH [QUOTED-DATA]
//
// where QUOTED-* are Go double-quoted strings (strconv.Quote), paths are
// relative to the sysfs root and use '/', and KIND is one of:
//
//	d  a directory
//	f  a readable attribute; DATA is its content as read
//	w  an attribute that could not be read (write-only, or a read error);
//	   DATA is the reason
//	l  a symbolic link; DATA is its target as read with readlink
package sysfstree

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Header is the first line of every manifest.
const Header = "# sysfstree v1"

// Kind says what a manifest entry is.
type Kind byte

// Entry kinds.
const (
	Dir        Kind = 'd' // a directory
	File       Kind = 'f' // a readable attribute
	Unreadable Kind = 'w' // an attribute that could not be read
	Link       Kind = 'l' // a symbolic link
)

// Entry is one line of a manifest.
type Entry struct {
	Kind Kind
	// Path is relative to the sysfs root, with '/' separators.
	Path string
	// Data is the content of a File, the target of a Link, or the reason
	// an Unreadable attribute could not be read.
	Data string
}

// ErrFormat is matched by every error that Parse returns for a malformed
// manifest.
var ErrFormat = errors.New("sysfstree: malformed manifest")

// Parse reads a manifest.
func Parse(r io.Reader) ([]Entry, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	var out []Entry
	line := 0
	for sc.Scan() {
		line++
		text := sc.Text()
		if line == 1 {
			if text != Header {
				return nil, fmt.Errorf("%w: line 1: want %q, got %q", ErrFormat, Header, text)
			}
			continue
		}
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		e, err := parseLine(text)
		if err != nil {
			return nil, fmt.Errorf("%w: line %d: %v", ErrFormat, line, err)
		}
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("sysfstree: reading manifest: %w", err)
	}
	if line == 0 {
		return nil, fmt.Errorf("%w: empty input", ErrFormat)
	}
	return out, nil
}

func parseLine(text string) (Entry, error) {
	if len(text) < 3 || text[1] != ' ' {
		return Entry{}, errors.New("want KIND QUOTED-PATH [QUOTED-DATA]")
	}
	e := Entry{Kind: Kind(text[0])}
	switch e.Kind {
	case Dir, File, Unreadable, Link:
	default:
		return Entry{}, fmt.Errorf("unknown kind %q", text[0])
	}
	rest := text[2:]
	p, err := strconv.QuotedPrefix(rest)
	if err != nil {
		return Entry{}, fmt.Errorf("path: %v", err)
	}
	if e.Path, err = strconv.Unquote(p); err != nil {
		return Entry{}, fmt.Errorf("path: %v", err)
	}
	if err := checkPath(e.Path); err != nil {
		return Entry{}, err
	}
	rest = rest[len(p):]
	switch {
	case rest == "" && (e.Kind == Dir || e.Kind == Unreadable):
		return e, nil
	case rest == "":
		return Entry{}, fmt.Errorf("kind %c needs data", e.Kind)
	case rest[0] != ' ':
		return Entry{}, errors.New("want a space after the path")
	}
	d, err := strconv.QuotedPrefix(rest[1:])
	if err != nil || len(d) != len(rest)-1 {
		return Entry{}, fmt.Errorf("data: want one quoted string")
	}
	if e.Data, err = strconv.Unquote(d); err != nil {
		return Entry{}, fmt.Errorf("data: %v", err)
	}
	if e.Kind == Link && path.IsAbs(e.Data) {
		return Entry{}, fmt.Errorf("link %q has an absolute target %q", e.Path, e.Data)
	}
	return e, nil
}

func checkPath(p string) error {
	if p == "" || path.IsAbs(p) || path.Clean(p) != p || p == ".." || strings.HasPrefix(p, "../") {
		return fmt.Errorf("path %q is not a clean relative path", p)
	}
	return nil
}

// Write writes a manifest: the header, then the entries sorted by path.
func Write(w io.Writer, entries []Entry) error {
	sorted := append([]Entry(nil), entries...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Path < sorted[j].Path })
	bw := bufio.NewWriter(w)
	fmt.Fprintln(bw, Header)
	for _, e := range sorted {
		if err := checkPath(e.Path); err != nil {
			return fmt.Errorf("sysfstree: %w", err)
		}
		if e.Kind == Dir || (e.Kind == Unreadable && e.Data == "") {
			fmt.Fprintf(bw, "%c %s\n", e.Kind, strconv.Quote(e.Path))
			continue
		}
		fmt.Fprintf(bw, "%c %s %s\n", e.Kind, strconv.Quote(e.Path), strconv.Quote(e.Data))
	}
	return bw.Flush()
}

// Materialize recreates the entries below dir, which must exist. Links get
// their recorded targets; Unreadable attributes become empty write-only
// files, so that code which opens an attribute for writing finds it, as it
// would on a real system.
func Materialize(dir string, entries []Entry) error {
	for _, e := range entries {
		if err := checkPath(e.Path); err != nil {
			return fmt.Errorf("sysfstree: %w", err)
		}
		p := filepath.Join(dir, filepath.FromSlash(e.Path))
		if e.Kind != Dir {
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return fmt.Errorf("sysfstree: %w", err)
			}
		}
		var err error
		switch e.Kind {
		case Dir:
			err = os.MkdirAll(p, 0o755)
		case File:
			err = os.WriteFile(p, []byte(e.Data), 0o644)
		case Unreadable:
			err = os.WriteFile(p, nil, 0o200)
		case Link:
			if path.IsAbs(e.Data) {
				return fmt.Errorf("sysfstree: link %q has an absolute target", e.Path)
			}
			err = os.Symlink(filepath.FromSlash(e.Data), p)
		default:
			return fmt.Errorf("sysfstree: %q: unknown kind %q", e.Path, e.Kind)
		}
		if err != nil {
			return fmt.Errorf("sysfstree: %w", err)
		}
	}
	return nil
}

// ParseFile reads the manifest at name.
func ParseFile(name string) ([]Entry, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, fmt.Errorf("sysfstree: %w", err)
	}
	defer f.Close()
	entries, err := Parse(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return entries, nil
}

// MaterializeFile parses the manifest at name and materializes it below dir.
func MaterializeFile(dir, name string) error {
	entries, err := ParseFile(name)
	if err != nil {
		return err
	}
	return Materialize(dir, entries)
}
