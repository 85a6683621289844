package blockdev

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/go-mdraid/mdraid/sysfs"
)

// ByPathCheck is what [CheckByPath] found.
type ByPathCheck struct {
	// Want is the identity [PathID] computes.
	Want string
	// Links are the names in DEVROOT/disk/by-path whose links resolve to
	// the device node, sorted.
	Links []string
	// Match reports whether a link named Want resolves to the device.
	Match bool
	// Unexpected lists links to the device whose names PathID would not
	// give: not Want, not the ATA compatibility name, and not udev's
	// legacy "virtio-" + Want.
	Unexpected []string
}

// CheckByPath compares [PathID] of the device name with the links udev
// (or whatever populated the dev root) made in devRoot/disk/by-path. It
// is an optional cross-check; nothing else in this package reads /dev.
// An error matching fs.ErrNotExist means the device or the by-path
// directory does not exist; an error matching [ErrNoPathID] that the
// device has no identity.
func CheckByPath(fsys sysfs.FS, devRoot, name string) (ByPathCheck, error) {
	d, err := Lookup(fsys, devRoot, name)
	if err != nil {
		return ByPathCheck{}, err
	}
	id, compat, err := pathIDs(fsys, name)
	if err != nil {
		return ByPathCheck{}, err
	}
	dir := filepath.Join(devRoot, "disk", "by-path")
	ents, err := os.ReadDir(dir)
	if err != nil {
		return ByPathCheck{}, fmt.Errorf("blockdev: %w", err)
	}
	res := ByPathCheck{Want: id}
	for _, e := range ents {
		t, err := os.Readlink(filepath.Join(dir, e.Name()))
		if err != nil {
			continue
		}
		if !filepath.IsAbs(t) {
			t = filepath.Join(dir, t)
		}
		if filepath.Clean(t) != filepath.Clean(d.Node) {
			continue
		}
		res.Links = append(res.Links, e.Name())
		switch {
		case e.Name() == id:
			res.Match = true
		case compat != "" && e.Name() == compat:
		case strings.HasPrefix(d.Name, "vd") && e.Name() == "virtio-"+id:
		default:
			res.Unexpected = append(res.Unexpected, e.Name())
		}
	}
	sort.Strings(res.Links)
	return res, nil
}
