package main

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// The system-call benchmark: strace -f records every file system call of
// one command, and each call is charged to what it was made for, by the
// path it names (or the path of the descriptor it uses):
//
//   - an array: /sys/block/mdN/... or /sys/devices/virtual/block/mdN/...
//     other than its members' dev-* directories, and /dev/mdN;
//   - a member: an array's dev-* directory, anything else under /sys
//     (the member's block device and the devices above it, which the
//     by-path walk visits), and /dev/vdX;
//   - the process: everything else (the binary, /proc, the listing of
//     /sys/block, mdadm's /dev scan is also here: it names no member).
//
// The minimum it is compared with is the one of the issue: one read per
// attribute actually used and one O_DIRECT read per member superblock;
// the files a command read are counted from the same trace.

// traced lists the calls followed.
const traced = "openat,read,pread64,close,newfstatat,readlinkat,getdents64,ioctl,lseek,fstat,statx"

// callRE matches a complete strace -f line: pid, call, arguments, result.
var callRE = regexp.MustCompile(`^(\d+)\s+(\w+)\((.*)\)\s+=\s+(-?\d+|\?)`)

// callCount is what one owner (an array, a member, the process) cost.
type callCount struct {
	calls map[string]int // system call -> count
	files map[string]bool
	reads int // read, pread64 and readlinkat calls that returned data
}

func (c *callCount) add(call string) {
	if c.calls == nil {
		c.calls = map[string]int{}
	}
	c.calls[call]++
}

func (c *callCount) total() int {
	n := 0
	for _, v := range c.calls {
		n += v
	}
	return n
}

// syscallReport is the trace of one command, charged to owners.
type syscallReport struct {
	arrays  map[string]*callCount // "md0" -> ...
	members map[string]*callCount // "vda" -> ...
	process callCount
}

var (
	arrayPathRE  = regexp.MustCompile(`^/sys/(?:block|devices/virtual/block)/(md[0-9]+)(/.*)?$`)
	memberDirRE  = regexp.MustCompile(`/md/dev-([^/]+)`)
	memberDevRE  = regexp.MustCompile(`^/dev/(vd[a-z]+)$`)
	sysMemberRE  = regexp.MustCompile(`/block/(vd[a-z]+)(/|$)`)
	pciFunctionR = regexp.MustCompile(`^/sys/devices/pci0000:00/0000:00:([0-9a-f]{2})\.0(/|$)`)
)

// owner returns the owner of path: "array", "member" or "" (the
// process), and its name. slotOf maps a PCI slot of the by-path walk to
// the member disk behind it.
func owner(path string, slotOf map[string]string) (kind, name string) {
	if m := memberDirRE.FindStringSubmatch(path); m != nil {
		return "member", m[1]
	}
	if m := arrayPathRE.FindStringSubmatch(path); m != nil {
		return "array", m[1]
	}
	if m := memberDevRE.FindStringSubmatch(path); m != nil {
		return "member", m[1]
	}
	if strings.HasPrefix(path, "/dev/md") {
		return "array", strings.TrimPrefix(path, "/dev/")
	}
	if m := sysMemberRE.FindStringSubmatch(path); m != nil {
		return "member", m[1]
	}
	if m := pciFunctionR.FindStringSubmatch(path); m != nil {
		if d, ok := slotOf[m[1]]; ok {
			return "member", d
		}
	}
	if path == "/sys/devices/pci0000:00" || strings.HasPrefix(path, "/sys/devices/pci0000:00/") || strings.HasPrefix(path, "/sys/class/block/") {
		return "member", "(shared)"
	}
	return "", ""
}

// firstPath returns the first quoted argument of a call.
func firstPath(args string) (string, bool) {
	i := strings.IndexByte(args, '"')
	if i < 0 {
		return "", false
	}
	j := strings.IndexByte(args[i+1:], '"')
	if j < 0 {
		return "", false
	}
	return args[i+1 : i+1+j], true
}

