package md

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	qt "github.com/frankban/quicktest"

	"github.com/go-mdraid/mdraid/internal/fixture"
	"github.com/go-mdraid/mdraid/superblock"
	"github.com/go-mdraid/mdraid/sysfs"
)

// fakeAssembly records assembly's calls and changes nothing.
type fakeAssembly struct {
	mu    sync.Mutex
	calls []string
}

func (f *fakeAssembly) rec(format string, args ...any) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, fmt.Sprintf(format, args...))
	return nil
}

func (f *fakeAssembly) NewArray(name string) error { return f.rec("NewArray %s", name) }
func (f *fakeAssembly) SetArrayInfo(a string, major, minor int) error {
	return f.rec("SetArrayInfo %s %d.%d", a, major, minor)
}
func (f *fakeAssembly) AddDisk(a string, d sysfs.DevNum) error { return f.rec("AddDisk %s %v", a, d) }
func (f *fakeAssembly) Start(a string, ro bool) error          { return f.rec("Start %s %v", a, ro) }
func (f *fakeAssembly) StopArray(a string) error               { return f.rec("StopArray %s", a) }
func (f *fakeAssembly) SetSlot(a, m string, s int) error       { return f.rec("SetSlot %s %s %d", a, m, s) }
func (f *fakeAssembly) WriteState(a, m string, c sysfs.MemberCommand) error {
	return f.rec("WriteState %s %s %s", a, m, c)
}
func (f *fakeAssembly) Uevent(a string) error { return f.rec("Uevent %s", a) }
func (f *fakeAssembly) DeletePartitions(p string) ([]int, error) {
	return nil, f.rec("DeletePartitions %s", p)
}
func (f *fakeAssembly) MakeNode(p string, d sysfs.DevNum) error { return f.rec("MakeNode %s %v", p, d) }
func (f *fakeAssembly) MakeLink(l, t string) error              { return f.rec("MakeLink %s %s", l, t) }
func (f *fakeAssembly) RemoveLink(l, t string) (bool, error) {
	return false, f.rec("RemoveLink %s %s", l, t)
}
func (f *fakeAssembly) SetModuleParameter(n, v string) error {
	return f.rec("SetModuleParameter %s %s", n, v)
}

