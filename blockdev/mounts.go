package blockdev

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sort"
	"strings"

	"github.com/go-mdraid/mdraid/sysfs"
)

// DefaultMountInfo is the kernel's mount table of the calling process.
const DefaultMountInfo = "/proc/self/mountinfo"

// Mounts returns the mount points, sorted, of the mount table at
// mountInfo (a /proc/PID/mountinfo file, normally [DefaultMountInfo])
// whose device is one of devs. A missing file gives no mounts and no
// error (a system without /proc, or a test root without one); any other
// read error is returned, never taken for "not mounted".
//
// Mount points are returned as the kernel writes them, with space, tab,
// newline and backslash as octal escapes (\040); other bytes are raw,
// so a caller escapes them before they reach a terminal.
func Mounts(mountInfo string, devs []sysfs.DevNum) ([]string, error) {
	f, err := os.Open(mountInfo)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("blockdev: reading mounts: %w", err)
	}
	defer f.Close()
	out, err := ParseMounts(f, devs)
	if err != nil {
		return nil, fmt.Errorf("blockdev: reading mounts: %w", err)
	}
	return out, nil
}

// ParseMounts is [Mounts] on the contents of a mountinfo file: the mount
// point (field 5) of every line whose major:minor (field 3) is one of
// devs, sorted. A line longer than 1 MiB is an error
// (bufio.ErrTooLong); short lines are skipped.
func ParseMounts(r io.Reader, devs []sysfs.DevNum) ([]string, error) {
	want := map[string]bool{}
	for _, d := range devs {
		want[d.String()] = true
	}
	var out []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		// mount ID, parent ID, major:minor, root, mount point, ...
		fields := strings.Fields(sc.Text())
		if len(fields) >= 5 && want[fields[2]] {
			out = append(out, fields[4])
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	sort.Strings(out)
	return out, nil
}
