package blockdev

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"strings"

	"github.com/go-mdraid/mdraid/sysfs"
)

// Via says how a [Layer] of a [Stack] was reached from the device before
// it (Layer.From).
type Via string

// How one device leads to the next in a stack.
const (
	// ViaSlave: From is stacked on the layer (From's sysfs slaves/), as
	// a device-mapper target (an LVM volume, dm-crypt) is on its devices
	// or an md array on its members.
	ViaSlave Via = "slave"
	// ViaPartition: From is a partition of the layer, a whole disk.
	ViaPartition Via = "partition"
	// ViaLoopDevice: From is a loop device whose backing file is the
	// block device that is the layer (losetup /dev/sdb). Loop devices do
	// not claim their backing device: the layer shows no holder.
	ViaLoopDevice Via = "loop device"
	// ViaLoopFile: From is a loop device whose backing file lives on a
	// file system on the layer.
	ViaLoopFile Via = "loop file"
	// ViaLoopOver: the layer is a loop device whose backing file is From
	// (the block device From, or a file on a file system on From).
	ViaLoopOver Via = "loop over"
)

// Layer is one device of a [Stack].
type Layer struct {
	// Name is the kernel name, Dev the device number.
	Name string
	Dev  sysfs.DevNum
	// Via says how the layer was reached from the device named From.
	Via  Via
	From string
	// Array is set when the layer is an md array (it has an md/
	// directory in sysfs).
	Array bool
	// Holders are the kernel names of the devices that claim the layer
	// (sysfs holders/).
	Holders []string
	// BackingFile is, for a layer reached from a loop device (ViaLoopDevice,
	// ViaLoopFile) or that is one (ViaLoopOver), the loop's backing file
	// as sysfs shows it.
	BackingFile string
}

// String describes the layer for people, such as "loop0 is a loop device
// over sdb".
func (l Layer) String() string {
	switch l.Via {
	case ViaSlave:
		return fmt.Sprintf("%s is on %s", l.From, l.Name)
	case ViaPartition:
		return fmt.Sprintf("%s is a partition of %s", l.From, l.Name)
	case ViaLoopDevice:
		return fmt.Sprintf("%s is a loop device over %s", l.From, l.Name)
	case ViaLoopFile:
		return fmt.Sprintf("%s is a loop device over %s, a file on %s", l.From, l.BackingFile, l.Name)
	case ViaLoopOver:
		return fmt.Sprintf("%s is a loop device over %s", l.Name, l.From)
	}
	return l.Name
}

// Stack is what a block device is built on and what is built on it
// beyond sysfs holders/: see [WalkStack].
type Stack struct {
	// Below lists every device the device is built on, transitively:
	// what its slaves/ name, the whole disk of a partition, and what a
	// loop device's backing file is or lives on.
	Below []Layer
	// Above lists the loop devices set up over the device or one of its
	// partitions, transitively (loops over those loops, and over their
	// partitions, are listed too). Loop devices never show in holders/.
	Above []Layer
}

// FileStat is what [StackOptions.Stat] learns about a loop device's
// backing file.
type FileStat struct {
	// Dev is the device of the file system the file lives on (st_dev).
	Dev sysfs.DevNum
	// Block is set when the file is a block device node; Rdev is then
	// the device it names (st_rdev).
	Block bool
	Rdev  sysfs.DevNum
}

// StackOptions configures [WalkStack].
type StackOptions struct {
	// Stat stats a loop device's backing file, following links; nil
	// stats it on this system (Linux only).
	Stat func(path string) (FileStat, error)
}

// maxLayers bounds a walk over a sysfs tree, which may be hostile (a
// fixture) or changing under us.
const maxLayers = 256

// ErrStackUnknown is matched by the error [WalkStack] returns when part
// of the stack could not be established, such as a loop device whose
// backing file was deleted or cannot be stat'ed.
var ErrStackUnknown = errors.New("blockdev: cannot tell what the device is stacked on")

