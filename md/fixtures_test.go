package md

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	qt "github.com/frankban/quicktest"

	"github.com/go-mdraid/mdraid/internal/fixture"
	"github.com/go-mdraid/mdraid/internal/mdadmtext"
)

// fixtureCases loads the real captures made by testdata/gen.
func fixtureCases(t testing.TB) []*fixture.Case {
	t.Helper()
	cases, err := fixture.LoadAll(filepath.Join("..", "testdata", "fixtures"))
	if err != nil {
		t.Fatalf("loading fixtures: %v", err)
	}
	if len(cases) == 0 {
		t.Fatal("no fixtures under testdata/fixtures")
	}
	return cases
}

// fixtureManager rebuilds a captured system: the sysfs tree from the
// manifest, and each member device as a sparse image under the dev root,
// so that Discover reads real superblocks.
func fixtureManager(t testing.TB, c *fixture.Case) *Manager {
	t.Helper()
	sys, dev, err := c.Materialize(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	m, err := Open(&Config{SysRoot: sys, DevRoot: dev})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// atoiField returns a numeric field of mdadm --detail, failing the test
// when it is missing.
func atoiField(t testing.TB, d mdadmtext.Detail, key string) int {
	t.Helper()
	n := d.Int(key)
	if n < 0 {
		t.Fatalf("mdadm --detail has no number %q (%q)", key, d.Fields[key])
	}
	return n
}

// TestDiscoverMatchesMdadm checks, for every real capture, that the
// status model agrees with what mdadm --detail printed on the same kernel:
// state, raid devices, device counts, and each member's slot and role.
func TestDiscoverMatchesMdadm(t *testing.T) {
	for _, fc := range fixtureCases(t) {
		t.Run(filepath.Base(fc.Dir), func(t *testing.T) {
			c := qt.New(t)
			m := fixtureManager(t, fc)
			r, err := m.Discover(context.Background())
			c.Assert(err, qt.IsNil)
			c.Assert(r.Arrays, qt.HasLen, 1)
			a := &r.Arrays[0]
			c.Assert(a.Device, qt.Equals, fc.Info.Array)
			for _, e := range a.Errors {
				c.Errorf("array error: %s", e)
			}
			d := mdadmtext.ParseDetail(fc.Texts["detail.txt"])
			state := d.Fields["State"]
			c.Check(a.Availability, qt.Equals, Availability(d.Health()), qt.Commentf("mdadm State: %q", state))

			if a.Availability == Inactive {
				// mdadm --detail of an inactive array lists members without
				// slots; every one must be known to us.
				for _, row := range d.Rows {
					if row.Dev != "" {
						mem, _ := a.Find(row.Dev)
						c.Check(mem, qt.Not(qt.IsNil), qt.Commentf("member %s", row.Dev))
					}
				}
				return
			}

			c.Check(a.RaidDisks, qt.Equals, atoiField(t, d, "Raid Devices"))
			c.Check(a.Counts.Active, qt.Equals, atoiField(t, d, "Active Devices"))
			c.Check(a.Counts.Working, qt.Equals, atoiField(t, d, "Working Devices"))
			c.Check(a.Counts.Failed, qt.Equals, atoiField(t, d, "Failed Devices"))
			c.Check(a.Counts.Spare, qt.Equals, atoiField(t, d, "Spare Devices"))
			u, _, _ := strings.Cut(d.Fields["UUID"], " ")
			c.Check(strings.ReplaceAll(a.UUID, "-", ""), qt.Equals, strings.ReplaceAll(u, ":", ""))

			for _, row := range d.Rows {
				if row.Dev == "" { // "removed": the slot is empty
					n, err := strconv.Atoi(row.Slot)
					c.Assert(err, qt.IsNil)
					c.Check(a.Slots[n].Member, qt.IsNil, qt.Commentf("slot %d", n))
					c.Check(a.Slots[n].State, qt.Equals, SlotMissing)
					continue
				}
				mem, where := a.Find(row.Dev)
				if !c.Check(mem, qt.Not(qt.IsNil), qt.Commentf("member %s (%s)", row.Dev, row.State)) {
					continue
				}
				switch {
				case strings.HasPrefix(row.State, "active sync"):
					n, err := strconv.Atoi(row.Slot)
					c.Assert(err, qt.IsNil)
					c.Check(mem.Slot, qt.Equals, n)
					c.Check(where, qt.Equals, "slot")
					c.Check(a.Slots[n].State, qt.Equals, SlotActive)
				case strings.HasPrefix(row.State, "spare rebuilding"):
					n, err := strconv.Atoi(row.Slot)
					c.Assert(err, qt.IsNil)
					c.Check(mem.Slot, qt.Equals, n)
					c.Check(where == "slot" || where == "replacement", qt.IsTrue, qt.Commentf("where %s", where))
					if where == "slot" {
						c.Check(a.Slots[n].State, qt.Equals, SlotRebuilding)
					}
				case row.State == "spare":
					c.Check(where, qt.Equals, "spare")
					c.Check(mem.Slot, qt.Equals, -1)
				case strings.HasPrefix(row.State, "faulty"):
					if row.Slot == "-" {
						c.Check(where, qt.Equals, "faulty")
					} else {
						c.Check(a.Slots[mem.Slot].State, qt.Equals, SlotFaulty)
					}
				default:
					c.Errorf("unhandled mdadm state %q for %s", row.State, row.Dev)
				}
				c.Check(mem.Error, qt.Equals, "", qt.Commentf("member %s", row.Dev))
				c.Check(mem.Events, qt.Not(qt.IsNil), qt.Commentf("member %s superblock", row.Dev))
			}
		})
	}
}

// readImage returns the whole image.
func readImage(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func writeImage(t testing.TB, path string, off int64, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}

// checkStatus returns the status of the named check, or "" if absent.
func checkStatus(p *Plan, name string) CheckStatus {
	for _, ck := range p.Checks {
		if ck.Name == name {
			return ck.Status
		}
	}
	return ""
}
