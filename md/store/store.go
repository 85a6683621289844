package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/google/renameio/v2"

	"github.com/go-mdraid/mdraid/md"
)

// Store errors. An *Error wraps one of them.
var (
	// ErrCorrupt: the stored records are not what Save wrote: not
	// JSON, wrong checksum, unknown fields, or invalid values.
	ErrCorrupt = errors.New("md: slot records are corrupt")
	// ErrVersion: the records were written in a format version this
	// package does not know.
	ErrVersion = errors.New("md: slot records have an unsupported format version")
)

// Error says why stored records were refused.
type Error struct {
	Path   string // the file, or "" for other stores
	Reason string
	Err    error // ErrCorrupt or ErrVersion
}

// Error returns the path, the category and the reason.
func (e *Error) Error() string {
	where := ""
	if e.Path != "" {
		where = " in " + e.Path
	}
	return fmt.Sprintf("%v%s: %s", e.Err, where, e.Reason)
}

// Unwrap returns the category sentinel.
func (e *Error) Unwrap() error { return e.Err }

// The file format.
const (
	// Format is the "format" field of a record file.
	Format = "go-mdraid-slot-records"
	// Version is the format version File writes when the records hold
	// no check records (Records.Checks), readable by every release.
	Version = 1
	// VersionChecks is the format version File writes when they do: a
	// release that does not know check records refuses the file with
	// ErrVersion instead of taking it for corrupt.
	VersionChecks = 2
	// VersionReAdds is the format version File writes when the records
	// hold re-add marks (Records.ReAdds), with or without check records:
	// a release that does not know them refuses the file with ErrVersion
	// rather than drop them (heal would then re-add a member it must not).
	VersionReAdds = 3
	// maxBytes bounds what Load reads.
	maxBytes = 16 << 20
)

// storeFile is the JSON form of a record file (see Encode).
type storeFile struct {
	Format   string      `json:"format"`
	Version  int         `json:"version"`
	Checksum string      `json:"checksum"`
	Arrays   []md.Record `json:"arrays"`
	// Checks are the check records; in version VersionChecks, and
	// optionally in VersionReAdds.
	Checks []md.CheckRecord `json:"checks,omitempty"`
	// ReAdds are heal's re-add marks; only in version VersionReAdds.
	ReAdds []md.ReAddMark `json:"re_adds,omitempty"`
}

// checksum returns the checksum of f's canonical content.
func (f storeFile) checksum() (string, error) {
	f.Checksum = ""
	b, err := json.Marshal(f)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

// Encode returns the file form of rs, with its checksum. It fails
// if a record is invalid, so that nothing invalid is ever written.
//
// The file form is one JSON object:
//
//	{
//	  "format": "go-mdraid-slot-records",
//	  "version": 1,
//	  "checksum": "sha256:<64 hex digits>",
//	  "arrays": [ Record, ... ],  (sorted by uuid)
//	  "checks": [ CheckRecord, ... ]  (sorted by uuid; versions 2 and 3)
//	  "re_adds": [ ReAddMark, ... ]  (sorted by uuid, slot, device_uuid; version 3 only)
//	}
//
// The version is 1 when there are no check records and no re-add marks
// (so that earlier releases keep reading the file), VersionChecks (2)
// when there are check records only, and VersionReAdds (3) when there
// are re-add marks.
//
// The checksum is the SHA-256 of the compact JSON encoding of the same
// object with "checksum" set to "" (the canonical content), so any change
// to a value, an added field or a changed time zone is detected.
func Encode(rs *md.Records) ([]byte, error) {
	f := storeFile{Format: Format, Version: Version, Arrays: []md.Record{}}
	if rs != nil && rs.Arrays != nil {
		f.Arrays = slices.Clone(rs.Arrays)
	}
	for i := range f.Arrays {
		r := &f.Arrays[i]
		r.Slots = slices.Clone(r.Slots)
		for j := range r.Slots {
			r.Slots[j].LastHealthy = r.Slots[j].LastHealthy.UTC()
		}
	}
	slices.SortFunc(f.Arrays, func(a, b md.Record) int { return strings.Compare(a.UUID, b.UUID) })
	if rs != nil && len(rs.Checks) > 0 {
		f.Version = VersionChecks
		f.Checks = slices.Clone(rs.Checks)
		for i := range f.Checks {
			c := &f.Checks[i]
			c.PassStarted, c.LastFinished = utcOrZero(c.PassStarted), utcOrZero(c.LastFinished)
		}
		slices.SortFunc(f.Checks, func(a, b md.CheckRecord) int { return strings.Compare(a.UUID, b.UUID) })
	}
	if rs != nil && len(rs.ReAdds) > 0 {
		f.Version = VersionReAdds
		f.ReAdds = slices.Clone(rs.ReAdds)
		for i := range f.ReAdds {
			f.ReAdds[i].Time = f.ReAdds[i].Time.UTC()
		}
		slices.SortFunc(f.ReAdds, compareReAdds)
	}
	if err := (&md.Records{Arrays: f.Arrays, Checks: f.Checks, ReAdds: f.ReAdds}).Validate(); err != nil {
		return nil, fmt.Errorf("md: refusing to store invalid records: %w", err)
	}
	sum, err := f.checksum()
	if err != nil {
		return nil, fmt.Errorf("md: encoding slot records: %w", err)
	}
	f.Checksum = sum
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("md: encoding slot records: %w", err)
	}
	return append(b, '\n'), nil
}

