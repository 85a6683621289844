package md

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/go-mdraid/mdraid/blockdev"
	"github.com/go-mdraid/mdraid/internal/escape"
	"github.com/go-mdraid/mdraid/md/mapfile"
	"github.com/go-mdraid/mdraid/superblock"
	"github.com/go-mdraid/mdraid/sysfs"
)

// DetailExport is what mdadm --detail --export says about one array, as
// facts (docs/assembly.md §4.2): the udev rules make the md-uuid-*,
// md-name-* and /dev/md/NAME links from it. Every string in it is safe
// as a udev value (UdevSafe): a fact that would not be is left out and
// said so in Warnings.
type DetailExport struct {
	// Device is the kernel name of the array, "md127".
	Device string
	// Partition is set when Export was asked about a partition of the
	// array (the array rules run for md127p1 too): the keys are the
	// array's, without members, as mdadm prints them.
	Partition bool
	// Level is mdadm's level name ("raid1", "linear", "container", …):
	// the kernel's for a running array, the freshest member
	// superblock's for one that is not; "" when neither names a level
	// mdadm knows, and, as in mdadm, when sysfs shows no raid_disks
	// (except "container").
	Level string
	// RaidDisks is the number of slots (MD_DEVICES); when sysfs shows
	// none (a container, an array assembled but not started), the
	// number of members, as mdadm prints it.
	RaidDisks int
	// Metadata is MD_METADATA: "0.90", "1.2", or "external:…"; "" when
	// unknown or "none".
	Metadata string
	// Container and Member are MD_CONTAINER (the container's device
	// path) and MD_MEMBER (the subarray) of an external-metadata
	// subarray, which has no MD_METADATA; empty otherwise.
	Container, Member string
	// UUID is MD_UUID, four groups of eight hex digits as mdadm prints
	// it: from the freshest member superblock, else from the kernel's
	// md/uuid. "" when neither has one.
	UUID string
	// DevName is MD_DEVNAME: the /dev/md/NAME link name without the
	// directory, from the map file's entry for the array (as mdadm), or
	// when the map has none from a link in /dev/md/ that resolves to
	// the array's node (mdadm would print none). DevNameFrom says which:
	// "map", "link" or "".
	DevName     string
	DevNameFrom string
	// Reshaping is MD_RESHAPE_ACTIVE, from the freshest member
	// superblock; nil when no member superblock was read (mdadm then
	// prints none).
	Reshaping *bool
	// Name is MD_NAME for 1.x: the full set name ("talos:boot") as
	// SafeName returns it; "" when there is none or SafeName refuses it.
	Name string
	// Members are the per-member keys, in sysfs name order.
	Members []ExportMember
	// Warnings say what was left out and why; the values in them are
	// escaped.
	Warnings []string
}

// ExportMember is one member's MD_DEVICE_<Key>_ROLE and _DEV.
type ExportMember struct {
	// Key is the member's sysfs directory name ("dev-sda1") with every
	// byte that is not an ASCII letter or digit replaced by '_', as
	// mdadm mangles it: "dev_sda1".
	Key string
	// Slot is the kernel's slot (sysfs slot), or -1 for none ("spare";
	// a faulty or journal member reads so too, as in mdadm).
	// SlotKnown is false when the slot could not be read: no ROLE key.
	Slot      int
	SlotKnown bool
	// Path is the member's device node, "" when none was found.
	Path string
}

// ExportKey mangles a sysfs member directory name into the key part of
// MD_DEVICE_<key>_ROLE: every byte that is not an ASCII letter or digit
// becomes '_' (mdadm uses isalnum in the C locale).
func ExportKey(dir string) string {
	b := []byte(dir)
	for i, c := range b {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			b[i] = '_'
		}
	}
	return string(b)
}

