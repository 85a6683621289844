// Command assemblevm compares `mdctl assemble --scan` with `mdadm
// --assemble --scan` on the same eight RAID1 arrays in the VM rig, in one
// run: each round stops every array and assembles them again with one of
// the two, in turn, whole process, and it reports the median wall time
// of each and their ratio.
//
//	go run ./bench/assemblevm [-n 15]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/go-mdraid/mdraid/internal/vmtest"
)

const arrays = 8

func main() {
	guest := flag.Bool("guest", false, "run inside the VM")
	n := flag.Int("n", 15, "rounds")
	flag.Parse()
	var err error
	if *guest {
		err = runGuest(*n)
	} else {
		err = runHost(*n)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "assemblevm:", err)
		os.Exit(1)
	}
}

func runHost(n int) error {
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
	disks, err := vmtest.ScratchDisks(work, 2*arrays, 32<<20)
	if err != nil {
		return err
	}
	_, err = rig.Run(ctx, vmtest.Config{
		Cmd:     []string{"/vmtest/bin/assemblevm", "-guest", "-n", fmt.Sprint(n)},
		Env:     []string{"MDADM_NO_UDEV=1"},
		Files:   map[string]string{"/vmtest/bin/assemblevm": self, "/usr/bin/mdctl": mdctl},
		Disks:   disks,
		CPUs:    2,
		Timeout: 15 * time.Minute,
		Console: func(line string) { fmt.Println("guest:", line) },
	})
	return err
}

func sh(name string, args ...string) (string, error) {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// reset stops every array and forgets names and the map, so that each
// assembly starts from the same state.
func reset() error {
	if _, err := sh("mdadm", "--stop", "--scan"); err != nil {
		return err
	}
	for _, p := range []string{"/dev/md", "/run/mdadm"} {
		if err := os.RemoveAll(p); err != nil {
			return err
		}
	}
	return nil
}

// timed runs one assembly and checks that it started every array. It
// returns the wall time and the process's user and system CPU time (the
// rest of the wall time is waiting: for the kernel's work on other
// threads, for the disks, for udev-less settling).
func timed(args ...string) (wall, user, sys time.Duration, err error) {
	cmd := exec.Command(args[0], args[1:]...)
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

func median(d []time.Duration) time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

func runGuest(n int) error {
	metas := []string{"1.2", "1.0", "1.1", "0.90", "1.2", "1.0", "1.2", "1.2"}
	host, _ := os.Hostname()
	for i := 0; i < arrays; i++ {
		a, b := fmt.Sprintf("/dev/vd%c", 'a'+2*i), fmt.Sprintf("/dev/vd%c", 'a'+2*i+1)
		args := []string{"--create", fmt.Sprintf("/dev/md%d", i), "--run", "--assume-clean",
			"--level=1", "--raid-devices=2", "--metadata=" + metas[i], "--homehost=" + host, a, b}
		if metas[i] != "0.90" {
			args = append(args, fmt.Sprintf("--name=a%d", i))
		}
		if i == 4 {
			args = append(args, "--bitmap=internal")
		}
		if o, err := sh("mdadm", args...); err != nil {
			return fmt.Errorf("%v: %s", err, o)
		}
	}
	jobs := []struct {
		label            string
		args             []string
		times, usr, sys_ []time.Duration
	}{
		{label: "mdadm --assemble --scan", args: []string{"mdadm", "--assemble", "--scan"}},
		{label: "mdctl assemble --scan", args: []string{"mdctl", "assemble", "--scan"}},
	}
	for i := -1; i < n; i++ { // round -1 warms up
		for j := range jobs {
			if err := reset(); err != nil {
				return err
			}
			d, u, sy, err := timed(jobs[j].args...)
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
	uname, _ := sh("uname", "-r")
	ver, _ := sh("mdadm", "--version")
	fmt.Printf("RESULT kernel %s, %s", strings.TrimSpace(uname), ver)
	fmt.Printf("RESULT %d RAID1 arrays, %d interleaved rounds, 2 vCPU TCG guest, whole process\n", arrays, n)
	base := median(jobs[0].times)
	for _, j := range jobs {
		m := median(j.times)
		fmt.Printf("RESULT %-26s median %9v (user CPU %v, system CPU %v), ratio to mdadm %.2f\n", j.label+":", m.Round(100*time.Microsecond),
			median(j.usr).Round(100*time.Microsecond), median(j.sys_).Round(100*time.Microsecond), float64(m)/float64(base))
	}
	return nil
}
