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
	"golang.org/x/sys/unix"

	"github.com/go-mdraid/mdraid/internal/fixture"
	"github.com/go-mdraid/mdraid/md/mapfile"
	"github.com/go-mdraid/mdraid/superblock"
	"github.com/go-mdraid/mdraid/sysfs"
	"github.com/google/uuid"
)

// fakeAssembly records assembly's calls and changes nothing, unless
// hook, which sees each call after it is recorded, does what the kernel
// would; hook's error is the call's.
type fakeAssembly struct {
	mu    sync.Mutex
	calls []string
	hook  func(call string) error
}

func (f *fakeAssembly) rec(format string, args ...any) error {
	call := fmt.Sprintf(format, args...)
	f.mu.Lock()
	f.calls = append(f.calls, call)
	hook := f.hook
	f.mu.Unlock()
	if hook != nil {
		return hook(call)
	}
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
	err := f.rec("RemoveLink %s %s", l, t)
	if errors.Is(err, errLinkRemoved) {
		return true, nil
	}
	return false, err
}

// errLinkRemoved is what a fakeAssembly hook returns for a RemoveLink
// that removed the link.
var errLinkRemoved = errors.New("removed")

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
	needMknod(t, mknodBlock(node, dn.Major, dn.Minor))
	return m, f, node
}

// TestIncrementalRefusesMemberOfRunningArray: a device that is a member
// of a running array already is in use, with or without Run, and is not
// called out-of-date (docs/assembly.md §10); a former member that names a
// slot of the running array but is not in it is out-of-date and not
// added without Run. Nothing is called and no map file is written.
func TestIncrementalRefusesMemberOfRunningArray(t *testing.T) {
	c := qt.New(t)
	m, f, node := incrementalRig(t, "boot-mirror", "vda")
	for _, run := range []bool{false, true} {
		_, err := m.Incremental(context.Background(), IncrementalRequest{Device: node, Run: run})
		c.Assert(err, qt.ErrorIs, ErrRefused)
		c.Check(err, qt.ErrorIs, ErrInUse)
		c.Check(errors.Is(err, ErrLeftBehind), qt.IsFalse)
		c.Check(err, qt.ErrorMatches, `.*vda is already a member of md127.*`)
	}
	detachMember(t, m, "md127", "vda")
	_, err := m.Incremental(context.Background(), IncrementalRequest{Device: node})
	c.Assert(err, qt.ErrorIs, ErrRefused)
	c.Check(err, qt.ErrorIs, ErrLeftBehind)
	c.Check(err, qt.ErrorMatches, `.*not adding vda to md127, which is running.*`)
	c.Check(f.calls, qt.HasLen, 0)
	_, err = os.Stat(filepath.Join(m.mapDir, "map"))
	c.Check(errors.Is(err, fs.ErrNotExist), qt.IsTrue)
}

// TestIncrementalRefusesSpareOfRunningArray: a device whose superblock
// makes it a spare of a running (here degraded) array is not hot-added:
// the kernel would rebuild onto it at once. With AddSpares it is, as
// mdadm -I does.
func TestIncrementalRefusesSpareOfRunningArray(t *testing.T) {
	c := qt.New(t)
	m, f, node := incrementalRig(t, "boot-mirror", "vda")
	unbind(t, m)
	rewriteImage(t, m, "vda", func(sb *superblock.Superblock, _ *superblock.Bitmap) {
		sb.DevRoles[sb.DevNumber] = superblock.RoleSpare
	})
	_, err := m.Incremental(context.Background(), IncrementalRequest{Device: node, Run: true})
	c.Assert(err, qt.ErrorIs, ErrRefused)
	c.Check(err, qt.ErrorIs, ErrSpareNotAdded)
	c.Check(err, qt.ErrorMatches, `.*vda is a spare of md127, which is running.*`)
	c.Check(f.calls, qt.HasLen, 0)

	f.hook = kernelAssembly(t, m, "vda", "none\n")
	r, err := m.Incremental(context.Background(), IncrementalRequest{Device: node, AddSpares: true})
	c.Assert(err, qt.IsNil)
	c.Check(r.Array, qt.Equals, "md127")
	c.Check(f.calls, qt.Contains, "AddDisk md127 "+devOf(t, m, "vda").String())
}

