package md

// This file holds Stop: mdadm --stop without mdadm (docs/assembly.md §1.5
// and §5). The decision (decideStop) is taken on facts gathered once
// (stopFacts); the only writes go through the assembly door (m.asm) and
// the map file.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/go-mdraid/mdraid/blockdev"
	"github.com/go-mdraid/mdraid/internal/escape"
	"github.com/go-mdraid/mdraid/md/mapfile"
	"github.com/go-mdraid/mdraid/sysfs"
)

// STOP_ARRAY is retried while the kernel answers EBUSY, as mdadm does
// (Manage.c: 25 tries, 200 ms apart): with the array checked unused, a
// remaining opener is most likely transient (a udev or blkid probe).
const (
	stopTries    = 25
	stopInterval = 200 * time.Millisecond
)

// defaultProcRoot is where procfs is mounted.
const defaultProcRoot = "/proc"

// Errors of Stop.
var (
	// errInUse means the array (or one of its partitions) is mounted,
	// held by another block device, used as swap or open by a process.
	errInUse = errors.New("md: refusing to stop an array in use")
	// errStopUnknown means whether the array is in use could not be
	// established: refused, as an unknown fact always is.
	errStopUnknown = errors.New("md: refusing to stop: cannot tell whether the array is in use")
	// errStopExternal means the array has external metadata: mdmon
	// manages it, and mdadm stops it through mdmon.
	errStopExternal = errors.New("md: refusing to stop an array with external metadata (managed by mdmon); use mdadm --stop")
	// errStopLocked means a replace or heal holds the array's lock.
	errStopLocked = errors.New("md: refusing to stop: a replace or heal is running on the array")
)

// ErrStopIncomplete is matched by the error of a Stop that stopped the
// array but then failed to remove one of the /dev/md links mdadm or
// mdctl made for it, or its map file entry; the message says what was
// done and what was left.
var ErrStopIncomplete = errors.New("md: array stopped, but cleaning up after it failed")

// stopFacts is everything Stop decides on, read before any write.
type stopFacts struct {
	name     string
	state    sysfs.ArrayState
	metadata sysfs.MetadataVersion
	// devs are the array and its partitions, the array first.
	devs []namedDev
	// users says how the array is in use, one phrase each ("mounted on
	// /srv", "held by md126", "open by process 42 (sleep)").
	users []string
	// unknown says what could not be established.
	unknown []string
	// lockDir is set when a replace or heal holds the array's lock in
	// that run directory.
	lockDir string
}

// namedDev is a block device by kernel name and number.
type namedDev struct {
	name string
	dev  sysfs.DevNum
}

// find returns the kernel name of the device among devs with the number
// rdev (a stat's st_rdev).
func find(devs []namedDev, rdev uint64) (string, bool) {
	d := sysfs.DevNum{Major: unix.Major(rdev), Minor: unix.Minor(rdev)}
	for _, n := range devs {
		if n.dev == d {
			return n.name, true
		}
	}
	return "", false
}

// decideStop is the decision behind Stop: an array in use, one whose use
// cannot be established, one with external metadata and one a replace
// is working on are refused. Anything else may be stopped, whatever its
// state: a running array (the kernel then checks that nobody else has it
// open), an inactive one (assembled, not started: the kernel skips that
// check) and a clear one (an md device with no array, which STOP_ARRAY
// removes, as mdadm --stop does).
func decideStop(f *stopFacts) error {
	switch {
	case len(f.users) > 0:
		return fmt.Errorf("%w: %s is %s", errInUse, f.name, strings.Join(f.users, "; "))
	case len(f.unknown) > 0:
		return fmt.Errorf("%w: %s: %s", errStopUnknown, f.name, strings.Join(f.unknown, "; "))
	case f.metadata.Kind == sysfs.MetadataExternal:
		return fmt.Errorf("%w: %s has metadata %s", errStopExternal, f.name, escape.Text(f.metadata.Raw))
	case f.lockDir != "":
		return fmt.Errorf("%w: %s (its lock in %s is held)", errStopLocked, f.name, escape.Text(f.lockDir))
	}
	return nil
}

