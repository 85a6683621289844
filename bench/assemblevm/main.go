// Command assemblevm compares `mdctl assemble --scan` with `mdadm
// --assemble --scan` on the same eight RAID1 arrays in the VM rig, in one
// run: each round stops every array and assembles them again with one of
// the two, in turn, whole process, and it reports the median wall time
// of each and their ratio.
//
//	go run ./bench/assemblevm [-n 15] [-old REV] [-strace] [-profile]
//
// -old REV also times `mdctl assemble --scan` built from the git
// revision REV (such as HEAD~1) in the same rounds.
//
// Each round also times bench/assemblevm/floor, which does only the
// kernel's part of the assembly (new_array, SET_ARRAY_INFO, ADD_NEW_DISK,
// RUN_ARRAY) with no reads and no checks: the floor under either tool.
//
// -profile then writes a CPU profile of n in-process md.Manager.Assemble
// calls (each after a reset) to bench/assemblevm.prof.
//
// -strace then runs one more assembly of each tool under strace -f -T
// (the host's strace, copied into the guest) and prints where its
// system-call time went: the total per call, ioctls by request.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/go-mdraid/mdraid/bench/internal/cpuprofile"
	"github.com/go-mdraid/mdraid/bench/internal/guestrun"
	"github.com/go-mdraid/mdraid/internal/vmtest"
	"github.com/go-mdraid/mdraid/md"
)

const arrays = 8

func main() {
	guest := flag.Bool("guest", false, "run inside the VM")
	n := flag.Int("n", 15, "rounds")
	trace := flag.Bool("strace", false, "also trace one assembly of each tool")
	old := flag.String("old", "", "also time mdctl assemble --scan built from this git revision")
	profile := flag.Bool("profile", false, "also write a CPU profile of in-process Assemble calls to bench/assemblevm.prof")
	out := flag.String("out", "", "in the guest: the directory the profile is written to")
	summary := flag.String("summarize", "", "print the summary of an strace -f -tt -T output file and exit")
	flag.Parse()
	if *summary != "" {
		b, err := os.ReadFile(*summary)
		if err != nil {
			fmt.Fprintln(os.Stderr, "assemblevm:", err)
			os.Exit(1)
		}
		summarize(*summary, b)
		return
	}
	var err error
	if *guest {
		err = runGuest(*n, *old, *trace, *out, *profile)
	} else {
		err = runHost(*n, *old, *trace, *profile)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "assemblevm:", err)
		os.Exit(1)
	}
}

func runHost(n int, old string, trace, profile bool) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	rig, err := vmtest.NewRig()
	if err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "assemblevm-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	self, mdctl := filepath.Join(work, "assemblevm"), filepath.Join(work, "mdctl")
	if err := vmtest.BuildProgram(ctx, rig.Root, "./bench/assemblevm", self); err != nil {
		return err
	}
	if err := vmtest.BuildProgram(ctx, rig.Root, "./cmd/mdctl", mdctl); err != nil {
		return err
	}
	floor := filepath.Join(work, "floor")
	if err := vmtest.BuildProgram(ctx, rig.Root, "./bench/assemblevm/floor", floor); err != nil {
		return err
	}
	disks, err := vmtest.ScratchDisks(work, 2*arrays, 32<<20)
	if err != nil {
		return err
	}
	files := map[string]string{"/vmtest/bin/assemblevm": self, "/usr/bin/mdctl": mdctl, "/vmtest/bin/floor": floor}
	args := []string{"/vmtest/bin/assemblevm", "-guest", "-n", fmt.Sprint(n)}
	if old != "" {
		exe := filepath.Join(work, "mdctl-old")
		if err := vmtest.BuildRevision(ctx, rig.Root, old, "./cmd/mdctl", filepath.Join(work, "old"), exe); err != nil {
			return err
		}
		files["/usr/bin/mdctl-old"] = exe
		args = append(args, "-old", old)
	}
	if trace {
		if err := vmtest.AddHostProgram(files, "strace"); err != nil {
			return err
		}
		args = append(args, "-strace")
	}
	var shares []vmtest.Share
	share := filepath.Join(work, "out")
	if profile {
		if err := os.Mkdir(share, 0o755); err != nil {
			return err
		}
		shares = append(shares, vmtest.Share{Tag: "out", HostDir: share, GuestDir: "/out"})
		args = append(args, "-profile", "-out", "/out")
	}
	_, err = rig.Run(ctx, vmtest.Config{
		Cmd:     args,
		Env:     []string{"MDADM_NO_UDEV=1"},
		Files:   files,
		Disks:   disks,
		Shares:  shares,
		CPUs:    2,
		Timeout: 15 * time.Minute,
		Console: func(line string) { fmt.Println("guest:", line) },
	})
	if err != nil || !profile {
		return err
	}
	dst := filepath.Join(rig.Root, "bench", "assemblevm.prof")
	if err := os.Rename(filepath.Join(share, "cpu.prof"), dst); err != nil {
		return err
	}
	fmt.Println("assemblevm: wrote", dst, "(go tool pprof -top", dst+")")
	return nil
}