// detachMember makes the capture show kname as no member of array: its
// dev-* entry, rdN link and holder are gone, as after the kernel removed
// it.
func detachMember(t *testing.T, m *Manager, array, kname string) {
	t.Helper()
	md := sysPath(t, m, "block", array, "md")
	ents, err := os.ReadDir(md)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "rd") {
			if to, err := os.Readlink(filepath.Join(md, e.Name())); err == nil && to == "dev-"+kname {
				if err := os.Remove(filepath.Join(md, e.Name())); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	if err := os.RemoveAll(filepath.Join(md, "dev-"+kname)); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(m.fs.Path("class", "block", kname, "holders", array)); err != nil {
		t.Fatal(err)
	}
}

// devOf is kname's device number in m's capture.
func devOf(t *testing.T, m *Manager, kname string) sysfs.DevNum {
	t.Helper()
	b, err := os.ReadFile(m.fs.Path("class", "block", kname, "dev"))
	if err != nil {
		t.Fatal(err)
	}
	dn, err := sysfs.ParseDevNum(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return dn
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
			needMknod(t, err)
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
	unbind(t, m)
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

// sysPath is the directory or file behind a path of m's sysfs capture.
func sysPath(t *testing.T, m *Manager, elem ...string) string {
	t.Helper()
	p, err := filepath.EvalSymlinks(m.fs.Path(elem...))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// unbind makes boot-mirror's vda a device md127 does not hold: its
// dev-vda entry and its holder link are gone, and md127 runs on vdb.
func unbind(t *testing.T, m *Manager) {
	t.Helper()
	detachMember(t, m, "md127", "vda")
}

// unassemble makes boot-mirror a machine where md127 was never
// assembled: it is gone from block/ and neither member is held.
func unassemble(t *testing.T, m *Manager) {
	t.Helper()
	if err := os.Remove(m.fs.Path("block", "md127")); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"vda", "vdb"} {
		if err := os.Remove(m.fs.Path("class", "block", d, "holders", "md127")); err != nil {
			t.Fatal(err)
		}
	}
}

// kernelAssembly is a fakeAssembly hook that makes in sysfs what the
// kernel makes: NewArray an md device that is not running, AddDisk a
// member entry for kname whose slot reads slot (no entry when slot is
// empty).
func kernelAssembly(t *testing.T, m *Manager, kname, slot string) func(string) error {
	return func(call string) error {
		f := strings.Fields(call)
		switch f[0] {
		case "NewArray":
			dir := m.fs.Path("block", f[1], "md")
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Error(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "array_state"), []byte("clear\n"), 0o644); err != nil {
				t.Error(err)
			}
		case "AddDisk":
			if slot == "" {
				break
			}
			dir := m.fs.Path("block", f[1], "md", "dev-"+kname)
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Error(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "slot"), []byte(slot), 0o644); err != nil {
				t.Error(err)
			}
		}
		return nil
	}
}

// failOpen makes every read of kname fail with err, as a dying disk's.
func failOpen(m *Manager, kname string, err error) {
	open := m.open
	m.open = func(name string) (device, error) {
		if name == kname {
			return nil, &fs.PathError{Op: "open", Path: "/dev/" + name, Err: err}
		}
		return open(name)
	}
}

// addMember adds an entry for member kname to array's md directory.
func addMember(t *testing.T, m *Manager, array, kname string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(sysPath(t, m, "block", array, "md"), "dev-"+kname), 0o755); err != nil {
		t.Fatal(err)
	}
}

// blankImage makes kname's image a blank disk: no md superblock.
func blankImage(t *testing.T, m *Manager, kname string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(m.devRoot, kname), make([]byte, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
}

// memberBefore adds to md127 a member entry that the kernel's order
// (here the file system's) lists before dev-vdb, and returns its name.
func memberBefore(t *testing.T, m *Manager) string {
	t.Helper()
	for ch := 'c'; ch <= 'z'; ch++ {
		name := "vd" + string(ch)
		addMember(t, m, "md127", name)
		a, err := m.fs.Array("md127")
		if err != nil {
			t.Fatal(err)
		}
		mems, err := a.MembersInKernelOrder()
		if err != nil {
			t.Fatal(err)
		}
		if len(mems) > 1 && mems[0].Name() == name {
			return name
		}
		if err := os.Remove(filepath.Join(sysPath(t, m, "block", "md127", "md"), "dev-"+name)); err != nil {
			t.Fatal(err)
		}
	}
	t.Skip("this file system lists no dev-vd? entry before dev-vdb")
	return ""
}

// checkUnchanged checks that the image of kname holds what it held
// when it was called, and that no map file was written.
func checkUnchanged(t *testing.T, m *Manager, kname string) func() {
	t.Helper()
	path := filepath.Join(m.devRoot, kname)
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return func() {
		t.Helper()
		after, err := os.ReadFile(path)
		if err != nil || string(after) != string(before) {
			t.Errorf("%s changed (%v)", path, err)
		}
		if _, err := os.Stat(filepath.Join(m.mapDir, "map")); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("a map file was written (%v)", err)
		}
	}
}