// Stop stops an array (STOP_ARRAY), as mdadm --stop does, and cleans up
// after it as mdadm does: it removes the array's /dev/md/NAME link and
// its partition links (NAMEpK, or NAMEK when NAME does not end in a
// digit) when each is a symbolic link whose text is exactly the absolute
// node path, /dev/mdN or /dev/mdNpK (the links mdadm makes without
// udev, and mdctl makes; udev's relative links are udev's), and the
// array's entry in mdadm's map file (Config.MapDir). NAME is the map
// entry's path, or the array's name from its superblock. array is named
// as for Status.
//
// Before writing anything it refuses, with a *RefusedError matching
// ErrRefused that names the user, an array that is mounted (the mount
// table, Config.MountInfo), held by another block device (sysfs holders/:
// an array stacked on it, a device-mapper volume named by its dm name),
// used as swap (/proc/swaps), or open by a process (/proc/PID/fd, by
// device number; the process is named by PID and command), each also
// through one of its partitions; one whose use cannot be established (a
// process whose descriptors cannot be read, for one); one with external
// metadata; and one a replace or heal is working on (its lock in
// Config.RunDir is held). A name that matches no array (it is stopped
// already, or never was) is a refusal matching ErrNoArray.
//
// STOP_ARRAY is issued on a descriptor opened O_EXCL and retried while
// the kernel answers EBUSY, 25 times 200 ms apart as mdadm does (ctx
// ends the wait); an array still busy then is refused, the error
// matching ErrRefused and unix.EBUSY and naming what is known to hold
// it. Any other failure of STOP_ARRAY is returned wrapped, nothing
// changed. When the array was stopped but a link or the map entry could
// not be removed, the error matches ErrStopIncomplete.
//
// change, at most one, asks for a dry run and tells what was done (see
// Change): Write is "STOP_ARRAY", and Removed lists the links and the map
// entry removed (due, with DryRun).
func (m *Manager) Stop(ctx context.Context, array string, change ...*Change) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	ch := changeOf(change)
	name, err := m.resolve(array)
	if err != nil {
		return refuseLookup("stop", array, "", err)
	}
	st := m.status(m.fs.WithCache(), name)
	f := m.stopFacts(name, st)
	if err := decideStop(f); err != nil {
		return refuse("stop", name, "", err)
	}
	ch.Array, ch.Write = name, "STOP_ARRAY"
	entries, mapErr := mapfile.Map{Dir: m.mapDir}.Read()
	if errors.Is(mapErr, fs.ErrNotExist) {
		// No map file: mdadm rebuilds it from the running arrays when
		// it next needs it, so there is nothing to remove (and writing
		// an empty one would hide the others from that rebuild).
		mapErr = nil
	}
	entry, inMap := mapfile.Find(entries, name)
	links := m.stopLinks(name, st, entry)
	mapNote := fmt.Sprintf("map entry %s (%s)", name, filepath.Join(m.mapDir, "map"))
	if ch.DryRun {
		for _, l := range links {
			if got, err := os.Readlink(l.link); err == nil && got == l.target {
				ch.Removed = append(ch.Removed, l.link)
			}
		}
		if inMap {
			ch.Removed = append(ch.Removed, mapNote)
		}
		return nil
	}

	if err := m.stopArray(ctx, name); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("md: stopping %s: interrupted while the kernel reported it busy, nothing changed: %w", name, err)
		}
		if errors.Is(err, unix.EBUSY) {
			// Look again: whoever holds it may show now.
			again := m.stopFacts(name, st)
			why := "open by another process"
			if len(again.users) > 0 {
				why = strings.Join(again.users, "; ")
			}
			return refuse("stop", name, "", fmt.Errorf("%w: the kernel still reports %s busy after %d tries %v apart (%s); nothing changed: %w",
				errInUse, name, stopTries, stopInterval, why, err))
		}
		return fmt.Errorf("md: stopping %s failed, nothing changed: %w", name, err)
	}

	var left []error
	for _, l := range links {
		removed, err := m.asm.RemoveLink(l.link, l.target)
		if err != nil {
			left = append(left, fmt.Errorf("link %s: %w", escape.Text(l.link), err))
		}
		if removed {
			ch.Removed = append(ch.Removed, l.link)
		}
	}
	if mapErr == nil && inMap {
		mapErr = mapfile.Map{Dir: m.mapDir}.Remove(name)
		if mapErr == nil {
			ch.Removed = append(ch.Removed, mapNote)
		}
	}
	if mapErr != nil {
		left = append(left, fmt.Errorf("%s: %w", mapNote, mapErr))
	}
	if len(left) > 0 {
		done := "stopped " + name
		if len(ch.Removed) > 0 {
			done += " and removed " + escape.Text(strings.Join(ch.Removed, ", "))
		}
		return fmt.Errorf("%w: %s, but could not remove: %w", ErrStopIncomplete, done, errors.Join(left...))
	}
	return nil
}