// profileAssemble calls md.Manager.Assemble n times in this process
// under the CPU profiler, each after a guestrun.Reset, and reports the wall time
// of each call. The resets run in child processes, which the profiler
// does not see.
func profileAssemble(file string, n int) error {
	m, err := md.Open(nil)
	if err != nil {
		return err
	}
	times, err := cpuprofile.Run(file, n, guestrun.Reset, func() error {
		res, err := m.Assemble(context.Background(), md.AssembleRequest{})
		if err == nil && len(res.Added) != 2*arrays {
			err = fmt.Errorf("in-process Assemble added %d devices, want %d", len(res.Added), 2*arrays)
		}
		return err
	})
	if err != nil {
		return err
	}
	fmt.Printf("RESULT in-process Assemble: min %v median %v max %v\n", slices.Min(times), guestrun.Median(times), slices.Max(times))
	return nil
}

// timed runs one assembly and checks that it started every array. It
// returns the wall time and the process's user and system CPU time (the
// rest of the wall time is waiting: for the kernel's work on other
// threads, for the disks, for udev-less settling).
func timed(env []string, args ...string) (wall, user, sys time.Duration, err error) {
	cmd := exec.Command(args[0], args[1:]...)
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	start := time.Now()
	out, err := cmd.CombinedOutput()
	wall = time.Since(start)
	if err != nil {
		return 0, 0, 0, fmt.Errorf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		user = time.Duration(syscall.TimevalToNsec(ru.Utime))
		sys = time.Duration(syscall.TimevalToNsec(ru.Stime))
	}
	st, _ := os.ReadFile("/proc/mdstat")
	if got := strings.Count(string(st), " : active "); got != arrays {
		return 0, 0, 0, fmt.Errorf("%s started %d of %d arrays:\n%s\n%s", strings.Join(args, " "), got, arrays, out, st)
	}
	return wall, user, sys, nil
}

