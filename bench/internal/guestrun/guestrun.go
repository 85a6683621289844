// Package guestrun holds what the benchmarks under bench/ do inside the
// VM rig's guest: run a program, reset md, take a median.
package guestrun

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"
)

// Sh runs name with args and returns its combined output; the error
// carries the command line and the output.
func Sh(name string, args ...string) (string, error) {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// Reset stops every array (mdadm --stop --scan) and forgets the names
// and the map (/dev/md, /run/mdadm), so that each assembly starts from
// the same state.
func Reset() error {
	if _, err := Sh("mdadm", "--stop", "--scan"); err != nil {
		return err
	}
	for _, p := range []string{"/dev/md", "/run/mdadm"} {
		if err := os.RemoveAll(p); err != nil {
			return err
		}
	}
	return nil
}

// Median returns the middle value of xs (the upper one of an even
// count); xs is not changed.
func Median[T int64 | time.Duration](xs []T) T {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}
