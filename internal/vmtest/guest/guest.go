// Package guest is the guest-side half of the VM test rig
// (internal/vmtest): helpers for tests that run inside the rig's VM, in
// files constrained by "//go:build vmtest".
//
// # Typical test
//
//	func TestMirror(t *testing.T) {
//		disks := guest.ScratchDisks(t, 2) // skips outside the VM; resets disks now and after
//		guest.Mdadm(t, "--create", "/dev/md0", "--run", "--level=1", "--raid-devices=2",
//			disks[0].Path, disks[1].Path)
//		guest.WaitSync(t, "md0")
//		if s := guest.ReadAttr(t, "md0", "array_state"); s != "clean" { ... }
//		f := disks[0].Open(t) // *os.File, an io.ReaderAt over the raw member
//	}
//
// # Environment
//
// There is no udev. The rig's init creates /dev/disk/by-path and by-id
// links for the disks present at boot, mdadm runs with MDADM_NO_UDEV=1
// (it creates /dev/mdX and /dev/md/<name> itself), /run/mdadm exists,
// and the hostname is "vmtest". Commands run with stdin from /dev/null,
// so mdadm never waits for a "Continue creating array?" answer; pass
// --run to skip the question altogether. The working directory is the
// package's source directory, shared read-only from the host, so
// testdata/ can be read but not written; use t.TempDir.
package guest

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// GuestEnv is set to "1" by the rig's init (vmtest.GuestEnv).
const GuestEnv = "MDRAID_VM_GUEST"

// FirstSlot is the PCI device number of scratch disk slot 0 (vmtest.FirstSlot).
const FirstSlot = 0x10

// InGuest reports whether this process runs inside the rig's VM.
func InGuest() bool {
	if os.Getenv(GuestEnv) != "1" {
		return false
	}
	b, err := os.ReadFile("/proc/cmdline")
	return err == nil && bytes.Contains(b, []byte("mdraid.vmtest=1"))
}

// Require skips the test unless it runs inside the rig's VM.
func Require(t testing.TB) {
	t.Helper()
	if !InGuest() {
		t.Skip("needs the VM rig (internal/vmtest; MDRAID_VMTEST=1 scripts/test)")
	}
}

// Disk is a virtio scratch disk in the guest.
type Disk struct {
	Name   string // "vda"
	Path   string // "/dev/vda"
	ByPath string // "pci-0000:00:10.0", as udev's by-path would name it
	Serial string // "mdtest-0"
	Slot   int    // PCI device number minus FirstSlot (the host's vmtest.Disk.Slot)
	Size   int64  // bytes
	// LogicalBlockSize is queue/logical_block_size: 512, or 4096 on a
	// 4Kn disk.
	LogicalBlockSize int64
}

// Open opens the disk read-only, for use as an io.ReaderAt of d.Size
// bytes; the file is closed when the test ends. It first drops the
// device's page cache (FlushBuffers), so reads see what md last wrote.
func (d Disk) Open(t testing.TB) *os.File {
	t.Helper()
	if err := FlushBuffers(d.Path); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(d.Path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// Disks lists the virtio disks present now (hot-plugged ones included),
// ordered by slot. Identity comes from sysfs, not from the /dev/disk links.
func Disks() ([]Disk, error) {
	names, err := filepath.Glob("/sys/block/vd*")
	if err != nil {
		return nil, err
	}
	var disks []Disk
	for _, sys := range names {
		d := Disk{Name: filepath.Base(sys), Path: "/dev/" + filepath.Base(sys)}
		virtio, err := filepath.EvalSymlinks(filepath.Join(sys, "device"))
		if err != nil {
			return nil, err
		}
		pci := filepath.Base(filepath.Dir(virtio)) // .../0000:00:10.0/virtio2
		d.ByPath = "pci-" + pci
		if dev, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimPrefix(pci, "0000:00:"), ".0"), 16, 8); err == nil {
			d.Slot = int(dev) - FirstSlot
		}
		d.Serial = readTrim(filepath.Join(sys, "serial"))
		sectors, err := strconv.ParseInt(readTrim(filepath.Join(sys, "size")), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("guest: size of %s: %w", d.Name, err)
		}
		d.Size = sectors * 512
		d.LogicalBlockSize, _ = strconv.ParseInt(readTrim(filepath.Join(sys, "queue", "logical_block_size")), 10, 64)
		disks = append(disks, d)
	}
	sort.Slice(disks, func(i, j int) bool { return disks[i].Slot < disks[j].Slot })
	return disks, nil
}

