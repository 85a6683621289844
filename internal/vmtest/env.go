package vmtest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Environment variables read by the rig.
const (
	EnvEnable = "MDRAID_VMTEST"    // "1" enables VM tests
	EnvAccel  = "MDRAID_VM_ACCEL"  // "kvm" or "tcg" (default)
	EnvKernel = "MDRAID_VM_KERNEL" // kernel version to boot
	EnvCache  = "MDRAID_VM_CACHE"  // cache directory
	EnvQEMU   = "MDRAID_VM_QEMU"   // qemu-system-x86_64 path
	EnvJobs   = "MDRAID_VM_JOBS"   // VMs of one vCPU at once (default: CPUs)
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

// lockHost takes VM slots on this host for a VM with cpus vCPUs, waiting
// until they are free, whichever process or test package starts the VM.
// The host has one slot per CPU ([EnvJobs] overrides): a VM of one vCPU
// takes one slot, so that VMs of different processes (scripts/test runs
// the kernels of the matrix at the same time) each get a core, and a VM
// with more vCPUs takes as many slots. Slots are file locks in the cache
// directory (vm.lock, vm.lock.1, ...), released when the process that
// holds them exits.
func lockHost(cpus int) (unlock func(), err error) {
	dir, err := CacheDir()
	if err != nil {
		return nil, err
	}
	n := Jobs()
	open := func(i int) (*os.File, error) {
		name := "vm.lock"
		if i > 0 {
			name += "." + strconv.Itoa(i)
		}
		f, err := os.OpenFile(filepath.Join(dir, name), os.O_CREATE|os.O_RDWR, 0o644)
		if err != nil {
			return nil, fmt.Errorf("vmtest: lock: %w", err)
		}
		return f, nil
	}
	release := func(fs []*os.File) func() {
		return func() {
			for _, f := range fs {
				f.Close()
			}
		}
	}
	if cpus > 1 {
		// Slots taken in order, blocking: two such VMs cannot each
		// hold a slot the other waits for, and one-slot VMs wait for
		// nothing while they hold theirs.
		var held []*os.File
		for i := range min(cpus, n) {
			f, err := open(i)
			if err == nil {
				if err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
					f.Close()
					err = fmt.Errorf("vmtest: lock: %w", err)
				}
			}
			if err != nil {
				release(held)()
				return nil, err
			}
			held = append(held, f)
		}
		return release(held), nil
	}
	for {
		for i := range n {
			f, err := open(i)
			if err != nil {
				return nil, err
			}
			err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
			if err == nil {
				return release([]*os.File{f}), nil
			}
			f.Close()
			if !errors.Is(err, syscall.EWOULDBLOCK) {
				return nil, fmt.Errorf("vmtest: lock: %w", err)
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Jobs returns how many VMs of one vCPU may run at the same time on this
// host: [EnvJobs] when set to a positive number, else the number of CPUs.
func Jobs() int {
	if n, err := strconv.Atoi(os.Getenv(EnvJobs)); err == nil && n > 0 {
		return n
	}
	return runtime.NumCPU()
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
