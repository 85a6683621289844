// Package mdtest rebuilds real md systems for tests, as net/http/httptest
// gives a test a real server: [Capture] takes one of the captures of a
// real kernel that ship with this module (an array made by mdadm in a VM
// and recorded as it stood: its sysfs tree and its members' superblock
// regions) and rebuilds it in a temporary directory, and
// [System.Config] is the *md.Config that points md.Open at it.
//
//	sys := mdtest.Capture(t, "raid1-failed")
//	m, err := md.Open(sys.Config())
//
// The captures are embedded in the module (0.85 MB), so a program
// that imports this package needs nothing on disk. [Captures] lists them;
// the repository's testdata/README.md says how each was made, on which
// kernel.
//
// # Changing the captured state
//
// A [System]'s methods change it the way the kernel changes a running
// system, in sysfs: [System.Fail] fails a member, [System.StartRecovery]
// starts rebuilding a spare, [System.AddDisk] and [System.AddUsedDisk]
// put a disk in a port (a by-path identity, as heal looks for one),
// [System.Unreadable] makes an attribute fail to read and [System.Set]
// writes one. Each mirrors what a capture of the same event shows; the
// superblocks on the members stay as captured (the kernel would also
// write its new view of the array into them).
//
// What cannot be rebuilt in a directory is refused by md as on a real
// system: the disks are image files, not block devices, so a replace or
// heal plan that reaches the candidate's block-device checks refuses it
// (only md's own tests may accept image files), and nothing that writes
// to the kernel through an ioctl can run.
package mdtest

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/go-mdraid/mdraid/internal/fixture"
	"github.com/go-mdraid/mdraid/internal/sysfstree"
	"github.com/go-mdraid/mdraid/md"
	"github.com/go-mdraid/mdraid/testdata/fixtures"
)

// HomeHost is the host name of the VM the captures were made in: their
// arrays are local to it ("vmtest:0"), except the two made with
// --homehost=talos. [System.Config] sets it as md.Config.HomeHost.
const HomeHost = "vmtest"