// TestIncrementalRefusesWhenNoMemberAnswers: the array of vda's UUID
// runs on vdb, whose superblock cannot be read, so whether md127 is
// vda's array cannot be told. That is a refusal with nothing called, not
// "no such array" (which makes a second array of the same UUID).
func TestIncrementalRefusesWhenNoMemberAnswers(t *testing.T) {
	c := qt.New(t)
	m, f, node := incrementalRig(t, "boot-mirror", "vda")
	unbind(t, m)
	failOpen(m, "vdb", unix.EIO)
	unchanged := checkUnchanged(t, m, "vda")
	for _, run := range []bool{false, true} {
		_, err := m.Incremental(context.Background(), IncrementalRequest{Device: node, Run: run})
		c.Assert(err, qt.ErrorIs, ErrRefused)
		c.Check(err, qt.ErrorIs, errUnknownFact)
		c.Check(err, qt.ErrorIs, unix.EIO)
		c.Check(err, qt.ErrorMatches, `.*cannot tell whether md127 is the array of UUID [0-9a-f:]+: no member's superblock can be read \(vdb\): .*input/output error`)
	}
	res, err := m.Assemble(context.Background(), AssembleRequest{Devices: []string{node}})
	c.Assert(err, qt.IsNil)
	c.Check(res.Added, qt.HasLen, 0)
	c.Assert(res.Skipped, qt.HasLen, 1)
	c.Check(res.Skipped[0].Reason, qt.ErrorIs, errUnknownFact)
	c.Check(f.calls, qt.HasLen, 0)
	unchanged()
}

// TestIncrementalRefusesWhenArraysCannotBeListed: with no array list,
// whether an array of the UUID is assembling cannot be told: a refusal.
func TestIncrementalRefusesWhenArraysCannotBeListed(t *testing.T) {
	c := qt.New(t)
	m, f, node := incrementalRig(t, "boot-mirror", "vda")
	unbind(t, m)
	blk := m.fs.Path("block")
	c.Assert(os.RemoveAll(blk), qt.IsNil)
	c.Assert(os.WriteFile(blk, nil, 0o644), qt.IsNil)
	unchanged := checkUnchanged(t, m, "vda")
	_, err := m.Incremental(context.Background(), IncrementalRequest{Device: node, Run: true})
	c.Assert(err, qt.ErrorIs, ErrRefused)
	c.Check(err, qt.ErrorIs, errUnknownFact)
	c.Check(err, qt.ErrorMatches, `.*cannot tell whether an array of UUID [0-9a-f:]+ is assembling: listing the arrays: .*not a directory`)
	c.Check(f.calls, qt.HasLen, 0)
	unchanged()
}

// TestIncrementalRefusesUnreadableMapArray: the map names md127 for
// vda's UUID, but md127's array_state cannot be read: whether it is
// alive cannot be told, which is a refusal, not "dead".
func TestIncrementalRefusesUnreadableMapArray(t *testing.T) {
	c := qt.New(t)
	m, f, node := incrementalRig(t, "boot-mirror", "vda")
	unbind(t, m)
	sb, err := m.probe("vda")
	c.Assert(err, qt.IsNil)
	l, err := mapfile.Map{Dir: m.mapDir}.Lock()
	c.Assert(err, qt.IsNil)
	c.Assert(l.Update(mapfile.Entry{Dev: "md127", Metadata: metadataText(sb), UUID: mapfile.UUIDText(sb), Path: "/dev/md/boot"}), qt.IsNil)
	c.Assert(l.Unlock(), qt.IsNil)
	mapBefore, err := os.ReadFile(filepath.Join(m.mapDir, "map"))
	c.Assert(err, qt.IsNil)
	st := sysPath(t, m, "block", "md127", "md", "array_state")
	c.Assert(os.Remove(st), qt.IsNil)
	c.Assert(os.Mkdir(st, 0o755), qt.IsNil)
	_, err = m.Incremental(context.Background(), IncrementalRequest{Device: node, Run: true})
	c.Assert(err, qt.ErrorIs, ErrRefused)
	c.Check(err, qt.ErrorIs, errUnknownFact)
	c.Check(err, qt.ErrorMatches, `.*cannot tell whether md127, the map's array of UUID [0-9a-f:]+, is assembling: .*array_state.*`)
	c.Check(f.calls, qt.HasLen, 0)
	mapAfter, err := os.ReadFile(filepath.Join(m.mapDir, "map"))
	c.Assert(err, qt.IsNil)
	c.Check(string(mapAfter), qt.Equals, string(mapBefore))
}

