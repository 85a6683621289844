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
	dir, err := CacheDir()
	if err != nil {
		return "", err
	}
	b, err := os.ReadFile(filepath.Join(dir, "debian-root", "current-"+kind))
	if errors.Is(err, os.ErrNotExist) {
		return "", unavailable("no Debian root (%s) for the boot tests: scripts/vm-deps makes it (as root)", kind)
	}
	if err != nil {
		return "", fmt.Errorf("vmtest: Debian root: %w", err)
	}
	name := strings.TrimSpace(string(b))
	if name == "" || name == "." || name == ".." || filepath.Base(name) != name {
		return "", fmt.Errorf("vmtest: Debian root: bad name %q in debian-root/current-%s", name, kind)
	}
	base := filepath.Join(dir, "debian-root", name)
	if _, err := os.Stat(filepath.Join(base, "ok")); err != nil {
		return "", unavailable("Debian root %s is incomplete: scripts/vm-deps makes it again", base)
	}
	return filepath.Join(base, "root"), nil
}

// NewestMdadm returns the root where scripts/vm-deps unpacked the newest
// Debian release's mdadm with the libraries it needs (usr/sbin/mdadm, run
// through usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2), and its Debian
// version, named by the cache's mdadm-newest/current file. An error
// matching [ErrUnavailable] means vm-deps has not fetched it.
func NewestMdadm() (root, version string, err error) {
	dir, err := CacheDir()
	if err != nil {
		return "", "", err
	}
	b, err := os.ReadFile(filepath.Join(dir, "mdadm-newest", "current"))
	if errors.Is(err, os.ErrNotExist) {
		return "", "", unavailable("no newest Debian mdadm: scripts/vm-deps fetches it")
	}
	if err != nil {
		return "", "", fmt.Errorf("vmtest: newest mdadm: %w", err)
	}
	v := strings.TrimSpace(string(b))
	if v == "" || v == "." || v == ".." || filepath.Base(v) != v {
		return "", "", fmt.Errorf("vmtest: newest mdadm: bad version %q in mdadm-newest/current", v)
	}
	base := filepath.Join(dir, "mdadm-newest", v)
	if _, err := os.Stat(filepath.Join(base, "ok")); err != nil {
		return "", "", unavailable("newest mdadm %s is incomplete: scripts/vm-deps fetches it again", base)
	}
	return filepath.Join(base, "root"), v, nil
}