// Captures returns the names of the captures [Capture] can rebuild,
// sorted ("boot-mirror", "raid1-failed", "raid5-k7.2", ...).
func Captures() []string {
	ents, err := fs.ReadDir(fixtures.FS, ".")
	if err != nil {
		panic(err) // an embed.FS's root always reads
	}
	var out []string
	for _, e := range ents {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	sort.Strings(out)
	return out
}

// System is a captured system rebuilt in a temporary directory: a sysfs
// tree, a device directory with one image file per member, and empty
// run, map, proc and udev directories and mount table. One made by
// Capture is removed when the test ends, one made by New by Close.
type System struct {
	tb      testing.TB // nil for New: failures panic
	owned   bool       // made by New: Close removes dir
	name    string
	info    fixture.Info
	dir     string
	sys     string
	dev     string
	entries []sysfstree.Entry // the captured tree, for AddDisk
}

// Capture rebuilds the named capture in a fresh tb.TempDir(). An unknown
// name fails the test, listing the known ones; so does every method that
// fails.
func Capture(tb testing.TB, name string) *System {
	tb.Helper()
	s, err := build(tb.TempDir(), name)
	if err != nil {
		tb.Fatal(err)
	}
	s.tb = tb
	return s
}

// New rebuilds the named capture in a new temporary directory, which
// Close removes: for a program or an Example, which has no testing.TB.
// A method of its System that fails panics, as httptest.NewServer does.
func New(name string) (*System, error) {
	dir, err := os.MkdirTemp("", "mdtest-")
	if err != nil {
		return nil, fmt.Errorf("mdtest: %w", err)
	}
	s, err := build(dir, name)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	s.owned = true
	return s, nil
}

// Close removes the directory of a System made by New. It does nothing
// for one made by Capture, whose directory the test removes.
func (s *System) Close() error {
	if !s.owned {
		return nil
	}
	return os.RemoveAll(s.dir)
}

func (s *System) helper() {
	if s.tb != nil {
		s.tb.Helper()
	}
}

func (s *System) fatalf(format string, args ...any) {
	if s.tb != nil {
		s.tb.Helper()
		s.tb.Fatalf(format, args...)
	}
	panic(fmt.Sprintf(format, args...))
}

// build rebuilds the capture name below dir.
func build(dir, name string) (*System, error) {
	unknown := fmt.Errorf("mdtest: no capture %q; there are %s", name, strings.Join(Captures(), ", "))
	if !valid(name) {
		return nil, unknown
	}
	sub, err := fs.Sub(fixtures.FS, name)
	if err != nil {
		return nil, unknown
	}
	b, err := fs.ReadFile(sub, "case.json")
	if err != nil {
		return nil, unknown
	}
	s := &System{name: name, dir: dir}
	if err := json.Unmarshal(b, &s.info); err != nil {
		return nil, fmt.Errorf("mdtest: %s/case.json: %w", name, err)
	}
	if s.sys, s.dev, err = fixture.MaterializeFS(sub, s.dir); err != nil {
		return nil, fmt.Errorf("mdtest: %s: %w", name, err)
	}
	f, err := sub.Open("sysfs.txt")
	if err != nil {
		return nil, fmt.Errorf("mdtest: %s: %w", name, err)
	}
	defer f.Close()
	if s.entries, err = sysfstree.Parse(f); err != nil {
		return nil, fmt.Errorf("mdtest: %s: %w", name, err)
	}
	for _, d := range []string{"run", "mdadm", "proc", "udev"} {
		if err := os.Mkdir(filepath.Join(s.dir, d), 0o700); err != nil {
			return nil, fmt.Errorf("mdtest: %w", err)
		}
	}
	for _, f := range []string{"mountinfo", filepath.Join("proc", "swaps")} {
		if err := os.WriteFile(filepath.Join(s.dir, f), nil, 0o644); err != nil {
			return nil, fmt.Errorf("mdtest: %w", err)
		}
	}
	mdstat, err := fs.ReadFile(sub, "mdstat.txt")
	if err != nil {
		return nil, fmt.Errorf("mdtest: %s: %w", name, err)
	}
	if err := os.WriteFile(s.Mdstat(), mdstat, 0o644); err != nil {
		return nil, fmt.Errorf("mdtest: %w", err)
	}
	return s, nil
}

func valid(name string) bool {
	return fs.ValidPath(name) && name != "." && !strings.Contains(name, "/")
}

// Config returns a new md.Config for the system: its sysfs and device
// roots, and a run directory, map directory, proc root, udev directory
// and mount table of its own (empty: nothing is mounted or open), with
// HomeHost set to the captures' host.
func (s *System) Config() *md.Config {
	return &md.Config{
		SysRoot:   s.sys,
		DevRoot:   s.dev,
		RunDir:    filepath.Join(s.dir, "run"),
		MapDir:    filepath.Join(s.dir, "mdadm"),
		ProcRoot:  filepath.Join(s.dir, "proc"),
		UdevDir:   filepath.Join(s.dir, "udev"),
		MountInfo: filepath.Join(s.dir, "mountinfo"),
		HomeHost:  HomeHost,
	}
}

// Mdstat is the path of the captured /proc/mdstat, in the proc root of
// Config (for md/watch's Options.Mdstat). The methods that change the
// system do not change it.
func (s *System) Mdstat() string { return filepath.Join(s.dir, "proc", "mdstat") }

// Name is the capture's name.
func (s *System) Name() string { return s.name }

// Array is the kernel name of the captured array ("md0", "md127").
func (s *System) Array() string { return s.info.Array }

// Kernel is the release of the kernel the capture was made on
// ("6.1.0-57-amd64").
func (s *System) Kernel() string { return s.info.Kernel }

// SysRoot is the root of the rebuilt sysfs tree.
func (s *System) SysRoot() string { return s.sys }

// DevRoot is the device directory: one image file per captured member,
// named by its kernel name, and the disks added since.
func (s *System) DevRoot() string { return s.dev }

// attrPath is the path of an attribute below the array's device
// directory (/sys/block/ARRAY/...), such as "md/sync_action".
func (s *System) attrPath(attr string) string {
	if !fs.ValidPath(attr) || attr == "." {
		s.fatalf("mdtest: %q is not a path below /sys/block/%s", attr, s.Array())
	}
	return filepath.Join(s.sys, "block", s.Array(), filepath.FromSlash(attr))
}

// Get reads an attribute below the array's device directory
// (/sys/block/ARRAY/ATTR, such as "md/degraded"), without its trailing
// newline.
func (s *System) Get(attr string) string {
	s.helper()
	b, err := os.ReadFile(s.attrPath(attr))
	if err != nil {
		s.fatalf("mdtest: %v", err)
	}
	return strings.TrimSuffix(string(b), "\n")
}

// Set writes value, with a newline as the kernel shows it, to an
// attribute below the array's device directory (such as
// "md/sync_action"), creating it if it was absent.
func (s *System) Set(attr, value string) {
	s.helper()
	p := s.attrPath(attr)
	if err := os.WriteFile(p, []byte(value+"\n"), 0o644); err != nil {
		s.fatalf("mdtest: %v", err)
	}
}

// Unreadable makes an attribute below the array's device directory
// (such as "md/sync_action", "md/dev-vdb/state" or
// "queue/logical_block_size") fail to read, as an attribute does whose
// read returns an error (the test may run as root, whom permissions do
// not stop, so a read of it fails with EISDIR).
func (s *System) Unreadable(attr string) {
	s.helper()
	p := s.attrPath(attr)
	if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
		s.fatalf("mdtest: %v", err)
	}
	if err := os.Mkdir(p, 0o755); err != nil {
		s.fatalf("mdtest: %v", err)
	}
}