// TestIncrementalAsksEveryMember: md127's first member in the kernel's
// order tells nothing (no md superblock, or unreadable); the next one,
// vdb, says md127 is vda's array. Incremental joins it (and is refused
// there: md127 runs), and never creates a second array of the UUID.
func TestIncrementalAsksEveryMember(t *testing.T) {
	for _, tt := range []struct {
		name  string
		setup func(t *testing.T, m *Manager, kname string)
		want  error
		match string
	}{
		{"not a member", blankImage, ErrLeftBehind, `.*not adding vda to md127, which is running.*`},
		{"unreadable", func(_ *testing.T, m *Manager, kname string) { failOpen(m, kname, unix.EIO) }, errUnknownFact,
			`.*cannot compare vda with the members of md127: md: the superblock of vd., a member of md127, cannot be used: .*input/output error`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := qt.New(t)
			m, f, node := incrementalRig(t, "boot-mirror", "vda")
			unbind(t, m)
			tt.setup(t, m, memberBefore(t, m))
			unchanged := checkUnchanged(t, m, "vda")
			_, err := m.Incremental(context.Background(), IncrementalRequest{Device: node})
			c.Assert(err, qt.ErrorIs, ErrRefused)
			c.Check(err, qt.ErrorIs, tt.want)
			c.Check(err, qt.ErrorMatches, tt.match)
			c.Check(f.calls, qt.HasLen, 0)
			unchanged()
		})
	}
}

// TestIncrementalRefusesUnreadableBoundMember: a member of md127 whose
// superblock cannot be read cannot be compared: joining is refused with
// nothing called. A member that carries no md superblock is no member to
// compare, and joining goes ahead as before.
func TestIncrementalRefusesUnreadableBoundMember(t *testing.T) {
	c := qt.New(t)
	m, f, node := incrementalRig(t, "boot-mirror", "vda")
	unbind(t, m)
	addMember(t, m, "md127", "vdz")
	failOpen(m, "vdz", unix.EIO)
	unchanged := checkUnchanged(t, m, "vda")
	_, err := m.Incremental(context.Background(), IncrementalRequest{Device: node, Run: true})
	c.Assert(err, qt.ErrorIs, ErrRefused)
	c.Check(err, qt.ErrorIs, errUnknownFact)
	c.Check(err, qt.ErrorIs, unix.EIO)
	c.Check(err, qt.ErrorMatches, `.*cannot compare vda with the members of md127: md: the superblock of vdz, a member of md127, cannot be used: .*`)
	c.Check(f.calls, qt.HasLen, 0)
	unchanged()

	m, f, node = incrementalRig(t, "boot-mirror", "vda")
	unbind(t, m)
	addMember(t, m, "md127", "vdz")
	blankImage(t, m, "vdz")
	res, err := m.Incremental(context.Background(), IncrementalRequest{Device: node, Run: true})
	c.Assert(err, qt.IsNil)
	c.Check(res.Array, qt.Equals, "md127")
	c.Check(f.calls, qt.Contains, "AddDisk md127 254:0")
}

