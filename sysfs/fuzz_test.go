package sysfs

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/go-mdraid/mdraid/internal/fixture"
	"github.com/go-mdraid/mdraid/internal/sysfstree"
)

// fuzzGetter is one typed getter of an array or member, with the file it
// reads (relative to block/md0) and any other file it needs.
type fuzzGetter struct {
	file string
	pre  map[string]string
	get  func(Array) (any, error)
}

func ag[T any](file string, f func(Array) (T, error)) fuzzGetter {
	return fuzzGetter{file: file, get: func(a Array) (any, error) { return f(a) }}
}

func mg[T any](attr string, f func(Member) (T, error)) fuzzGetter {
	return fuzzGetter{file: "md/dev-vdb/" + attr, get: func(a Array) (any, error) {
		m, err := a.Member("vdb")
		if err != nil {
			return nil, err
		}
		return f(m)
	}}
}

// fuzzGetters lists every getter that parses an attribute.
var fuzzGetters = []fuzzGetter{
	ag("md/level", Array.Level),
	ag("md/raid_disks", Array.RaidDisks),
	ag("md/layout", Array.Layout),
	ag("md/chunk_size", Array.ChunkSize),
	ag("md/component_size", Array.ComponentSize),
	ag("md/array_size", Array.ArraySize),
	ag("size", Array.Size),
	ag("dev", Array.Dev),
	ag("md/array_state", Array.State),
	ag("md/metadata_version", Array.MetadataVersion),
	ag("md/degraded", Array.Degraded),
	ag("md/sync_action", Array.SyncAction),
	ag("md/last_sync_action", Array.LastSyncAction),
	ag("md/sync_completed", Array.SyncCompleted),
	ag("md/sync_speed", Array.SyncSpeed),
	ag("md/sync_speed_min", Array.SyncSpeedMin),
	ag("md/sync_speed_max", Array.SyncSpeedMax),
	ag("md/sync_min", Array.SyncMin),
	ag("md/sync_max", Array.SyncMax),
	ag("md/mismatch_cnt", Array.MismatchCount),
	ag("md/reshape_position", Array.ReshapePosition),
	ag("md/reshape_direction", Array.ReshapeDirection),
	ag("md/resync_start", Array.ResyncStart),
	ag("md/consistency_policy", Array.ConsistencyPolicy),
	ag("md/bitmap/location", Array.BitmapLocation),
	ag("md/bitmap/chunksize", Array.BitmapChunkSize),
	ag("md/bitmap/time_base", Array.BitmapTimeBase),
	ag("md/bitmap/backlog", Array.BitmapBacklog),
	ag("md/bitmap/metadata", Array.BitmapMetadata),
	ag("md/bitmap/can_clear", Array.BitmapCanClear),
	ag("md/bitmap/max_backlog_used", Array.BitmapMaxBacklogUsed),
	ag("md/bitmap/space", Array.BitmapSpace),
	ag("md/uuid", Array.RawUUID),
	{file: "md/uuid", pre: map[string]string{"md/metadata_version": "0.90\n"}, get: func(a Array) (any, error) { return a.UUID() }},
	mg("state", Member.State),
	mg("slot", Member.Slot),
	mg("errors", Member.Errors),
	mg("offset", Member.Offset),
	mg("new_offset", Member.NewOffset),
	mg("size", Member.Size),
	mg("recovery_start", Member.RecoveryStart),
	mg("bad_blocks", Member.BadBlocks),
	mg("unacknowledged_bad_blocks", Member.UnacknowledgedBadBlocks),
	mg("ppl_sector", Member.PPLSector),
	mg("ppl_size", Member.PPLSize),
}

// captureManifests returns the entries of every real capture.
func captureManifests(tb testing.TB) [][]sysfstree.Entry {
	tb.Helper()
	var out [][]sysfstree.Entry
	for _, fc := range fixture.All(tb) {
		entries, err := sysfstree.ParseFile(fc.Path("sysfs.txt"))
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, entries)
	}
	return out
}

