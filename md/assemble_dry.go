package md

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/go-mdraid/mdraid/blockdev"
	"github.com/go-mdraid/mdraid/md/mapfile"
	"github.com/go-mdraid/mdraid/sysfs"
)

// A dry run of assembly (AssembleRequest.DryRun, IncrementalRequest.DryRun)
// runs the very code of the real run, with every decision it makes, but
// through a door that changes nothing (dryAssembly): each call is kept
// in dryRun, and what assembly reads back of the arrays it changed (an
// array's state and members, whether a number or a name is taken, the
// map file) is answered from there, on top of what the kernel says. So
// the dry run's result lists the writes the real run would make, in its
// order, and the states it would leave; what it cannot foresee is the
// kernel's own answer to a write (an ADD_NEW_DISK or a start the kernel
// refuses) and an array assembled on top of an array that is not running
// yet (docs/assembly.md §11).

// dryRun is what a dry run of assembly would have changed so far.
type dryRun struct {
	mu     sync.Mutex
	arrays map[string]*dryArray
	links  map[string]string // link -> target made by the dry run
	gone   map[string]bool   // links the dry run removed
}

// dryArray is an array as the dry run would leave it.
type dryArray struct {
	created bool             // made by the dry run: not in the kernel
	stopped bool             // stopped by the dry run
	added   []string         // members bound, in order
	removed map[string]bool  // members detached
	state   sysfs.ArrayState // "" for what the kernel says
}

func newDryRun() *dryRun {
	return &dryRun{arrays: map[string]*dryArray{}, links: map[string]string{}, gone: map[string]bool{}}
}

// array returns name's entry, made on first use. Call with mu held.
func (d *dryRun) array(name string) *dryArray {
	a := d.arrays[name]
	if a == nil {
		a = &dryArray{removed: map[string]bool{}}
		d.arrays[name] = a
	}
	return a
}

// lookup returns a copy of name's entry, if the dry run changed it.
func (d *dryRun) lookup(name string) (dryArray, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	a, ok := d.arrays[name]
	if !ok {
		return dryArray{}, false
	}
	c := *a
	c.added = slices.Clone(a.added)
	return c, true
}

// withDryRun returns a copy of m whose assembly changes nothing: see
// dryRun.
func (m *Manager) withDryRun() *Manager {
	c := *m
	c.dry = newDryRun()
	c.asm = dryAssembly{m: &c, d: c.dry}
	return &c
}

// arrayState is array's state as assembly sees it: the dry run's, else
// the kernel's.
func (m *Manager) arrayState(array string) (sysfs.ArrayState, error) {
	if m.dry != nil {
		if a, ok := m.dry.lookup(array); ok {
			switch {
			case a.stopped:
				return "", fmt.Errorf("md: %s: %w", array, fs.ErrNotExist)
			case a.state != "":
				return a.state, nil
			case a.created:
				return sysfs.StateInactive, nil
			}
		}
	}
	a, err := m.fs.Array(array)
	if err != nil {
		return "", err
	}
	return a.State()
}

