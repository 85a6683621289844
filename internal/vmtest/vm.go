package vmtest

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Errors from [VM.Wait] and [Rig.Run]. A guest that exits non-zero gives
// an [*ExitError]; the others are wrapped with details.
var (
	ErrTimeout  = errors.New("vmtest: guest timed out")
	ErrPanic    = errors.New("vmtest: guest kernel panic")
	ErrNoMarker = errors.New("vmtest: guest stopped without printing its exit marker")
)

// ExitError is returned when the guest command exits with a non-zero status.
type ExitError struct{ Code int }

func (e *ExitError) Error() string {
	return fmt.Sprintf("vmtest: guest command exited with status %d", e.Code)
}

// FirstSlot is the PCI device number of disk slot 0 on bus pci.0.
const FirstSlot = 0x10

// Disk is a raw disk image attached as virtio-blk-pci.
type Disk struct {
	Path   string // raw image file on the host
	Slot   int    // PCI address 0000:00:(0x10+Slot).0, bus pci.0
	Serial string // virtio serial; "mdtest-<Slot>" when empty
	// LogicalBlockSize, when set (4096 for a 4Kn disk), is the disk's
	// logical and physical block size; 512 otherwise.
	LogicalBlockSize int
}

// blockSizeOpts returns QEMU's device options for d's block size.
func (d Disk) blockSizeOpts() string {
	if d.LogicalBlockSize == 0 {
		return ""
	}
	return fmt.Sprintf(",logical_block_size=%d,physical_block_size=%d", d.LogicalBlockSize, d.LogicalBlockSize)
}

// Addr is the disk's PCI device number as QEMU takes it ("0x10").
func (d Disk) Addr() string { return fmt.Sprintf("0x%x", FirstSlot+d.Slot) }

// ByPath is the disk's /dev/disk/by-path name in the guest.
func (d Disk) ByPath() string { return fmt.Sprintf("pci-0000:00:%02x.0", FirstSlot+d.Slot) }

func (d Disk) serial() string {
	if d.Serial != "" {
		return d.Serial
	}
	return fmt.Sprintf("mdtest-%d", d.Slot)
}

// CreateImage creates (or truncates) a sparse raw image of size bytes.
func CreateImage(path string, size int64) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := f.Truncate(size); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// ScratchDisks creates n sparse images of size bytes in dir, in slots 0..n-1.
func ScratchDisks(dir string, n int, size int64) ([]Disk, error) {
	var disks []Disk
	for i := range n {
		p := filepath.Join(dir, fmt.Sprintf("disk%d.img", i))
		if err := CreateImage(p, size); err != nil {
			return nil, err
		}
		disks = append(disks, Disk{Path: p, Slot: i})
	}
	return disks, nil
}

// Share is a host directory mounted in the guest over virtio-9p.
type Share struct {
	Tag      string // mount tag, unique per boot
	HostDir  string
	GuestDir string
	ReadOnly bool
}

// Config describes one boot.
type Config struct {
	Cmd   []string          // guest command and arguments (exec'd, not a shell line)
	Dir   string            // guest working directory; default "/"
	Env   []string          // extra KEY=VALUE for the guest command
	Files map[string]string // guest path -> host file, added to the initramfs (mode 0755)

	Disks  []Disk
	Shares []Share // in addition to the module root, which is always at /src (read-only)

	Timeout    time.Duration // whole boot; default 5 minutes
	MemoryMiB  int           // default 1024
	CPUs       int           // default 1 (see Boot)
	Monitor    bool          // start QMP for VM.QMP / AddDisk / RemoveDisk
	KernelArgs string        // appended to the kernel command line

	// Console, if set, gets each line of the guest console as it arrives.
	Console func(line string)

	// Initrd, if set, is booted instead of the rig's initramfs: a guest
	// OS's own (a Debian root's, made by update-initramfs). Cmd, Dir,
	// Env, Files and the shares are then not used: the guest OS must
	// print the exit marker itself, "MDRAID-VMTEST-EXIT <nonce> rc=<N>"
	// on the console, with the nonce the kernel command line carries as
	// mdraid.vmtest.nonce=<nonce> (see [MarkerNonceParam]).
	Initrd string
	// PowerOffTimeout is how long qemu has to exit by itself after the
	// marker (the guest powers off); then it is killed and
	// Result.Killed says so. Default 20 seconds.
	PowerOffTimeout time.Duration
}