// ScratchDisks requires the guest, resets all disks now and when the test
// ends, and returns the first n disks with 512-byte logical blocks
// (failing if there are fewer).
func ScratchDisks(t testing.TB, n int) []Disk {
	t.Helper()
	Require(t)
	disks, err := Disks()
	if err != nil {
		t.Fatal(err)
	}
	var scratch []Disk // 512-byte disks; the 4Kn one is Disk4Kn's
	for _, d := range disks {
		if d.LogicalBlockSize != 4096 {
			scratch = append(scratch, d)
		}
	}
	if len(scratch) < n {
		t.Fatalf("need %d scratch disks, the VM has %d", n, len(scratch))
	}
	Reset(t)
	t.Cleanup(func() { Reset(t) })
	return scratch[:n]
}

// Disk4Kn returns the suite's disk with 4096-byte logical blocks, failing
// the test when the VM has none. ScratchDisks resets it with the others;
// it never is one of the first n it returns.
func Disk4Kn(t testing.TB) Disk {
	t.Helper()
	Require(t)
	disks, err := Disks()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range disks {
		if d.LogicalBlockSize == 4096 {
			return d
		}
	}
	t.Fatal("the VM has no 4Kn disk (logical_block_size=4096)")
	return Disk{}
}

// DiskByName returns the disk for "vda" or "/dev/vda".
func DiskByName(t testing.TB, name string) Disk {
	t.Helper()
	disks, err := Disks()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range disks {
		if d.Name == filepath.Base(name) {
			return d
		}
	}
	t.Fatalf("no disk %s", name)
	return Disk{}
}

func readTrim(p string) string {
	b, _ := os.ReadFile(p)
	return strings.TrimSpace(string(b))
}