// garbagePage is a full page of bytes that are no attribute value.
func garbagePage() []byte {
	r := rand.New(rand.NewPCG(1, 2))
	b := make([]byte, 4096)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// FuzzAttr feeds arbitrary content, up to two pages, to every typed
// getter through a file in a temporary sysfs tree, as a test tree or a
// hostile kernel module could present it. A getter returns a value, or
// an error matching ErrFormat that is a *ParseError naming the file and
// the trimmed content of its first page; never a panic.
func FuzzAttr(f *testing.F) {
	byFile := map[string][]uint8{}
	for i, g := range fuzzGetters {
		byFile[g.file] = append(byFile[g.file], uint8(i))
	}
	for _, entries := range captureManifests(f) {
		for _, e := range entries {
			if e.Kind != sysfstree.File {
				continue
			}
			// devices/virtual/block/mdX/<file> or .../md/dev-X/<attr>
			rel := e.Path
			if i := strings.Index(rel, "/md/dev-"); i >= 0 {
				rest := rel[i+len("/md/dev-"):]
				if j := strings.IndexByte(rest, '/'); j >= 0 {
					rel = "md/dev-vdb/" + rest[j+1:]
				}
			} else if i := strings.Index(rel, "/block/md"); i >= 0 && strings.HasPrefix(rel, "devices/virtual/") {
				rest := rel[i+len("/block/md"):]
				if j := strings.IndexByte(rest, '/'); j >= 0 {
					rel = rest[j+1:]
				}
			}
			for _, idx := range byFile[rel] {
				f.Add(idx, []byte(e.Data))
			}
		}
	}
	page := garbagePage()
	for i := range fuzzGetters {
		f.Add(uint8(i), page)
		f.Add(uint8(i), []byte("18446744073709551616 (1)\n"))
		f.Add(uint8(i), []byte("1 / 2 / 3\n"))
	}
	root := f.TempDir()
	for _, d := range []string{"block/md0/md/dev-vdb", "block/md0/md/bitmap"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			f.Fatal(err)
		}
	}
	fsys, err := NewFS(root)
	if err != nil {
		f.Fatal(err)
	}
	a, err := fsys.Array("md0")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, idx uint8, content []byte) {
		if len(content) > 2*pageSize {
			return
		}
		g := fuzzGetters[int(idx)%len(fuzzGetters)]
		for name, v := range g.pre {
			if err := os.WriteFile(filepath.Join(root, "block/md0", name), []byte(v), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		p := filepath.Join(root, "block/md0", g.file)
		if err := os.WriteFile(p, content, 0o644); err != nil {
			t.Fatal(err)
		}
		defer os.Remove(p)
		v, err := g.get(a)
		if err == nil {
			_ = fmt.Sprint(v) // every value prints
			return
		}
		var pe *ParseError
		if !errors.Is(err, ErrFormat) || !errors.As(err, &pe) {
			t.Fatalf("%s: error %v does not match ErrFormat", g.file, err)
		}
		want := string(bytes.TrimSpace(content[:min(len(content), pageSize)]))
		if pe.Path != p || pe.Value != want {
			t.Fatalf("ParseError names %q = %q, want %q = %q", pe.Path, pe.Value, p, want)
		}
		_ = err.Error()
	})
}

// FuzzParseValues checks the value parsers directly: values that parse
// print back in a form that parses to the same value.
func FuzzParseValues(f *testing.F) {
	for _, s := range []string{"4 (3)", "-1", "none", "journal", "9:127", "+8", "-16",
		"in_sync,write_mostly", "external:/md127/0", "external:-md127/1", "1.2", "0.90",
		"1000 (system)", "12 / 345", "delayed", "10240 8\n20480 16\n", "raid10", "container"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > 2*pageSize {
			return
		}
		if r, err := parseReshaped(s); err == nil {
			if r2, err := parseReshaped(r.String()); err != nil || r2 != r {
				t.Fatalf("reshaped %q -> %q -> %v, %v", s, r.String(), r2, err)
			}
		}
		if sl, err := parseSlot(s); err == nil {
			if sl < SlotJournal {
				t.Fatalf("slot %q parsed to %d", s, sl)
			}
			if sl2, err := parseSlot(sl.String()); err != nil || sl2 != sl {
				t.Fatalf("slot %q -> %q -> %v, %v", s, sl.String(), sl2, err)
			}
		}
		if d, err := ParseDevNum(s); err == nil {
			if d2, err := ParseDevNum(d.String()); err != nil || d2 != d {
				t.Fatalf("devnum %q -> %q -> %v, %v", s, d.String(), d2, err)
			}
		}
		if bl, err := parseBitmapLocation(s); err == nil {
			if bl2, err := parseBitmapLocation(bl.String()); err != nil || bl2 != bl {
				t.Fatalf("bitmap location %q -> %q -> %+v, %v", s, bl.String(), bl2, err)
			}
		}
		ms := ParseMemberState(s)
		if ms2 := ParseMemberState(ms.String()); !reflect.DeepEqual(ms2, ms) {
			t.Fatalf("member state %q -> %q -> %q", s, ms.String(), ms2.String())
		}
		_ = ms.Unknown()
		mv := ParseMetadataVersion(s)
		if c, sub, ok := mv.Container(); ok && (c == "" || strings.Contains(c, "/") || !strings.HasSuffix(s, c+"/"+sub)) {
			t.Fatalf("container of %q: %q %q", s, c, sub)
		}
		_ = mv.Is090()
		if bbs, err := parseBadBlocks(s); err == nil && len(bbs) > strings.Count(s, "\n")+1 {
			t.Fatalf("%d bad blocks from %d lines", len(bbs), strings.Count(s, "\n")+1)
		}
		_, _ = parseProgress(s)
		_, _ = parseSpeed(s)
		l := Level(s)
		_, _ = l.Number()
		_, _ = l.Known(), l.Redundant()
	})
}

