package store

import (
	"bytes"
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	qt "github.com/frankban/quicktest"

	"github.com/go-mdraid/mdraid/internal/mdtest"
	"github.com/go-mdraid/mdraid/md"
)

func testRecords(t testing.TB) *md.Records {
	t.Helper()
	var rs md.Records
	for i, n := range []int{2, 4} {
		a := mdtest.HealthyArray(n)
		if i == 1 {
			a.UUID = "00000000-1111-2222-3333-444444444444"
			a.Level, a.Metadata = "raid5", "1.2"
		}
		r, err := md.NewRecord(a, mdtest.RecordTime.Add(time.Duration(i)*time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		rs.Put(r)
	}
	return &rs
}

// checkEmptyThenRoundTrip checks that the store s, never saved to,
// loads as fs.ErrNotExist, then that it gives back want once saved. It
// returns want.
func checkEmptyThenRoundTrip(c *qt.C, s md.Store, want *md.Records) *md.Records {
	c.Helper()
	ctx := context.Background()
	_, err := s.Load(ctx)
	c.Assert(err, qt.ErrorIs, fs.ErrNotExist)
	c.Assert(s.Save(ctx, want), qt.IsNil)
	got, err := s.Load(ctx)
	c.Assert(err, qt.IsNil)
	c.Assert(got, qt.DeepEquals, want)
	return want
}

func TestFileRoundTrip(t *testing.T) {
	c := qt.New(t)
	ctx := context.Background()
	p := filepath.Join(t.TempDir(), "slots.json")
	s := NewFile(p)
	want := checkEmptyThenRoundTrip(c, s, testRecords(t))

	// The file is readable JSON with the documented header.
	b, err := os.ReadFile(p)
	c.Assert(err, qt.IsNil)
	var head map[string]any
	c.Assert(json.Unmarshal(b, &head), qt.IsNil)
	c.Assert(head["format"], qt.Equals, "go-mdraid-slot-records")
	c.Assert(head["version"], qt.Equals, float64(1))
	c.Assert(head["checksum"], qt.Matches, `sha256:[0-9a-f]{64}`)

	// Whitespace does not matter: the checksum is over the canonical form.
	var compact bytes.Buffer
	c.Assert(json.Compact(&compact, b), qt.IsNil)
	got, err := Decode(compact.Bytes(), "")
	c.Assert(err, qt.IsNil)
	c.Assert(got, qt.DeepEquals, want)

	// Saving again replaces; no temporary files are left behind.
	want.Arrays = want.Arrays[:1]
	c.Assert(s.Save(ctx, want), qt.IsNil)
	got, err = s.Load(ctx)
	c.Assert(err, qt.IsNil)
	c.Assert(got, qt.DeepEquals, want)
	ents, err := os.ReadDir(filepath.Dir(p))
	c.Assert(err, qt.IsNil)
	c.Assert(ents, qt.HasLen, 1)

	// An empty store is valid too.
	c.Assert(s.Save(ctx, &md.Records{}), qt.IsNil)
	got, err = s.Load(ctx)
	c.Assert(err, qt.IsNil)
	c.Assert(got.Arrays, qt.HasLen, 0)
}

func TestMemory(t *testing.T) {
	c := qt.New(t)
	ctx := context.Background()
	var s Memory
	checkEmptyThenRoundTrip(c, &s, testRecords(t))
	s.SetBytes(bytes.Replace(s.Bytes(), []byte("raid5"), []byte("raid6"), 1))
	_, err := s.Load(ctx)
	c.Assert(err, qt.ErrorIs, ErrCorrupt)
}

// edit decodes the file form, changes it and re-encodes it; with resum it
// also fixes the checksum, so that only validation can catch the change.
func edit(t testing.TB, b []byte, resum bool, f func(m map[string]any)) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	f(m)
	if resum {
		var sf storeFile
		m["checksum"] = ""
		nb, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(nb, &sf); err != nil {
			t.Fatal(err)
		}
		sum, err := sf.checksum()
		if err != nil {
			t.Fatal(err)
		}
		m["checksum"] = sum
	}
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func slot(m map[string]any, array, slot int) map[string]any {
	return m["arrays"].([]any)[array].(map[string]any)["slots"].([]any)[slot].(map[string]any)
}

func arrayOf(m map[string]any, array int) map[string]any {
	return m["arrays"].([]any)[array].(map[string]any)
}

func TestDecodeRefusesCorruption(t *testing.T) {
	good, err := Encode(testRecords(t))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		b       []byte
		want    error
		message string // regexp on the error
	}{
		{"empty", nil, ErrCorrupt, `.*not JSON.*`},
		{"truncated", good[:len(good)/2], ErrCorrupt, `.*not JSON.*`},
		{"not an object", []byte(`[1,2]`), ErrCorrupt, `.*not JSON.*`},
		{"other format", edit(t, good, false, func(m map[string]any) { m["format"] = "mdadm" }), ErrCorrupt, `.*format is "mdadm".*`},
		{"no version", edit(t, good, false, func(m map[string]any) { delete(m, "version") }), ErrCorrupt, `.*no version`},
		{"future version", edit(t, good, false, func(m map[string]any) { m["version"] = 4 }), ErrVersion, `.*version 4, this program reads versions 1 to 3`},
		{"checks in version 1", edit(t, good, false, func(m map[string]any) { m["checks"] = []any{} }), ErrCorrupt, `.*check records in a version 1 file`},
		{"flipped byte", bytes.Replace(good, []byte("pci-0000:00:11.0"), []byte("pci-0000:00:12.0"), 1), ErrCorrupt, `.*checksum is .*`},
		{"changed time", edit(t, good, false, func(m map[string]any) { slot(m, 0, 0)["last_healthy"] = "2027-01-01T00:00:00Z" }), ErrCorrupt, `.*checksum.*`},
		{"no checksum", edit(t, good, false, func(m map[string]any) { delete(m, "checksum") }), ErrCorrupt, `.*checksum is "".*`},
		{"bad checksum", edit(t, good, false, func(m map[string]any) { m["checksum"] = "sha256:00" }), ErrCorrupt, `.*checksum is "sha256:00".*`},
		{"unknown field", edit(t, good, true, func(m map[string]any) { slot(m, 0, 1)["port"] = "x" }), ErrCorrupt, `.*unknown field "port".*`},
		{"trailing data", append(append([]byte{}, good...), []byte(`{}`)...), ErrCorrupt, `.*not JSON: invalid character '\{' after top-level value`},
		{"no arrays", edit(t, good, true, func(m map[string]any) { delete(m, "arrays") }), ErrCorrupt, `.*no arrays list`},
		{"bad uuid", edit(t, good, true, func(m map[string]any) { arrayOf(m, 0)["uuid"] = "zzz" }), ErrCorrupt, `.*uuid "zzz".*`},
		{"upper-case uuid", edit(t, good, true, func(m map[string]any) {
			arrayOf(m, 1)["uuid"] = strings.ToUpper(arrayOf(m, 1)["uuid"].(string))
		}), ErrCorrupt, `.*not in canonical form`},
		{"raid0", edit(t, good, true, func(m map[string]any) { arrayOf(m, 0)["level"] = "raid0" }), ErrCorrupt, `.*level "raid0" cannot be recorded`},
		{"raid_disks grown", edit(t, good, true, func(m map[string]any) { arrayOf(m, 0)["raid_disks"] = 5 }), ErrCorrupt, `.*4 slot records for raid_disks 5`},
		{"raid_disks zero", edit(t, good, true, func(m map[string]any) { arrayOf(m, 0)["raid_disks"] = 0 }), ErrCorrupt, `.*raid_disks 0 out of range`},
		{"slot out of order", edit(t, good, true, func(m map[string]any) { slot(m, 1, 1)["slot"] = 0 }), ErrCorrupt, `.*slot record 1 says slot 0`},
		{"no time", edit(t, good, true, func(m map[string]any) { delete(slot(m, 1, 0), "last_healthy") }), ErrCorrupt, `.*slot 0 has no last_healthy time`},
		{"no path", edit(t, good, true, func(m map[string]any) { slot(m, 1, 0)["by_path"] = "" }), ErrCorrupt, `.*invalid by_path ""`},
		{"path with slash", edit(t, good, true, func(m map[string]any) { slot(m, 1, 0)["by_path"] = "../../sda" }), ErrCorrupt, `.*invalid by_path.*`},
		{"bad device uuid", edit(t, good, true, func(m map[string]any) { slot(m, 1, 0)["device_uuid"] = "x" }), ErrCorrupt, `.*device_uuid "x".*`},
		{"wrong type", edit(t, good, false, func(m map[string]any) { arrayOf(m, 0)["raid_disks"] = "4" }), ErrCorrupt, `.*cannot unmarshal.*`},
		{"duplicate array", edit(t, good, true, func(m map[string]any) {
			m["arrays"] = []any{arrayOf(m, 0), arrayOf(m, 0)}
		}), ErrCorrupt, `.*recorded twice`},
		{"unsorted", edit(t, good, true, func(m map[string]any) {
			m["arrays"] = []any{arrayOf(m, 1), arrayOf(m, 0)}
		}), ErrCorrupt, `.*not sorted by uuid`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := qt.New(t)
			rs, err := Decode(tt.b, "/x/slots.json")
			c.Assert(rs, qt.IsNil)
			c.Assert(err, qt.ErrorIs, tt.want)
			c.Assert(err, qt.ErrorMatches, tt.message)
			c.Assert(err, qt.ErrorMatches, `md: slot records .* in /x/slots.json: .*`)
			var se *Error
			c.Assert(err, qt.ErrorAs, &se)
		})
	}
	_, err = Decode(good, "")
	qt.Assert(t, err, qt.IsNil)
}