// WalkStack returns what the block device with kernel name name is built
// on and which loop devices are built on it, from the sysfs tree fsys.
//
// sysfs holders/ and slaves/ show the devices that claim one another
// (device-mapper, md, bcache), but a loop device claims nothing: a loop
// over /dev/sdb, or over a file on a file system on md0, shows no link at
// all. WalkStack therefore also reads every loop device's loop/backing_file
// and stats it (opts.Stat): a block device node leads to the device it
// names, a file to the device its file system is on. A file system that is
// on no block device (tmpfs; its device number has major 0) ends that
// path of the walk.
//
// When some part cannot be established (a backing file that cannot be
// stat'ed or was deleted, an unreadable slaves/ directory, a loop whose
// file system device is not in sysfs), WalkStack returns the stack it
// could walk together with an error matching ErrStackUnknown: callers
// that decide whether a device may be written must treat that as a
// refusal. An unknown name gives an error matching fs.ErrNotExist.
func WalkStack(fsys sysfs.FS, name string, opts StackOptions) (*Stack, error) {
	w := &stackWalker{fsys: fsys, stat: opts.Stat, seen: map[sysfs.DevNum]bool{}}
	if w.stat == nil {
		w.stat = statFile
	}
	top, err := Lookup(fsys, DefaultDevRoot, name)
	if err != nil {
		return nil, err
	}
	st := &Stack{}
	w.seen[top.Dev] = true
	queue := []*Device{top}
	for len(queue) > 0 && len(st.Below) < maxLayers {
		d := queue[0]
		queue = queue[1:]
		for _, l := range w.below(d) {
			if w.seen[l.Dev] {
				continue
			}
			w.seen[l.Dev] = true
			ld, err := Lookup(fsys, DefaultDevRoot, l.Name)
			if err != nil {
				w.fail("%s: %v", l, err)
				continue
			}
			l.Array, l.Holders = w.isArray(ld), ld.Holders
			st.Below = append(st.Below, l)
			queue = append(queue, ld)
		}
	}
	if len(queue) > 0 {
		w.fail("more than %d layers below %s", maxLayers, name)
	}
	st.Above = w.above(top)
	return st, w.err()
}

type stackWalker struct {
	fsys  sysfs.FS
	stat  func(string) (FileStat, error)
	seen  map[sysfs.DevNum]bool
	errs  []string
	loops map[sysfs.DevNum][]Layer // backing device -> loops over it (ViaLoopOver), built once
}

func (w *stackWalker) fail(format string, args ...any) {
	w.errs = append(w.errs, fmt.Sprintf(format, args...))
}

func (w *stackWalker) err() error {
	if len(w.errs) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s", ErrStackUnknown, strings.Join(w.errs, "; "))
}

func (w *stackWalker) isArray(d *Device) bool {
	fi, err := os.Stat(w.fsys.Path(d.Dir, "md"))
	return err == nil && fi.IsDir()
}

