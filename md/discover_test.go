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

// TestDiscoverKeepsGoing breaks one array and one member of a real
// eight-array capture in several ways: the broken array's entry carries
// the error, and every other array still reports in full.
func TestDiscoverKeepsGoing(t *testing.T) {
	c := qt.New(t)
	m0, sys, dev := eightArrays(t)

	md3 := filepath.Join(sys, "devices", "virtual", "block", "md3", "md")
	// array_state becomes unreadable (a directory), and level holds a
	// value no kernel has shown yet.
	c.Assert(os.Remove(filepath.Join(md3, "array_state")), qt.IsNil)
	c.Assert(os.Mkdir(filepath.Join(md3, "array_state"), 0o755), qt.IsNil)
	c.Assert(os.WriteFile(filepath.Join(md3, "level"), []byte("raid99\n"), 0o644), qt.IsNil)
	// md0 (metadata 1.2) loses one member's device node, so its superblock is unreadable,
	// and the other member's superblock is damaged.
	before, err := m0.Status(context.Background(), "md0")
	c.Assert(err, qt.IsNil)
	c.Assert(before.Slots, qt.HasLen, 2)
	gone, damaged := before.Slots[0].Member.Device, before.Slots[1].Member.Device
	c.Assert(os.Remove(filepath.Join(dev, gone)), qt.IsNil)
	f, err := os.OpenFile(filepath.Join(dev, damaged), os.O_RDWR, 0)
	c.Assert(err, qt.IsNil)
	_, err = f.WriteAt([]byte{0xde, 0xad}, 4096+200) // inside the 1.x events field (the array is 1.2)
	c.Assert(err, qt.IsNil)
	c.Assert(f.Close(), qt.IsNil)

	r, err := m0.Discover(context.Background())
	c.Assert(err, qt.IsNil)
	c.Assert(r.Arrays, qt.HasLen, 8)
	for _, a := range r.Arrays {
		switch a.Device {
		case "md3":
			c.Check(a.Errors, qt.Not(qt.HasLen), 0)
			c.Check(a.Level, qt.Equals, "raid99")
			c.Check(a.Slots, qt.HasLen, 2)
		case "md0":
			c.Check(a.Errors, qt.HasLen, 0)
			c.Check(a.Availability, qt.Equals, Online, qt.Commentf("the kernel's view stands"))
			g, _ := a.Find(gone)
			c.Assert(g, qt.Not(qt.IsNil))
			c.Check(g.Error, qt.Contains, "no such file")
			d, _ := a.Find(damaged)
			c.Assert(d, qt.Not(qt.IsNil))
			c.Check(d.Error, qt.Contains, "checksum")
			c.Check(d.Events, qt.Not(qt.IsNil), qt.Commentf("a damaged superblock is still reported"))
		default:
			c.Check(a.Errors, qt.HasLen, 0, qt.Commentf("%s", a.Device))
			c.Check(a.Availability, qt.Equals, Online, qt.Commentf("%s", a.Device))
			for _, s := range a.Slots {
				c.Check(s.Member.Error, qt.Equals, "", qt.Commentf("%s slot %d", a.Device, s.Slot))
			}
		}
	}
}

// TestResolve names an array every way a user would.
func TestResolve(t *testing.T) {
	c := qt.New(t)
	fc := fixture.Named(t, "boot-mirror")
	m := fixtureManager(t, fc)
	dev := m.devRoot
	want := fc.Info.Array
	for _, name := range []string{want, dev + "/" + want, "/dev/" + want, "boot", "md/boot", "talos:boot"} {
		got, err := m.resolve(name)
		c.Check(err, qt.IsNil, qt.Commentf("%s", name))
		c.Check(got, qt.Equals, want, qt.Commentf("%s", name))
	}
	_, err := m.resolve("md99")
	c.Check(err, qt.ErrorIs, ErrNoArray)

	// A device node under any name, reached through a link, resolves by
	// its device number (mdadm's /dev/md/NAME links need not match the
	// superblock name).
	a, err := m.FS().Array(want)
	c.Assert(err, qt.IsNil)
	dn, err := a.Dev()
	c.Assert(err, qt.IsNil)
	node := filepath.Join(t.TempDir(), "node")
	needMknod(t, mknodBlock(node, dn.Major, dn.Minor))
	link := filepath.Join(t.TempDir(), "other-name")
	c.Assert(os.Symlink(node, link), qt.IsNil)
	got, err := m.resolve(link)
	c.Assert(err, qt.IsNil)
	c.Check(got, qt.Equals, want)
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
	for _, fc := range fixture.All(t) {
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
			want := Availability(d.Health())
			// mdadm --detail says "clean" for a read-only or read-auto
			// array; the kernel's /proc/mdstat line says which it is.
			if ro := mdstatReadOnly(fc.Texts["mdstat.txt"], a.Device); ro && want == Online {
				want = ReadOnly
			}
			c.Check(a.Availability, qt.Equals, want, qt.Commentf("mdadm State: %q", state))

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

// mdstatReadOnly reports whether /proc/mdstat's line of array dev says
// "active (read-only)" or "active (auto-read-only)".
func mdstatReadOnly(mdstat, dev string) bool {
	for _, line := range strings.Split(mdstat, "\n") {
		if rest, ok := strings.CutPrefix(line, dev+" : "); ok {
			return strings.HasPrefix(rest, "active (read-only)") || strings.HasPrefix(rest, "active (auto-read-only)")
		}
	}
	return false
}