func TestEncodeRefusesInvalid(t *testing.T) {
	c := qt.New(t)
	rs := testRecords(t)
	rs.Arrays[0].Slots = rs.Arrays[0].Slots[:1]
	p := filepath.Join(t.TempDir(), "slots.json")
	err := NewFile(p).Save(context.Background(), rs)
	c.Assert(err, qt.ErrorMatches, `md: refusing to store invalid records: .*`)
	_, err = os.Stat(p)
	c.Assert(err, qt.ErrorIs, fs.ErrNotExist)
}

// TestFileStoreAtomic saves over and over while another goroutine loads:
// every load must see a complete, valid file (old or new), never a torn
// one. A save into a directory it cannot write leaves the old file.
func TestFileAtomic(t *testing.T) {
	c := qt.New(t)
	ctx := context.Background()
	dir := t.TempDir()
	p := filepath.Join(dir, "slots.json")
	s := NewFile(p)
	small := testRecords(t)
	small.Arrays = small.Arrays[:1]
	big := testRecords(t)
	c.Assert(s.Save(ctx, small), qt.IsNil)

	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			rs := small
			if i%2 == 1 {
				rs = big
			}
			if err := s.Save(ctx, rs); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	for range 300 {
		rs, err := s.Load(ctx)
		if err != nil {
			t.Errorf("load during saves: %v", err)
			break
		}
		if n := len(rs.Arrays); n != 1 && n != 2 {
			t.Errorf("load saw %d arrays", n)
		}
	}
	close(stop)
	wg.Wait()

	if os.Geteuid() != 0 {
		c.Assert(s.Save(ctx, small), qt.IsNil)
		before, err := os.ReadFile(p)
		c.Assert(err, qt.IsNil)
		c.Assert(os.Chmod(dir, 0o555), qt.IsNil)
		defer os.Chmod(dir, 0o755)
		c.Assert(s.Save(ctx, big), qt.ErrorMatches, `md: saving slot records: .*permission denied`)
		after, err := os.ReadFile(p)
		c.Assert(err, qt.IsNil)
		c.Assert(after, qt.DeepEquals, before)
	}
}

