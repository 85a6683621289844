package vmtest

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/sys/unix"
)

// Kernel is a kernel the rig can boot: one installed on the host, or one of
// the matrix that scripts/vm-deps unpacks into the cache.
type Kernel struct {
	Label   string // the matrix label ("bookworm-6.1", "sid"), or "" for a host kernel
	Version string // "6.1.0-57-amd64"
	Image   string // compressed image, /boot/vmlinuz-<Version> or <root>/usr/lib/modules/<Version>/vmlinuz
	Modules string // /lib/modules/<Version>
}

// MatrixEntry is one line of the kernel matrix file.
type MatrixEntry struct {
	Label, Version string
}

// Matrix returns the kernel matrix that scripts/vm-deps unpacked into the
// cache, in its order, from the file kernels/matrix ("label version"
// lines). It is empty, without error, before vm-deps has run.
func Matrix() ([]MatrixEntry, error) {
	dir, err := CacheDir()
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(filepath.Join(dir, "kernels", "matrix"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("vmtest: kernel matrix: %w", err)
	}
	var out []MatrixEntry
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) == 2 {
			out = append(out, MatrixEntry{Label: f[0], Version: f[1]})
		}
	}
	return out, nil
}

// cachedKernel returns the matrix kernel e, unpacked under
// <cache>/kernels/<version>/root, or nil if it is not there. Debian's older
// packages put the image in boot/, newer ones beside the modules.
func cachedKernel(e MatrixEntry) *Kernel {
	dir, err := CacheDir()
	if err != nil {
		return nil
	}
	root := filepath.Join(dir, "kernels", e.Version, "root")
	mods := filepath.Join(root, "lib", "modules", e.Version)
	if _, err := os.Stat(filepath.Join(mods, "modules.dep")); err != nil {
		return nil
	}
	for _, img := range []string{
		filepath.Join(root, "boot", "vmlinuz-"+e.Version),
		filepath.Join(root, "usr", "lib", "modules", e.Version, "vmlinuz"),
	} {
		if _, err := os.Stat(img); err == nil {
			return &Kernel{Label: e.Label, Version: e.Version, Image: img, Modules: mods}
		}
	}
	return nil
}

// FindKernel picks the kernel to boot. $MDRAID_VM_KERNEL names a kernel of
// the matrix by label or version, or a kernel installed under /boot. Unset,
// it is the running kernel if its image and modules are installed, else the
// first kernel of the matrix, else the newest /boot/vmlinuz-* that has a
// modules directory. On CI the running kernel is usually the host's,
// without modules, so the fallbacks matter.
func FindKernel() (*Kernel, error) {
	try := func(v string) *Kernel {
		k := &Kernel{Version: v, Image: "/boot/vmlinuz-" + v, Modules: "/lib/modules/" + v}
		if _, err := os.Stat(k.Image); err != nil {
			return nil
		}
		if _, err := os.Stat(filepath.Join(k.Modules, "modules.dep")); err != nil {
			return nil
		}
		return k
	}
	matrix, err := Matrix()
	if err != nil {
		return nil, err
	}
	if v := os.Getenv(EnvKernel); v != "" {
		for _, e := range matrix {
			if e.Label == v || e.Version == v {
				if k := cachedKernel(e); k != nil {
					return k, nil
				}
			}
		}
		if k := try(v); k != nil {
			return k, nil
		}
		return nil, unavailable("%s=%s: not a kernel of the matrix (%s) and no /boot/vmlinuz-%s with /lib/modules/%s/modules.dep", EnvKernel, v, matrixNames(matrix), v, v)
	}
	var uts unix.Utsname
	if unix.Uname(&uts) == nil {
		if k := try(unix.ByteSliceToString(uts.Release[:])); k != nil {
			return k, nil
		}
	}
	for _, e := range matrix {
		if k := cachedKernel(e); k != nil {
			return k, nil
		}
	}
	images, _ := filepath.Glob("/boot/vmlinuz-*")
	sort.Sort(sort.Reverse(sort.StringSlice(images))) // newest-looking first
	for _, img := range images {
		if k := try(strings.TrimPrefix(filepath.Base(img), "vmlinuz-")); k != nil {
			return k, nil
		}
	}
	return nil, unavailable("no kernel: scripts/vm-deps unpacks the kernel matrix into the cache")
}

