package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/alecthomas/kong"
	"golang.org/x/sys/unix"

	"github.com/go-mdraid/mdraid/blockdev"
	"github.com/go-mdraid/mdraid/cmd/mdctl/internal/examine"
	"github.com/go-mdraid/mdraid/sysfs"
)

// ExamineCmd is `mdctl examine`.
type ExamineCmd struct {
	Devices []string `arg:"" name:"device" help:"Member block devices or image files: a kernel name (sdb) is /dev/sdb; a file in the current directory needs ./ (./disk.img)."`
	JSON    bool     `name:"json" xor:"format" help:"Print a JSON array, one object per device (schema in EXAMINE-JSON.md)."`
	Export  bool     `name:"export" xor:"format" help:"Print the KEY=VALUE lines of mdadm --examine --export (MD_LEVEL, MD_DEVICES, MD_NAME, MD_ARRAY_SIZE, MD_UUID, MD_UPDATE_TIME, MD_DEV_UUID, MD_EVENTS), one block per device."`
}

// exitError is an error with an exit code (for examine, an
// examine.Status).
type exitError struct {
	code int
	msg  string
}

// Error returns the message kong prints.
func (e *exitError) Error() string { return e.msg }

// ExitCode implements kong.ExitCoder.
func (e *exitError) ExitCode() int { return e.code }

// Run examines every device, prints what it found, and fails with the
// worst status: 1 damaged superblock, 2 no superblock, 3 unreadable.
//
// Devices are examined by up to examineWorkers goroutines at once (see
// inspectOrdered); what is printed, and in which order, is what one
// device after the other prints: each device's text on stdout, then its
// diagnostics on stderr, in argument order.
//
// Times are printed in zone, the local time zone (main binds it).
func (c *ExamineCmd) Run(k *kong.Context, g *Globals, zone *time.Location) error {
	node := devNodes(g.Sysfs, g.Dev)
	text := !c.JSON && !c.Export
	n := len(c.Devices)
	reports := make([]*examine.Report, n)
	// Rendering is per device and done by the workers too: text and
	// diagnostics (text mode) or the JSON object (--json).
	// In text mode, rendered[i] holds device i's text and then its
	// diagnostics, from textEnd[i] on. Printed buffers go back to spare
	// for the workers to reuse.
	var rendered []*bytes.Buffer
	var textEnd []int
	var objs [][]byte
	var jsonErrs []error
	workers := examineWorkers(n)
	spare := make(chan *bytes.Buffer, 2*workers)
	switch {
	case text:
		rendered, textEnd = make([]*bytes.Buffer, n), make([]int, n)
	case c.JSON:
		objs, jsonErrs = make([][]byte, n), make([]error, n)
	}
	stdout := bufio.NewWriterSize(k.Stdout, 64<<10)
	// On one stream (2>&1, a terminal), diagnostics go through stdout's
	// buffer: the same bytes in the same order, without two writes per
	// device that has some.
	oneStream := sameStream(k.Stdout, k.Stderr)
	worst := examine.OK
	failed := 0
	printed := false
	var jsonErr error
	inspectors := make([]examine.Inspector, workers)
	inspectOrdered(n, workers, func(w, i int) {
		rep := inspectors[w].InspectPath(blockdev.ArgPath(g.Dev, c.Devices[i]))
		reports[i] = rep
		switch {
		case text:
			var b *bytes.Buffer
			select {
			case b = <-spare:
				b.Reset()
			default:
				b = bytes.NewBuffer(make([]byte, 0, 4<<10))
			}
			writeText(b, rep, zone, node)
			textEnd[i] = b.Len()
			writeDiagnostics(b, rep)
			rendered[i] = b
		case c.JSON:
			// An element of the array encoding/json's Encoder with
			// SetIndent("", "  ") would write: its lines after the
			// first indented by one level.
			objs[i], jsonErrs[i] = json.MarshalIndent(toJSON(rep), "  ", "  ")
		}
	}, func(i int) {
		rep := reports[i]
		if rep.Status > worst {
			worst = rep.Status
		}
		if rep.Status != examine.OK {
			failed++
		}
		switch {
		case text:
			b, end := rendered[i], textEnd[i]
			if rep.Superblock() != nil {
				if printed {
					stdout.WriteByte('\n')
				}
				stdout.Write(b.Bytes()[:end])
				printed = true
			}
			switch {
			case b.Len() == end:
			case oneStream:
				stdout.Write(b.Bytes()[end:])
			default:
				// Stdout first, so that when both go to one file the
				// lines come out as one device after the other prints
				// them.
				stdout.Flush()
				k.Stderr.Write(b.Bytes()[end:])
			}
			rendered[i] = nil
			select {
			case spare <- b:
			default:
			}
			if i > 0 {
				// Only the first report is used after this (for one
				// device); the rest is garbage to collect now.
				reports[i] = &examine.Report{Status: rep.Status}
			}
		case c.JSON:
			if jsonErr == nil {
				jsonErr = jsonErrs[i]
			}
		}
	})
	// Write errors on stdout are not reported in text mode, as before.
	stdout.Flush()
	if c.Export {
		if err := exportExamine(k.Stdout, k.Stderr, reports); err != nil {
			return err
		}
	}
	if c.JSON {
		if jsonErr != nil {
			return jsonErr
		}
		if err := writeJSONArray(k.Stdout, objs); err != nil {
			return err
		}
	}
	if worst == examine.OK {
		return nil
	}
	if !c.JSON && n == 1 {
		// writeDiagnostics has said what is wrong, in one line or more:
		// only the exit status is left to give.
		return &quietExit{code: int(worst)}
	}
	if n == 1 {
		return &exitError{int(worst), fmt.Sprintf("%s: %v", reports[0].Device, statusMessage(reports[0]))}
	}
	return &exitError{int(worst), fmt.Sprintf("%d of %d devices have problems (worst: %v)", failed, n, worst)}
}