// MarkerNonceParam is the kernel command-line parameter that carries the
// boot's nonce to a guest OS booted from Config.Initrd.
const MarkerNonceParam = "mdraid.vmtest.nonce"

// Result is what a finished boot reports.
type Result struct {
	ExitCode int           // guest command status (valid when the marker was seen)
	Console  string        // whole guest console
	Duration time.Duration // from qemu start to exit
	// Killed: qemu did not exit by itself within PowerOffTimeout of
	// the marker and was killed (the guest never powered off).
	Killed bool
}

// Rig boots the host's kernel with the rig's initramfs.
type Rig struct {
	Kernel  *Kernel
	Vmlinux string // uncompressed kernel (cached)
	Base    string // base initramfs (cached)
	QEMU    string
	Root    string // module root, shared read-only at /src ("" to not share)
	// Missing lists the md personality modules this kernel lacks (Debian's
	// 6.12 and newer builds have no linear); see [Rig.RequireModules].
	Missing []string
}

// NewRig finds QEMU and the kernel and prepares the cached kernel and base
// initramfs. Errors matching [ErrUnavailable] mean the host lacks a
// dependency (see scripts/vm-deps).
func NewRig() (*Rig, error) {
	qemu := os.Getenv(EnvQEMU)
	if qemu == "" {
		var err error
		if qemu, err = exec.LookPath("qemu-system-x86_64"); err != nil {
			return nil, unavailable("qemu-system-x86_64 not installed (apt-get install qemu-system-x86)")
		}
	}
	k, err := FindKernel()
	if err != nil {
		return nil, err
	}
	vmlinux, err := k.Vmlinux()
	if err != nil {
		return nil, err
	}
	base, missing, err := baseInitramfs(k)
	if err != nil {
		return nil, err
	}
	root, _ := ModuleRoot()
	return &Rig{Kernel: k, Vmlinux: vmlinux, Base: base, QEMU: qemu, Root: root, Missing: missing}, nil
}

// VM is a running guest.
type VM struct {
	cfg     Config
	nonce   string
	tmp     string
	cmd     *exec.Cmd
	start   time.Time
	unlock  func()
	stderr  bytes.Buffer
	qmp     *qmpClient
	done    chan struct{} // closed when qemu has exited and the console is drained
	waitErr error

	mu       sync.Mutex
	console  bytes.Buffer
	rc       int
	marker   bool
	panicked bool
	timedOut bool
	killed   bool          // after the marker: qemu did not exit by itself
	changed  chan struct{} // closed and replaced on every console line
}

