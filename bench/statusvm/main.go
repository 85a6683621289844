// Command statusvm compares `mdctl status` with `mdadm --detail --scan
// --verbose` on eight real arrays in the VM rig, in one run: the median
// wall and CPU time, peak RSS and minor faults of interleaved calls.
//
//	go run ./bench/statusvm [-n 50] [-cpus 2] [-old REV] [-strace] [-costs] [-profile] [-capture]
//
// -cpus sets the guest's vCPUs (the rig's default is one; a machine with
// md arrays has more, and mdctl reads arrays on as many goroutines as
// there are CPUs, where mdadm runs on one);
// -old REV also times `mdctl status` built from the git revision REV
// (such as HEAD~1), interleaved with the others, so that a change is
// measured against what it changes in one run;
// -strace counts the system calls of each command and charges them to
// arrays and members (syscalls.go); -costs times single system calls on
// the arrays; -profile writes a CPU profile of in-process Discover calls;
// the floors beside the tools are a Go hello world, a program that only
// links mdctl's dependencies, and floor/reads, which makes only the system
// calls of a status report (docs/performance.md §2);
// -capture writes the eight-array system into testdata/bench/eight-arrays
// for the Discover benchmark. See docs/performance.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"time"
	"unsafe"

	"github.com/go-mdraid/mdraid/bench/internal/cpuprofile"
	"github.com/go-mdraid/mdraid/bench/internal/guestrun"
	"github.com/go-mdraid/mdraid/internal/fixture"
	"github.com/go-mdraid/mdraid/internal/sysfstree"
	"github.com/go-mdraid/mdraid/internal/vmtest"
	"github.com/go-mdraid/mdraid/md"
	"github.com/go-mdraid/mdraid/sysfs"
	"golang.org/x/sys/unix"
)

const arrays = 8

func main() {
	guest := flag.Bool("guest", false, "run inside the VM")
	n := flag.Int("n", 50, "calls of each command")
	capture := flag.Bool("capture", false, "write testdata/bench/eight-arrays")
	out := flag.String("out", "", "capture directory in the guest")
	profile := flag.Bool("profile", false, "write a CPU profile of in-process Discover calls to bench/statusvm.prof")
	costs := flag.Bool("costs", false, "time single system calls on the arrays (500 of each)")
	trace := flag.Bool("strace", false, "also count system calls with the host's strace (copied into the guest)")
	cpus := flag.Int("cpus", 2, "the guest's vCPUs")
	old := flag.String("old", "", "also time mdctl status built from this git revision")
	flag.Parse()
	var err error
	if *guest {
		err = runGuest(*n, *out, *old, *trace, *profile, *costs)
	} else {
		err = runHost(*n, *cpus, *old, *capture, *trace, *profile, *costs)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "statusvm:", err)
		os.Exit(1)
	}
}

