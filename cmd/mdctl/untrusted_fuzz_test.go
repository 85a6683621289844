package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/go-mdraid/mdraid/internal/craft"
	"github.com/go-mdraid/mdraid/internal/escape"
	"github.com/go-mdraid/mdraid/internal/fixture"
	"github.com/go-mdraid/mdraid/md"
	"github.com/go-mdraid/mdraid/md/store"
	"github.com/go-mdraid/mdraid/superblock"
)

// FuzzHostileMember gives one member of md4 (metadata 1.2) and one of md3
// (0.90) in the real eight-array capture an arbitrary set name, serial and
// raid_disks, optionally with their arrays inactive (so the count sizes
// the slot table), and feeds the result through everything that shows
// it: Discover, status text, JSON, Prometheus, the slot-record store and
// the link-name rule. Nothing may panic, no text line may hold a control
// character, every label must be valid UTF-8, every store must reload
// unchanged, and the six untouched arrays must report in full.
func FuzzHostileMember(f *testing.F) {
	f.Add([]byte("vmtest:a4"), []byte("mdtest-8"), uint32(2), false)
	f.Add([]byte("h:\n  health: ONLINE\x1b[8m"), []byte("S\xff\x1b[2J"), uint32(0xffffffff), true)
	f.Add([]byte("vmtest:a7\xff"), []byte("\xfe"), uint32(1921), true)
	f.Add([]byte("vmtest:a0"), []byte(""), uint32(27), true)
	f.Add([]byte("../../etc/x"), []byte("a\\b"), uint32(28), false)

	sys, dev := fixture.Named(f, "eight-arrays").System(f)
	events := map[string]uint64{}
	f.Fuzz(func(t *testing.T, name, serial []byte, raidDisks uint32, inactive bool) {
		// Each run starts from the same state: the crafted member is the
		// newest by ten events, whatever earlier runs wrote.
		for _, mem := range []string{"vdi", "vdg"} {
			err := craft.Superblock(filepath.Join(dev, mem), func(sb *superblock.Superblock) {
				if _, ok := events[mem]; !ok {
					events[mem] = sb.Events
				}
				sb.Events = events[mem] + 10
				sb.RaidDisks = raidDisks
				if sb.Version.Is1x() {
					sb.SetName = [32]byte{}
					copy(sb.SetName[:], name)
				}
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(sys, "block", "vdi", "serial"), serial, 0o644); err != nil {
			t.Fatal(err)
		}
		for _, a := range []string{"md3", "md4"} {
			state, level, rd := "clean\n", "raid1\n", "2\n"
			if inactive {
				state, level, rd = "inactive\n", "", ""
			}
			for attr, v := range map[string]string{"array_state": state, "level": level, "raid_disks": rd} {
				if err := os.WriteFile(filepath.Join(sys, "block", a, "md", attr), []byte(v), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}

		m, err := md.Open(&md.Config{SysRoot: sys, DevRoot: dev})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		r, err := m.Discover(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Arrays) != 8 {
			t.Fatalf("%d arrays", len(r.Arrays))
		}
		for _, a := range r.Arrays {
			if a.Device == "md3" || a.Device == "md4" {
				if len(a.Slots) > superblock.MaxDev1 {
					t.Fatalf("%s has %d slots", a.Device, len(a.Slots))
				}
				continue
			}
			if len(a.Errors) > 0 || a.Availability != md.Online || len(a.Slots) != 2 {
				t.Fatalf("%s: %s, %d slots, errors %q", a.Device, a.Availability, len(a.Slots), a.Errors)
			}
		}

		var text bytes.Buffer
		if err := renderText(&text, r); err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(strings.TrimSuffix(text.String(), "\n"), "\n") {
			if !escape.Safe(l) {
				t.Fatalf("status line %q is not escaped", l)
			}
		}
		if b, err := json.Marshal(r); err != nil || !json.Valid(b) {
			t.Fatalf("JSON: %v", err)
		}

		var prom bytes.Buffer
		if err := renderPrometheus(&prom, r); err != nil {
			t.Fatalf("prometheus: %v", err)
		}
		p := expfmt.NewTextParser(model.UTF8Validation)
		mfs, err := p.TextToMetricFamilies(bytes.NewReader(prom.Bytes()))
		if err != nil {
			t.Fatalf("prometheus text does not parse: %v", err)
		}
		for _, mf := range mfs {
			for _, mt := range mf.GetMetric() {
				for _, l := range mt.GetLabel() {
					if !utf8.ValidString(l.GetValue()) {
						t.Fatalf("%s %s=%q", mf.GetName(), l.GetName(), l.GetValue())
					}
				}
			}
		}
		if n := len(mfs["node_md_state"].GetMetric()); n != 8*5 {
			t.Fatalf("%d node_md_state series", n)
		}

		rs := &md.Records{}
		for _, a := range r.Arrays {
			if rec, err := md.NewRecord(a, time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)); err == nil {
				rs.Put(rec)
			}
		}
		b, err := store.Encode(rs)
		if err != nil {
			t.Fatalf("Encode: %v", err)
		}
		got, err := store.Decode(b, "")
		if err != nil {
			t.Fatalf("the store written does not load: %v", err)
		}
		if !reflect.DeepEqual(got, rs) {
			t.Fatalf("store round trip changed the records")
		}

		for _, a := range r.Arrays {
			if s, err := md.SafeName(a.Name); err == nil {
				if strings.ContainsAny(s, "/\n\\") || s == "." || s == ".." || s[0] == '-' || !escape.Safe(s) {
					t.Fatalf("SafeName(%q) = %q", a.Name, s)
				}
			}
		}
		if n := string(name); n != "" {
			if _, err := m.DiscoverNames(context.Background(), n); err != nil && !escape.Safe(err.Error()) {
				t.Fatalf("DiscoverNames(%q): error %q is not escaped", n, err)
			}
		}
	})
}
