// Command floor does only the kernel's part of assembling md arrays, for
// bench/assemblevm: per array, new_array, a device node, SET_ARRAY_INFO
// with the superblock version, ADD_NEW_DISK for each member and
// RUN_ARRAY. No superblock is read, nothing is checked, no partition is
// deleted and no link is made. Its time is the floor under any assembly
// tool in the guest: the kernel's work that both mdadm and mdctl must
// have done, plus the start-up of a small Go program.
//
//	floor [-times] [-parallel] mdNNN:MAJOR.MINOR:/dev/vda,/dev/vdb ...
//
// -times prints the wall time of each step summed over the arrays.
// -parallel assembles the arrays at the same time, one goroutine each:
// the kernel serialises the calls on one array, not those on different
// arrays.
//
// It exists for the benchmark only and must not be run on disks that
// matter: it trusts its arguments.
package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-mdraid/mdraid/ioctl"
	"golang.org/x/sys/unix"
)

// steps names the steps in order, for -times.
var steps = []string{"new_array", "mknod", "open", "SET_ARRAY_INFO", "ADD_NEW_DISK", "RUN_ARRAY", "close"}

func main() {
	args := os.Args[1:]
	times, parallel := false, false
	for len(args) > 0 && strings.HasPrefix(args[0], "-") {
		switch args[0] {
		case "-times":
			times = true
		case "-parallel":
			parallel = true
		default:
			fmt.Fprintln(os.Stderr, "floor: unknown flag", args[0])
			os.Exit(2)
		}
		args = args[1:]
	}
	var mu sync.Mutex
	spent := map[string]time.Duration{}
	var wg sync.WaitGroup
	failed := false
	for _, arg := range args {
		one := func() {
			s := map[string]time.Duration{}
			err := assemble(arg, s)
			mu.Lock()
			defer mu.Unlock()
			for k, v := range s {
				spent[k] += v
			}
			if err != nil {
				fmt.Fprintln(os.Stderr, "floor:", arg+":", err)
				failed = true
			}
		}
		if parallel {
			wg.Add(1)
			go func() { defer wg.Done(); one() }()
		} else {
			one()
		}
	}
	wg.Wait()
	if failed {
		os.Exit(1)
	}
	if times {
		for _, s := range steps {
			fmt.Printf("%s %v\n", s, spent[s].Round(100*time.Microsecond))
		}
	}
}

// assemble assembles one array and adds the time of each step to spent.
func assemble(arg string, spent map[string]time.Duration) (err error) {
	t := time.Now()
	step := func(name string) {
		now := time.Now()
		spent[name] += now.Sub(t)
		t = now
	}
	parts := strings.Split(arg, ":")
	if len(parts) != 3 {
		return fmt.Errorf("want mdNNN:MAJOR.MINOR:DEV,DEV")
	}
	name, version, devs := parts[0], parts[1], strings.Split(parts[2], ",")
	n, err := strconv.Atoi(strings.TrimPrefix(name, "md"))
	if err != nil {
		return err
	}
	majorText, minorText, _ := strings.Cut(version, ".")
	major, err1 := strconv.Atoi(majorText)
	minor, err2 := strconv.Atoi(minorText)
	if err1 != nil || err2 != nil {
		return fmt.Errorf("bad version %q", version)
	}
	t = time.Now()
	if err := os.WriteFile("/sys/module/md_mod/parameters/new_array", []byte(name), 0); err != nil {
		return err
	}
	step("new_array")
	node := "/dev/" + name
	if err := unix.Mknod(node, unix.S_IFBLK|0o600, int(unix.Mkdev(9, uint32(n)))); err != nil && err != unix.EEXIST {
		return fmt.Errorf("mknod %s: %w", node, err)
	}
	step("mknod")
	d, err := ioctl.Open(node)
	if err != nil {
		return err
	}
	step("open")
	defer func() {
		if cerr := d.Close(); err == nil {
			err = cerr
		}
		step("close")
	}()
	if err := d.SetArrayInfo(ioctl.ArrayInfo{MajorVersion: int32(major), MinorVersion: int32(minor)}); err != nil {
		return err
	}
	step("SET_ARRAY_INFO")
	for _, p := range devs {
		var st unix.Stat_t
		if err := unix.Stat(p, &st); err != nil {
			return fmt.Errorf("stat %s: %w", p, err)
		}
		if err := d.AddNewDisk(ioctl.DiskInfo{Major: int32(unix.Major(st.Rdev)), Minor: int32(unix.Minor(st.Rdev))}); err != nil {
			return fmt.Errorf("adding %s: %w", p, err)
		}
	}
	step("ADD_NEW_DISK")
	if err := d.RunArray(); err != nil {
		return err
	}
	step("RUN_ARRAY")
	return nil
}