// Fail fails the member (a kernel name, such as "vdb") as the kernel
// does on a write error or mdadm --fail: its state reads faulty, its
// slot none and recovery_start 0, the array's rdN link to it goes, and
// the array's degraded count goes up (compare captures raid1-v1.2 and
// raid1-failed). The member stays bound. Failing a member that is not
// in sync fails the test.
func (s *System) Fail(member string) {
	s.helper()
	state := strings.Split(s.Get("md/dev-"+member+"/state"), ",")
	slot := s.Get("md/dev-" + member + "/slot")
	flags := []string{"faulty"}
	inSync := false
	for _, f := range state {
		if f == "in_sync" {
			inSync = true
		} else if f != "" {
			flags = append(flags, f)
		}
	}
	if !inSync {
		s.fatalf("mdtest: %s of %s is %s, not in_sync", member, s.Array(), strings.Join(state, ","))
	}
	s.Set("md/dev-"+member+"/state", strings.Join(flags, ","))
	s.Set("md/dev-"+member+"/slot", "none")
	s.Set("md/dev-"+member+"/recovery_start", "0")
	if err := os.Remove(s.attrPath("md/rd" + slot)); err != nil {
		s.fatalf("mdtest: %v", err)
	}
	s.Set("md/degraded", strconv.Itoa(s.getInt("md/degraded")+1))
}

// Pull takes a faulty member's disk (a kernel name, such as "vdb") out
// of the machine, as pulling it from its port does once md has let go of
// it (mdadm -If from the udev rule, or mdctl remove): the member leaves
// the array (md/dev-MEMBER goes; its slot stays missing) and the disk's
// sysfs entries and device file go, so that its port is free for
// AddDisk (an offline swap). The captures' disks are virtio disks, one
// PCI function each, and that function goes with the disk. Pulling a member that is not faulty fails
// the test: md would fail it first.
func (s *System) Pull(member string) {
	s.helper()
	state := s.Get("md/dev-" + member + "/state")
	if !slices.Contains(strings.Split(state, ","), "faulty") {
		s.fatalf("mdtest: %s of %s is %s, not faulty", member, s.Array(), state)
	}
	block := filepath.Join(s.sys, "block", member)
	dir, err := filepath.EvalSymlinks(block)
	if err != nil {
		s.fatalf("mdtest: %v", err)
	}
	dev, err := os.ReadFile(filepath.Join(dir, "dev"))
	if err != nil {
		s.fatalf("mdtest: %v", err)
	}
	// A virtio disk is a PCI function of its own: pulling the disk
	// takes the function away (hot-unplug), and AddDisk puts one back.
	for d := dir; d != s.sys && d != "/" && d != "."; d = filepath.Dir(d) {
		if pciFunction(filepath.Base(d)) {
			dir = d
			break
		}
	}
	for _, p := range []string{
		s.attrPath("md/dev-" + member),
		s.attrPath("slaves/" + member),
		dir,
		block,
		filepath.Join(s.sys, "class", "block", member),
		filepath.Join(s.sys, "dev", "block", strings.TrimSpace(string(dev))),
		filepath.Join(s.dev, member),
	} {
		if err := os.RemoveAll(p); err != nil {
			s.fatalf("mdtest: %v", err)
		}
	}
}