func runGuest(n int, old string, trace bool, out string, profile bool) error {
	metas := []string{"1.2", "1.0", "1.1", "0.90", "1.2", "1.0", "1.2", "1.2"}
	host, _ := os.Hostname()
	floorArgs := []string{"/vmtest/bin/floor"}
	for i := 0; i < arrays; i++ {
		a, b := fmt.Sprintf("/dev/vd%c", 'a'+2*i), fmt.Sprintf("/dev/vd%c", 'a'+2*i+1)
		floorArgs = append(floorArgs, fmt.Sprintf("md%d:%s:%s,%s", 100+i, metas[i], a, b))
		args := []string{"--create", fmt.Sprintf("/dev/md%d", i), "--run", "--assume-clean",
			"--level=1", "--raid-devices=2", "--metadata=" + metas[i], "--homehost=" + host, a, b}
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
	type job struct {
		label            string
		env              []string
		args             []string
		untraced         bool // not run again under strace
		times, usr, sys_ []time.Duration
	}
	jobs := []job{
		{label: "mdadm --assemble --scan", args: []string{"mdadm", "--assemble", "--scan"}},
		{label: "mdctl assemble --scan", args: []string{"mdctl", "assemble", "--scan"}},
		// One P: a goroutine started for a read runs on the thread that
		// waits for it, instead of waking a thread on the other vCPU.
		{label: "mdctl, GOMAXPROCS=1", env: []string{"GOMAXPROCS=1"}, args: []string{"mdctl", "assemble", "--scan"}},
		// The kernel's work alone, in a small Go program.
		{label: "floor (kernel work only)", args: floorArgs, untraced: true},
		// The same, with the arrays assembled at the same time.
		{label: "floor, arrays in parallel", args: append([]string{floorArgs[0], "-parallel"}, floorArgs[1:]...), untraced: true},
	}
	if old != "" {
		jobs = append(jobs, job{label: "mdctl at " + old, args: []string{"mdctl-old", "assemble", "--scan"}})
	}
	for i := -1; i < n; i++ { // round -1 warms up
		for j := range jobs {
			if err := guestrun.Reset(); err != nil {
				return err
			}
			d, u, sy, err := timed(jobs[j].env, jobs[j].args...)
			if err != nil {
				return err
			}
			if i >= 0 {
				jobs[j].times = append(jobs[j].times, d)
				jobs[j].usr = append(jobs[j].usr, u)
				jobs[j].sys_ = append(jobs[j].sys_, sy)
			}
		}
	}
	uname, _ := guestrun.Sh("uname", "-r")
	ver, _ := guestrun.Sh("mdadm", "--version")
	fmt.Printf("RESULT kernel %s, %s", strings.TrimSpace(uname), ver)
	fmt.Printf("RESULT %d RAID1 arrays, %d interleaved rounds, 2 vCPU TCG guest, whole process\n", arrays, n)
	base := guestrun.Median(jobs[0].times)
	for _, j := range jobs {
		m := guestrun.Median(j.times)
		fmt.Printf("RESULT %-26s median %9v (user CPU %v, system CPU %v), ratio to mdadm %.2f\n", j.label+":", m.Round(100*time.Microsecond),
			guestrun.Median(j.usr).Round(100*time.Microsecond), guestrun.Median(j.sys_).Round(100*time.Microsecond), float64(m)/float64(base))
	}
	// Where the floor's time goes, step by step.
	if err := guestrun.Reset(); err != nil {
		return err
	}
	steps, err := guestrun.Sh(floorArgs[0], append([]string{"-times"}, floorArgs[1:]...)...)
	if err != nil {
		return err
	}
	for _, l := range strings.Split(strings.TrimSpace(steps), "\n") {
		fmt.Println("RESULT floor step", l)
	}
	if profile {
		if err := profileAssemble(filepath.Join(out, "cpu.prof"), n); err != nil {
			return err
		}
	}
	if trace {
		for _, j := range jobs {
			if j.env != nil || j.untraced {
				continue // the same program as another job, or the floor
			}
			if err := guestrun.Reset(); err != nil {
				return err
			}
			if err := traced(j.label, j.args); err != nil {
				return err
			}
		}
	}
	return nil
}

// traced runs one assembly under strace -f -T and prints the system-call
// time by call (ioctls by request), largest first.
func traced(label string, args []string) error {
	f := "/tmp/assemble.trace"
	start := time.Now()
	if o, err := guestrun.Sh("strace", append([]string{"-f", "-tt", "-T", "-o", f}, args...)...); err != nil {
		return fmt.Errorf("%v: %s", err, o)
	}
	wall := time.Since(start)
	b, err := os.ReadFile(f)
	if err != nil {
		return err
	}
	first, _, _ := strings.Cut(string(b), "\n")
	fmt.Printf("TRACE %s: wall %v under strace; first line %q\n", label, wall.Round(time.Millisecond), first)
	summarize(label, b)
	return nil
}

// pathClass names a path with its digits replaced by N, so that the
// paths of different devices fall together.
func pathClass(p string) string {
	b := []byte(p)
	out := make([]byte, 0, len(b))
	for i, c := range b {
		if c >= '0' && c <= '9' {
			if i > 0 && b[i-1] >= '0' && b[i-1] <= '9' {
				continue
			}
			c = 'N'
		}
		out = append(out, c)
	}
	return string(out)
}

// summarize prints where the system-call time of an strace -f -tt -T
// output went.
func summarize(label string, b []byte) {
	type agg struct {
		n     int
		total time.Duration
	}
	by := map[string]*agg{}
	var sum time.Duration
	pending := map[string]string{} // PID -> the call of its "<unfinished ...>" line
	paths := map[string]int{}      // "call path class" -> calls
	var first, last time.Time
	var runs []time.Time // when each RUN_ARRAY returned
	for _, line := range strings.Split(string(b), "\n") {
		// "PID HH:MM:SS.micros name(args) = ret <0.000123>", or a call
		// split in two by another thread: "... <unfinished ...>" and
		// "PID HH:MM:SS.micros <... name resumed>...".
		pid, rest, ok := strings.Cut(strings.TrimSpace(line), " ")
		if !ok {
			continue
		}
		stamp, rest, ok := strings.Cut(strings.TrimLeft(rest, " "), " ")
		if !ok {
			continue
		}
		at, err := time.Parse("15:04:05.000000", stamp)
		if err != nil {
			continue
		}
		if first.IsZero() {
			first = at
		}
		last = at
		name := ""
		if r, ok := strings.CutPrefix(rest, "<... "); ok {
			name, _, _ = strings.Cut(r, " resumed>")
			if p, ok := pending[pid]; ok {
				name = p
			}
			delete(pending, pid)
		} else if paren := strings.Index(rest, "("); paren > 0 {
			unfinished := strings.HasSuffix(rest, "<unfinished ...>")
			rest = strings.TrimSuffix(rest, " <unfinished ...>")
			name = rest[:paren]
			if name == "ioctl" {
				if a := strings.Split(rest[paren+1:], ","); len(a) > 1 {
					name += " " + strings.TrimSpace(strings.TrimSuffix(a[1], ")"))
				}
			}
			if q := strings.Index(rest, "\""); q >= 0 && (name == "newfstatat" || name == "openat" || name == "readlinkat" || name == "readlink") {
				if e := strings.Index(rest[q+1:], "\""); e >= 0 {
					paths[name+" "+pathClass(rest[q+1:q+1+e])]++
				}
			}
			if unfinished {
				pending[pid] = name
				continue
			}
		}
		open, closeT := strings.LastIndex(rest, "<"), strings.LastIndex(rest, ">")
		if name == "" || open < 0 || closeT < open {
			continue
		}
		secs, err := time.ParseDuration(rest[open+1:closeT] + "s")
		if err != nil {
			continue
		}
		if name == "ioctl RUN_ARRAY" {
			runs = append(runs, at)
		}
		if by[name] == nil {
			by[name] = &agg{}
		}
		by[name].n++
		by[name].total += secs
		sum += secs
	}
	if len(runs) > 0 {
		var gaps []string
		prev := first
		for _, r := range runs {
			gaps = append(gaps, r.Sub(prev).Round(time.Millisecond).String())
			prev = r
		}
		fmt.Printf("TRACE %s: from the first call to each RUN_ARRAY's return, and on: %s, then %v to the last call\n",
			label, strings.Join(gaps, " "), last.Sub(prev).Round(time.Millisecond))
	}
	classes := make([]string, 0, len(paths))
	for k := range paths {
		classes = append(classes, k)
	}
	sort.Slice(classes, func(i, j int) bool { return paths[classes[i]] > paths[classes[j]] })
	for i, k := range classes {
		if i == 12 {
			break
		}
		fmt.Printf("TRACE %s: paths: %5d %s\n", label, paths[k], k)
	}
	names := make([]string, 0, len(by))
	for k := range by {
		names = append(names, k)
	}
	sort.Slice(names, func(i, j int) bool { return by[names[i]].total > by[names[j]].total })
	fmt.Printf("TRACE %s: %d calls, %v in system calls\n", label, len(by), sum.Round(time.Millisecond))
	for i, k := range names {
		if i == 15 {
			break
		}
		fmt.Printf("TRACE %s: %-40s %5d calls %10v\n", label, k, by[k].n, by[k].total.Round(10*time.Microsecond))
	}
}