// TestRecordCarriesHomehost: the file round-trips a record's homehost.
func TestRecordCarriesHomehost(t *testing.T) {
	c := qt.New(t)
	a := mdtest.HealthyArray(2)
	a.Homehost = "talos"
	rec, err := md.NewRecord(a, mdtest.RecordTime)
	c.Assert(err, qt.IsNil)
	b, err := Encode(&md.Records{Arrays: []md.Record{rec}})
	c.Assert(err, qt.IsNil)
	rs, err := Decode(b, "test")
	c.Assert(err, qt.IsNil)
	c.Assert(rs.Arrays, qt.HasLen, 1)
	c.Assert(rs.Arrays[0].Homehost, qt.Equals, "talos")
}

// TestFileSaveKeepsMode: replacing a store keeps its mode (a read-only
// store stays read-only), and a new store is 0644 less the umask.
func TestFileSaveKeepsMode(t *testing.T) {
	c := qt.New(t)
	ctx := context.Background()
	p := filepath.Join(t.TempDir(), "slots.json")
	s := NewFile(p)
	c.Assert(s.Save(ctx, testRecords(t)), qt.IsNil)
	c.Assert(os.Chmod(p, 0o444), qt.IsNil)
	c.Assert(s.Save(ctx, &md.Records{}), qt.IsNil)
	fi, err := os.Stat(p)
	c.Assert(err, qt.IsNil)
	c.Assert(fi.Mode().Perm(), qt.Equals, os.FileMode(0o444))
	got, err := s.Load(ctx)
	c.Assert(err, qt.IsNil)
	c.Assert(got.Arrays, qt.HasLen, 0)
}

// TestFileSaveErrorNamesFile: a failed save names the store's file, not
// the temporary file it failed on, and keeps the cause.
func TestFileSaveErrorNamesFile(t *testing.T) {
	c := qt.New(t)
	p := filepath.Join(t.TempDir(), "missing", "slots.json")
	err := NewFile(p).Save(context.Background(), testRecords(t))
	c.Assert(err, qt.ErrorIs, fs.ErrNotExist)
	c.Assert(err, qt.ErrorMatches, `md: saving slot records: `+regexp.QuoteMeta(p)+`: creating a temporary file beside it: no such file or directory`)
}