// stopArray issues STOP_ARRAY, retrying while the kernel answers EBUSY.
func (m *Manager) stopArray(ctx context.Context, name string) error {
	var err error
	for try := 1; ; try++ {
		if err = m.asm.StopArray(name); err == nil || !errors.Is(err, unix.EBUSY) || try == stopTries {
			return err
		}
		if serr := m.sleep(ctx, stopInterval); serr != nil {
			return fmt.Errorf("%w (while %s was busy: %w)", serr, name, err)
		}
	}
}

// stopLink is a link Stop removes if its text is target.
type stopLink struct{ link, target string }

// stopLinks lists the links mdadm (and mdctl) make for the array without
// udev, with the node each must point at: /dev/md/NAME -> /dev/mdN and,
// for partitions 1 to 15, NAMEpK (NAMEK when NAME does not end in a
// digit) -> /dev/mdNpK, as mdadm's Manage.c removes them. NAME is taken
// from the map entry (the name mdadm chose), else from the superblock
// name, with and without its homehost, else the array's number (a 0.90
// array's preferred minor); only names directly in DEVROOT/md are used.
func (m *Manager) stopLinks(name string, st Array, entry mapfile.Entry) []stopLink {
	mdDir := filepath.Join(m.devRoot, "md")
	var bases []string
	add := func(p string) {
		p = filepath.Clean(p)
		if filepath.Dir(p) != mdDir {
			return
		}
		for _, b := range bases {
			if b == p {
				return
			}
		}
		bases = append(bases, p)
	}
	if p, ok := strings.CutPrefix(entry.Path, "/dev/"); ok {
		add(filepath.Join(m.devRoot, p))
	}
	if st.Name != "" {
		for _, n := range []string{st.Name, st.Homehost + ":" + st.Name} {
			if strings.HasPrefix(n, ":") {
				continue
			}
			if ln, err := linkName(n); err == nil && ln != "" {
				add(filepath.Join(mdDir, ln))
			}
		}
	}
	if n, ok := strings.CutPrefix(name, "md"); ok {
		if _, err := strconv.Atoi(n); err == nil {
			add(filepath.Join(mdDir, n))
		}
	}
	// The text mdadm (and assemble) write, whatever the dev root.
	node := "/dev/" + name
	var out []stopLink
	for _, b := range bases {
		out = append(out, stopLink{b, node})
		sep := ""
		if c := b[len(b)-1]; c >= '0' && c <= '9' {
			sep = "p"
		}
		for k := 1; k <= 15; k++ {
			out = append(out, stopLink{b + sep + strconv.Itoa(k), node + "p" + strconv.Itoa(k)})
		}
	}
	return out
}