// parseTrace charges the calls of an strace -f output (with unfinished
// calls joined) to their owners.
func parseTrace(r io.Reader, slotOf map[string]string) (*syscallReport, error) {
	rep := &syscallReport{arrays: map[string]*callCount{}, members: map[string]*callCount{}}
	fdPath := map[int]string{}
	pending := map[string]string{} // pid -> the start of an unfinished call
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if i := strings.Index(line, " <unfinished ...>"); i >= 0 {
			pid, _, _ := strings.Cut(line, " ")
			pending[pid] = line[:i]
			continue
		}
		if i := strings.Index(line, "<... "); i >= 0 {
			pid, _, _ := strings.Cut(line, " ")
			j := strings.Index(line, " resumed>")
			if j < 0 || pending[pid] == "" {
				continue
			}
			line = pending[pid] + line[j+len(" resumed>"):]
			delete(pending, pid)
		}
		m := callRE.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		call, args, ret := m[2], m[3], m[4]
		var path string
		fd := -1
		switch call {
		case "openat", "newfstatat", "readlinkat", "statx":
			path, _ = firstPath(args)
		default:
			if f, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(args, ",", 2)[0])); err == nil {
				fd = f
				path = fdPath[f]
			}
		}
		kind, name := owner(path, slotOf)
		c := &rep.process
		switch kind {
		case "array":
			if rep.arrays[name] == nil {
				rep.arrays[name] = &callCount{}
			}
			c = rep.arrays[name]
		case "member":
			if rep.members[name] == nil {
				rep.members[name] = &callCount{}
			}
			c = rep.members[name]
		}
		c.add(call)
		n, _ := strconv.Atoi(ret)
		switch call {
		case "openat":
			if n >= 0 {
				fdPath[n] = path
			}
		case "close":
			delete(fdPath, fd)
		case "read", "pread64", "readlinkat":
			if n > 0 {
				c.reads++
				if c.files == nil {
					c.files = map[string]bool{}
				}
				c.files[path] = true
			}
		}
	}
	return rep, sc.Err()
}

// summary sums the counts of a set of owners.
func summary(cs map[string]*callCount, skip string) (owners int, sum callCount) {
	for name, c := range cs {
		if name == skip {
			continue
		}
		owners++
		for k, v := range c.calls {
			for i := 0; i < v; i++ {
				sum.add(k)
			}
		}
		sum.reads += c.reads
		if sum.files == nil {
			sum.files = map[string]bool{}
		}
		for f := range c.files {
			sum.files[f] = true
		}
	}
	return owners, sum
}

// print writes the per-array and per-member averages of rep.
func (rep *syscallReport) print(w io.Writer, label string) {
	line := func(what string, owners int, c callCount) {
		if owners == 0 {
			return
		}
		var calls []string
		for k := range c.calls {
			calls = append(calls, k)
		}
		sort.Slice(calls, func(i, j int) bool { return c.calls[calls[i]] > c.calls[calls[j]] })
		var parts []string
		for _, k := range calls {
			parts = append(parts, fmt.Sprintf("%s %.1f", k, float64(c.calls[k])/float64(owners)))
		}
		fmt.Fprintf(w, "SYSCALLS %s: per %s (%d): %.1f calls, %.1f reads of %.1f files [%s]\n", label, what, owners,
			float64(c.total())/float64(owners), float64(c.reads)/float64(owners), float64(len(c.files))/float64(owners), strings.Join(parts, ", "))
	}
	n, sum := summary(rep.arrays, "")
	line("array", n, sum)
	n, sum = summary(rep.members, "(shared)")
	line("member", n, sum)
	if sh := rep.members["(shared)"]; sh != nil {
		fmt.Fprintf(w, "SYSCALLS %s: shared by the members (PCI root, class/block): %d calls\n", label, sh.total())
	}
	fmt.Fprintf(w, "SYSCALLS %s: the process (start-up, listing): %d calls\n", label, rep.process.total())
}
