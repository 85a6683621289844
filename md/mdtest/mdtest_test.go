package mdtest_test

import (
	"context"
	"errors"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	qt "github.com/frankban/quicktest"
	"github.com/go-mdraid/mdraid/blockdev"
	"github.com/go-mdraid/mdraid/md"
	"github.com/go-mdraid/mdraid/md/mdtest"
	"github.com/go-mdraid/mdraid/sysfs"
)

func discover(t *testing.T, s *mdtest.System) md.Array {
	t.Helper()
	m, err := md.Open(s.Config())
	if err != nil {
		t.Fatal(err)
	}
	a, err := m.Status(context.Background(), s.Array())
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestCapturesEmbedded: every case directory of testdata/fixtures is
// embedded, and each rebuilds into a system md reads one array from,
// with every member's superblock read.
func TestCapturesEmbedded(t *testing.T) {
	c := qt.New(t)
	ents, err := os.ReadDir(filepath.Join("..", "..", "testdata", "fixtures"))
	c.Assert(err, qt.IsNil)
	var dirs []string
	for _, e := range ents {
		if e.IsDir() {
			dirs = append(dirs, e.Name())
		}
	}
	c.Assert(mdtest.Captures(), qt.DeepEquals, dirs)
	for _, name := range mdtest.Captures() {
		t.Run(name, func(t *testing.T) {
			c := qt.New(t)
			s := mdtest.Capture(t, name)
			m, err := md.Open(s.Config())
			c.Assert(err, qt.IsNil)
			r, err := m.Discover(context.Background())
			c.Assert(err, qt.IsNil)
			c.Assert(r.Arrays, qt.HasLen, 1)
			c.Check(r.Arrays[0].Device, qt.Equals, s.Array())
			c.Check(r.Error, qt.Equals, "")
			c.Check(r.Arrays[0].Errors, qt.HasLen, 0)
			for _, mb := range r.Arrays[0].Members() {
				c.Check(mb.Error, qt.Equals, "", qt.Commentf("%s", mb.Device))
			}
		})
	}
}

// TestUnknownCapture: a name that is no capture fails the test that
// asked for it.
func TestUnknownCapture(t *testing.T) {
	for _, name := range []string{"no-such-capture", "../raid1-v1.2", ".", "raid1-v1.2/vda.regions.gz"} {
		ft := &fatalT{TB: t}
		func() {
			defer func() { _ = recover() }()
			mdtest.Capture(ft, name)
		}()
		if !ft.failed {
			t.Errorf("Capture(%q) did not fail the test", name)
		}
	}
}

// fatalT records a Fatal call and stops the goroutine's function with a
// panic instead of runtime.Goexit, so that a test can observe it.
type fatalT struct {
	testing.TB
	failed bool
}

func (f *fatalT) Fatalf(string, ...any) { f.failed = true; panic("fatal") }
func (f *fatalT) Fatal(...any)          { f.failed = true; panic("fatal") }
func (f *fatalT) Helper()               {}

// shape is what of an array a member failure or a recovery changes.
type shape struct {
	Availability md.Availability
	Redundancy   md.Redundancy
	Activity     sysfs.SyncAction
	Slots        []md.SlotState
	Faulty       []string
}

func shapeOf(a md.Array) shape {
	s := shape{Availability: a.Availability, Redundancy: a.Redundancy, Activity: a.Activity.Kind}
	for _, sl := range a.Slots {
		s.Slots = append(s.Slots, sl.State)
	}
	for _, f := range a.Faulty {
		s.Faulty = append(s.Faulty, f.Device)
	}
	return s
}

// TestFail: failing vdb of the clean raid1-v1.2 gives the array md reads
// from the kernel's own capture of that event, raid1-failed.
func TestFail(t *testing.T) {
	c := qt.New(t)
	s := mdtest.Capture(t, "raid1-v1.2")
	c.Assert(shapeOf(discover(t, s)).Availability, qt.Equals, md.Online)
	s.Fail("vdb")
	c.Check(shapeOf(discover(t, s)), qt.DeepEquals, shapeOf(discover(t, mdtest.Capture(t, "raid1-failed"))))
	c.Check(s.Get("md/degraded"), qt.Equals, "1")
}

// TestStartRecovery: the spare of raid1-removed-spare, held by frozen,
// is rebuilt onto the empty slot once recovery starts, as in the
// kernel's capture raid1-recovering.
func TestStartRecovery(t *testing.T) {
	c := qt.New(t)
	s := mdtest.Capture(t, "raid1-removed-spare")
	before := discover(t, s)
	c.Assert(before.Spares, qt.HasLen, 1)
	s.StartRecovery()
	a := discover(t, s)
	c.Check(a.Activity.Kind, qt.Equals, sysfs.ActionRecover)
	c.Check(a.Spares, qt.HasLen, 0)
	want := shapeOf(discover(t, mdtest.Capture(t, "raid1-recovering")))
	got := shapeOf(a)
	c.Check(got.Activity, qt.Equals, want.Activity)
	c.Check(got.Slots[len(got.Slots)-1], qt.Equals, md.SlotRebuilding)
	c.Check(want.Slots[len(want.Slots)-1], qt.Equals, md.SlotRebuilding)
}

// TestAddDisk: a disk added at a port is found there by its by-path
// identity, computed from sysfs as heal computes it; a blank disk is
// blank and a used one carries its capture's superblock.
func TestAddDisk(t *testing.T) {
	c := qt.New(t)
	s := mdtest.Capture(t, "raid1-degraded-missing")
	blank := s.AddDisk("vdz", "pci-0000:00:18.0", 64<<20)
	used := s.AddUsedDisk("vdy", "pci-0000:00:19.0", "raid1-v1.2", "vda")
	fsys, err := sysfs.NewFS(s.SysRoot())
	c.Assert(err, qt.IsNil)
	ports, err := blockdev.Ports(fsys)
	c.Assert(err, qt.IsNil)
	c.Check(ports["pci-0000:00:18.0"], qt.DeepEquals, []string{"vdz"})
	c.Check(ports["pci-0000:00:19.0"], qt.DeepEquals, []string{"vdy"})
	d, err := blockdev.Lookup(fsys, s.DevRoot(), "vdz")
	c.Assert(err, qt.IsNil)
	c.Check(d.Size, qt.Equals, uint64(64<<20))
	c.Check(d.Holders, qt.HasLen, 0)

	check := func(p string) error {
		f, err := os.Open(p)
		c.Assert(err, qt.IsNil)
		defer f.Close()
		fi, err := f.Stat()
		c.Assert(err, qt.IsNil)
		return md.CheckBlank(f, fi.Size())
	}
	c.Check(check(blank), qt.IsNil)
	c.Check(check(used), qt.ErrorIs, md.ErrNotBlank)
}

// TestUnreadable: an attribute made unreadable fails to read, and md
// says which.
func TestUnreadable(t *testing.T) {
	c := qt.New(t)
	s := mdtest.Capture(t, "raid1-v1.2")
	s.Unreadable("md/array_state")
	_, err := os.ReadFile(filepath.Join(s.SysRoot(), "block", s.Array(), "md", "array_state"))
	c.Check(err, qt.Not(qt.IsNil))
	c.Check(errors.Is(err, fs.ErrNotExist), qt.IsFalse)
	a := discover(t, s)
	c.Check(a.Errors, qt.Any(qt.Matches), ".*array_state.*")
}

// TestExamplesUsePublicAPI: every example of the module imports no
// internal package, so that it compiles in a program that imports this
// module (examples/controller is one, built by CI).
func TestExamplesUsePublicAPI(t *testing.T) {
	root := filepath.Join("..", "..")
	n := 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && p != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasPrefix(d.Name(), "example") || !strings.HasSuffix(d.Name(), "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), p, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		n++
		for _, im := range f.Imports {
			if strings.Contains(im.Path.Value, "/internal/") {
				t.Errorf("%s imports %s", p, im.Path.Value)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 6 {
		t.Errorf("found %d example files; the walk is looking in the wrong place", n)
	}
}

// TestNew: New rebuilds a capture outside a test, Close removes it, an
// unknown name is an error, and a verb that fails panics.
func TestNew(t *testing.T) {
	c := qt.New(t)
	_, err := mdtest.New("no-such-capture")
	c.Check(err, qt.ErrorMatches, `mdtest: no capture "no-such-capture"; there are boot-mirror, .*`)
	s, err := mdtest.New("raid1-v1.2")
	c.Assert(err, qt.IsNil)
	_, err = os.Stat(s.SysRoot())
	c.Assert(err, qt.IsNil)
	c.Check(func() { s.Fail("vdz") }, qt.PanicMatches, `mdtest: .*`)
	c.Assert(s.Close(), qt.IsNil)
	_, err = os.Stat(s.SysRoot())
	c.Check(err, qt.ErrorIs, fs.ErrNotExist)
}