// stopFacts reads what Stop decides on: the array's state and metadata,
// its partitions, and everything that uses it or them.
func (m *Manager) stopFacts(name string, st Array) *stopFacts {
	f := &stopFacts{name: name}
	unknown := func(what string, err error) {
		f.unknown = append(f.unknown, fmt.Sprintf("%s: %v", what, err))
	}
	a, err := m.fs.Array(name)
	if err != nil {
		unknown("array", err)
		return f
	}
	if f.state, err = a.State(); err != nil {
		unknown("array_state", err)
	}
	if f.metadata, err = a.MetadataVersion(); err != nil {
		unknown("metadata_version", err)
	}
	dev, err := a.Dev()
	if err != nil {
		unknown("device number", err)
	} else {
		f.devs = append(f.devs, namedDev{name, dev})
	}
	parts, err := m.stopPartitions(name)
	if err != nil {
		unknown("partitions", err)
	}
	// Holders: an array stacked on it, a dm volume (LVM, LUKS, ...).
	for _, d := range append([]string{name}, parts...) {
		dir := m.fs.Path("block", name, "holders")
		if d != name {
			dir = m.fs.Path("block", name, d, "holders")
			pd, err := readDevNum(m.fs.Path("block", name, d, "dev"))
			if err != nil {
				unknown("partition "+d, err)
			} else {
				f.devs = append(f.devs, namedDev{d, pd})
			}
		}
		hs, err := os.ReadDir(dir)
		if err != nil {
			unknown("holders of "+d, err)
			continue
		}
		for _, h := range hs {
			f.users = append(f.users, of(d, name)+"held by "+m.holderName(h.Name()))
		}
	}
	// Mounts, partition by partition so that the message says which.
	for _, d := range f.devs {
		mounts, err := blockdev.Mounts(m.ops.mountInfo, []sysfs.DevNum{d.dev})
		if err != nil {
			unknown("mounts", err)
			break
		}
		for _, mp := range mounts {
			f.users = append(f.users, of(d.name, name)+"mounted on "+escape.Text(unescapeOctal(mp)))
		}
	}
	users, unk := swapsOf(filepath.Join(m.procRoot, "swaps"), f.devs, name)
	f.users, f.unknown = append(f.users, users...), append(f.unknown, unk...)
	users, unk = openersOf(m.procRoot, f.devs, name)
	f.users, f.unknown = append(f.users, users...), append(f.unknown, unk...)
	key := st.UUID
	if key == "" {
		key = name
	}
	if m.ops.runDir != "" {
		held, err := lockHeld(m.ops.runDir, key)
		if err != nil {
			unknown("whether a replace runs", err)
		}
		if held {
			f.lockDir = m.ops.runDir
		}
	}
	return f
}

// of prefixes a phrase with the partition it is about ("md127p1 "), or
// nothing for the array itself.
func of(dev, array string) string {
	if dev == array {
		return ""
	}
	return dev + " "
}