func runHost(n, cpus int, old string, capture, trace, profile, costs bool) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	rig, err := vmtest.NewRig()
	if err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "statusvm-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	self, mdctl := filepath.Join(work, "statusvm"), filepath.Join(work, "mdctl")
	if err := vmtest.BuildProgram(ctx, rig.Root, "./bench/statusvm", self); err != nil {
		return err
	}
	if err := vmtest.BuildProgram(ctx, rig.Root, "./cmd/mdctl", mdctl); err != nil {
		return err
	}
	files := map[string]string{"/vmtest/bin/statusvm": self, "/usr/bin/mdctl": mdctl}
	if old != "" {
		exe := filepath.Join(work, "mdctl-old")
		if err := vmtest.BuildRevision(ctx, rig.Root, old, "./cmd/mdctl", filepath.Join(work, "old"), exe); err != nil {
			return err
		}
		files["/usr/bin/mdctl-old"] = exe
	}
	// The floors (floor/): a Go hello world, a program that links mdctl's
	// dependencies and uses none of them, and one that makes only the
	// system calls of a status report (reads/).
	floors := map[string]string{}
	for _, f := range []string{"hello", "deps", "reads"} {
		exe := filepath.Join(work, "floor-"+f)
		if err := vmtest.BuildProgram(ctx, rig.Root, "./bench/statusvm/floor/"+f, exe); err != nil {
			return err
		}
		floors["/usr/bin/floor-"+f] = exe
	}
	ru := filepath.Join(work, "rusage")
	if err := vmtest.BuildProgram(ctx, rig.Root, "./bench/statusvm/rusage", ru); err != nil {
		return err
	}
	floors["/usr/bin/rusage"] = ru
	disks, err := vmtest.ScratchDisks(work, 2*arrays, 64<<20)
	if err != nil {
		return err
	}
	share := filepath.Join(work, "out")
	if err := os.Mkdir(share, 0o755); err != nil {
		return err
	}
	args := []string{"/vmtest/bin/statusvm", "-guest", "-n", fmt.Sprint(n)}
	if old != "" {
		args = append(args, "-old", old)
	}
	if capture || profile {
		args = append(args, "-out", "/out")
	}
	if profile {
		args = append(args, "-profile")
	}
	if costs {
		args = append(args, "-costs")
	}
	maps.Copy(files, floors)
	if trace {
		args = append(args, "-strace")
		if err := vmtest.AddHostProgram(files, "strace"); err != nil {
			return err
		}
	}
	_, err = rig.Run(ctx, vmtest.Config{
		Cmd:     args,
		Files:   files,
		Disks:   disks,
		Shares:  []vmtest.Share{{Tag: "out", HostDir: share, GuestDir: "/out"}},
		CPUs:    cpus,
		Timeout: 10 * time.Minute,
		Console: func(line string) { fmt.Println("guest:", line) },
	})
	if err != nil {
		return err
	}
	if profile {
		dst := filepath.Join(rig.Root, "bench", "statusvm.prof")
		if err := os.Rename(filepath.Join(share, "cpu.prof"), dst); err != nil {
			return err
		}
		fmt.Println("statusvm: wrote", dst, "(go tool pprof -top", dst+")")
	}
	if !capture {
		return nil
	}
	dst := filepath.Join(rig.Root, "testdata", "bench", "eight-arrays")
	if err := os.RemoveAll(dst); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	if err := os.Rename(filepath.Join(share, "eight-arrays"), dst); err != nil {
		return err
	}
	fmt.Println("statusvm: wrote", dst)
	return nil
}

// pciSlots maps the PCI slot of each virtio disk ("10" for
// 0000:00:10.0) to its kernel name, from the class/block links.
func pciSlots() (map[string]string, error) {
	ents, err := os.ReadDir("/sys/class/block")
	if err != nil {
		return nil, err
	}
	m := map[string]string{}
	for _, e := range ents {
		t, err := os.Readlink(filepath.Join("/sys/class/block", e.Name()))
		if err != nil {
			continue
		}
		if _, rest, ok := strings.Cut(t, "/pci0000:00/0000:00:"); ok && len(rest) >= 2 {
			m[rest[:2]] = e.Name()
		}
	}
	return m, nil
}

