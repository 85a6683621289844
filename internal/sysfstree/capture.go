package sysfstree

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// maxAttr is the most a sysfs attribute can hold: one page.
const maxAttr = 4096

// skipDirs are directories below a captured tree that hold nothing md
// cares about, and can be large or slow to read.
var skipDirs = map[string]bool{
	"power": true, "trace": true, "queue": true, "mq": true,
	"integrity": true, "bdi": true,
}

// ancestorFiles are the attributes read from each parent device of a member
// disk: what identifies a device (model, serial, WWN) and what udev's
// path_id looks at.
var ancestorFiles = map[string]bool{
	"uevent": true, "modalias": true, "vendor": true, "device": true,
	"class": true, "subsystem_vendor": true, "subsystem_device": true,
	"model": true, "serial": true, "wwid": true, "wwn": true, "rev": true,
	"address": true, "nsid": true, "eui": true, "uuid": true, "nguid": true,
	"transport": true, "firmware_rev": true, "unique_id": true,
	"port_no": true, "devpath": true, "busnum": true, "devnum": true,
	"idVendor": true, "idProduct": true, "manufacturer": true,
	"product": true, "sas_address": true, "phy_identifier": true,
	"host_no": true, "cntlid": true, "features": true, "type": true,
	"scsi_level": true, "channel": true, "target": true, "lun": true,
}

// Capturer records parts of a sysfs tree. It reads attributes and link
// targets but never follows a link on its own; the zero value is not
// usable, use [NewCapturer].
type Capturer struct {
	root    string
	entries map[string]Entry
}

// NewCapturer returns a Capturer of the sysfs tree at root (normally /sys).
func NewCapturer(root string) *Capturer {
	return &Capturer{root: root, entries: make(map[string]Entry)}
}

// Entries returns everything recorded so far, sorted by path.
func (c *Capturer) Entries() []Entry {
	out := make([]Entry, 0, len(c.entries))
	for _, e := range c.entries {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

func (c *Capturer) abs(rel string) string { return filepath.Join(c.root, filepath.FromSlash(rel)) }

func (c *Capturer) add(e Entry) { c.entries[e.Path] = e }

// parents records a Dir entry for every directory above rel.
func (c *Capturer) parents(rel string) {
	for d := path.Dir(rel); d != "." && d != "/"; d = path.Dir(d) {
		if _, ok := c.entries[d]; ok {
			return
		}
		c.add(Entry{Kind: Dir, Path: d})
	}
}

// record records one node without descending into it, and reports whether
// it is a directory.
func (c *Capturer) record(rel string) (isDir bool, err error) {
	fi, err := os.Lstat(c.abs(rel))
	if err != nil {
		return false, fmt.Errorf("sysfstree: %w", err)
	}
	c.parents(rel)
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		t, err := os.Readlink(c.abs(rel))
		if err != nil {
			return false, fmt.Errorf("sysfstree: %w", err)
		}
		c.add(Entry{Kind: Link, Path: rel, Data: filepath.ToSlash(t)})
	case fi.IsDir():
		c.add(Entry{Kind: Dir, Path: rel})
		return true, nil
	case fi.Mode().IsRegular():
		data, err := readAttr(c.abs(rel))
		switch {
		case err != nil:
			c.add(Entry{Kind: Unreadable, Path: rel, Data: reason(err)})
		case bytes.IndexByte(data, 0) >= 0:
			c.add(Entry{Kind: Unreadable, Path: rel, Data: "binary"})
		default:
			c.add(Entry{Kind: File, Path: rel, Data: string(data)})
		}
	}
	return false, nil
}

func reason(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// readAttr reads an attribute with a single read of up to one page, as
// sysfs attributes are meant to be read.
func readAttr(name string) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	buf := make([]byte, maxAttr+1)
	n, err := f.Read(buf)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return buf[:n], nil
}

// Tree records rel and, if it is a directory, everything below it, except
// for the directories in skipDirs. Links are recorded, not followed.
func (c *Capturer) Tree(rel string) error {
	isDir, err := c.record(rel)
	if err != nil || !isDir {
		return err
	}
	names, err := readDirNames(c.abs(rel))
	if err != nil {
		return err
	}
	for _, n := range names {
		if skipDirs[n] {
			continue
		}
		if err := c.Tree(path.Join(rel, n)); err != nil {
			return err
		}
	}
	return nil
}

// Dir records the directory rel and the nodes directly in it that keep
// returns true for (all when keep is nil), without descending.
func (c *Capturer) Dir(rel string, keep func(name string, isLink bool) bool) error {
	if _, err := c.record(rel); err != nil {
		return err
	}
	ents, err := os.ReadDir(c.abs(rel))
	if err != nil {
		return fmt.Errorf("sysfstree: %w", err)
	}
	for _, de := range ents {
		if de.IsDir() {
			continue
		}
		if keep != nil && !keep(de.Name(), de.Type()&fs.ModeSymlink != 0) {
			continue
		}
		if _, err := c.record(path.Join(rel, de.Name())); err != nil {
			return err
		}
	}
	return nil
}

func readDirNames(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("sysfstree: %w", err)
	}
	names := make([]string, len(ents))
	for i, de := range ents {
		names[i] = de.Name()
	}
	return names, nil
}