// stopPartitions lists the kernel's partitions of the array: the entries
// of block/NAME with a partition attribute. (blockdev.Partitions lists
// class/block/NAME, the same directory on a real sysfs; stop reads the
// array's holders and partitions under block/, as a capture has them.)
func (m *Manager) stopPartitions(name string) ([]string, error) {
	ents, err := os.ReadDir(m.fs.Path("block", name))
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if _, err := os.Stat(m.fs.Path("block", name, e.Name(), "partition")); err == nil {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

// holderName names a holder: its kernel name, and for a device-mapper
// device its dm name ("dm-0 (vg-root)"), escaped.
func (m *Manager) holderName(h string) string {
	b, err := sysfs.ReadFile(m.fs.Path("block", h, "dm", "name"))
	if n := strings.TrimSpace(string(b)); err == nil && n != "" {
		return escape.Text(h) + " (" + escape.Text(n) + ")"
	}
	return escape.Text(h)
}

// readDevNum reads a sysfs dev attribute ("9:127").
func readDevNum(p string) (sysfs.DevNum, error) {
	b, err := sysfs.ReadFile(p)
	if err != nil {
		return sysfs.DevNum{}, err
	}
	return sysfs.ParseDevNum(strings.TrimSpace(string(b)))
}

// swapsOf reads the swap table at path (/proc/swaps) and says which of
// devs are used as swap. An entry is compared by the device number of
// the path it names (stat), not by name. A missing table means no swap
// (a kernel without swap support). A block device entry whose path
// cannot be stat'ed is unknown; a swap file that cannot be is not the
// array's (it would sit on a file system mounted from it, which the
// mount table shows).
func swapsOf(path string, devs []namedDev, array string) (users, unknown []string) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, []string{fmt.Sprintf("swaps: %v", err)}
	}
	for i, line := range bytes.Split(b, []byte("\n")) {
		fields := strings.Fields(string(line))
		if i == 0 && len(fields) > 0 && fields[0] == "Filename" || len(fields) < 2 {
			continue
		}
		p := unescapeOctal(fields[0])
		var st unix.Stat_t
		if err := unix.Stat(p, &st); err != nil {
			if fields[1] == "partition" {
				unknown = append(unknown, fmt.Sprintf("swap %s: %v", escape.Text(p), err))
			}
			continue
		}
		if d, ok := find(devs, uint64(st.Rdev)); ok && st.Mode&unix.S_IFMT == unix.S_IFBLK {
			users = append(users, of(d, array)+"used as swap ("+escape.Text(p)+")")
		}
	}
	return users, unknown
}

// unescapeOctal undoes the kernel's escaping of a path in /proc/swaps
// and mountinfo: a backslash and three octal digits stand for one byte.
func unescapeOctal(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// openersOf scans every process's open descriptors under procRoot
// (/proc/PID/fd) for one of devs, compared by device number (stat follows
// the descriptor to the device), and names each process that has one
// open by PID and command. A process that exits meanwhile is skipped; one
// whose descriptors cannot be read (not root) is unknown.
func openersOf(procRoot string, devs []namedDev, array string) (users, unknown []string) {
	ents, err := os.ReadDir(procRoot)
	if err != nil {
		return nil, []string{fmt.Sprintf("processes: %v", err)}
	}
	for _, e := range ents {
		pid := e.Name()
		if _, err := strconv.ParseUint(pid, 10, 32); err != nil {
			continue
		}
		fdDir := filepath.Join(procRoot, pid, "fd")
		fds, err := os.ReadDir(fdDir)
		if gone(err) {
			continue
		}
		if err != nil {
			unknown = append(unknown, fmt.Sprintf("the open descriptors of process %s: %v", pid, err))
			continue
		}
		who := func() string {
			comm, _ := os.ReadFile(filepath.Join(procRoot, pid, "comm"))
			if c := strings.TrimSpace(string(comm)); c != "" {
				return "process " + pid + " (" + escape.Text(c) + ")"
			}
			return "process " + pid
		}
		seen := map[string]bool{}
		for _, fd := range fds {
			var st unix.Stat_t
			err := unix.Stat(filepath.Join(fdDir, fd.Name()), &st)
			if gone(err) {
				continue
			}
			if err != nil {
				// One line per process: its other descriptors
				// are most likely closed to us too.
				unknown = append(unknown, fmt.Sprintf("the open descriptors of %s: %v", who(), err))
				break
			}
			d, ok := find(devs, uint64(st.Rdev))
			if !ok || st.Mode&unix.S_IFMT != unix.S_IFBLK || seen[d] {
				continue
			}
			seen[d] = true
			users = append(users, of(d, array)+"open by "+who())
		}
	}
	return users, unknown
}

// gone reports whether err means the process or descriptor went away
// while it was being looked at.
func gone(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.ESRCH)
}
