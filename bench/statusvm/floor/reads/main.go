// Command reads is the floor of a status report read from sysfs: it makes
// only the system calls that carry what `mdctl status` shows, with no
// parsing, no checks and no model, and prints one line per array. It
// opens, reads once and closes each attribute that mdctl reads, reads the
// links that name a member's device and its buses (by-path), and reads
// 4 KiB of each member with O_DIRECT, on one thread.
//
//	reads [-at] [-min] [-nosb]
//	reads -ioctl
//	reads ... -par
//
// -at opens each attribute relative to a descriptor of its directory
// (openat) instead of by its whole path; -min reads only what mdctl's
// text output prints: not layout, chunk_size, component_size and
// sync_speed of an idle array, nor a member's size; -nosb reads no
// superblocks.
//
// -ioctl is the floor of the other design, mdadm's: per array one open of
// /dev/mdN, GET_ARRAY_INFO and GET_DISK_INFO up to the disks it counts,
// and /proc/mdstat once for progress; sysfs (openat) only for what the
// ioctls lack: array_state, mismatch_cnt, last_sync_action, a member's
// state, errors and bad_blocks, its uevent and serial and the by-path
// links; and the O_DIRECT superblock reads.
//
// -par shares the arrays out among as many threads as there are CPUs, as
// mdctl's Discover does. bench/statusvm times
// it beside mdctl and mdadm (docs/performance.md §2).
package main

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

func main() {
	at, minimal, nosb, ioctl, par := false, false, false, false, false
	for _, a := range os.Args[1:] {
		switch a {
		case "-at":
			at = true
		case "-min":
			minimal = true
		case "-nosb":
			nosb = true
		case "-ioctl":
			ioctl, at = true, true
		case "-par":
			par = true
		default:
			fmt.Fprintln(os.Stderr, "usage: reads [-at] [-min] [-nosb] [-ioctl] [-par]")
			os.Exit(2)
		}
	}
	var out bytes.Buffer
	ents, err := os.ReadDir("/sys/block")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if ioctl {
		mdstat, err := os.ReadFile("/proc/mdstat")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Fprintf(&out, "mdstat %d bytes\n", len(mdstat))
	}
	var names []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "md") {
			names = append(names, e.Name())
		}
	}
	// One reader per thread; the arrays are shared out among
	// runtime.NumCPU() of them with -par, as mdctl's Discover does.
	workers := 1
	if par {
		workers = runtime.NumCPU()
	}
	outs := make([]bytes.Buffer, len(names))
	next := make(chan int)
	failed := make(chan int, workers)
	for range workers {
		go func() {
			runtime.LockOSThread()
			r := &reader{at: at, nosb: nosb, ioctl: ioctl, buf: make([]byte, 4096)}
			for i := range next {
				if ioctl {
					r.arrayIoctl(&outs[i], names[i])
				} else {
					r.array(&outs[i], names[i], minimal)
				}
			}
			failed <- r.failed
		}()
	}
	for i := range names {
		next <- i
	}
	close(next)
	bad := 0
	for range workers {
		bad += <-failed
	}
	for i := range outs {
		out.Write(outs[i].Bytes())
	}
	os.Stdout.Write(out.Bytes())
	if bad > 0 {
		os.Exit(1)
	}
}

type reader struct {
	at     bool
	nosb   bool
	ioctl  bool
	buf    []byte
	sector []byte // aligned for O_DIRECT
	failed int
}

// read opens name in dir (a path, and its descriptor when r.at), reads
// once and closes.
func (r *reader) read(dirfd int, dir, name string) string {
	var fd int
	var err error
	if r.at {
		fd, err = unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	} else {
		fd, err = unix.Open(dir+"/"+name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	}
	if err != nil {
		return ""
	}
	n, _ := unix.Read(fd, r.buf)
	unix.Close(fd)
	if n < 0 {
		n = 0
	}
	return strings.TrimSpace(string(r.buf[:n]))
}

func (r *reader) openDir(p string) int {
	if !r.at {
		return -1
	}
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		r.failed++
		return -1
	}
	return fd
}

func (r *reader) closeDir(fd int) {
	if fd >= 0 {
		unix.Close(fd)
	}
}

func (r *reader) array(out *bytes.Buffer, name string, minimal bool) {
	blk := "/sys/block/" + name
	real, err := os.Readlink(blk)
	if err != nil {
		r.failed++
		return
	}
	blk = "/sys/block/" + real // ../devices/virtual/block/mdN
	dir := blk + "/md"
	bfd, mfd := r.openDir(blk), r.openDir(dir)
	defer r.closeDir(bfd)
	defer r.closeDir(mfd)
	dev := r.read(bfd, blk, "dev")
	size := r.read(bfd, blk, "size")
	attrs := []string{"array_state", "level", "metadata_version", "raid_disks", "degraded",
		"sync_action", "sync_completed", "mismatch_cnt", "last_sync_action"}
	if !minimal {
		attrs = append(attrs, "layout", "chunk_size", "component_size", "sync_speed")
	}
	vals := map[string]string{}
	for _, a := range attrs {
		vals[a] = r.read(mfd, dir, a)
	}
	if minimal && vals["sync_action"] != "idle" {
		vals["sync_speed"] = r.read(mfd, dir, "sync_speed")
	}
	fmt.Fprintf(out, "%s %s %s %s %s %s", name, dev, size, vals["level"], vals["array_state"], vals["sync_action"])
	ents, err := os.ReadDir(dir)
	if err != nil {
		r.failed++
		return
	}
	for _, e := range ents {
		if m, ok := strings.CutPrefix(e.Name(), "dev-"); ok {
			r.member(out, dir, mfd, m, minimal)
		}
	}
	out.WriteString("\n")
}