// resolve records the link at rel (and every link on the way) and returns
// the path, relative to the root, of what it points to.
func (c *Capturer) resolve(rel string) (string, error) {
	if _, err := c.record(rel); err != nil {
		return "", err
	}
	real, err := filepath.EvalSymlinks(c.abs(rel))
	if err != nil {
		return "", fmt.Errorf("sysfstree: %w", err)
	}
	rootReal, err := filepath.EvalSymlinks(c.root)
	if err != nil {
		return "", fmt.Errorf("sysfstree: %w", err)
	}
	r, err := filepath.Rel(rootReal, real)
	if err != nil || r == ".." || strings.HasPrefix(r, "../") {
		return "", fmt.Errorf("sysfstree: %s points outside the root", rel)
	}
	return filepath.ToSlash(r), nil
}

// Array records everything needed to describe the md array name (such as
// "md127"): the block/NAME link, the whole array device directory with its
// md/ subtree, and for every member its block device directory, its
// class/block and dev/block links, and the attributes of its parent
// devices that identify it.
func (c *Capturer) Array(name string) error {
	dev, err := c.resolve(path.Join("block", name))
	if err != nil {
		return err
	}
	if err := c.Tree(dev); err != nil {
		return err
	}
	// Tree skips queue/; a replace plan reads the array's own
	// logical_block_size.
	if err := c.queue(dev); err != nil {
		return err
	}
	mdDir := path.Join(dev, "md")
	names, err := readDirNames(c.abs(mdDir))
	if err != nil {
		return err
	}
	for _, n := range names {
		if !strings.HasPrefix(n, "dev-") {
			continue
		}
		if err := c.BlockDevice(path.Join(mdDir, n, "block")); err != nil {
			return err
		}
	}
	return nil
}

// BlockDevice records the block device that the link at rel points to:
// its directory, its class/block, block and dev/block links, its queue
// geometry, and for each parent device the attributes that identify it.
func (c *Capturer) BlockDevice(rel string) error {
	dev, err := c.resolve(rel)
	if err != nil {
		return err
	}
	if err := c.Dir(dev, nil); err != nil {
		return err
	}
	for _, sub := range []string{"holders", "slaves"} {
		if err := c.Dir(path.Join(dev, sub), nil); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	if err := c.queue(dev); err != nil {
		return err
	}
	base := path.Base(dev)
	for _, l := range []string{path.Join("class/block", base), path.Join("block", base)} {
		if _, err := c.record(l); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	if data, err := readAttr(c.abs(path.Join(dev, "dev"))); err == nil {
		if _, err := c.record(path.Join("dev/block", strings.TrimSpace(string(data)))); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	for p := path.Dir(dev); p != "devices" && p != "." && strings.HasPrefix(p, "devices/"); p = path.Dir(p) {
		if path.Base(p) == "block" {
			continue
		}
		if err := c.Dir(p, func(name string, isLink bool) bool {
			return (isLink && name != "firmware_node") || ancestorFiles[name]
		}); err != nil {
			return err
		}
	}
	return nil
}

// queue records the block geometry of the block device directory dev:
// queue/logical_block_size, physical_block_size and rotational.
func (c *Capturer) queue(dev string) error {
	for _, q := range []string{"logical_block_size", "physical_block_size", "rotational"} {
		if _, err := c.record(path.Join(dev, "queue", q)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

// CaptureArray captures the md array name (such as "md127") from the sysfs
// tree at root. See [Capturer.Array].
func CaptureArray(root, name string) ([]Entry, error) {
	c := NewCapturer(root)
	if err := c.Array(name); err != nil {
		return nil, err
	}
	return c.Entries(), nil
}