func (s *System) getInt(attr string) int {
	s.helper()
	n, err := strconv.Atoi(s.Get(attr))
	if err != nil {
		s.fatalf("mdtest: %s: %v", attr, err)
	}
	return n
}

// StartRecovery starts the kernel rebuilding a spare onto the lowest
// empty slot, as it does when a spare is added to a degraded array (or
// sync_action is set to idle after frozen): the spare takes the slot
// (slot, rdN link, recovery_start 0, its state still spare),
// sync_action reads recover, last_sync_action recovery and
// sync_completed "0 / SECTORS" (compare capture raid1-recovering). An
// array without a spare or an empty slot fails the test.
func (s *System) StartRecovery() {
	s.helper()
	spare := ""
	used := map[string]bool{}
	ents, err := os.ReadDir(s.attrPath("md"))
	if err != nil {
		s.fatalf("mdtest: %v", err)
	}
	for _, e := range ents {
		m, ok := strings.CutPrefix(e.Name(), "dev-")
		if !ok {
			continue
		}
		slot := s.Get("md/dev-" + m + "/slot")
		if slot != "none" {
			used[slot] = true
		} else if spare == "" && s.Get("md/dev-"+m+"/state") == "spare" {
			spare = m
		}
	}
	if spare == "" {
		s.fatalf("mdtest: %s has no spare to recover onto", s.Array())
	}
	slot := -1
	for i := range s.getInt("md/raid_disks") {
		if !used[strconv.Itoa(i)] {
			slot = i
			break
		}
	}
	if slot < 0 {
		s.fatalf("mdtest: %s has no empty slot to recover", s.Array())
	}
	n := strconv.Itoa(slot)
	s.Set("md/dev-"+spare+"/slot", n)
	s.Set("md/dev-"+spare+"/recovery_start", "0")
	if err := os.Symlink("dev-"+spare, s.attrPath("md/rd"+n)); err != nil {
		s.fatalf("mdtest: %v", err)
	}
	s.Set("md/sync_action", "recover")
	s.Set("md/last_sync_action", "recovery")
	s.Set("md/sync_completed", "0 / "+strconv.Itoa(2*s.getInt("md/component_size")))
	s.Set("md/sync_speed", "0")
}

// AddDisk puts a blank disk of size bytes, named name (a kernel name
// such as "vdz"), in the port byPath ("pci-0000:00:18.0"), as hot-plugging
// a disk there does: its sysfs device, class/block, block and dev/block
// entries, copied from the captured member disks (the rig's virtio
// disks, so a port is a PCI slot), and an image file of zeros in the
// device directory. It returns the disk's path there. A name or port in
// use, or a port not of the form pci-DDDD:BB:SS.F, fails the test.
func (s *System) AddDisk(name, byPath string, size int64) string {
	s.helper()
	p := s.plug(name, byPath, size)
	f, err := os.Create(p)
	if err == nil {
		err = f.Truncate(size)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		s.fatalf("mdtest: %v", err)
	}
	return p
}