// memberNames lists array's members in the kernel's order: the dry run's
// additions come after the kernel's members, as the kernel lists a member
// bound last.
func (m *Manager) memberNames(array string) ([]string, error) {
	var d dryArray
	var dry bool
	if m.dry != nil {
		d, dry = m.dry.lookup(array)
		if dry && d.stopped {
			return nil, fmt.Errorf("md: %s: %w", array, fs.ErrNotExist)
		}
	}
	var out []string
	if !dry || !d.created {
		a, err := m.fs.Array(array)
		if err != nil {
			return nil, err
		}
		mems, err := a.MembersInKernelOrder()
		if err != nil {
			return nil, err
		}
		for _, mem := range mems {
			out = append(out, mem.Name())
		}
	}
	for _, k := range d.added {
		if !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return slices.DeleteFunc(out, func(k string) bool { return d.removed[k] }), nil
}

// hasMember reports whether kname is a member of array.
func (m *Manager) hasMember(array, kname string) bool {
	names, err := m.memberNames(array)
	return err == nil && slices.Contains(names, kname)
}

// dryCreated reports whether the dry run made array name.
func (m *Manager) dryCreated(name string) bool {
	if m.dry == nil {
		return false
	}
	a, ok := m.dry.lookup(name)
	return ok && a.created && !a.stopped
}

// dryMember reports whether the dry run bound kname to array.
func (m *Manager) dryMember(array, kname string) bool {
	if m.dry == nil {
		return false
	}
	a, ok := m.dry.lookup(array)
	return ok && slices.Contains(a.added, kname)
}

// dryAssembly is the door of a dry run: it changes nothing, and keeps
// what each call would have done in d.
type dryAssembly struct {
	m *Manager
	d *dryRun
}

func (k dryAssembly) NewArray(name string) error {
	k.d.mu.Lock()
	defer k.d.mu.Unlock()
	if a, ok := k.d.arrays[name]; ok && !a.stopped {
		return fmt.Errorf("md: %s: %w", name, fs.ErrExist)
	}
	k.d.arrays[name] = &dryArray{created: true, removed: map[string]bool{}}
	return nil
}

func (k dryAssembly) SetArrayInfo(string, int, int) error { return nil }

func (k dryAssembly) AddDisk(array string, dev sysfs.DevNum) error {
	dir, err := k.m.fs.Rel(k.m.fs.Path("dev", "block", dev.String()))
	if err != nil {
		return fmt.Errorf("md: %v is not in sysfs: %w", dev, err)
	}
	kname := filepath.Base(dir)
	k.d.mu.Lock()
	defer k.d.mu.Unlock()
	a := k.d.array(array)
	a.added = append(a.added, kname)
	delete(a.removed, kname)
	return nil
}

func (k dryAssembly) Start(array string, readAuto bool) error {
	k.d.mu.Lock()
	defer k.d.mu.Unlock()
	a := k.d.array(array)
	a.state = sysfs.StateActive
	if readAuto {
		a.state = sysfs.StateReadAuto
	}
	return nil
}

func (k dryAssembly) StopArray(array string) error {
	k.d.mu.Lock()
	defer k.d.mu.Unlock()
	k.d.array(array).stopped = true
	return nil
}

func (k dryAssembly) SetSlot(string, string, int) error { return nil }

func (k dryAssembly) WriteState(array, member string, cmd sysfs.MemberCommand) error {
	if cmd != sysfs.CmdRemove {
		return nil
	}
	k.d.mu.Lock()
	defer k.d.mu.Unlock()
	a := k.d.array(array)
	a.removed[member] = true
	a.added = slices.DeleteFunc(a.added, func(s string) bool { return s == member })
	return nil
}

func (k dryAssembly) Uevent(string) error { return nil }

// DeletePartitions answers as the real door would without opening the
// device: the kernel's partitions of it (sysfs), and EBUSY when one of
// them, or the device, is held or mounted (what makes the real door's
// exclusive open fail). An exclusive open by another program is found
// only by the real run.
func (k dryAssembly) DeletePartitions(path string) ([]int, error) {
	kname := filepath.Base(path)
	dir := k.m.fs.Path("class", "block", kname)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	names := []string{kname}
	var parts []int
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name(), "partition"))
		if err != nil {
			continue
		}
		n, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			return nil, fmt.Errorf("md: %s/partition: %w", e.Name(), err)
		}
		parts = append(parts, n)
		names = append(names, e.Name())
	}
	var devs []sysfs.DevNum
	for _, n := range names {
		hs, err := os.ReadDir(k.m.fs.Path("class", "block", n, "holders"))
		if err != nil {
			return nil, err
		}
		if len(hs) > 0 {
			return nil, fmt.Errorf("md: %s is held: %w", n, unix.EBUSY)
		}
		b, err := os.ReadFile(k.m.fs.Path("class", "block", n, "dev"))
		if err != nil {
			return nil, err
		}
		d, err := sysfs.ParseDevNum(strings.TrimSpace(string(b)))
		if err != nil {
			return nil, err
		}
		devs = append(devs, d)
	}
	mounts, err := blockdev.Mounts(k.m.ops.mountInfo, devs)
	if err != nil {
		return nil, err
	}
	if len(mounts) > 0 {
		return nil, fmt.Errorf("md: %s or a partition of it is mounted: %w", kname, unix.EBUSY)
	}
	slices.Sort(parts)
	return parts, nil
}

func (k dryAssembly) MakeNode(string, sysfs.DevNum) error { return nil }

// MakeLink fails as the real door does where something is there: on the
// disk, or made by the dry run.
func (k dryAssembly) MakeLink(link, target string) error {
	k.d.mu.Lock()
	defer k.d.mu.Unlock()
	if _, ok := k.d.links[link]; ok {
		return &fs.PathError{Op: "symlink", Path: link, Err: fs.ErrExist}
	}
	if _, err := os.Lstat(link); err == nil && !k.d.gone[link] {
		return &fs.PathError{Op: "symlink", Path: link, Err: fs.ErrExist}
	}
	k.d.links[link] = target
	delete(k.d.gone, link)
	return nil
}

func (k dryAssembly) RemoveLink(link, target string) (bool, error) {
	k.d.mu.Lock()
	defer k.d.mu.Unlock()
	if t, ok := k.d.links[link]; ok {
		if t != target {
			return false, nil
		}
		delete(k.d.links, link)
		return true, nil
	}
	if got, err := os.Readlink(link); err == nil && got == target && !k.d.gone[link] {
		k.d.gone[link] = true
		return true, nil
	}
	return false, nil
}

func (k dryAssembly) SetModuleParameter(string, string) error { return nil }

// dryMap is the map file of a dry run: read once, then changed in memory
// as the real lock's Update and Remove change the file.
type dryMap struct {
	mu      sync.Mutex
	entries []mapfile.Entry
	err     error // the read's error, returned by every Read
}

// readDryMap reads the map file without its lock (taking the lock
// creates the lock file).
func (m *Manager) readDryMap() *dryMap {
	es, err := mapfile.Map{Dir: m.mapDir}.Read()
	if errors.Is(err, fs.ErrNotExist) {
		err = nil
	}
	return &dryMap{entries: es, err: err}
}

func (d *dryMap) Read() ([]mapfile.Entry, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.entries), d.err
}

func (d *dryMap) Update(e mapfile.Entry) error {
	if err := e.Validate(); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	out := []mapfile.Entry{e}
	for _, o := range d.entries {
		if o.Dev != e.Dev && o.UUID != e.UUID {
			out = append(out, o)
		}
	}
	d.entries = out
	return nil
}

func (d *dryMap) Remove(dev string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.entries = slices.DeleteFunc(d.entries, func(o mapfile.Entry) bool { return o.Dev == dev })
	return nil
}