func (r *reader) member(out *bytes.Buffer, mdDir string, mfd int, m string, minimal bool) {
	dir := mdDir + "/dev-" + m
	fd := r.openDir(dir)
	defer r.closeDir(fd)
	state := r.read(fd, dir, "state")
	slot := r.read(fd, dir, "slot")
	r.read(fd, dir, "errors")
	r.read(fd, dir, "bad_blocks")
	if _, err := os.Readlink(dir + "/block"); err != nil {
		r.failed++
	}
	// The device: its directory, uevent (number and node), size and
	// serial, and the subsystem links of the devices above it (by-path).
	real, err := os.Readlink("/sys/class/block/" + m)
	if err != nil {
		r.failed++
		return
	}
	ddir := "/sys/class/block/" + real // ../../devices/pci.../virtioN/block/vdX
	dfd := r.openDir(ddir)
	defer r.closeDir(dfd)
	r.read(dfd, ddir, "uevent")
	if !minimal {
		r.read(dfd, ddir, "size")
	}
	r.read(dfd, ddir, "serial")
	r.pathLinks(ddir)
	fmt.Fprintf(out, " %s[%s](%s)%s", m, slot, state, r.superblock("/dev/"+m))
}

// pathLinks reads the subsystem links of the devices above the device
// directory ddir (../../devices/pci.../virtioN/block/vdX), as a by-path
// name needs them.
func (r *reader) pathLinks(ddir string) {
	for p := ddir; strings.Count(p, "/") > 5; {
		p = p[:strings.LastIndexByte(p, '/')]
		if strings.HasSuffix(p, "/block") {
			continue
		}
		os.Readlink(p + "/subsystem")
	}
}

// superblock reads the first 4 KiB of the device with O_DIRECT, as one
// superblock read is, and reports its first byte.
func (r *reader) superblock(p string) string {
	if r.nosb {
		return ""
	}
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_DIRECT|unix.O_CLOEXEC, 0)
	if err != nil {
		r.failed++
		return "?"
	}
	defer unix.Close(fd)
	if r.sector == nil {
		b := make([]byte, 8192)
		off := 4096 - int(uintptr(unsafe.Pointer(&b[0]))%4096)
		r.sector = b[off : off+4096]
	}
	if _, err := unix.Pread(fd, r.sector, 0); err != nil {
		r.failed++
		return "?"
	}
	return fmt.Sprintf(" %02x", r.sector[0])
}

// md_u.h: GET_ARRAY_INFO is _IOR(MD_MAJOR, 0x11, mdu_array_info_t) and
// GET_DISK_INFO _IOR(MD_MAJOR, 0x12, mdu_disk_info_t) (x86).
const (
	getArrayInfo = 0x80480911
	getDiskInfo  = 0x80140912
	mdSBDisks    = 27 // MD_SB_DISKS: mdadm asks at least this many
)

// arrayIoctl is array for -ioctl.
func (r *reader) arrayIoctl(out *bytes.Buffer, name string) {
	fd, err := unix.Open("/dev/"+name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		r.failed++
		return
	}
	defer unix.Close(fd)
	var info [18]int32 // mdu_array_info_t
	if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), getArrayInfo, uintptr(unsafe.Pointer(&info[0]))); e != 0 {
		r.failed++
		return
	}
	dir := "/sys/block/" + name + "/md"
	mfd := r.openDir(dir)
	defer r.closeDir(mfd)
	fmt.Fprintf(out, "%s level %d raid_disks %d %s %s %s", name, info[4], info[7],
		r.read(mfd, dir, "array_state"), r.read(mfd, dir, "mismatch_cnt"), r.read(mfd, dir, "last_sync_action"))
	nr := int(info[6])
	for n, found := 0, 0; found < nr && n < max(nr, mdSBDisks); n++ {
		var d [5]int32 // mdu_disk_info_t: number, major, minor, raid_disk, state
		d[0] = int32(n)
		if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), getDiskInfo, uintptr(unsafe.Pointer(&d[0]))); e != 0 {
			r.failed++
			return
		}
		if d[1] == 0 && d[2] == 0 {
			continue
		}
		found++
		link, err := os.Readlink(fmt.Sprintf("/sys/dev/block/%d:%d", d[1], d[2]))
		if err != nil {
			r.failed++
			continue
		}
		m := link[strings.LastIndexByte(link, '/')+1:]
		r.read(mfd, dir, "dev-"+m+"/state")
		r.read(mfd, dir, "dev-"+m+"/errors")
		r.read(mfd, dir, "dev-"+m+"/bad_blocks")
		ddir := "/sys/dev/block/" + link
		dfd := r.openDir(ddir)
		r.read(dfd, ddir, "uevent")
		r.read(dfd, ddir, "serial")
		r.closeDir(dfd)
		r.pathLinks(ddir)
		fmt.Fprintf(out, " %s[%d](%x)%s", m, d[3], d[4], r.superblock("/dev/"+m))
	}
	out.WriteString("\n")
}