// UdevSafe reports whether v can be printed as a udev IMPORT{program}
// value and read back unchanged: not empty, no control byte (a newline
// would start another key), no white space at either end (udev strips
// it), and not starting with a quote (udev would take it as quoting).
func UdevSafe(v string) bool {
	if v == "" || strings.TrimSpace(v) != v || v[0] == '"' || v[0] == '\'' {
		return false
	}
	for i := 0; i < len(v); i++ {
		if v[i] < ' ' || v[i] == 0x7f {
			return false
		}
	}
	return true
}

// mdadmLevels is mdadm's level table (maps.c pers) as it prints it.
var mdadmLevels = map[string]bool{
	"linear": true, "raid0": true, "raid1": true, "raid4": true, "raid5": true, "raid6": true,
	"raid10": true, "multipath": true, "faulty": true, "container": true,
}

// ExportName is the rule for MD_NAME (mdadm --examine --export and
// --detail --export): the 1.x set name up to the first NUL or newline,
// passed through SafeName. mdadm prints it raw; here a name that
// SafeName rewrites (a space or tab becomes '_', '/' becomes '-') is
// printed rewritten, and one it refuses is not printed: ok is false and
// err says why. An empty name is no MD_NAME (ok false, err nil), as in
// mdadm.
func ExportName(sb *superblock.Superblock) (name string, ok bool, err error) {
	if sb == nil || sb.Version == superblock.Version090 {
		return "", false, nil
	}
	raw := sb.FullName()
	raw, _, _ = strings.Cut(raw, "\n")
	if raw == "" {
		return "", false, nil
	}
	s, err := SafeName(raw)
	if err != nil {
		return "", false, err
	}
	return s, true, nil
}

// Export returns what mdadm --detail --export prints about the array
// name (named as for Status). A name that matches no array gives an
// error matching ErrNoArray, one that matches several ErrAmbiguous.
// Facts that cannot be read are left out and said so in Warnings; Export
// fails only when the array cannot be found or ctx is done.
//
// The map file is read from Config.MapDir without its lock: mdadm
// renames a new map over the old one, so a read sees one or the other.
func (m *Manager) Export(ctx context.Context, name string) (*DetailExport, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	kname, err := m.resolve(name)
	partition := false
	if errors.Is(err, ErrNoArray) {
		if p, ok := m.partitionOf(name); ok {
			kname, err, partition = p, nil, true
		}
	}
	if err != nil {
		return nil, err
	}
	fsys := m.fs.WithCache()
	s := m.readFS(fsys, kname)
	d := derive(s)
	e := &DetailExport{Device: kname, Partition: partition, RaidDisks: d.raidDisks}
	warn := func(format string, args ...any) { e.Warnings = append(e.Warnings, fmt.Sprintf(format, args...)) }

	// Level and slots as mdadm prints them: with no raid_disks in sysfs
	// (an array assembled but not started, or a container) no level
	// but "container", and the number of members.
	switch lv := string(s.level); {
	case s.raidDisks == 0 || s.raidDisksBad:
		if s.level == sysfs.LevelContainer {
			e.Level = lv
		}
		e.RaidDisks = len(s.members)
	case d.running && mdadmLevels[lv]:
		e.Level = lv
	case d.newest != nil && d.newest.Level.Known():
		// The personality is not bound: the level of the freshest
		// superblock (mdadm: inactive && info).
		e.Level = d.newest.Level.String()
	case mdadmLevels[lv]:
		e.Level = lv
	}

	switch mv := s.metadata; {
	case mv.Kind == sysfs.MetadataNative:
		e.Metadata = fmt.Sprintf("%d.%d", mv.Major, mv.Minor)
	case mv.Kind == sysfs.MetadataExternal:
		if c, sub, ok := mv.Container(); ok {
			e.Container, e.Member = m.devicePath(c), sub
			if !UdevSafe(e.Container) || !UdevSafe(e.Member) || strings.ContainsAny(e.Container+e.Member, " \t") {
				warn("MD_CONTAINER and MD_MEMBER left out: metadata_version %q", escape.Text(mv.Raw))
				e.Container, e.Member = "", ""
			}
		} else if UdevSafe(mv.Raw) && !strings.ContainsAny(mv.Raw, " \t") {
			e.Metadata = mv.Raw
		}
	}

	if d.newest != nil {
		e.UUID = mapfile.Groups(d.newest.SetUUID)
		r := d.newest.Reshaping()
		e.Reshaping = &r
		n, ok, err := ExportName(d.newest)
		switch {
		case ok:
			e.Name = n
		case err != nil:
			warn("MD_NAME left out: %v", err)
		}
	} else if a, err := fsys.Array(kname); err == nil {
		if u, err := a.UUID(); err == nil && u != [16]byte{} && s.metadata.Kind == sysfs.MetadataNative {
			e.UUID = mapfile.Groups(u)
		}
	}
	if e.UUID == "" {
		warn("MD_UUID left out: no member superblock or md/uuid names the array's UUID")
	}

	m.exportDevName(e)

	if partition {
		// mdadm finds no md directory for a partition and lists no
		// members.
		return e, nil
	}
	a, err := fsys.Array(kname)
	if err == nil {
		var mems []sysfs.Member
		mems, err = a.Members()
		sort.Slice(mems, func(i, j int) bool { return mems[i].Dir() < mems[j].Dir() })
		for _, mem := range mems {
			e.Members = append(e.Members, m.exportMember(fsys, mem, warn))
		}
	}
	if err != nil {
		warn("members left out: %v", err)
	}
	return e, nil
}

