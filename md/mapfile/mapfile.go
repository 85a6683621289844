// Package mapfile reads and writes mdadm's map file, /run/mdadm/map: the
// table of which md device holds which array, under which name. mdadm's
// --incremental finds an array it is adding to only through this file,
// and mdadm --detail --export takes MD_UUID and MD_DEVNAME (and with them
// udev's md-uuid-* and /dev/md/NAME links) from it, so whatever assembles
// or stops arrays alongside mdadm has to keep it as mdadm does.
//
// The format and the protocol are mdadm's (as read in
// md-raid-utilities/mdadm d1447022, mapfile.c; facts only): one line per
// array, "DEVNM METADATA UUID PATH", for example
//
//	md127 1.2 d4c3b2a1:...:... /dev/md/boot
//
// written to map.new and renamed over map, with map.lock held by flock
// while reading and rewriting. UUID is mdadm's in-memory form: for 0.90
// the MD_UUID text, for 1.x each 4-byte group of the MD_UUID text byte
// reversed (see UUIDText).
package mapfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/google/uuid"

	"github.com/go-mdraid/mdraid/superblock"
)

// DefaultDir is the directory of mdadm's map file.
const DefaultDir = "/run/mdadm"

// maxSize bounds how much of a map file is read: mdadm reads one line
// per array, and a machine has at most 2^20 md minors; 1 MiB is far more
// than any real map.
const maxSize = 1 << 20

// maxPath is the longest PATH mdadm reads back ("%200s").
const maxPath = 200

// Entry is one line of the map: one array.
type Entry struct {
	// Dev is the kernel name of the md device, "md127".
	Dev string
	// Metadata is the metadata version text: "0.90", "1.0", "1.1",
	// "1.2", or mdadm's external forms ("imsm", "external:/md127/0").
	Metadata string
	// UUID is the array UUID as mdadm writes it here (UUIDText).
	UUID string
	// Path is the name the array was given: "/dev/md/NAME", or
	// "/dev/mdN" when it has no name.
	Path string
}

// ErrInvalid is matched by the error for an Entry that cannot be written
// as a map line.
var ErrInvalid = errors.New("mapfile: invalid entry")