// Run boots cfg and waits for the guest to finish.
func (r *Rig) Run(ctx context.Context, cfg Config) (*Result, error) {
	vm, err := r.Boot(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return vm.Wait()
}

// Boot starts a VM. It blocks while the host's VM slots are taken (one
// per CPU, see [Jobs]). The caller must call Wait (or Kill and Wait).
func (r *Rig) Boot(ctx context.Context, cfg Config) (_ *VM, err error) {
	if cfg.Timeout == 0 {
		cfg.Timeout = 5 * time.Minute
	}
	if cfg.MemoryMiB == 0 {
		cfg.MemoryMiB = 1024
	}
	if cfg.CPUs == 0 {
		// One vCPU: under multi-threaded TCG, Debian's 7.2 kernel
		// sometimes oopses at boot ("Oops: int3" in sched_clock_cpu,
		// seen in about 1 of 45 boots) when one vCPU patches kernel
		// text with int3 while another runs it. A single vCPU has no
		// such race, and on a 2-core host it is not slower.
		cfg.CPUs = 1
	}
	if cfg.Dir == "" {
		cfg.Dir = "/"
	}
	if cfg.PowerOffTimeout == 0 {
		cfg.PowerOffTimeout = 20 * time.Second
	}
	if len(cfg.Cmd) == 0 && cfg.Initrd == "" {
		return nil, errors.New("vmtest: Config.Cmd is empty")
	}
	seenSlot := map[int]bool{}
	for _, d := range cfg.Disks {
		if d.Slot < 0 || FirstSlot+d.Slot > 0x1f || seenSlot[d.Slot] {
			return nil, fmt.Errorf("vmtest: bad or duplicate disk slot %d", d.Slot)
		}
		seenSlot[d.Slot] = true
	}
	shares := cfg.Shares
	if r.Root != "" {
		shares = append([]Share{{Tag: "src", HostDir: r.Root, GuestDir: "/src", ReadOnly: true}}, shares...)
	}

	vm := &VM{cfg: cfg, nonce: randHex(8), done: make(chan struct{}), changed: make(chan struct{}), rc: -1}
	vm.tmp, err = os.MkdirTemp("", "mdvm")
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			os.RemoveAll(vm.tmp)
		}
	}()
	initrd := filepath.Join(vm.tmp, "initrd")
	cmdline := "console=ttyS0 panic=-1 oops=panic quiet mdraid.vmtest=1 " + cfg.KernelArgs
	if cfg.Initrd != "" {
		initrd = cfg.Initrd
		shares = nil
		cmdline += " " + MarkerNonceParam + "=" + vm.nonce
	} else if err := r.writeInitrd(initrd, vm, shares); err != nil {
		return nil, err
	}

	args := []string{
		"-nodefaults", "-nographic", "-no-reboot", "-serial", "stdio",
		"-machine", "pc", "-m", strconv.Itoa(cfg.MemoryMiB), "-smp", strconv.Itoa(cfg.CPUs),
		"-kernel", r.Vmlinux, "-initrd", initrd,
		"-append", strings.TrimSpace(cmdline),
	}
	if strings.EqualFold(os.Getenv(EnvAccel), "kvm") {
		args = append(args, "-accel", "kvm", "-cpu", "host")
	} else {
		args = append(args, "-accel", "tcg,thread=multi", "-cpu", "max")
	}
	for _, d := range cfg.Disks {
		args = append(args, diskArgs(d)...)
	}
	for i, s := range shares {
		fsdev := fmt.Sprintf("local,id=fs%d,path=%s,security_model=none", i, s.HostDir)
		if s.ReadOnly {
			fsdev += ",readonly=on"
		}
		args = append(args, "-fsdev", fsdev, "-device", fmt.Sprintf("virtio-9p-pci,fsdev=fs%d,mount_tag=%s", i, s.Tag))
	}
	qmpPath := filepath.Join(vm.tmp, "qmp.sock")
	if cfg.Monitor {
		args = append(args, "-qmp", "unix:"+qmpPath+",server=on,wait=off")
	}

	if vm.unlock, err = lockHost(cfg.CPUs); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			vm.unlock()
		}
	}()
	vm.cmd = exec.Command(r.QEMU, args...)
	vm.cmd.Stderr = &vm.stderr
	stdout, err := vm.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	vm.start = time.Now()
	if err := vm.cmd.Start(); err != nil {
		return nil, fmt.Errorf("vmtest: start qemu: %w", err)
	}
	go vm.run(ctx, stdout)
	if cfg.Monitor {
		dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		vm.qmp, err = dialQMP(dctx, qmpPath)
		cancel()
		if err != nil {
			vm.Kill()
			vm.Wait()
			return nil, err
		}
	}
	return vm, nil
}

