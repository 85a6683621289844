package md

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

	"github.com/google/renameio/v2"
)

// Store keeps slot records. An embedding OS can keep them wherever it likes
// (a file, a config partition, an EFI variable); FileStore keeps them in a
// file and MemoryStore in memory.
//
// Load returns an error matching fs.ErrNotExist when nothing was ever
// saved, and one matching ErrStoreCorrupt or ErrStoreVersion when the
// records cannot be trusted: callers must then act on nothing.
type Store interface {
	Load(ctx context.Context) (*Records, error)
	Save(ctx context.Context, rs *Records) error
}

// Store errors. A *StoreError wraps one of them.
var (
	// ErrStoreCorrupt: the stored records are not what Save wrote: not
	// JSON, wrong checksum, unknown fields, or invalid values.
	ErrStoreCorrupt = errors.New("md: slot records are corrupt")
	// ErrStoreVersion: the records were written in a format version this
	// package does not know.
	ErrStoreVersion = errors.New("md: slot records have an unsupported format version")
)

// StoreError says why stored records were refused.
type StoreError struct {
	Path   string // the file, or "" for other stores
	Reason string
	Err    error // ErrStoreCorrupt or ErrStoreVersion
}

// Error returns the path, the category and the reason.
func (e *StoreError) Error() string {
	where := ""
	if e.Path != "" {
		where = " in " + e.Path
	}
	return fmt.Sprintf("%v%s: %s", e.Err, where, e.Reason)
}

// Unwrap returns the category sentinel.
func (e *StoreError) Unwrap() error { return e.Err }

// The file format.
const (
	// StoreFormat is the "format" field of a record file.
	StoreFormat = "go-mdraid-slot-records"
	// StoreVersion is the format version FileStore writes and reads.
	StoreVersion = 1
	// maxStoreBytes bounds what Load reads.
	maxStoreBytes = 16 << 20
)