// partitionOf returns the array that the block device name (as for
// resolve: "md127p1", "/dev/md127p1") is a partition of.
func (m *Manager) partitionOf(name string) (string, bool) {
	var d *blockdev.Device
	var err error
	base := strings.TrimPrefix(strings.TrimPrefix(name, m.devRoot+"/"), "/dev/")
	if strings.Contains(base, "/") {
		dn, ok := devNumOf(name)
		if !ok {
			return "", false
		}
		d, err = blockdev.LookupDev(m.fs, m.devRoot, dn)
	} else {
		d, err = blockdev.Lookup(m.fs, m.devRoot, base)
	}
	if err != nil || d.Partition == 0 || d.Parent == "" {
		return "", false
	}
	arrays, err := m.fs.Arrays()
	if err != nil {
		return "", false
	}
	for _, a := range arrays {
		if a == d.Parent {
			return a, true
		}
	}
	return "", false
}

// exportDevName fills DevName from the map entry of e's array, or from
// a /dev/md/ link to its node.
func (m *Manager) exportDevName(e *DetailExport) {
	warn := func(format string, args ...any) { e.Warnings = append(e.Warnings, fmt.Sprintf(format, args...)) }
	entries, err := mapfile.Map{Dir: m.mapDir}.Read()
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		warn("map file not read: %v", err)
	}
	if ent, ok := mapfile.Find(entries, e.Device); ok {
		switch {
		case e.UUID != "" && mapUUID(ent) != e.UUID:
			warn("map entry for %s not used: it names another array (%s)", e.Device, mapUUID(ent))
		case !strings.HasPrefix(ent.Path, "/dev/md/"):
			return // named /dev/mdN: mdadm prints no MD_DEVNAME either
		default:
			n := strings.TrimPrefix(ent.Path, "/dev/md/")
			if s, err := SafeName(n); err != nil || s != n {
				warn("MD_DEVNAME left out: map path %q is not a safe link name", escape.Text(ent.Path))
				return
			}
			e.DevName, e.DevNameFrom = n, "map"
			return
		}
	}
	if l := m.mdLink(e.Device); l != "" {
		e.DevName, e.DevNameFrom = l, "link"
	}
}

// mapUUID returns the MD_UUID text of a map entry: mdadm writes a 1.x
// UUID with each group byte reversed (see mapfile.UUIDText).
func mapUUID(e mapfile.Entry) string {
	if !strings.HasPrefix(e.Metadata, "1.") {
		return e.UUID
	}
	g := strings.Split(e.UUID, ":") // Parse checked: four groups of eight hex digits
	for i, s := range g {
		g[i] = s[6:8] + s[4:6] + s[2:4] + s[0:2]
	}
	return strings.Join(g, ":")
}