// mdDevName reports whether s is an md kernel name as the map holds one:
// "md" and a number, or "md_" and a name without white space or '/'
// (a plain function, not a regular expression compiled at start-up: every
// mdctl command would pay for it).
func mdDevName(s string) bool {
	rest, ok := strings.CutPrefix(s, "md")
	if !ok || rest == "" {
		return false
	}
	if name, ok := strings.CutPrefix(rest, "_"); ok {
		return name != "" && !strings.ContainsAny(name, " \t\n\f\r\v/")
	}
	for _, c := range rest {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// mapUUID reports whether s is four groups of eight lower-case hex digits
// joined by ':'.
func mapUUID(s string) bool {
	if len(s) != 35 {
		return false
	}
	for i, c := range s {
		switch {
		case i%9 == 8:
			if c != ':' {
				return false
			}
		case c >= '0' && c <= '9', c >= 'a' && c <= 'f':
		default:
			return false
		}
	}
	return true
}

// Validate reports whether e can be written as one map line that mdadm
// reads back as the same entry: no field is empty or holds white space
// or a control byte, Dev is an md kernel name, UUID is four groups of
// eight lower-case hex digits, and Path is absolute and at most 200
// bytes.
func (e Entry) Validate() error {
	bad := func(field, v, why string) error {
		return fmt.Errorf("%w: %s %q %s", ErrInvalid, field, v, why)
	}
	for _, f := range []struct{ name, v string }{{"device", e.Dev}, {"metadata", e.Metadata}, {"uuid", e.UUID}, {"path", e.Path}} {
		if f.v == "" {
			return bad(f.name, f.v, "is empty")
		}
		if strings.IndexFunc(f.v, func(r rune) bool { return r <= ' ' || r == 0x7f }) >= 0 {
			return bad(f.name, f.v, "holds white space or a control byte")
		}
	}
	switch {
	case !mdDevName(e.Dev):
		return bad("device", e.Dev, "is not an md device name")
	case !mapUUID(e.UUID):
		return bad("uuid", e.UUID, "is not four groups of eight hex digits")
	case !strings.HasPrefix(e.Path, "/"):
		return bad("path", e.Path, "is not absolute")
	case len(e.Path) > maxPath:
		return bad("path", e.Path, "is longer than 200 bytes")
	}
	return nil
}

// UUIDText returns the array UUID of sb as mdadm writes it in the map.
// mdadm keeps the UUID as four host-order ints: for 0.90 they are the
// superblock's four uuid words, so the text is MD_UUID's; for 1.x they
// are a byte copy of set_uuid, so on the little-endian hosts md runs on
// each group of MD_UUID's text appears byte reversed. (Detail.c undoes
// the same reversal to print MD_UUID.)
func UUIDText(sb *superblock.Superblock) string {
	u := sb.SetUUID
	if sb.Version != superblock.Version090 {
		for i := 0; i < 16; i += 4 {
			u[i], u[i+1], u[i+2], u[i+3] = u[i+3], u[i+2], u[i+1], u[i]
		}
	}
	return Groups(u)
}

// Groups formats u as mdadm's "%08x:%08x:%08x:%08x" of its bytes in
// order: the form of MD_UUID for both metadata versions when u is
// superblock.Superblock.SetUUID.
func Groups(u uuid.UUID) string {
	return fmt.Sprintf("%x:%x:%x:%x", u[0:4], u[4:8], u[8:12], u[12:16])
}

// Parse reads map lines. As mdadm does, lines that do not parse (not four
// fields, or a field that fails Validate) are skipped, not an error: the
// file is mdadm's and an odd line in it must not stop assembly.
func Parse(b []byte) []Entry {
	var out []Entry
	for _, line := range bytes.Split(b, []byte("\n")) {
		f := strings.Fields(string(line))
		if len(f) != 4 {
			continue
		}
		e := Entry{Dev: f[0], Metadata: f[1], UUID: f[2], Path: f[3]}
		if e.Validate() == nil {
			out = append(out, e)
		}
	}
	return out
}

// Format returns the map file text for entries, one line each. It fails
// on an entry that does not Validate, naming it.
func Format(entries []Entry) ([]byte, error) {
	var b bytes.Buffer
	for _, e := range entries {
		if err := e.Validate(); err != nil {
			return nil, err
		}
		fmt.Fprintf(&b, "%s %s %s %s\n", e.Dev, e.Metadata, e.UUID, e.Path)
	}
	return b.Bytes(), nil
}

// Map is the map file in a directory (DefaultDir on a running system).
type Map struct {
	// Dir holds map, map.new and map.lock.
	Dir string
}

// Lock is a held map lock. Its methods read and rewrite the map while
// it is held; the Map methods of the same names take and release the
// lock around one change.
type Lock struct {
	m    Map
	f    *os.File
	path string
}

// Lock takes the map lock as mdadm does: create map.lock, flock it
// exclusively, and if the file was unlinked meanwhile (its previous owner
// released it), start again. The directory is created (0755) if missing.
func (m Map) Lock() (*Lock, error) { return m.lock(nil) }

// ErrLockTimeout is matched by the error of [Map.LockWithin] when the
// lock stayed held by another process for the whole wait.
var ErrLockTimeout = errors.New("mapfile: the map lock stayed held by another process")

// LockWithin is [Map.Lock] that gives up after wait: the error then
// matches [ErrLockTimeout] and nothing was taken.
func (m Map) LockWithin(wait time.Duration) (*Lock, error) {
	deadline := time.Now().Add(wait)
	l, err := m.lock(&deadline)
	if errors.Is(err, ErrLockTimeout) {
		err = fmt.Errorf("%w (waited %v)", err, wait)
	}
	return l, err
}

// lock takes the lock, waiting until deadline when it is not nil and
// without end otherwise.
func (m Map) lock(deadline *time.Time) (*Lock, error) {
	if err := os.MkdirAll(m.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("mapfile: %w", err)
	}
	p := filepath.Join(m.Dir, "map.lock")
	for range 100 {
		f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			return nil, fmt.Errorf("mapfile: %w", err)
		}
		if deadline == nil {
			err = flock(f)
		} else {
			err = flockUntil(f, *deadline)
		}
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("mapfile: lock %s: %w", p, err)
		}
		var st syscall.Stat_t
		if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
			f.Close()
			return nil, fmt.Errorf("mapfile: %w", &fs.PathError{Op: "fstat", Path: p, Err: err})
		}
		if st.Nlink > 0 {
			return &Lock{m: m, f: f, path: p}, nil
		}
		f.Close()
	}
	return nil, fmt.Errorf("mapfile: lock %s: released 100 times while waiting for it", p)
}

