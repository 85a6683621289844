package vmtest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Initramfs generators of the boot tests' Debian roots, for [DebianRoot].
const (
	InitramfsTools = "initramfs-tools"
	Dracut         = "dracut"
)

// DebianRoot returns the boot tests' Debian root file system with the
// initramfs generator kind ([InitramfsTools] or [Dracut]), a directory
// that scripts/vm-deps made with debootstrap into the cache (Debian
// bookworm's minbase with systemd, udev, e2fsprogs and the generator; no
// mdadm package), named by the cache's debian-root/current-<kind> file.
// The directory is shared: copy it before changing anything. An error
// matching [ErrUnavailable] means vm-deps has not made it (it needs root).
func DebianRoot(kind string) (string, error) {
	if kind != InitramfsTools && kind != Dracut {
		return "", fmt.Errorf("vmtest: Debian root: unknown initramfs generator %q", kind)
	}
	root, _, err := cachedEntry("debian-root", "current-"+kind, "Debian root ("+kind+")", "makes it (as root)")
	return root, err
}

// NewestMdadm returns the root where scripts/vm-deps unpacked the newest
// Debian release's mdadm with the libraries it needs (usr/sbin/mdadm, run
// through usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2), and its Debian
// version, named by the cache's mdadm-newest/current file. An error
// matching [ErrUnavailable] means vm-deps has not fetched it.
func NewestMdadm() (root, version string, err error) {
	return cachedEntry("mdadm-newest", "current", "newest Debian mdadm", "fetches it")
}

// cachedEntry reads the entry of the cache directory sub that the file
// current names, as scripts/vm-deps leaves it: sub/<name>/root, complete
// when sub/<name>/ok exists. It returns the root and the name. what and
// does word the errors ("scripts/vm-deps <does>").
func cachedEntry(sub, current, what, does string) (root, name string, err error) {
	dir, err := CacheDir()
	if err != nil {
		return "", "", err
	}
	b, err := os.ReadFile(filepath.Join(dir, sub, current))
	if errors.Is(err, os.ErrNotExist) {
		return "", "", unavailable("no %s: scripts/vm-deps %s", what, does)
	}
	if err != nil {
		return "", "", fmt.Errorf("vmtest: %s: %w", what, err)
	}
	name = strings.TrimSpace(string(b))
	if name == "" || name == "." || name == ".." || filepath.Base(name) != name {
		return "", "", fmt.Errorf("vmtest: %s: bad name %q in %s/%s", what, name, sub, current)
	}
	base := filepath.Join(dir, sub, name)
	if _, err := os.Stat(filepath.Join(base, "ok")); err != nil {
		return "", "", unavailable("%s %s is incomplete: scripts/vm-deps %s again", what, base, does)
	}
	return filepath.Join(base, "root"), name, nil
}