// RunMdadm runs mdadm and returns its combined output.
func RunMdadm(args ...string) (string, error) {
	cmd := exec.Command("mdadm", args...)
	cmd.Env = append(os.Environ(), "MDADM_NO_UDEV=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("mdadm %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// Mdadm runs mdadm and fails the test, with mdadm's output, if it fails.
func Mdadm(t testing.TB, args ...string) string {
	t.Helper()
	out, err := RunMdadm(args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Run runs a command and fails the test with its output if it fails.
func Run(t testing.TB, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// MDStat returns /proc/mdstat.
func MDStat(t testing.TB) string {
	t.Helper()
	b, err := os.ReadFile("/proc/mdstat")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Arrays lists the md devices that exist ("md0", "md127", ...).
func Arrays() ([]string, error) {
	ms, err := filepath.Glob("/sys/block/md*")
	if err != nil {
		return nil, err
	}
	var names []string
	for _, m := range ms {
		names = append(names, filepath.Base(m))
	}
	return names, nil
}

// ResolveArray turns "md0", "/dev/md0" or "/dev/md/boot" into the kernel
// name ("md0", "md127").
func ResolveArray(dev string) (string, error) {
	if !strings.Contains(dev, "/") {
		return dev, nil
	}
	p, err := filepath.EvalSymlinks(dev)
	if err != nil {
		return "", err
	}
	return filepath.Base(p), nil
}

// ArrayName is ResolveArray for tests.
func ArrayName(t testing.TB, dev string) string {
	t.Helper()
	md, err := ResolveArray(dev)
	if err != nil {
		t.Fatal(err)
	}
	return md
}

// SysPath is /sys/block/<md>/md/<elem...>.
func SysPath(md string, elem ...string) string {
	return filepath.Join(append([]string{"/sys/block", md, "md"}, elem...)...)
}

// ReadAttr reads an md sysfs attribute (relative to /sys/block/<md>/md,
// e.g. "array_state" or "dev-vda/state"), trimmed.
func ReadAttr(t testing.TB, md, attr string) string {
	t.Helper()
	b, err := os.ReadFile(SysPath(ArrayName(t, md), attr))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// WriteAttr writes an md sysfs attribute.
func WriteAttr(t testing.TB, md, attr, value string) {
	t.Helper()
	if err := WriteFile(SysPath(ArrayName(t, md), attr), value); err != nil {
		t.Fatal(err)
	}
}

// WriteFile writes value to an existing (sysfs) file without creating or
// truncating it, so the kernel's error reaches the caller.
func WriteFile(path, value string) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(value)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// Member is one dev-* entry of an array.
type Member struct {
	Name  string // kernel name, "vda"
	Path  string // "/dev/vda"
	Slot  string // "0", "none", "journal"
	State string // "in_sync", "spare", "faulty", ...
}

// Members lists an array's members from sysfs.
func Members(t testing.TB, md string) []Member {
	t.Helper()
	md = ArrayName(t, md)
	ds, err := filepath.Glob(SysPath(md, "dev-*"))
	if err != nil {
		t.Fatal(err)
	}
	var ms []Member
	for _, d := range ds {
		name := strings.ReplaceAll(strings.TrimPrefix(filepath.Base(d), "dev-"), "!", "/")
		ms = append(ms, Member{
			Name: name, Path: "/dev/" + name,
			Slot: readTrim(filepath.Join(d, "slot")), State: readTrim(filepath.Join(d, "state")),
		})
	}
	return ms
}

// SyncTimeout bounds WaitSync.
var SyncTimeout = 3 * time.Minute

// WaitSync waits until the array has no resync/recovery/reshape running or
// pending (see WaitIdle), failing the test after SyncTimeout.
func WaitSync(t testing.TB, md string) {
	t.Helper()
	if err := WaitIdle(md, SyncTimeout); err != nil {
		t.Fatal(err)
	}
}

// WaitIdle waits until sync_action reads idle and sync_completed none.
// Arrays without redundancy (raid0, linear) return at once.
func WaitIdle(md string, timeout time.Duration) error {
	md, err := ResolveArray(md)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(timeout)
	for {
		action, err := os.ReadFile(SysPath(md, "sync_action"))
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		completed, _ := os.ReadFile(SysPath(md, "sync_completed"))
		if strings.TrimSpace(string(action)) == "idle" && strings.TrimSpace(string(completed)) == "none" {
			return nil
		}
		if time.Now().After(deadline) {
			mdstat, _ := os.ReadFile("/proc/mdstat")
			return fmt.Errorf("%s: sync still running after %v (sync_action %s, sync_completed %s)\n%s",
				md, timeout, bytes.TrimSpace(action), bytes.TrimSpace(completed), mdstat)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// WaitAttr waits until an md attribute reads want (trimmed).
func WaitAttr(t testing.TB, md, attr, want string, timeout time.Duration) {
	t.Helper()
	md = ArrayName(t, md)
	deadline := time.Now().Add(timeout)
	for {
		got := readTrim(SysPath(md, attr))
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s/%s = %q after %v, want %q\n%s", md, attr, got, timeout, want, MDStat(t))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// StopAll stops every md array, retrying while the kernel reports busy.
// md devices without an array (array_state "clear" or gone) are skipped.
func StopAll() error {
	var errs []error
	for range 2 { // a second round catches arrays stacked on arrays
		errs = errs[:0]
		arrays, err := Arrays()
		if err != nil {
			return err
		}
		for _, md := range arrays {
			if s := readTrim(SysPath(md, "array_state")); s == "" || s == "clear" {
				continue
			}
			var err error
			for range 20 {
				if _, err = RunMdadm("--stop", "/dev/"+md); err == nil {
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
			if err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// Reset puts the scratch disks back to blank (ResetDisks), failing the
// test on error.
func Reset(t testing.TB) {
	t.Helper()
	if err := ResetDisks(); err != nil {
		t.Fatal(err)
	}
}

// ResetDisks stops all arrays, runs mdadm --zero-superblock on every disk
// and zeroes all of it.
func ResetDisks() error {
	if err := StopAll(); err != nil {
		mdstat, _ := os.ReadFile("/proc/mdstat")
		return fmt.Errorf("stop arrays: %w\n%s", err, mdstat)
	}
	disks, err := Disks()
	if err != nil {
		return err
	}
	for _, d := range disks {
		RunMdadm("--zero-superblock", "--force", d.Path) // fails on blank disks
		if err := zeroAll(d.Path, d.Size); err != nil {
			return err
		}
		if err := forgetPartitions(d); err != nil {
			return err
		}
	}
	os.Remove("/run/mdadm/map")
	// Without udev, /dev/md/<name> links outlive their arrays.
	links, _ := filepath.Glob("/dev/md/*")
	for _, l := range links {
		if _, err := os.Stat(l); err != nil {
			os.Remove(l)
		}
	}
	return nil
}

// forgetPartitions makes the kernel drop the partitions a test made on d
// (its table is zeroed by now): zeroing the disk leaves them in sysfs,
// and the next test's blank check rightly refuses a disk with kernel
// partitions. BLKRRPART reads the empty table; sysfs drops them before
// it returns, devtmpfs the nodes a moment later.
func forgetPartitions(d Disk) error {
	parts, _ := filepath.Glob("/sys/block/" + d.Name + "/" + d.Name + "*")
	if len(parts) == 0 {
		return nil
	}
	f, err := os.OpenFile(d.Path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := unix.IoctlSetInt(int(f.Fd()), unix.BLKRRPART, 0); err != nil {
		return fmt.Errorf("BLKRRPART %s (partitions %v): %w", d.Path, parts, err)
	}
	for _, p := range parts {
		if _, err := os.Stat(p); err == nil {
			return fmt.Errorf("%s: partition %s still in sysfs after BLKRRPART", d.Path, filepath.Base(p))
		}
	}
	// devtmpfs removes the nodes it made; one a test made with mknod
	// stays, and goes here.
	deadline := time.Now().Add(2 * time.Second)
	for _, p := range parts {
		node := "/dev/" + filepath.Base(p)
		for {
			if _, err := os.Stat(node); err != nil {
				break
			}
			if time.Now().After(deadline) {
				if err := os.Remove(node); err != nil {
					return err
				}
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	return nil
}

// zeroAll makes the whole disk read as zeros (BLKZEROOUT; the rig
// attaches disks with discard=unmap, so QEMU punches holes in the sparse
// image instead of writing). A test leaves data all over a disk (a rebuild
// copies the array onto it), and md's blank rule looks at more than the
// ends, so zeroing only the ends would leave the next test a disk that is
// rightly not blank.
func zeroAll(path string, size int64) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	rng := [2]uint64{0, uint64(size)}
	if _, _, errno := unix.Syscall(unix.SYS_IOCTL, f.Fd(), unix.BLKZEROOUT, uintptr(unsafe.Pointer(&rng[0]))); errno != 0 {
		return fmt.Errorf("BLKZEROOUT %s: %w", path, errno)
	}
	return nil
}

// SkipMissingPrefix starts the message of a test skipped because the
// kernel lacks a module it needs (vmtest.SkipMissingPrefix); scripts/test
// counts these per kernel.
const SkipMissingPrefix = "!!! SKIPPED ON THIS KERNEL:"

// RequireLevel skips t, loudly, when the running kernel has no md
// personality for the level that mdadm arguments ask for ("--level=linear",
// "--level=5", ...): Debian's 6.12 and newer kernels have no linear module.
// Such a test never passes on that kernel, and scripts/test counts it.
func RequireLevel(t testing.TB, mdadmArgs ...string) {
	t.Helper()
	for _, a := range mdadmArgs {
		lvl, ok := strings.CutPrefix(a, "--level=")
		if !ok {
			continue
		}
		pers := map[string]string{"linear": "linear", "0": "raid0", "raid0": "raid0", "1": "raid1", "raid1": "raid1",
			"mirror": "raid1", "4": "raid4", "5": "raid5", "raid5": "raid5", "6": "raid6", "raid6": "raid6",
			"10": "raid10", "raid10": "raid10"}[lvl]
		if pers == "" {
			continue
		}
		b, err := os.ReadFile("/proc/mdstat")
		if err != nil {
			t.Fatalf("RequireLevel: %v", err)
		}
		first, _, _ := bytes.Cut(b, []byte("\n"))
		if !bytes.Contains(first, []byte("["+pers+"]")) {
			uname, _ := os.ReadFile("/proc/sys/kernel/osrelease")
			t.Skipf("%s kernel %s has no md personality %s (%s)", SkipMissingPrefix, bytes.TrimSpace(uname), pers, first)
		}
	}
}