func flock(f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if err != syscall.EINTR {
			return err
		}
	}
}

// lockPoll is how often flockUntil tries again.
const lockPoll = 5 * time.Millisecond

// flockUntil takes f's lock exclusively, trying until deadline.
func flockUntil(f *os.File, deadline time.Time) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		switch {
		case err == nil:
			return nil
		case err == syscall.EINTR:
			continue
		case err != syscall.EWOULDBLOCK:
			return err
		case !time.Now().Before(deadline):
			return ErrLockTimeout
		}
		time.Sleep(lockPoll)
	}
}

// Unlock releases the lock as mdadm does: unlink map.lock, then close it.
func (l *Lock) Unlock() error {
	err := os.Remove(l.path)
	if errors.Is(err, fs.ErrNotExist) {
		err = nil
	}
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("mapfile: unlock: %w", err)
	}
	return nil
}

// Read returns the entries of the map file. A missing file is an error
// matching fs.ErrNotExist: mdadm then rebuilds the map from the running
// arrays, and a caller decides whether to do without it.
func (m Map) Read() ([]Entry, error) {
	f, err := os.Open(filepath.Join(m.Dir, "map"))
	if err != nil {
		return nil, fmt.Errorf("mapfile: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxSize+1))
	if err != nil {
		return nil, fmt.Errorf("mapfile: %w", err)
	}
	if len(b) > maxSize {
		return nil, fmt.Errorf("mapfile: %s is larger than %d bytes", f.Name(), maxSize)
	}
	return Parse(b), nil
}

// Write replaces the map file with entries: it writes map.new (0600) and
// renames it over map, as mdadm does. Call it with the lock held.
func (m Map) Write(entries []Entry) error {
	b, err := Format(entries)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(m.Dir, 0o755); err != nil {
		return fmt.Errorf("mapfile: %w", err)
	}
	tmp := filepath.Join(m.Dir, "map.new")
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("mapfile: %w", err)
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, filepath.Join(m.Dir, "map"))
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("mapfile: %w", err)
	}
	return nil
}

// Update sets the entry for e.Dev, taking the lock for it: any entry for
// the same device or the same UUID is replaced, as mdadm's map_update
// does.
func (m Map) Update(e Entry) error { return m.locked(func(l *Lock) error { return l.Update(e) }) }

// Remove deletes the entry for device dev ("md127"), taking the lock for
// it. A missing map file or entry is not an error.
func (m Map) Remove(dev string) error { return m.locked(func(l *Lock) error { return l.Remove(dev) }) }

func (m Map) locked(f func(*Lock) error) error {
	l, err := m.Lock()
	if err != nil {
		return err
	}
	err = f(l)
	if uerr := l.Unlock(); err == nil {
		err = uerr
	}
	return err
}

// Read is Map.Read under the held lock.
func (l *Lock) Read() ([]Entry, error) { return l.m.Read() }

// Update is Map.Update under the held lock.
func (l *Lock) Update(e Entry) error {
	if err := e.Validate(); err != nil {
		return err
	}
	return l.edit(func(old []Entry) []Entry {
		out := []Entry{e}
		for _, o := range old {
			if o.Dev != e.Dev && o.UUID != e.UUID {
				out = append(out, o)
			}
		}
		return out
	})
}

// Remove is Map.Remove under the held lock.
func (l *Lock) Remove(dev string) error {
	return l.edit(func(old []Entry) []Entry {
		var out []Entry
		for _, o := range old {
			if o.Dev != dev {
				out = append(out, o)
			}
		}
		return out
	})
}

func (l *Lock) edit(f func([]Entry) []Entry) error {
	old, err := l.m.Read()
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return l.m.Write(f(old))
}

// Find returns the entry for device dev among entries.
func Find(entries []Entry, dev string) (Entry, bool) {
	for _, e := range entries {
		if e.Dev == dev {
			return e, true
		}
	}
	return Entry{}, false
}