// writeJSONArray writes the JSON array of objs, each from
// json.MarshalIndent(v, "  ", "  "), byte for byte as an
// encoding/json Encoder with SetIndent("", "  ") writes the slice of
// their values, in one write.
func writeJSONArray(w io.Writer, objs [][]byte) error {
	if len(objs) == 0 {
		_, err := io.WriteString(w, "[]\n")
		return err
	}
	size := 4
	for _, o := range objs {
		size += len(o) + 4
	}
	b := make([]byte, 0, size)
	b = append(b, "[\n  "...)
	for i, o := range objs {
		if i > 0 {
			b = append(b, ",\n  "...)
		}
		b = append(b, o...)
	}
	b = append(b, "\n]\n"...)
	_, err := w.Write(b)
	return err
}

// sameStream reports whether writing to a and to b is writing to one
// stream: the same *bytes.Buffer, or files sharing one open file
// description (kcmp KCMP_FILE), as a shell's 2>&1 makes stdout and
// stderr. Anything else, or a failing kcmp, is two streams.
func sameStream(a, b io.Writer) bool {
	switch a := a.(type) {
	case *bytes.Buffer:
		b, ok := b.(*bytes.Buffer)
		return ok && a == b
	case *os.File:
		b, ok := b.(*os.File)
		return ok && sameDescription(a, b)
	}
	return false
}

// kcmpFile is KCMP_FILE (include/uapi/linux/kcmp.h).
const kcmpFile = 0

// sameDescription reports whether f and g are descriptors of one open
// file description (kcmp(2) returns 0), without changing either (Fd
// would make them blocking).
func sameDescription(f, g *os.File) bool {
	fc, err := f.SyscallConn()
	if err != nil {
		return false
	}
	gc, err := g.SyscallConn()
	if err != nil {
		return false
	}
	same := false
	fc.Control(func(fd1 uintptr) {
		gc.Control(func(fd2 uintptr) {
			pid := uintptr(os.Getpid())
			r, _, errno := unix.Syscall6(unix.SYS_KCMP, pid, pid, kcmpFile, fd1, fd2, 0)
			same = errno == 0 && r == 0
		})
	})
	return same
}

// examineWorkers is how many devices examine reads at once: the work is
// mostly waiting for reads (O_DIRECT, each one a trip to the device), so
// a few per CPU keep both the CPUs and the devices busy, and no more
// than there are devices. bench/readlimit uses the same number.
func examineWorkers(devices int) int {
	return max(min(4*runtime.GOMAXPROCS(0), devices), 1)
}

// inspectOrdered calls work(w, i) for every i from 0 to n-1 on up to
// workers goroutines, w being the goroutine's number (from 0 to
// workers-1: its buffers), and emit(i) on the calling goroutine for every
// i in increasing order, each as soon as work(w, i) and every emit before
// it have returned. It returns when all have.
func inspectOrdered(n, workers int, work func(w, i int), emit func(i int)) {
	done := make([]chan struct{}, n)
	for i := range done {
		done[i] = make(chan struct{})
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := range min(workers, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				work(w, i)
				close(done[i])
			}
		}()
	}
	for i := range n {
		<-done[i]
		emit(i)
	}
	wg.Wait()
}

// devNodes returns what mdadm's map_dev is to examine's 0.90 device
// table: the device node of the block device major:minor, found through
// sysfs dev/block/MAJ:MIN under sysRoot and shown when devRoot has it,
// or "" when there is none (the device is not on this system, or
// --sysfs is not a sysfs tree). It looks each major:minor up once (as
// mdadm's map_dev reads /dev once) and is safe for concurrent use.
func devNodes(sysRoot, devRoot string) func(major, minor int32) string {
	fsys, err := sysfs.NewFS(sysRoot)
	if err != nil {
		return func(int32, int32) string { return "" }
	}
	var mu sync.Mutex
	found := map[[2]int32]string{}
	lookup := devNode(fsys, devRoot)
	return func(major, minor int32) string {
		mu.Lock()
		n, ok := found[[2]int32{major, minor}]
		mu.Unlock()
		if ok {
			return n
		}
		n = lookup(major, minor)
		mu.Lock()
		found[[2]int32{major, minor}] = n
		mu.Unlock()
		return n
	}
}

// devNode is devNodes without the memory.
func devNode(fsys sysfs.FS, devRoot string) func(major, minor int32) string {
	return func(major, minor int32) string {
		if major < 0 || minor < 0 || major == 0 && minor == 0 {
			return ""
		}
		dev := sysfs.DevNum{Major: uint32(major), Minor: uint32(minor)}
		dir, err := fsys.Rel(fsys.Path("dev", "block", dev.String()))
		if err != nil {
			return ""
		}
		name := path.Base(dir)
		if name == "." || name == "/" || name == ".." {
			return ""
		}
		node := filepath.Join(devRoot, name)
		if _, err := os.Lstat(node); err != nil {
			return ""
		}
		return node
	}
}

func statusMessage(rep *examine.Report) string {
	switch rep.Status {
	case examine.NoSuperblock:
		return "no md superblock found"
	case examine.Damaged:
		return fmt.Sprintf("damaged md superblock: %v", rep.Err)
	}
	return fmt.Sprint(rep.Err)
}