// below lists the devices d is directly built on. Their Array and
// Holders are filled in by the caller.
func (w *stackWalker) below(d *Device) []Layer {
	var out []Layer
	ents, err := os.ReadDir(w.fsys.Path(d.Dir, "slaves"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		w.fail("%s/slaves: %v", d.Name, err)
	}
	for _, e := range ents {
		sd, err := Lookup(w.fsys, DefaultDevRoot, e.Name())
		if err != nil {
			w.fail("%s is on %s: %v", d.Name, e.Name(), err)
			continue
		}
		out = append(out, Layer{Name: sd.Name, Dev: sd.Dev, Via: ViaSlave, From: d.Name})
	}
	if d.Parent != "" {
		if pd, err := Lookup(w.fsys, DefaultDevRoot, d.Parent); err != nil {
			w.fail("%s is a partition of %s: %v", d.Name, d.Parent, err)
		} else {
			out = append(out, Layer{Name: pd.Name, Dev: pd.Dev, Via: ViaPartition, From: d.Name})
		}
	}
	if l, ok := w.loopBacking(d); ok {
		out = append(out, l)
	}
	return out
}

// loopBacking returns the device a loop device's backing file is or lives
// on; ok is false when d is no bound loop device, or its file system is on
// no block device.
func (w *stackWalker) loopBacking(d *Device) (Layer, bool) {
	file, dev, block, ok := w.backing(d)
	if !ok {
		return Layer{}, false
	}
	via := ViaLoopFile
	if block {
		via = ViaLoopDevice
	}
	if dev.Major == 0 {
		return Layer{}, false // tmpfs and the like: no block device under it
	}
	bd, err := LookupDev(w.fsys, DefaultDevRoot, dev)
	if err != nil {
		w.fail("%s is a loop device over %s (on device %s): %v", d.Name, file, dev, err)
		return Layer{}, false
	}
	return Layer{Name: bd.Name, Dev: bd.Dev, Via: via, From: d.Name, BackingFile: file}, true
}

// backing reads loop/backing_file of d and stats it. ok is false when d
// is not a bound loop device, or the backing could not be established
// (recorded as a failure).
func (w *stackWalker) backing(d *Device) (file string, dev sysfs.DevNum, block, ok bool) {
	dir := w.fsys.Path(d.Dir, "loop")
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return "", dev, false, false // not a loop device, or an unbound one
	}
	b, err := sysfs.ReadFile(w.fsys.Path(d.Dir, "loop", "backing_file"))
	if err != nil {
		w.fail("%s: reading its backing file: %v", d.Name, err)
		return "", dev, false, false
	}
	file = strings.TrimSuffix(string(b), "\n")
	if file == "" || strings.HasSuffix(file, " (deleted)") {
		w.fail("%s: its backing file %q cannot be found", d.Name, file)
		return file, dev, false, false
	}
	st, err := w.stat(file)
	if err != nil {
		w.fail("%s: its backing file %q: %v", d.Name, file, err)
		return file, dev, false, false
	}
	if st.Block {
		return file, st.Rdev, true, true
	}
	return file, st.Dev, false, true
}

// above lists the loop devices over top or its partitions, and over
// those loops and their partitions, transitively.
func (w *stackWalker) above(top *Device) []Layer {
	if w.loops == nil {
		w.indexLoops()
	}
	var out []Layer
	seen := map[sysfs.DevNum]bool{top.Dev: true}
	queue := []*Device{top}
	for len(queue) > 0 && len(out) < maxLayers {
		d := queue[0]
		queue = queue[1:]
		devs := append([]*Device{d}, w.partitions(d)...)
		for _, x := range devs {
			for _, l := range w.loops[x.Dev] {
				if seen[l.Dev] {
					continue
				}
				seen[l.Dev] = true
				l.From = x.Name
				ld, err := Lookup(w.fsys, DefaultDevRoot, l.Name)
				if err != nil {
					w.fail("%s: %v", l, err)
					continue
				}
				l.Holders = ld.Holders
				out = append(out, l)
				queue = append(queue, ld)
			}
		}
	}
	return out
}

// partitions returns the partitions of the whole disk d.
func (w *stackWalker) partitions(d *Device) []*Device {
	if d.Parent != "" {
		return nil
	}
	ents, err := os.ReadDir(w.fsys.Path(d.Dir))
	if err != nil {
		return nil
	}
	var out []*Device
	for _, e := range ents {
		if _, err := os.Stat(w.fsys.Path(d.Dir, e.Name(), "partition")); err != nil {
			continue
		}
		if pd, err := Lookup(w.fsys, DefaultDevRoot, e.Name()); err == nil {
			out = append(out, pd)
		}
	}
	return out
}

// indexLoops maps every backing device to the loop devices over it (the
// block device a loop's backing file names, or the device its file
// system is on).
func (w *stackWalker) indexLoops() {
	w.loops = map[sysfs.DevNum][]Layer{}
	ents, err := os.ReadDir(w.fsys.Path("class", "block"))
	if err != nil {
		w.fail("listing block devices: %v", err)
		return
	}
	sort.Slice(ents, func(i, j int) bool { return ents[i].Name() < ents[j].Name() })
	for _, e := range ents {
		d, err := Lookup(w.fsys, DefaultDevRoot, e.Name())
		if err != nil {
			continue // not a block device we can describe; holds no loop/
		}
		file, dev, _, ok := w.backing(d)
		if !ok {
			continue
		}
		w.loops[dev] = append(w.loops[dev], Layer{Name: d.Name, Dev: d.Dev, Via: ViaLoopOver, BackingFile: file})
	}
}
