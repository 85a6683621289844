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

// Kernel is an installed kernel the rig can boot.
type Kernel struct {
	Version string // "6.1.0-57-amd64"
	Image   string // compressed image, /boot/vmlinuz-<Version>
	Modules string // /lib/modules/<Version>
}

// FindKernel picks the kernel to boot: $MDRAID_VM_KERNEL if set, else the
// running kernel if its image and modules are installed, else the newest
// /boot/vmlinuz-* that has a modules directory. On CI the running kernel
// is usually the host's, without modules, so the fallback matters.
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
	if v := os.Getenv(EnvKernel); v != "" {
		if k := try(v); k != nil {
			return k, nil
		}
		return nil, unavailable("%s=%s: no /boot/vmlinuz-%s with /lib/modules/%s/modules.dep", EnvKernel, v, v, v)
	}
	var uts unix.Utsname
	if unix.Uname(&uts) == nil {
		if k := try(unix.ByteSliceToString(uts.Release[:])); k != nil {
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
	return nil, unavailable("no kernel: need /boot/vmlinuz-* and /lib/modules/*/modules.dep (apt-get install linux-image-amd64)")
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