// TestIncrementalDoesNotStartUncountedArray: after vda is bound to the
// new array, a member that cannot be read leaves the members uncounted:
// the array is not started, and the error, which is no refusal, comes
// with what was changed.
func TestIncrementalDoesNotStartUncountedArray(t *testing.T) {
	c := qt.New(t)
	m, f, node := incrementalRig(t, "boot-mirror", "vda")
	unassemble(t, m)
	kernel := kernelAssembly(t, m, "vda", "none\n")
	f.hook = func(call string) error {
		if err := kernel(call); err != nil {
			return err
		}
		if fs := strings.Fields(call); fs[0] == "AddDisk" {
			addMember(t, m, fs[1], "vdz")
		}
		return nil
	}
	failOpen(m, "vdz", unix.EIO)
	res, err := m.Incremental(context.Background(), IncrementalRequest{Device: node, Run: true})
	c.Assert(err, qt.IsNotNil)
	c.Check(errors.Is(err, ErrRefused), qt.IsFalse)
	c.Check(err, qt.ErrorIs, unix.EIO)
	c.Check(err, qt.ErrorMatches, `md: md\d+ was not started, as its members cannot be counted: .*vdz.*`)
	c.Assert(res, qt.IsNotNil)
	c.Check(res.Writes, qt.Contains, "ADD_NEW_DISK 254:0")
	for _, call := range f.calls {
		c.Check(strings.HasPrefix(call, "Start "), qt.IsFalse, qt.Commentf("%s", call))
	}
}

// TestIncrementalUndoesOnUnknownSlot: a member of an array that has not
// started has no slot. A slot, or one that cannot be read, stops the
// new array again (undo) and says so; only "none" goes on.
func TestIncrementalUndoesOnUnknownSlot(t *testing.T) {
	for _, tt := range []struct {
		name, slot string
		match      string // "" when it goes on
	}{
		{"no slot", "none\n", ""},
		{"a slot", "0\n", `md: the kernel gave vda slot 0 before the array started; this kernel cannot assemble incrementally`},
		{"garbage", "garbage\n", `md: cannot tell whether the kernel gave vda a slot in md\d+ before the array started: .*garbage.*`},
		{"no member entry", "", `md: cannot tell whether the kernel gave vda a slot in md\d+ before the array started: .*no such file or directory`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := qt.New(t)
			m, f, node := incrementalRig(t, "boot-mirror", "vda")
			unassemble(t, m)
			f.hook = kernelAssembly(t, m, "vda", tt.slot)
			res, err := m.Incremental(context.Background(), IncrementalRequest{Device: node})
			c.Assert(res, qt.IsNotNil)
			stop := "StopArray " + res.Array
			if tt.match == "" {
				c.Assert(err, qt.IsNil)
				c.Check(res.Started, qt.Equals, StartUnsafe)
				c.Check(f.calls, qt.Not(qt.Contains), stop)
				return
			}
			c.Assert(err, qt.ErrorMatches, tt.match)
			c.Check(errors.Is(err, ErrRefused), qt.IsFalse)
			c.Check(f.calls[len(f.calls)-1], qt.Equals, stop)
			c.Check(f.calls, qt.Not(qt.Contains), "Start "+res.Array+" false")
			c.Check(res.Writes[len(res.Writes)-1], qt.Equals, "STOP_ARRAY "+res.Array)
			_, err = os.Stat(filepath.Join(m.mapDir, "map"))
			c.Check(errors.Is(err, fs.ErrNotExist), qt.IsTrue)
		})
	}
}

// TestAssembleKeepsWritesOfFailedDevice: when vda's Incremental fails
// after changes, Assemble reports them in Failed, with the error, so that
// the failure can say exactly what was changed; the failure is vda's
// alone, not the call's.
func TestAssembleKeepsWritesOfFailedDevice(t *testing.T) {
	c := qt.New(t)
	m, f, node := incrementalRig(t, "boot-mirror", "vda")
	unassemble(t, m)
	kernel := kernelAssembly(t, m, "vda", "none\n")
	f.hook = func(call string) error {
		if strings.HasPrefix(call, "AddDisk ") {
			return unix.EIO
		}
		return kernel(call)
	}
	res, err := m.Assemble(context.Background(), AssembleRequest{Devices: []string{node}})
	c.Assert(err, qt.IsNil)
	c.Assert(res, qt.IsNotNil)
	c.Check(res.Added, qt.HasLen, 0)
	c.Assert(res.Failed, qt.HasLen, 1)
	f0 := res.Failed[0]
	c.Check(f0.Err, qt.ErrorIs, unix.EIO)
	c.Check(errors.Is(f0.Err, ErrRefused), qt.IsFalse)
	c.Check(f0.Device, qt.Equals, node)
	c.Check(f0.Result.Device, qt.Equals, "vda")
	a := f0.Result.Array
	c.Check(f0.Result.Writes, qt.DeepEquals, []string{"new_array " + a, "SET_ARRAY_INFO 1.0", "STOP_ARRAY " + a})
}