// compareReAdds orders re-add marks by array UUID, slot and device UUID.
func compareReAdds(a, b md.ReAddMark) int {
	if c := strings.Compare(a.UUID, b.UUID); c != 0 {
		return c
	}
	if a.Slot != b.Slot {
		return a.Slot - b.Slot
	}
	return strings.Compare(a.DeviceUUID, b.DeviceUUID)
}

// utcOrZero is t in UTC; the zero time stays zero (omitted from JSON).
func utcOrZero(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return t.UTC()
}

// Decode parses and checks the file form of records. Anything but
// exactly what Encode produces (up to whitespace) is refused with
// a *Error: unknown versions match ErrVersion, everything else
// (bad JSON, another format, unknown or missing fields, a checksum
// mismatch, invalid values) ErrCorrupt. path is only used in errors.
func Decode(b []byte, path string) (*md.Records, error) {
	corrupt := func(format string, args ...any) error {
		return &Error{Path: path, Reason: fmt.Sprintf(format, args...), Err: ErrCorrupt}
	}
	// Unmarshal checks the whole input is one JSON value (no trailing
	// data) before anything else is looked at.
	var head struct {
		Format  string `json:"format"`
		Version *int   `json:"version"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return nil, corrupt("not JSON: %v", err)
	}
	switch {
	case head.Format != Format:
		return nil, corrupt("format is %q, want %q", head.Format, Format)
	case head.Version == nil:
		return nil, corrupt("no version")
	case *head.Version != Version && *head.Version != VersionChecks && *head.Version != VersionReAdds:
		return nil, &Error{Path: path, Err: ErrVersion,
			Reason: fmt.Sprintf("version %d, this program reads versions %d to %d", *head.Version, Version, VersionReAdds)}
	}
	var f storeFile
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, corrupt("%v", err)
	}
	if f.Arrays == nil {
		return nil, corrupt("no arrays list")
	}
	switch {
	case f.Version == Version && f.Checks != nil:
		return nil, corrupt("check records in a version %d file", Version)
	case f.Version == VersionChecks && len(f.Checks) == 0:
		return nil, corrupt("a version %d file without check records", VersionChecks)
	case f.Version != VersionReAdds && f.ReAdds != nil:
		return nil, corrupt("re-add marks in a version %d file", f.Version)
	case f.Version == VersionReAdds && len(f.ReAdds) == 0:
		return nil, corrupt("a version %d file without re-add marks", VersionReAdds)
	case f.Version == VersionReAdds && f.Checks != nil && len(f.Checks) == 0:
		return nil, corrupt("an empty list of check records")
	}
	want, err := f.checksum()
	if err != nil {
		return nil, corrupt("%v", err)
	}
	if f.Checksum != want {
		return nil, corrupt("checksum is %q, content sums to %q", f.Checksum, want)
	}
	rs := &md.Records{Arrays: f.Arrays, Checks: f.Checks, ReAdds: f.ReAdds}
	if err := rs.Validate(); err != nil {
		return nil, corrupt("%v", err)
	}
	if !slices.IsSortedFunc(rs.Arrays, func(a, b md.Record) int { return strings.Compare(a.UUID, b.UUID) }) {
		return nil, corrupt("arrays are not sorted by uuid")
	}
	if !slices.IsSortedFunc(rs.Checks, func(a, b md.CheckRecord) int { return strings.Compare(a.UUID, b.UUID) }) {
		return nil, corrupt("checks are not sorted by uuid")
	}
	if !slices.IsSortedFunc(rs.ReAdds, compareReAdds) {
		return nil, corrupt("re-add marks are not sorted")
	}
	return rs, nil
}

// File keeps records in one JSON file, in the form Encode
// returns (format Format, version Version, a SHA-256 checksum
// over the canonical content, and the records). Save replaces the file
// atomically: it writes a temporary file in the same directory, fsyncs
// it, renames it over the old one and fsyncs the directory, so a crash
// leaves either the old records or the new ones.
//
// Two processes saving at once do not corrupt the file; the last one
// wins.
type File struct {
	path string
}

// NewFile returns a store for the file at path. Its directory must
// exist.
func NewFile(path string) *File { return &File{path: path} }

// Path returns the file name.
func (s *File) Path() string { return s.path }

// Load reads and checks the file. A missing file gives an error matching
// fs.ErrNotExist; bad content a *Error.
func (s *File) Load(ctx context.Context) (*md.Records, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f, err := os.Open(s.path)
	if err != nil {
		return nil, fmt.Errorf("md: loading slot records: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("md: loading slot records: %w", err)
	}
	if len(b) > maxBytes {
		return nil, &Error{Path: s.path, Err: ErrCorrupt, Reason: fmt.Sprintf("larger than %d bytes", maxBytes)}
	}
	return Decode(b, s.path)
}

// Save writes rs atomically (see File). Invalid records are refused
// and nothing is written.
func (s *File) Save(ctx context.Context, rs *md.Records) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	b, err := Encode(rs)
	if err != nil {
		return err
	}
	dir := filepath.Dir(s.path)
	// An existing file keeps its mode (a store made read-only stays so);
	// a new one is 0644.
	pf, err := renameio.NewPendingFile(s.path, renameio.WithTempDir(dir), renameio.WithPermissions(0o644), renameio.WithExistingPermissions())
	if err != nil {
		return s.saveError("creating a temporary file beside it", err)
	}
	defer pf.Cleanup()
	if _, err := pf.Write(b); err != nil {
		return s.saveError("writing", err)
	}
	if err := pf.CloseAtomicallyReplace(); err != nil {
		return s.saveError("replacing it", err)
	}
	if err := syncDir(dir); err != nil {
		return s.saveError("syncing its directory", err)
	}
	return nil
}

// saveError is a failed Save's error. It names the store's file, not the
// temporary file the error came from (which Save has removed), and keeps
// the cause (errors.Is works on fs.ErrPermission, unix.ENOSPC, ...).
func (s *File) saveError(step string, err error) error {
	var pe *os.PathError
	var le *os.LinkError
	switch {
	case errors.As(err, &pe):
		err = pe.Err
	case errors.As(err, &le):
		err = le.Err
	}
	return fmt.Errorf("md: saving slot records: %s: %s: %w", s.path, step, err)
}

// syncDir makes a rename in dir durable. File systems that cannot sync a
// directory (EINVAL, ENOTSUP) are tolerated: there the rename is as
// durable as they make it.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOTSUP) {
		return err
	}
	return nil
}

// Memory keeps records in memory, encoded as File would write
// them. The zero value is an empty store (Load gives fs.ErrNotExist until
// the first Save). It is safe for concurrent use.
type Memory struct {
	mu   sync.Mutex
	data []byte
}

// Load decodes the saved records.
func (s *Memory) Load(ctx context.Context) (*md.Records, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.data == nil {
		return nil, fmt.Errorf("md: loading slot records: %w", os.ErrNotExist)
	}
	return Decode(s.data, "")
}

// Save encodes and keeps rs.
func (s *Memory) Save(ctx context.Context, rs *md.Records) error {
	b, err := Encode(rs)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.data = b
	return nil
}

// Bytes returns what was last saved, in the file form.
func (s *Memory) Bytes() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.data)
}

// SetBytes replaces the stored form, for tests of corrupt content.
func (s *Memory) SetBytes(b []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.data = slices.Clone(b)
}
