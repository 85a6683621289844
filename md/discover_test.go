package md

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	qt "github.com/frankban/quicktest"

	"github.com/go-mdraid/mdraid/internal/fixture"
)

// TestDiscoverKeepsGoing breaks one array and one member of a real
// eight-array capture in several ways: the broken array's entry carries
// the error, and every other array still reports in full.
func TestDiscoverKeepsGoing(t *testing.T) {
	c := qt.New(t)
	fc, err := fixture.LoadCase(filepath.Join("..", "testdata", "bench", "eight-arrays"))
	c.Assert(err, qt.IsNil)
	sys, dev, err := fc.Materialize(t.TempDir())
	c.Assert(err, qt.IsNil)

	md3 := filepath.Join(sys, "devices", "virtual", "block", "md3", "md")
	// array_state becomes unreadable (a directory), and level holds a
	// value no kernel has shown yet.
	c.Assert(os.Remove(filepath.Join(md3, "array_state")), qt.IsNil)
	c.Assert(os.Mkdir(filepath.Join(md3, "array_state"), 0o755), qt.IsNil)
	c.Assert(os.WriteFile(filepath.Join(md3, "level"), []byte("raid99\n"), 0o644), qt.IsNil)
	// md0 (metadata 1.2) loses one member's device node, so its superblock is unreadable,
	// and the other member's superblock is damaged.
	m0, err := Open(&Config{SysRoot: sys, DevRoot: dev})
	c.Assert(err, qt.IsNil)
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
	fc, err := fixture.LoadCase(filepath.Join("..", "testdata", "fixtures", "boot-mirror"))
	c.Assert(err, qt.IsNil)
	sys, dev, err := fc.Materialize(t.TempDir())
	c.Assert(err, qt.IsNil)
	m, err := Open(&Config{SysRoot: sys, DevRoot: dev})
	c.Assert(err, qt.IsNil)
	want := fc.Info.Array
	for _, name := range []string{want, dev + "/" + want, "/dev/" + want, "boot", "md/boot", "talos:boot"} {
		got, err := m.Resolve(name)
		c.Check(err, qt.IsNil, qt.Commentf("%s", name))
		c.Check(got, qt.Equals, want, qt.Commentf("%s", name))
	}
	_, err = m.Resolve("md99")
	c.Check(err, qt.ErrorIs, ErrNoArray)

	// A device node under any name, reached through a link, resolves by
	// its device number (mdadm's /dev/md/NAME links need not match the
	// superblock name).
	a, err := m.FS().Array(want)
	c.Assert(err, qt.IsNil)
	dn, err := a.Dev()
	c.Assert(err, qt.IsNil)
	node := filepath.Join(t.TempDir(), "node")
	if err := mknodBlock(node, dn.Major, dn.Minor); err != nil {
		t.Skipf("cannot make a device node here: %v", err)
	}
	link := filepath.Join(t.TempDir(), "other-name")
	c.Assert(os.Symlink(node, link), qt.IsNil)
	got, err := m.Resolve(link)
	c.Assert(err, qt.IsNil)
	c.Check(got, qt.Equals, want)
}