// storeFile is the JSON form of a record file (see EncodeRecords).
type storeFile struct {
	Format   string   `json:"format"`
	Version  int      `json:"version"`
	Checksum string   `json:"checksum"`
	Arrays   []Record `json:"arrays"`
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

// EncodeRecords returns the file form of rs, with its checksum. It fails
// if a record is invalid, so that nothing invalid is ever written.
//
// The file form is one JSON object:
//
//	{
//	  "format": "go-mdraid-slot-records",
//	  "version": 1,
//	  "checksum": "sha256:<64 hex digits>",
//	  "arrays": [ Record, ... ]   (sorted by uuid)
//	}
//
// The checksum is the SHA-256 of the compact JSON encoding of the same
// object with "checksum" set to "" (the canonical content), so any change
// to a value, an added field or a changed time zone is detected.
func EncodeRecords(rs *Records) ([]byte, error) {
	f := storeFile{Format: StoreFormat, Version: StoreVersion, Arrays: []Record{}}
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
	slices.SortFunc(f.Arrays, func(a, b Record) int { return strings.Compare(a.UUID, b.UUID) })
	if err := (&Records{Arrays: f.Arrays}).validate(); err != nil {
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

// DecodeRecords parses and checks the file form of records. Anything but
// exactly what EncodeRecords produces (up to whitespace) is refused with
// a *StoreError: unknown versions match ErrStoreVersion, everything else
// (bad JSON, another format, unknown or missing fields, a checksum
// mismatch, invalid values) ErrStoreCorrupt. path is only used in errors.
func DecodeRecords(b []byte, path string) (*Records, error) {
	corrupt := func(format string, args ...any) error {
		return &StoreError{Path: path, Reason: fmt.Sprintf(format, args...), Err: ErrStoreCorrupt}
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
	case head.Format != StoreFormat:
		return nil, corrupt("format is %q, want %q", head.Format, StoreFormat)
	case head.Version == nil:
		return nil, corrupt("no version")
	case *head.Version != StoreVersion:
		return nil, &StoreError{Path: path, Err: ErrStoreVersion,
			Reason: fmt.Sprintf("version %d, this program reads version %d", *head.Version, StoreVersion)}
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
	want, err := f.checksum()
	if err != nil {
		return nil, corrupt("%v", err)
	}
	if f.Checksum != want {
		return nil, corrupt("checksum is %q, content sums to %q", f.Checksum, want)
	}
	rs := &Records{Arrays: f.Arrays}
	if err := rs.validate(); err != nil {
		return nil, corrupt("%v", err)
	}
	if !slices.IsSortedFunc(rs.Arrays, func(a, b Record) int { return strings.Compare(a.UUID, b.UUID) }) {
		return nil, corrupt("arrays are not sorted by uuid")
	}
	return rs, nil
}

// FileStore keeps records in one JSON file, in the form EncodeRecords
// returns (format StoreFormat, version StoreVersion, a SHA-256 checksum
// over the canonical content, and the records). Save replaces the file
// atomically: it writes a temporary file in the same directory, fsyncs
// it, renames it over the old one and fsyncs the directory, so a crash
// leaves either the old records or the new ones.
//
// Two processes saving at once do not corrupt the file; the last one
// wins.
type FileStore struct {
	path string
}

// NewFileStore returns a store for the file at path. Its directory must
// exist.
func NewFileStore(path string) *FileStore { return &FileStore{path: path} }

// Path returns the file name.
func (s *FileStore) Path() string { return s.path }

// Load reads and checks the file. A missing file gives an error matching
// fs.ErrNotExist; bad content a *StoreError.
func (s *FileStore) Load(ctx context.Context) (*Records, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f, err := os.Open(s.path)
	if err != nil {
		return nil, fmt.Errorf("md: loading slot records: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxStoreBytes+1))
	if err != nil {
		return nil, fmt.Errorf("md: loading slot records: %w", err)
	}
	if len(b) > maxStoreBytes {
		return nil, &StoreError{Path: s.path, Err: ErrStoreCorrupt, Reason: fmt.Sprintf("larger than %d bytes", maxStoreBytes)}
	}
	return DecodeRecords(b, s.path)
}

// Save writes rs atomically (see FileStore). Invalid records are refused
// and nothing is written.
func (s *FileStore) Save(ctx context.Context, rs *Records) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	b, err := EncodeRecords(rs)
	if err != nil {
		return err
	}
	dir := filepath.Dir(s.path)
	pf, err := renameio.NewPendingFile(s.path, renameio.WithTempDir(dir), renameio.WithPermissions(0o644))
	if err != nil {
		return fmt.Errorf("md: saving slot records: %w", err)
	}
	defer pf.Cleanup()
	if _, err := pf.Write(b); err != nil {
		return fmt.Errorf("md: saving slot records: %w", err)
	}
	if err := pf.CloseAtomicallyReplace(); err != nil {
		return fmt.Errorf("md: saving slot records: %w", err)
	}
	if err := syncDir(dir); err != nil {
		return fmt.Errorf("md: saving slot records: %w", err)
	}
	return nil
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

// MemoryStore keeps records in memory, encoded as FileStore would write
// them. The zero value is an empty store (Load gives fs.ErrNotExist until
// the first Save). It is safe for concurrent use.
type MemoryStore struct {
	mu   sync.Mutex
	data []byte
}

// Load decodes the saved records.
func (s *MemoryStore) Load(ctx context.Context) (*Records, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.data == nil {
		return nil, fmt.Errorf("md: loading slot records: %w", os.ErrNotExist)
	}
	return DecodeRecords(s.data, "")
}

// Save encodes and keeps rs.
func (s *MemoryStore) Save(ctx context.Context, rs *Records) error {
	b, err := EncodeRecords(rs)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.data = b
	return nil
}

// Bytes returns what was last saved, in the file form.
func (s *MemoryStore) Bytes() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.data)
}

// SetBytes replaces the stored form, for tests of corrupt content.
func (s *MemoryStore) SetBytes(b []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.data = slices.Clone(b)
}
