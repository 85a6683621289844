package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/go-mdraid/mdraid/internal/mdtest"
	"github.com/go-mdraid/mdraid/md"
)

// maxFuzzStore bounds the store files FuzzStoreLoad looks at.
const maxFuzzStore = 64 << 10

// FuzzStoreLoad loads arbitrary bytes as a record file through FileStore:
// the result is records or a *Error matching ErrCorrupt or
// ErrVersion, never a panic. The same bytes are also loaded after
// being resealed (format, version and a correct checksum filled in), so
// that the value checks behind the checksum are reached. Whatever loads
// saves again, and its encoding is stable.
func FuzzStoreLoad(f *testing.F) {
	for _, rs := range []*md.Records{
		{Arrays: []md.Record{}},
		mdtest.RecordsOf(f, mdtest.HealthyArray(2)),
		mdtest.RecordsOf(f, mdtest.HealthyArray(3), hostileArray("h:\n\x1b[8m", "\u2028", "<&>\\")),
	} {
		b, err := Encode(rs)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		f.Add(bytes.ReplaceAll(b, []byte(`"version": 1`), []byte(`"version": 2`)))
		f.Add(append(bytes.Clone(b), "{}"...))
	}
	f.Add([]byte(`{"format":"go-mdraid-slot-records","version":1,"checksum":"","arrays":null}`))
	f.Add([]byte("\x00\xff"))
	path := filepath.Join(f.TempDir(), "records.json")
	st := NewFile(path)
	ctx := context.Background()
	load := func(t *testing.T, b []byte) *md.Records {
		t.Helper()
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		rs, err := st.Load(ctx)
		if err != nil {
			var se *Error
			if rs != nil || !errors.As(err, &se) || se.Path != path ||
				!(errors.Is(err, ErrCorrupt) || errors.Is(err, ErrVersion)) {
				t.Fatalf("Load: records %v, error %#v", rs, err)
			}
			return nil
		}
		if rs == nil || rs.Arrays == nil {
			t.Fatal("Load: no records and no error")
		}
		enc1, err := Encode(rs)
		if err != nil {
			t.Fatalf("records that loaded do not save: %v", err)
		}
		rs2, err := Decode(enc1, "")
		if err != nil {
			t.Fatalf("saved records do not load: %v", err)
		}
		enc2, err := Encode(rs2)
		if err != nil || !bytes.Equal(enc1, enc2) {
			t.Fatalf("second encoding differs (%v):\n%s\n%s", err, enc1, enc2)
		}
		return rs
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > maxFuzzStore {
			return
		}
		load(t, b)
		// Reseal: parse leniently, then write what Save would have
		// checksummed.
		var sf storeFile
		if json.Unmarshal(b, &sf) != nil {
			return
		}
		sf.Format, sf.Version = Format, Version
		sum, err := sf.checksum()
		if err != nil {
			return // values JSON cannot encode (a time outside year 0-9999)
		}
		sf.Checksum = sum
		sealed, err := json.Marshal(sf)
		if err != nil {
			t.Fatal(err)
		}
		load(t, sealed)
	})
}