func diskArgs(d Disk) []string {
	id := fmt.Sprintf("d%d", d.Slot)
	return []string{
		"-drive", fmt.Sprintf("if=none,id=%s,file=%s,format=raw,cache=unsafe,discard=unmap,detect-zeroes=unmap", id, d.Path),
		"-device", fmt.Sprintf("virtio-blk-pci,id=disk%d,drive=%s,bus=pci.0,addr=%s,serial=%s%s", d.Slot, id, d.Addr(), d.serial(), d.blockSizeOpts()),
	}
}

// run streams the console and reaps qemu, killing it on timeout.
func (vm *VM) run(ctx context.Context, stdout io.Reader) {
	lines := make(chan struct{})
	markerSeen := make(chan struct{})
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		marker := regexp.MustCompile(`MDRAID-VMTEST-EXIT ` + vm.nonce + ` rc=(\d+)`)
		for sc.Scan() {
			line := ansiEscape.ReplaceAllString(strings.TrimRight(sc.Text(), "\r"), "")
			vm.mu.Lock()
			vm.console.WriteString(line + "\n")
			if m := marker.FindStringSubmatch(line); m != nil && !vm.marker {
				vm.marker = true
				vm.rc, _ = strconv.Atoi(m[1])
				close(markerSeen)
			}
			if strings.Contains(line, "Kernel panic - not syncing") {
				vm.panicked = true
			}
			close(vm.changed)
			vm.changed = make(chan struct{})
			vm.mu.Unlock()
			if vm.cfg.Console != nil {
				vm.cfg.Console(line)
			}
		}
		io.Copy(io.Discard, stdout)
	}()
	timer := time.NewTimer(vm.cfg.Timeout)
	defer timer.Stop()
	exited := make(chan error, 1)
	go func() { <-lines; exited <- vm.cmd.Wait() }()
	select {
	case vm.waitErr = <-exited:
	case <-markerSeen:
		// The guest is done; poweroff should end qemu at once.
		select {
		case vm.waitErr = <-exited:
		case <-time.After(vm.cfg.PowerOffTimeout):
			vm.mu.Lock()
			vm.killed = true
			vm.mu.Unlock()
			vm.cmd.Process.Kill()
			vm.waitErr = <-exited
		}
	case <-timer.C:
		vm.mu.Lock()
		vm.timedOut = true
		vm.mu.Unlock()
		vm.cmd.Process.Kill()
		vm.waitErr = <-exited
	case <-ctx.Done():
		vm.mu.Lock()
		vm.timedOut = true
		vm.mu.Unlock()
		vm.cmd.Process.Kill()
		vm.waitErr = <-exited
	}
	if vm.qmp != nil {
		vm.qmp.close()
	}
	vm.unlock()
	os.RemoveAll(vm.tmp)
	close(vm.done)
}

// Kill stops qemu at once. Wait then reports the boot as failed unless
// the guest had already printed its exit marker.
func (vm *VM) Kill() {
	if vm.cmd.Process != nil {
		vm.cmd.Process.Kill()
	}
}

// Wait waits for qemu to exit and reports how the guest ended. Only an
// exit marker with status 0 gives a nil error.
func (vm *VM) Wait() (*Result, error) {
	<-vm.done
	vm.mu.Lock()
	defer vm.mu.Unlock()
	res := &Result{ExitCode: vm.rc, Console: vm.console.String(), Duration: time.Since(vm.start), Killed: vm.killed}
	stderr := strings.TrimSpace(vm.stderr.String())
	if stderr != "" {
		stderr = "; qemu: " + stderr
	}
	switch {
	case vm.marker && vm.rc == 0:
		return res, nil
	case vm.marker:
		return res, &ExitError{Code: vm.rc}
	case vm.panicked:
		return res, fmt.Errorf("%w after %v%s", ErrPanic, res.Duration.Round(time.Millisecond), stderr)
	case vm.timedOut:
		return res, fmt.Errorf("%w after %v%s", ErrTimeout, res.Duration.Round(time.Second), stderr)
	default:
		return res, fmt.Errorf("%w (qemu: %v)%s", ErrNoMarker, vm.waitErr, stderr)
	}
}