// Bounds for FuzzTree's manifests.
const (
	maxTreeManifest = 32 << 10
	maxTreeEntries  = 400
)

// treeSeed keeps the parts of a capture that the array walk reads: the
// md/ directories (files and links), the block/ links and the member
// devices' directories, so that block links resolve.
func treeSeed(entries []sysfstree.Entry) []byte {
	var keep []sysfstree.Entry
	for _, e := range entries {
		md := strings.Contains(e.Path, "/md/")
		switch {
		case e.Kind == sysfstree.File && md,
			e.Kind == sysfstree.Link && (md || strings.HasPrefix(e.Path, "block/")),
			e.Kind == sysfstree.Dir && path.Base(path.Dir(e.Path)) == "block":
			keep = append(keep, e)
		}
	}
	var b bytes.Buffer
	if err := sysfstree.Write(&b, keep); err != nil {
		panic(err)
	}
	return b.Bytes()
}

// materializeFuzzTree builds the tree a fuzzed manifest describes below
// a new temporary directory: its well-formed lines that stay inside the
// tree (see sysfstree.Contain), each created if it can be. It reports
// false when nothing is left or the tree would be too large.
func materializeFuzzTree(t *testing.T, manifest []byte) (FS, bool) {
	if len(manifest) > maxTreeManifest {
		return FS{}, false
	}
	entries := sysfstree.Contain(sysfstree.ParseLoose(manifest))
	if len(entries) == 0 || len(entries) > maxTreeEntries {
		return FS{}, false
	}
	for _, e := range entries {
		if len(e.Path) > 512 {
			return FS{}, false
		}
	}
	root := t.TempDir()
	sysfstree.MaterializeLoose(root, entries)
	fsys, err := NewFS(root)
	if err != nil {
		t.Fatal(err)
	}
	return fsys, true
}

// within fails the test if f does not return in time: a walk over a
// hostile tree must end.
func within(t *testing.T, d time.Duration, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("no result after %v", d)
	}
}

// FuzzTree walks arbitrary sysfs trees (seeded from the real captures):
// link loops, dangling and deep links, files where directories belong.
// Listing arrays and members, following block and rdN links and reading
// every attribute ends, and every error is an I/O error or ErrFormat.
func FuzzTree(f *testing.F) {
	for _, entries := range captureManifests(f) {
		f.Add(treeSeed(entries))
	}
	f.Add([]byte(sysfstree.Header + "\n" + memberTreeFor090))
	f.Add([]byte(sysfstree.Header + "\nl \"block/md0\" \"md0\"\n"))
	f.Add([]byte(sysfstree.Header + "\nd \"block/md0/md\"\nl \"block/md0/md/dev-a/block\" \"../dev-a/block\"\nl \"block/md0/md/rd0\" \"rd0\"\n"))
	f.Fuzz(func(t *testing.T, manifest []byte) {
		fsys, ok := materializeFuzzTree(t, manifest)
		if !ok {
			return
		}
		typed := func(what string, err error) {
			t.Helper()
			var pe *fs.PathError
			if err != nil && !errors.Is(err, ErrFormat) && !errors.As(err, &pe) {
				t.Fatalf("%s: untyped error %v", what, err)
			}
		}
		within(t, 10*time.Second, func() {
			names, err := fsys.Arrays()
			typed("Arrays", err)
			for _, c := range []FS{fsys, fsys.WithCache()} {
				for _, name := range append(names, "md0") {
					a, err := c.Array(name)
					if err != nil {
						continue
					}
					for _, g := range fuzzGetters {
						_, err := g.get(a)
						typed(g.file, err)
					}
					_, _ = a.SlotLinks()
					ms, _ := a.Members()
					for _, m := range ms {
						_, _ = m.Block()
						_, err := m.State()
						typed("state", err)
					}
				}
			}
		})
	})
}
