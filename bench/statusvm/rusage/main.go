// Command rusage runs one command and prints its wall time and its own
// resource usage, for bench/statusvm.
//
//	rusage COMMAND [ARG...]
//
// It prints one line, "WALL_NS MAXRSS_KB UTIME_NS STIME_NS MINFLT
// STATUS", and the command's output goes to /dev/null. It exists
// because Linux records the peak RSS of the image a process replaces at
// exec (fs/exec.c, exec_mmap: the old mm's high-water mark goes into the
// process's maxrss), and a Go program starts its children with
// CLONE_VM: run straight from the benchmark, every child's peak RSS is
// at least the benchmark's own. From this small program it is at least
// this program's (the floor: `rusage floor-hello` shows it).
package main

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: rusage COMMAND [ARG...]")
		os.Exit(2)
	}
	path, err := exec.LookPath(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "rusage:", err)
		os.Exit(2)
	}
	null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		fmt.Fprintln(os.Stderr, "rusage:", err)
		os.Exit(2)
	}
	fd := null.Fd()
	start := time.Now()
	pid, err := syscall.ForkExec(path, os.Args[1:], &syscall.ProcAttr{Env: os.Environ(), Files: []uintptr{fd, fd, fd}})
	if err != nil {
		fmt.Fprintln(os.Stderr, "rusage:", err)
		os.Exit(2)
	}
	var ws syscall.WaitStatus
	var ru syscall.Rusage
	for {
		_, err = syscall.Wait4(pid, &ws, 0, &ru)
		if err != syscall.EINTR {
			break
		}
	}
	wall := time.Since(start)
	if err != nil {
		fmt.Fprintln(os.Stderr, "rusage: wait4:", err)
		os.Exit(2)
	}
	fmt.Printf("%d %d %d %d %d %d\n", wall.Nanoseconds(), ru.Maxrss,
		syscall.TimevalToNsec(ru.Utime), syscall.TimevalToNsec(ru.Stime), ru.Minflt, ws.ExitStatus())
}
