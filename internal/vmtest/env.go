package vmtest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// Environment variables read by the rig.
const (
	EnvEnable = "MDRAID_VMTEST"    // "1" enables VM tests
	EnvAccel  = "MDRAID_VM_ACCEL"  // "kvm" or "tcg" (default)
	EnvKernel = "MDRAID_VM_KERNEL" // kernel version to boot
	EnvCache  = "MDRAID_VM_CACHE"  // cache directory
	EnvQEMU   = "MDRAID_VM_QEMU"   // qemu-system-x86_64 path
)

// ErrUnavailable is wrapped by errors that mean the host cannot run the
// rig at all: no QEMU, no kernel image or modules, no mdadm or busybox.
var ErrUnavailable = errors.New("vmtest: VM rig unavailable")

func unavailable(format string, args ...any) error {
	return fmt.Errorf("%w: %s (run scripts/vm-deps)", ErrUnavailable, fmt.Sprintf(format, args...))
}

// Enabled reports whether MDRAID_VMTEST asks for VM tests.
func Enabled() bool {
	v := os.Getenv(EnvEnable)
	return v != "" && v != "0" && !strings.EqualFold(v, "false")
}

// CacheDir returns the directory for extracted kernels and initramfs
// images, creating it if needed.
func CacheDir() (string, error) {
	dir := os.Getenv(EnvCache)
	if dir == "" {
		if base, err := os.UserCacheDir(); err == nil {
			dir = filepath.Join(base, "go-mdraid-vm")
		} else {
			dir = "/var/tmp/go-mdraid-vm"
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("vmtest: cache dir: %w", err)
	}
	return dir, nil
}

// lockHost takes the host-wide VM lock so that only one VM runs at a time,
// whichever process or test package starts it.
func lockHost() (unlock func(), err error) {
	dir, err := CacheDir()
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(dir, "vm.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("vmtest: lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("vmtest: lock: %w", err)
	}
	return func() { f.Close() }, nil
}

// writeFileAtomic writes data to path through a temporary file and a rename,
// so concurrent readers of the cache never see a partial file.
func writeFileAtomic(path string, write func(f *os.File) error) error {
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}