// straceCount runs args under strace -f -c and returns strace's summary
// table.
func straceCount(args ...string) (string, error) {
	f := "/tmp/strace.out"
	cmd := exec.Command("strace", append([]string{"-f", "-c", "-o", f}, args...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("strace %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	b, err := os.ReadFile(f)
	return string(b), err
}

// sample is one call of a command.
type sample struct {
	wall, cpu time.Duration // cpu: user + system
	rss       int64         // peak RSS, KiB
	minflt    int64         // minor page faults
}

// measure runs a command once, through rusage (rusage/): run from here,
// a child's peak RSS would be at least this benchmark's own.
func measure(name string, args ...string) (sample, error) {
	out, err := exec.Command("rusage", append([]string{name}, args...)...).Output()
	if err != nil {
		return sample{}, fmt.Errorf("rusage %s: %v", name, err)
	}
	var wall, utime, stime int64
	var s sample
	var status int
	if _, err := fmt.Sscan(string(out), &wall, &s.rss, &utime, &stime, &s.minflt, &status); err != nil {
		return sample{}, fmt.Errorf("rusage %s: %q: %v", name, out, err)
	}
	// mdctl status exits 1 for a degraded array; none is degraded here,
	// so any failure is real.
	if status != 0 {
		return sample{}, fmt.Errorf("%s: exit status %d", name, status)
	}
	s.wall, s.cpu = time.Duration(wall), time.Duration(utime+stime)
	return s, nil
}

func runGuest(n int, out, old string, trace, profile, costs bool) error {
	// Eight RAID1 arrays over sixteen disks, in the metadata versions
	// mdadm offers, all clean.
	metas := []string{"1.2", "1.0", "1.1", "0.90", "1.2", "1.0", "1.2", "1.2"}
	for i := 0; i < arrays; i++ {
		a, b := fmt.Sprintf("/dev/vd%c", 'a'+2*i), fmt.Sprintf("/dev/vd%c", 'a'+2*i+1)
		args := []string{"--create", fmt.Sprintf("/dev/md%d", i), "--run", "--assume-clean",
			"--level=1", "--raid-devices=2", "--metadata=" + metas[i], a, b}
		if metas[i] != "0.90" {
			args = append(args, fmt.Sprintf("--name=a%d", i))
		}
		if i == 4 {
			args = append(args, "--bitmap=internal")
		}
		if o, err := guestrun.Sh("mdadm", args...); err != nil {
			return fmt.Errorf("%v: %s", err, o)
		}
	}
	if o, err := guestrun.Sh("mdctl", "status"); err != nil {
		return fmt.Errorf("%v: %s", err, o)
	} else {
		fmt.Print(o)
	}
	// Warm up once, then measure the commands in turn, round after round,
	// so that a change in background load hits all of them alike.
	type job struct {
		label   string
		args    []string
		samples []sample
	}
	jobs := []*job{
		{label: "mdadm --detail --scan --verbose", args: []string{"mdadm", "--detail", "--scan", "--verbose"}},
		{label: "mdctl status", args: []string{"mdctl", "status"}},
		{label: "mdctl status --json", args: []string{"mdctl", "status", "--json"}},
		{label: "mdctl status, GOMAXPROCS=1", args: []string{"env", "GOMAXPROCS=1", "mdctl", "status"}},
		{label: "mdadm --version (start-up only)", args: []string{"mdadm", "--version"}},
		{label: "mdctl --version (start-up only)", args: []string{"mdctl", "--version"}},
		{label: "floor: mdctl's dependencies", args: []string{"floor-deps"}},
		{label: "floor: Go hello world", args: []string{"floor-hello"}},
		{label: "floor: status's reads", args: []string{"floor-reads"}},
		{label: "floor: status's reads, openat", args: []string{"floor-reads", "-at"}},
		{label: "floor: text's reads, openat", args: []string{"floor-reads", "-at", "-min"}},
		{label: "floor: text's reads, openat, no superblock", args: []string{"floor-reads", "-at", "-min", "-nosb"}},
		{label: "floor: mdadm's way (ioctls, /proc/mdstat)", args: []string{"floor-reads", "-ioctl"}},
		{label: "floor: status's reads on every CPU", args: []string{"floor-reads", "-par"}},
		{label: "floor: text's reads, openat, every CPU", args: []string{"floor-reads", "-at", "-min", "-par"}},
		{label: "floor: mdadm's way on every CPU", args: []string{"floor-reads", "-ioctl", "-par"}},
	}
	if old != "" {
		jobs = slices.Insert(jobs, 2, &job{label: "mdctl status at " + old, args: []string{"mdctl-old", "status"}})
	}
	for _, j := range jobs {
		if _, err := measure(j.args[0], j.args[1:]...); err != nil {
			return err
		}
	}
	for i := 0; i < n; i++ {
		for _, j := range jobs {
			s, err := measure(j.args[0], j.args[1:]...)
			if err != nil {
				return err
			}
			j.samples = append(j.samples, s)
		}
	}
	uname, _ := guestrun.Sh("uname", "-r")
	ver, _ := guestrun.Sh("mdadm", "--version")
	fmt.Printf("RESULT kernel %s, %s", strings.TrimSpace(uname), ver)
	// The guest's clock source: the Go runtime reads the clock often, and
	// a guest that fell back from tsc (hpet, acpi_pm: an emulated device
	// under TCG) makes every read slow.
	cs, _ := os.ReadFile("/sys/devices/system/clocksource/clocksource0/current_clocksource")
	fmt.Printf("RESULT clock source %s\n", strings.TrimSpace(string(cs)))
	fmt.Printf("RESULT %d arrays, %d interleaved calls each, %d vCPU TCG guest; medians\n", arrays, n, runtime.NumCPU())
	var base time.Duration
	for i, j := range jobs {
		var wall, cpu []time.Duration
		var rss, flt []int64
		for _, s := range j.samples {
			wall, cpu = append(wall, s.wall), append(cpu, s.cpu)
			rss, flt = append(rss, s.rss), append(flt, s.minflt)
		}
		w := guestrun.Median(wall)
		if i == 0 {
			base = w
		}
		fmt.Printf("RESULT %-34s %9v wall, %9v CPU, peak RSS %5.1f MB (max %5.1f), %5d minor faults; wall ratio to mdadm --detail %.2f\n",
			j.label+":", w.Round(10*time.Microsecond), guestrun.Median(cpu).Round(10*time.Microsecond),
			float64(guestrun.Median(rss))/1024, float64(slices.Max(rss))/1024, guestrun.Median(flt), float64(w)/float64(base))
	}
	if trace {
		for _, args := range [][]string{
			{"mdctl", "--version"}, {"mdctl", "status"}, {"mdctl", "status", "md0"},
			{"mdadm", "--version"}, {"mdadm", "--detail", "--scan", "--verbose"},
		} {
			t, err := straceCount(args...)
			if err != nil {
				return err
			}
			for _, l := range strings.Split(strings.TrimSpace(t), "\n") {
				fmt.Printf("STRACE %s: %s\n", strings.Join(args, " "), l)
			}
		}
		slotOf, err := pciSlots()
		if err != nil {
			return err
		}
		for _, args := range [][]string{{"mdctl", "status"}, {"mdctl", "status", "--json"}, {"mdadm", "--detail", "--scan", "--verbose"}} {
			cmd := exec.Command("strace", append([]string{"-f", "-o", "/tmp/trace", "-e", "trace=" + traced}, args...)...)
			if o, err := cmd.CombinedOutput(); err != nil {
				return fmt.Errorf("strace %s: %v\n%s", strings.Join(args, " "), err, o)
			}
			f, err := os.Open("/tmp/trace")
			if err != nil {
				return err
			}
			rep, err := parseTrace(f, slotOf)
			f.Close()
			if err != nil {
				return err
			}
			rep.print(os.Stdout, strings.Join(args, " "))
		}
		env := append(os.Environ(), "GODEBUG=inittrace=1")
		cmd := exec.Command("mdctl", "--version")
		cmd.Env = env
		o, _ := cmd.CombinedOutput()
		for _, l := range strings.Split(strings.TrimSpace(string(o)), "\n") {
			fmt.Println("INIT", l)
		}
	}
	if costs {
		if err := callCosts(); err != nil {
			return err
		}
	}
	if profile {
		if err := profileDiscover(filepath.Join(out, "cpu.prof"), n); err != nil {
			return err
		}
		return nil
	}
	if out == "" {
		return nil
	}
	return captureSystem(filepath.Join(out, "eight-arrays"))
}

// callCosts times single system calls on md0 and its first member, 500
// of each: what a status report is made of.
func callCosts() error {
	buf := make([]byte, 4096)
	openReadClose := func(p string) func() error {
		return func() error {
			fd, err := unix.Open(p, unix.O_RDONLY|unix.O_CLOEXEC, 0)
			if err != nil {
				return err
			}
			_, err = unix.Read(fd, buf)
			unix.Close(fd)
			return err
		}
	}
	dir, err := unix.Open("/sys/devices/virtual/block/md0/md", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(dir)
	kept, err := unix.Open("/sys/block/md0/md/array_state", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(kept)
	md0, err := unix.Open("/dev/md0", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(md0)
	var info [18]int32 // mdu_array_info_t
	for _, c := range []struct {
		label string
		call  func() error
	}{
		{"getpid", func() error { unix.Getpid(); return nil }},
		{"open+read+close /sys/block/md0/md/array_state (through the block link)", openReadClose("/sys/block/md0/md/array_state")},
		{"open+read+close /sys/devices/virtual/block/md0/md/array_state", openReadClose("/sys/devices/virtual/block/md0/md/array_state")},
		{"openat(md dir)+read+close array_state", func() error {
			fd, err := unix.Openat(dir, "array_state", unix.O_RDONLY|unix.O_CLOEXEC, 0)
			if err != nil {
				return err
			}
			_, err = unix.Read(fd, buf)
			unix.Close(fd)
			return err
		}},
		{"pread of array_state on a kept descriptor", func() error { _, err := unix.Pread(kept, buf, 0); return err }},
		{"sysfs.ReadFile /sys/block/md0/md/array_state", func() error { _, err := sysfs.ReadFile("/sys/block/md0/md/array_state"); return err }},
		{"lstat /sys/devices/pci0000:00/uevent", func() error { var st unix.Stat_t; return unix.Lstat("/sys/devices/pci0000:00/uevent", &st) }},
		{"open of a missing attribute (ENOENT)", func() error {
			if _, err := unix.Open("/sys/block/vda/device/model", unix.O_RDONLY, 0); err == nil {
				return errors.New("device/model exists")
			}
			return nil
		}},
		{"ioctl GET_ARRAY_INFO on /dev/md0", func() error {
			_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(md0), 0x80480911, uintptr(unsafe.Pointer(&info[0])))
			if e != 0 {
				return e
			}
			return nil
		}},
		{"open+close /dev/md0", func() error {
			fd, err := unix.Open("/dev/md0", unix.O_RDONLY|unix.O_CLOEXEC, 0)
			if err != nil {
				return err
			}
			return unix.Close(fd)
		}},
	} {
		start := time.Now()
		for i := 0; i < 500; i++ {
			if err := c.call(); err != nil {
				return fmt.Errorf("%s: %w", c.label, err)
			}
		}
		fmt.Printf("COST %-72s %8v per call\n", c.label+":", (time.Since(start) / 500).Round(100*time.Nanosecond))
	}
	// The same open, read and close on two threads at once (md0's and
	// md1's array_state): whether the guest's second vCPU shortens a
	// report that reads arrays on two goroutines.
	start := time.Now()
	errs := make(chan error, 2)
	for _, a := range []string{"md0", "md1"} {
		call := openReadClose("/sys/block/" + a + "/md/array_state")
		go func() {
			runtime.LockOSThread()
			for i := 0; i < 500; i++ {
				if err := call(); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range 2 {
		if err := <-errs; err != nil {
			return err
		}
	}
	fmt.Printf("COST %-72s %8v per call\n", "open+read+close on two threads at once (wall time / calls):", (time.Since(start) / 1000).Round(100*time.Nanosecond))
	return nil
}

// profileDiscover calls md.Discover n times in this process under the
// CPU profiler and reports the wall time of each call.
func profileDiscover(file string, n int) error {
	m, err := md.Open(nil)
	if err != nil {
		return err
	}
	times, err := cpuprofile.Run(file, n, nil, func() error {
		_, err := m.Discover(context.Background())
		return err
	})
	if err != nil {
		return err
	}
	sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
	fmt.Printf("RESULT in-process Discover: min %v median %v max %v\n", times[0], times[len(times)/2], times[len(times)-1])
	return nil
}

// captureSystem writes one sysfs manifest for all arrays and the regions
// of every member, in the layout of a testdata/fixtures case.
func captureSystem(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	c := sysfstree.NewCapturer("/sys")
	members := map[string]bool{}
	for i := 0; i < arrays; i++ {
		name := fmt.Sprintf("md%d", i)
		if err := c.Array(name); err != nil {
			return err
		}
		ents, err := os.ReadDir(filepath.Join("/sys/block", name, "md"))
		if err != nil {
			return err
		}
		for _, e := range ents {
			if m, ok := strings.CutPrefix(e.Name(), "dev-"); ok {
				members[m] = true
			}
		}
	}
	f, err := os.Create(filepath.Join(dir, "sysfs.txt"))
	if err != nil {
		return err
	}
	if err := sysfstree.Write(f, c.Entries()); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	var names []string
	for m := range members {
		names = append(names, m)
	}
	sort.Strings(names)
	for _, m := range names {
		if err := fixture.CaptureRegions(filepath.Join(dir, m+".regions.gz"), "/dev/"+m); err != nil {
			return err
		}
	}
	detail, err := guestrun.Sh("mdadm", "--detail", "--scan", "--verbose")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "detail-scan.txt"), []byte(detail), 0o644)
}
