package store

// Disk-chosen strings (names, serials, WWNs) through md.NewRecord and a
// File: stored escaped when not UTF-8, and always loading back unchanged.

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"unicode/utf8"

	qt "github.com/frankban/quicktest"

	"github.com/go-mdraid/mdraid/md"
)

// storeRoundTrip records a, saves the records in a FileStore and loads
// them back: they must be exactly what was saved.
func storeRoundTrip(t testing.TB, a md.Array) {
	t.Helper()
	rec, err := md.NewRecord(a, t0)
	if err != nil {
		t.Fatalf("NewRecord: %v", err)
	}
	for _, s := range []string{rec.Name, rec.Metadata} {
		if !utf8.ValidString(s) {
			t.Fatalf("record holds %q", s)
		}
	}
	rs := &md.Records{}
	rs.Put(rec)
	st := NewFile(filepath.Join(t.TempDir(), "records.json"))
	ctx := context.Background()
	if err := st.Save(ctx, rs); err != nil {
		t.Fatalf("Save: %v", err)
	}
	got, err := st.Load(ctx)
	if err != nil {
		t.Fatalf("Load after Save: %v", err)
	}
	if !reflect.DeepEqual(got, rs) {
		t.Fatalf("round trip changed the records:\n got %#v\nwant %#v", got, rs)
	}
	// Saving what was loaded gives the same bytes again.
	b1, err := Encode(rs)
	if err != nil {
		t.Fatal(err)
	}
	b2, err := Encode(got)
	if err != nil {
		t.Fatal(err)
	}
	if string(b1) != string(b2) {
		t.Fatalf("encodings differ:\n%s\n%s", b1, b2)
	}
}

// TestStoreHostileStrings: a name or serial that is not UTF-8 is stored
// escaped, and the store still loads.
func TestStoreHostileStrings(t *testing.T) {
	for _, tt := range []struct{ name, serial, wwn string }{
		{"vmtest:a7\xff", "S1", ""},
		{"boot", "\xfe\xff\x00serial", "naa.\x80"},
		{"h:\n  health: ONLINE\x1b[8m", "S\u2028", "<&>"},
	} {
		storeRoundTrip(t, hostileArray(tt.name, tt.serial, tt.wwn))
	}
	rec, err := md.NewRecord(hostileArray("vmtest:a7\xff", "S1", ""), t0)
	qt.Assert(t, err, qt.IsNil)
	qt.Check(t, rec.Name, qt.Equals, `vmtest:a7\xff`)
}

// TestEncodeRefusesInvalidUTF8: records that could not load back are never
// written.
func TestEncodeRefusesInvalidUTF8(t *testing.T) {
	c := qt.New(t)
	rec, err := md.NewRecord(hostileArray("boot", "S1", ""), t0)
	c.Assert(err, qt.IsNil)
	bad := rec
	bad.Slots = slices.Clone(rec.Slots)
	bad.Slots[1].Serial = "S\xff"
	st := NewFile(filepath.Join(t.TempDir(), "records.json"))
	ctx := context.Background()
	c.Assert(st.Save(ctx, &md.Records{Arrays: []md.Record{rec}}), qt.IsNil)
	before, err := os.ReadFile(st.Path())
	c.Assert(err, qt.IsNil)
	c.Check(st.Save(ctx, &md.Records{Arrays: []md.Record{bad}}), qt.ErrorMatches, `.*serial "S\\\\xff" is not valid UTF-8.*`)
	after, err := os.ReadFile(st.Path())
	c.Assert(err, qt.IsNil)
	c.Check(string(after), qt.Equals, string(before))

	a := hostileArray("boot", "S1", "")
	a.Slots[0].Member.ByPath = "pci-\xff"
	_, err = md.NewRecord(a, t0)
	c.Check(err, qt.ErrorMatches, `md: not recording md0: .*`)
}

// FuzzStoreRoundTrip feeds arbitrary names, serials and WWNs through
// NewRecord and the store: every store written reloads unchanged.
func FuzzStoreRoundTrip(f *testing.F) {
	f.Add("boot", "S1", "naa.5000")
	f.Add("vmtest:a7\xff", "\xfe", "")
	f.Add("h:\n\x1b[8m", "\u2028", "<&>\\")
	f.Fuzz(func(t *testing.T, name, serial, wwn string) {
		storeRoundTrip(t, hostileArray(name, serial, wwn))
	})
}