func matrixNames(m []MatrixEntry) string {
	if len(m) == 0 {
		return "empty"
	}
	var s []string
	for _, e := range m {
		s = append(s, e.Label+"="+e.Version)
	}
	return strings.Join(s, ", ")
}

// Vmlinux returns the path of the uncompressed ELF kernel, extracting it
// into the cache on first use. QEMU boots an ELF vmlinux through its PVH
// entry point, which skips the decompressor and firmware and halves the
// boot time under TCG.
func (k *Kernel) Vmlinux() (string, error) {
	dir, err := CacheDir()
	if err != nil {
		return "", err
	}
	st, err := os.Stat(k.Image)
	if err != nil {
		return "", unavailable("%v", err)
	}
	out := filepath.Join(dir, fmt.Sprintf("vmlinux-%s-%d-%d", k.Version, st.Size(), st.ModTime().Unix()))
	if _, err := os.Stat(out); err == nil {
		return out, nil
	}
	img, err := os.ReadFile(k.Image)
	if err != nil {
		return "", unavailable("read kernel image: %v (Debian installs it mode 0600: run as root)", err)
	}
	elf, err := extractVmlinux(img)
	if err != nil {
		return "", fmt.Errorf("vmtest: %s: %w", k.Image, err)
	}
	err = writeFileAtomic(out, func(f *os.File) error { _, err := f.Write(elf); return err })
	return out, err
}

var elfMagic = []byte("\x7fELF")

// extractVmlinux finds the compressed payload inside a bzImage the way the
// kernel's scripts/extract-vmlinux does: try every offset where a known
// compression magic appears and keep the first that decompresses to an
// ELF file. xz and zstd go through the external tools (xz-utils, zstd).
func extractVmlinux(img []byte) ([]byte, error) {
	if bytes.HasPrefix(img, elfMagic) {
		return img, nil
	}
	type codec struct {
		magic  []byte
		decode func([]byte) ([]byte, error)
	}
	codecs := []codec{
		{[]byte("\xfd7zXZ\x00"), func(b []byte) ([]byte, error) { return decompressCmd(b, "xz", "-dc") }},
		{[]byte("\x28\xb5\x2f\xfd"), func(b []byte) ([]byte, error) { return decompressCmd(b, "zstd", "-dcq") }},
		{[]byte("\x1f\x8b\x08"), func(b []byte) ([]byte, error) {
			zr, err := gzip.NewReader(bytes.NewReader(b))
			if err != nil {
				return nil, err
			}
			zr.Multistream(false)
			return io.ReadAll(zr)
		}},
	}
	var errs []error
	for _, c := range codecs {
		for off := 0; ; {
			i := bytes.Index(img[off:], c.magic)
			if i < 0 {
				break
			}
			off += i
			out, err := c.decode(img[off:])
			if bytes.HasPrefix(out, elfMagic) {
				return out, nil
			}
			if err != nil {
				errs = append(errs, err)
			}
			off++
		}
	}
	return nil, fmt.Errorf("no compressed ELF payload found: %w", errors.Join(errs...))
}

// decompressCmd runs an external decompressor. The payload is followed by
// trailing bytes, so the tool complains at the end; what it wrote before
// that is what we want, and the caller checks for the ELF magic.
func decompressCmd(b []byte, name string, args ...string) ([]byte, error) {
	if _, err := exec.LookPath(name); err != nil {
		return nil, unavailable("%s not installed", name)
	}
	var out bytes.Buffer
	cmd := exec.Command(name, args...)
	cmd.Stdin = bytes.NewReader(b)
	cmd.Stdout = &out
	err := cmd.Run()
	return out.Bytes(), err
}