// mdLink returns the name of a link in DevRoot/md/ that resolves to the
// node of kname: the shortest
// such name, then the first in byte order, and only one SafeName leaves
// as it is. "" when there is none.
func (m *Manager) mdLink(kname string) string {
	targetPath := filepath.Join(m.devRoot, kname)
	target, err := os.Stat(targetPath)
	if err != nil {
		return ""
	}
	ents, err := os.ReadDir(filepath.Join(m.devRoot, "md"))
	if err != nil {
		return ""
	}
	best := ""
	for _, ent := range ents {
		n := ent.Name()
		if ent.Type()&fs.ModeSymlink == 0 {
			continue
		}
		if s, err := SafeName(n); err != nil || s != n {
			continue
		}
		if !sameNode(filepath.Join(m.devRoot, "md", n), target, targetPath) {
			continue
		}
		if best == "" || len(n) < len(best) || len(n) == len(best) && n < best {
			best = n
		}
	}
	return best
}

// sameNode reports whether the file at p (links followed) is the node
// of target: for device nodes the same device number, else the same
// file (the capture trees of tests hold regular files).
func sameNode(p string, target fs.FileInfo, targetPath string) bool {
	if a, ok := devNumOf(p); ok {
		b, ok := devNumOf(targetPath)
		return ok && a == b
	}
	fi, err := os.Stat(p)
	return err == nil && os.SameFile(fi, target)
}

// devicePath is mdadm's map_dev for an md device or member: a link in
// DevRoot/md/ to it when there is one (mdadm prefers those names), else
// its node; "" when the node does not exist.
func (m *Manager) devicePath(kname string) string {
	if l := m.mdLink(kname); l != "" {
		return filepath.Join(m.devRoot, "md", l)
	}
	p := filepath.Join(m.devRoot, kname)
	if _, err := os.Lstat(p); err != nil {
		return ""
	}
	return p
}

// exportMember reads one member's slot and node.
func (m *Manager) exportMember(fsys sysfs.FS, mem sysfs.Member, warn func(string, ...any)) ExportMember {
	em := ExportMember{Key: ExportKey(mem.Dir()), Slot: -1}
	if sl, err := mem.Slot(); err == nil {
		em.SlotKnown = true
		if sl >= 0 {
			em.Slot = int(sl)
		}
	} else {
		warn("MD_DEVICE_%s_ROLE left out: %v", em.Key, err)
	}
	kname := mem.Name()
	if bl, err := mem.Block(); err == nil {
		kname = bl.Name
	}
	d, err := blockdev.Lookup(fsys, m.devRoot, kname)
	if err != nil {
		warn("MD_DEVICE_%s_DEV left out: %v", em.Key, err)
		return em
	}
	p := d.Node
	if strings.HasPrefix(kname, "md") {
		// A member that is itself an array: mdadm names it by its
		// /dev/md/ link.
		if l := m.mdLink(kname); l != "" {
			p = filepath.Join(m.devRoot, "md", l)
		}
	}
	_, err = os.Stat(p)
	switch {
	case err != nil:
		warn("MD_DEVICE_%s_DEV left out: %v", em.Key, err)
	case !nodeIs(p, d.Dev):
		warn("MD_DEVICE_%s_DEV left out: %s is not device %s", em.Key, escape.Text(p), d.Dev)
	case !UdevSafe(p) || strings.ContainsAny(p, " \t"):
		warn("MD_DEVICE_%s_DEV left out: path %q", em.Key, escape.Text(p))
	default:
		em.Path = p
	}
	return em
}

// nodeIs reports whether the file at p is not a device node or is the
// node of device dev.
func nodeIs(p string, dev sysfs.DevNum) bool {
	if dn, ok := devNumOf(p); ok {
		return dn == dev
	}
	return true
}