// Console returns the guest console so far.
func (vm *VM) Console() string {
	vm.mu.Lock()
	defer vm.mu.Unlock()
	return vm.console.String()
}

// Expect waits until a console line contains s, or the guest stops, or
// ctx ends.
func (vm *VM) Expect(ctx context.Context, s string) error {
	for {
		vm.mu.Lock()
		found := strings.Contains(vm.console.String(), s)
		ch := vm.changed
		vm.mu.Unlock()
		if found {
			return nil
		}
		select {
		case <-ch:
		case <-vm.done:
			if strings.Contains(vm.Console(), s) {
				return nil
			}
			return fmt.Errorf("vmtest: guest stopped before printing %q", s)
		case <-ctx.Done():
			return fmt.Errorf("vmtest: waiting for %q: %w", s, ctx.Err())
		}
	}
}

// writeInitrd writes the base initramfs followed by a second archive with
// this boot's files, /vmtest/env and /vmtest/cmd; the kernel unpacks
// concatenated archives in order.
func (r *Rig) writeInitrd(p string, vm *VM, shares []Share) error {
	f, err := os.Create(p)
	if err != nil {
		return err
	}
	defer f.Close()
	base, err := os.Open(r.Base)
	if err != nil {
		return err
	}
	_, err = io.Copy(f, base)
	base.Close()
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(f)
	a := newArchive(bw)
	guests := make([]string, 0, len(vm.cfg.Files))
	for g := range vm.cfg.Files {
		guests = append(guests, g)
	}
	sort.Strings(guests)
	for _, g := range guests {
		if !path.IsAbs(g) {
			return fmt.Errorf("vmtest: guest path %q is not absolute", g)
		}
		if err := a.copyFile(g, vm.cfg.Files[g], 0o755); err != nil {
			return err
		}
	}
	var env bytes.Buffer
	var sh []string
	for _, s := range shares {
		mode := "rw"
		if s.ReadOnly {
			mode = "ro"
		}
		sh = append(sh, s.Tag+":"+s.GuestDir+":"+mode)
	}
	vars := []string{
		"VMTEST_NONCE=" + vm.nonce,
		"VMTEST_DISKS=" + strconv.Itoa(len(vm.cfg.Disks)),
		"VMTEST_SHARES=" + strings.Join(sh, " "),
		GuestEnv + "=1",
		"MDADM_NO_UDEV=1",
	}
	for _, kv := range append(vars, vm.cfg.Env...) {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return fmt.Errorf("vmtest: bad Env entry %q", kv)
		}
		fmt.Fprintf(&env, "export %s=%s\n", k, shellQuote(v))
	}
	if err := a.file("vmtest/env", 0o644, env.Bytes()); err != nil {
		return err
	}
	var cmd strings.Builder
	fmt.Fprintf(&cmd, "cd %s || exit 125\nexec", shellQuote(vm.cfg.Dir))
	for _, arg := range vm.cfg.Cmd {
		cmd.WriteString(" " + shellQuote(arg))
	}
	cmd.WriteString("\n")
	if err := a.file("vmtest/cmd", 0o644, []byte(cmd.String())); err != nil {
		return err
	}
	if err := a.close(); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	return f.Close()
}

// ansiEscape matches the terminal control sequences SeaBIOS prints.
var ansiEscape = regexp.MustCompile(`\x1b(\[[0-9;?]*[A-Za-z]|[A-Za-z])`)

// GuestEnv is set to "1" in the guest command's environment.
const GuestEnv = "MDRAID_VM_GUEST"

func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func randHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