// incrementalRig is a captured system with a fake assembly door, a map
// directory, and a block node for member kname of the capture.
func incrementalRig(t *testing.T, name, kname string) (*Manager, *fakeAssembly, string) {
	t.Helper()
	fc := fixture.Named(t, name)
	mapDir := filepath.Join(t.TempDir(), "mdadm")
	m := fixtureManager(t, fc, func(c *Config) { c.MapDir = mapDir; c.HomeHost = "vmtest" })
	f := &fakeAssembly{}
	m.asm = f
	b, err := os.ReadFile(m.fs.Path("class", "block", kname, "dev"))
	if err != nil {
		t.Fatal(err)
	}
	dn, err := sysfs.ParseDevNum(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	node := filepath.Join(t.TempDir(), kname)
	if err := mknodBlock(node, dn.Major, dn.Minor); err != nil {
		t.Skipf("cannot make a device node here: %v", err)
	}
	return m, f, node
}

// TestIncrementalRefusesMemberOfRunningArray: a member of a running array
// that names a slot is not added without Run, and with Run it is in use;
// either way nothing is called and no map file is written.
func TestIncrementalRefusesMemberOfRunningArray(t *testing.T) {
	c := qt.New(t)
	m, f, node := incrementalRig(t, "boot-mirror", "vda")
	_, err := m.Incremental(context.Background(), IncrementalRequest{Device: node})
	c.Assert(err, qt.ErrorIs, ErrRefused)
	c.Check(err, qt.ErrorIs, ErrLeftBehind)
	c.Check(err, qt.ErrorMatches, `.*not adding vda to md127, which is running.*`)
	_, err = m.Incremental(context.Background(), IncrementalRequest{Device: node, Run: true})
	c.Assert(err, qt.ErrorIs, ErrRefused)
	c.Check(err, qt.ErrorIs, ErrInUse)
	c.Check(err, qt.ErrorMatches, `.*vda is held by md127.*`)
	c.Check(f.calls, qt.HasLen, 0)
	_, err = os.Stat(filepath.Join(m.mapDir, "map"))
	c.Check(errors.Is(err, fs.ErrNotExist), qt.IsTrue)
}

// TestIncrementalRefusesNonDevices: a regular file or a missing path is
// refused before anything is read or called.
func TestIncrementalRefusesNonDevices(t *testing.T) {
	c := qt.New(t)
	m, f, _ := incrementalRig(t, "boot-mirror", "vda")
	file := filepath.Join(t.TempDir(), "image")
	c.Assert(os.WriteFile(file, make([]byte, 1<<20), 0o644), qt.IsNil)
	_, err := m.Incremental(context.Background(), IncrementalRequest{Device: file})
	c.Check(err, qt.ErrorIs, ErrRefused)
	c.Check(err, qt.ErrorMatches, `.*is not a block device`)
	_, err = m.Incremental(context.Background(), IncrementalRequest{Device: file + ".missing"})
	c.Check(err, qt.ErrorIs, ErrRefused)
	c.Check(err, qt.ErrorIs, fs.ErrNotExist)
	c.Check(f.calls, qt.HasLen, 0)
}

// TestAssembleScanSkipsMembersOfRunningArrays: on a machine whose array
// runs, a scan adds nothing and calls nothing; the members are passed
// over as in use.
func TestAssembleScanSkipsMembersOfRunningArrays(t *testing.T) {
	c := qt.New(t)
	m, f, _ := incrementalRig(t, "boot-mirror", "vda")
	res, err := m.Assemble(context.Background(), AssembleRequest{Devices: []string{filepath.Join(m.devRoot, "vda"), filepath.Join(m.devRoot, "vdb")}})
	c.Assert(err, qt.IsNil)
	c.Check(res.Added, qt.HasLen, 0)
	c.Check(f.calls, qt.HasLen, 0)
}

// rewriteImage changes the superblock (and with bm, the bitmap) of the
// member image kname under m's dev root.
func rewriteImage(t *testing.T, m *Manager, kname string, change func(sb *superblock.Superblock, bm *superblock.Bitmap)) {
	t.Helper()
	path := filepath.Join(m.devRoot, kname)
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	pr, err := superblock.Probe(f, fi.Size())
	if err != nil || pr.Best() == nil {
		t.Fatalf("probe %s: %v", path, err)
	}
	sb := pr.Best().Superblock
	var bm *superblock.Bitmap
	if sb.HasBitmap() {
		if bm, err = superblock.ReadBitmap(f, sb); err != nil {
			t.Fatal(err)
		}
	}
	change(sb, bm)
	b, err := sb.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(b, sb.DiskOffset); err != nil {
		t.Fatal(err)
	}
	if bm != nil {
		bb, err := bm.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		off, err := superblock.BitmapLocation(sb)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteAt(bb, off); err != nil {
			t.Fatal(err)
		}
	}
}

// TestIncrementalRefusesWhatMdadmMustDo: a member of an array in the
// middle of a reshape, of a clustered array or of one with a lockless
// bitmap is refused before anything is called, with a reason that says
// which.
func TestIncrementalRefusesWhatMdadmMustDo(t *testing.T) {
	for _, tt := range []struct {
		name, fixture, want string
		change              func(sb *superblock.Superblock, bm *superblock.Bitmap)
	}{
		{"reshape", "raid1-v1.2", "a reshape is in progress", func(sb *superblock.Superblock, _ *superblock.Bitmap) {
			sb.Features |= superblock.FeatureReshapeActive
			sb.ReshapePosition = 1024
			sb.NewLevel, sb.NewLayout, sb.NewChunk = sb.Level, sb.Layout, sb.ChunkSize
		}},
		{"clustered", "raid1-bitmap", "clustered array", func(_ *superblock.Superblock, bm *superblock.Bitmap) {
			bm.Version = superblock.BitmapMajorClustered
		}},
		{"lockless bitmap", "raid1-bitmap", "lockless bitmap", func(_ *superblock.Superblock, bm *superblock.Bitmap) {
			bm.Version = superblock.BitmapMajorLockless
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := qt.New(t)
			m, f, node := incrementalRig(t, tt.fixture, "vda")
			rewriteImage(t, m, "vda", tt.change)
			_, err := m.Incremental(context.Background(), IncrementalRequest{Device: node})
			c.Assert(err, qt.ErrorIs, ErrRefused)
			c.Check(err, qt.ErrorIs, ErrUnsupported)
			c.Check(err, qt.ErrorMatches, ".*"+tt.want+".*")
			c.Check(f.calls, qt.HasLen, 0)
		})
	}
}

// TestNewArrayWithoutNewArrayParameter: without md_mod's new_array (the
// module not loaded), NewArray opens the array's node instead, as mdadm
// does, which makes the kernel load md and create the device.
func TestNewArrayWithoutNewArrayParameter(t *testing.T) {
	c := qt.New(t)
	sys, dev := t.TempDir(), t.TempDir()
	fsys, err := sysfs.NewFS(sys)
	c.Assert(err, qt.IsNil)
	var opened []string
	k := sysKernel{fs: fsys, devRoot: dev, openFile: func(name string, flag int, perm os.FileMode) (*os.File, error) {
		opened = append(opened, name)
		// What the kernel does on open: the device appears.
		if err := os.MkdirAll(filepath.Join(sys, "block", "md127"), 0o755); err != nil {
			return nil, err
		}
		return os.Open(os.DevNull)
	}}
	if err := k.NewArray("md127"); err != nil {
		if strings.Contains(err.Error(), "mknod") {
			t.Skipf("cannot make a device node here: %v", err)
		}
		c.Fatal(err)
	}
	c.Check(opened, qt.DeepEquals, []string{filepath.Join(dev, "md127")})
	fi, err := os.Lstat(filepath.Join(dev, "md127"))
	c.Assert(err, qt.IsNil)
	c.Check(fi.Mode()&os.ModeDevice != 0, qt.IsTrue)

	// A kernel that does not create it is an error that says so.
	k.openFile = func(string, int, os.FileMode) (*os.File, error) { return os.Open(os.DevNull) }
	c.Check(k.NewArray("md126"), qt.ErrorMatches, `md: opening .*md126 did not create md126: .*`)
	// An md_NAME form has no node to fall back to.
	c.Check(errors.Is(k.NewArray("md_boot"), fs.ErrNotExist), qt.IsTrue)
}

// TestProbeCacheForgetsWhenTheKernelWrites: within one assembly a
// device's superblock is read once, and again after a start (the kernel
// writes the members' superblocks then); outside an assembly every probe
// reads.
func TestProbeCacheForgetsWhenTheKernelWrites(t *testing.T) {
	c := qt.New(t)
	m, _, _ := incrementalRig(t, "boot-mirror", "vda")
	opens := 0
	open := m.open
	m.open = func(name string) (device, error) {
		opens++
		return open(name)
	}
	for range 2 {
		_, err := m.probe("vda")
		c.Assert(err, qt.IsNil)
	}
	c.Check(opens, qt.Equals, 2)

	opens = 0
	a := m.withProbes()
	for range 3 {
		sb, err := a.probe("vda")
		c.Assert(err, qt.IsNil)
		c.Check(sb.Version, qt.Not(qt.Equals), superblock.Version(0))
	}
	c.Check(opens, qt.Equals, 1)
	a.forgetProbes()
	_, err := a.probe("vda")
	c.Assert(err, qt.IsNil)
	c.Check(opens, qt.Equals, 2)
	c.Check(m.probes, qt.IsNil, qt.Commentf("withProbes changed the Manager it copied"))
}

// TestIncrementalRefusesUnreadableHolders: a device whose holders cannot
// be read may be held: that is refused, with nothing called and no map
// file written.
func TestIncrementalRefusesUnreadableHolders(t *testing.T) {
	c := qt.New(t)
	m, f, node := incrementalRig(t, "boot-mirror", "vda")
	dir, err := filepath.EvalSymlinks(m.fs.Path("class", "block", "vda", "holders"))
	c.Assert(err, qt.IsNil)
	c.Assert(os.RemoveAll(dir), qt.IsNil)
	_, err = m.Incremental(context.Background(), IncrementalRequest{Device: node, Run: true})
	c.Assert(err, qt.ErrorIs, ErrRefused)
	c.Check(err, qt.ErrorIs, errUnknownFact)
	c.Check(err, qt.ErrorIs, fs.ErrNotExist)
	c.Check(err, qt.ErrorMatches, `.*cannot tell whether vda is held.*`)
	c.Check(f.calls, qt.HasLen, 0)
	_, err = os.Stat(filepath.Join(m.mapDir, "map"))
	c.Check(errors.Is(err, fs.ErrNotExist), qt.IsTrue)
}