// AddUsedDisk is AddDisk for a disk that is not blank: the member
// member ("vda") of the capture named from, as it was captured (its
// superblock, and whatever else the capture kept of it), with its size.
// It is what a disk taken from another machine's array looks like.
func (s *System) AddUsedDisk(name, byPath, from, member string) string {
	s.helper()
	sub, err := fs.Sub(fixtures.FS, from)
	if err != nil || !valid(from) {
		s.fatalf("mdtest: no capture %q", from)
	}
	f, err := sub.Open(member + ".regions.gz")
	if err != nil {
		s.fatalf("mdtest: capture %s has no member %q", from, member)
	}
	defer f.Close()
	im, err := fixture.ReadRegions(f)
	if err != nil {
		s.fatalf("mdtest: %s/%s: %v", from, member, err)
	}
	p := s.plug(name, byPath, im.Size())
	if err := im.WriteSparseFile(p); err != nil {
		s.fatalf("mdtest: %v", err)
	}
	return p
}

// plug adds the sysfs entries of a disk name of size bytes in port
// byPath, copied from the first captured member disk, and returns the
// path its image goes to.
func (s *System) plug(name, byPath string, size int64) string {
	s.helper()
	slot, ok := strings.CutPrefix(byPath, "pci-")
	if !ok || strings.Count(slot, ":") != 2 || strings.Count(slot, ".") != 1 || strings.ContainsAny(slot, "/ ") {
		s.fatalf("mdtest: port %q is not pci-DDDD:BB:SS.F", byPath)
	}
	if name == "" || !valid(name) || strings.HasPrefix(name, ".") {
		s.fatalf("mdtest: %q is not a kernel name", name)
	}
	if _, err := os.Lstat(filepath.Join(s.sys, "class", "block", name)); err == nil {
		s.fatalf("mdtest: a disk %s is already there", name)
	}
	for _, m := range s.info.Members {
		if m.ByPath == byPath {
			if _, err := os.Lstat(filepath.Join(s.sys, "block", m.Name)); err == nil {
				s.fatalf("mdtest: port %s holds %s", byPath, m.Name)
			}
		}
	}
	t, ok := s.templateDisk()
	if !ok {
		s.fatalf("mdtest: capture %s has no PCI disk to copy", s.name)
	}
	major := t.major
	minor := s.freeMinor(major)
	newDev := major + ":" + strconv.Itoa(minor)
	// rename maps a path or link target of the template disk to the new
	// one: the PCI slot and the kernel name as whole path elements.
	rename := func(p string) string {
		el := strings.Split(p, "/")
		for i := range el {
			switch el[i] {
			case t.slot:
				el[i] = slot
			case t.name:
				el[i] = name
			case t.dev:
				el[i] = newDev
			}
		}
		return strings.Join(el, "/")
	}
	newDir := rename(t.dir)
	var add []sysfstree.Entry
	seen := map[string]bool{}
	for _, e := range s.entries {
		in := strings.HasPrefix(e.Path, t.pciDir+"/") || e.Path == t.pciDir
		link := e.Path == "block/"+t.name || e.Path == "class/block/"+t.name || e.Path == "dev/block/"+t.dev
		if !in && !link || strings.Contains(e.Path, "/holders/") {
			continue
		}
		// The template's partitions (vda/vda2) are not the new disk's.
		if rest, ok := strings.CutPrefix(e.Path, t.dir+"/"); ok && strings.HasPrefix(rest, t.name) {
			continue
		}
		n := sysfstree.Entry{Kind: e.Kind, Path: rename(e.Path), Data: e.Data}
		switch {
		case e.Kind == sysfstree.Link:
			n.Data = rename(e.Data)
		case e.Kind == sysfstree.File:
			n.Data = strings.ReplaceAll(e.Data, t.slot, slot)
		}
		seen[n.Path] = true
		add = append(add, n)
	}
	// What identifies the new disk, whether or not the capture kept the
	// template's own (a partition member's disk keeps few attributes).
	for _, f := range []sysfstree.Entry{
		{Kind: sysfstree.File, Path: newDir + "/dev", Data: newDev + "\n"},
		{Kind: sysfstree.File, Path: newDir + "/size", Data: strconv.FormatInt(size/512, 10) + "\n"},
		{Kind: sysfstree.File, Path: newDir + "/serial", Data: "mdtest-" + name},
		{Kind: sysfstree.File, Path: newDir + "/uevent", Data: fmt.Sprintf("MAJOR=%s\nMINOR=%d\nDEVNAME=%s\nDEVTYPE=disk\n", major, minor, name)},
		{Kind: sysfstree.Link, Path: "block/" + name, Data: "../" + newDir},
		{Kind: sysfstree.Link, Path: "class/block/" + name, Data: "../../" + newDir},
		{Kind: sysfstree.Link, Path: "dev/block/" + newDev, Data: "../../" + newDir},
	} {
		for i := range add {
			if add[i].Path == f.Path {
				add[i] = f
			}
		}
		if !seen[f.Path] {
			add = append(add, f)
		}
	}
	if err := sysfstree.Materialize(s.sys, add); err != nil {
		s.fatalf("mdtest: %v", err)
	}
	return filepath.Join(s.dev, name)
}