// TestAssemblingSkipsArraysMadeHere: an array this call created for
// another UUID is not read again to tell whose it is; one created for the
// same UUID, or one the call did not create, is.
func TestAssemblingSkipsArraysMadeHere(t *testing.T) {
	c := qt.New(t)
	m, _, _ := incrementalRig(t, "boot-mirror", "vda")
	sb, err := m.probe("vda")
	c.Assert(err, qt.IsNil)
	opens := 0
	open := m.open
	m.open = func(name string) (device, error) {
		opens++
		return open(name)
	}
	other := sb.SetUUID
	other[0] ^= 0xff
	for _, tt := range []struct {
		name    string
		made    *uuid.UUID
		want    string
		opens   int
		comment string
	}{
		{"not made here", nil, "md127", 1, "the array's first member is read"},
		{"made here for this UUID", &sb.SetUUID, "md127", 1, "the array's first member is read"},
		{"made here for another UUID", &other, "", 0, "nothing is read"},
	} {
		c.Run(tt.name, func(c *qt.C) {
			opens = 0
			a := m.withProbes()
			if tt.made != nil {
				a.remember("md127", *tt.made)
			}
			got, _, err := a.assembling(nil, sb, mapfile.UUIDText(sb))
			c.Assert(err, qt.IsNil)
			c.Check(got, qt.Equals, tt.want)
			c.Check(opens, qt.Equals, tt.opens, qt.Commentf(tt.comment))
		})
	}
}

// TestAssembleWritesUeventOnceAtTheEnd: Incremental writes change to the
// array's uevent after its device; Assemble writes it once per array,
// after every other call, and records it in the array's last result.
func TestAssembleWritesUeventOnceAtTheEnd(t *testing.T) {
	c := qt.New(t)
	uevents := func(calls []string) (n int, last bool) {
		for i, call := range calls {
			if strings.HasPrefix(call, "Uevent ") {
				n++
				last = i == len(calls)-1
			}
		}
		return n, last
	}

	m, f, node := incrementalRig(t, "boot-mirror", "vda")
	_, _, node2 := incrementalRig(t, "boot-mirror", "vdb")
	unassemble(t, m)
	// The kernel: a new array, and a member entry with no slot for each
	// device added (vda is 254:0 in the capture, vdb 254:16).
	f.hook = func(call string) error {
		fs := strings.Fields(call)
		if fs[0] == "AddDisk" {
			kname := map[string]string{"254:0": "vda", "254:16": "vdb"}[fs[2]]
			return kernelAssembly(t, m, kname, "none\n")(call)
		}
		return kernelAssembly(t, m, "", "")(call)
	}
	res, err := m.Assemble(context.Background(), AssembleRequest{Devices: []string{node, node2}})
	c.Assert(err, qt.IsNil)
	c.Assert(res.Added, qt.HasLen, 2, qt.Commentf("%q", f.calls))
	c.Assert(res.Added[1].Array, qt.Equals, res.Added[0].Array)
	c.Check(res.Added[0].Writes, qt.Not(qt.Contains), "uevent change")
	res.Added = res.Added[1:]
	n, last := uevents(f.calls)
	c.Check(n, qt.Equals, 1)
	c.Check(last, qt.IsTrue, qt.Commentf("%q", f.calls))
	c.Check(f.calls[len(f.calls)-1], qt.Equals, "Uevent "+res.Added[0].Array)
	w := res.Added[0].Writes
	c.Check(w[len(w)-1], qt.Equals, "uevent change")
	c.Check(m.uevents, qt.IsNil, qt.Commentf("Assemble changed the Manager it copied"))

	m, f, node = incrementalRig(t, "boot-mirror", "vda")
	unassemble(t, m)
	f.hook = kernelAssembly(t, m, "vda", "none\n")
	r, err := m.Incremental(context.Background(), IncrementalRequest{Device: node})
	c.Assert(err, qt.IsNil)
	n, last = uevents(f.calls)
	c.Check(n, qt.Equals, 1)
	c.Check(last, qt.IsTrue)
	c.Check(r.Writes[len(r.Writes)-1], qt.Equals, "uevent change")
}