// template is the captured disk that [System.plug] copies.
type template struct {
	name   string // kernel name, "vda"
	dir    string // its directory below the sysfs root
	pciDir string // the directory of its PCI function
	slot   string // that function, "0000:00:10.0"
	dev    string // its "major:minor"
	major  string
}

// templateDisk finds a captured disk on a PCI function: a member disk, or
// the disk that holds a member partition.
func (s *System) templateDisk() (template, bool) {
	links := map[string]string{}
	files := map[string]string{}
	for _, e := range s.entries {
		switch e.Kind {
		case sysfstree.Link:
			links[e.Path] = e.Data
		case sysfstree.File:
			files[e.Path] = e.Data
		}
	}
	for _, m := range s.info.Members {
		target, ok := links["class/block/"+m.Name]
		if !ok {
			continue
		}
		dir := path.Clean(path.Join("class/block", target))
		if path.Base(path.Dir(dir)) != "block" {
			dir = path.Dir(dir) // a partition: its disk
		}
		t := template{name: path.Base(dir), dir: dir}
		for d := dir; d != "." && d != "/"; d = path.Dir(d) {
			if pciFunction(path.Base(d)) {
				t.pciDir, t.slot = d, path.Base(d)
			}
		}
		if dev, ok := files[dir+"/dev"]; ok {
			t.dev = strings.TrimSpace(dev)
		} else {
			var mj, mn string
			for _, l := range strings.Split(files[dir+"/uevent"], "\n") {
				if v, ok := strings.CutPrefix(l, "MAJOR="); ok {
					mj = v
				}
				if v, ok := strings.CutPrefix(l, "MINOR="); ok {
					mn = v
				}
			}
			if mj != "" && mn != "" {
				t.dev = mj + ":" + mn
			}
		}
		t.major, _, _ = strings.Cut(t.dev, ":")
		if t.pciDir != "" && t.major != "" {
			return t, true
		}
	}
	return template{}, false
}

// pciFunction reports whether s names a PCI function, "0000:00:10.0".
func pciFunction(s string) bool {
	dom, rest, ok1 := strings.Cut(s, ":")
	bus, rest, ok2 := strings.Cut(rest, ":")
	sl, fn, ok3 := strings.Cut(rest, ".")
	hex := func(v string, n int) bool {
		_, err := strconv.ParseUint(v, 16, 32)
		return len(v) == n && err == nil
	}
	return ok1 && ok2 && ok3 && hex(dom, 4) && hex(bus, 2) && hex(sl, 2) && hex(fn, 1)
}

// freeMinor is a minor number of major that no device in dev/block has,
// in steps of 16 as the virtio driver numbers disks.
func (s *System) freeMinor(major string) int {
	ents, _ := os.ReadDir(filepath.Join(s.sys, "dev", "block"))
	next := 0
	for _, e := range ents {
		mj, mn, ok := strings.Cut(e.Name(), ":")
		if n, err := strconv.Atoi(mn); ok && mj == major && err == nil && n >= next {
			next = (n/16 + 1) * 16
		}
	}
	return next
}
