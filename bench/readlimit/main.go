// Command readlimit does only the I/O that `mdctl examine` cannot avoid
// on each image or device it is given, and nothing else: open, size,
// one read of each superblock location, close. bench/examine.sh times it
// beside mdadm and mdctl as "the read limit" (the reasoning for which
// reads are needed is in that script's comment).
//
//	go run ./bench/readlimit [-workers N] [-split] PATH...
//
// Reads use O_DIRECT, as examine's do (blockdev.OpenDirect: md writes
// superblocks past the page cache), falling back to buffered reads only
// for a regular file whose file system refuses O_DIRECT, as examine does.
// The work is spread over -workers goroutines (default 4 per CPU, as
// examine's examineWorkers: the reads wait on the device, so a few per
// CPU keep the CPUs busy). It prints, on stderr, how many of the blocks read start
// with the md magic, so a run that read nothing shows.
package main

import (
	"encoding/binary"
	"flag"
	"fmt"
	"os"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/go-mdraid/mdraid/superblock"
)

func main() {
	workers := flag.Int("workers", 4*runtime.GOMAXPROCS(0), "goroutines doing the reads (mdctl examine uses 4 per CPU)")
	split := flag.Bool("split", false, "read 1.1 (byte 0) and 1.2 (byte 4096) with two 4 KiB reads instead of one 8 KiB read")
	flag.Parse()
	paths := flag.Args()
	var next, magics, failed atomic.Int64
	var wg sync.WaitGroup
	for range max(*workers, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := aligned(2*superblock.BlockSize, 4096)
			for {
				i := int(next.Add(1) - 1)
				if i >= len(paths) {
					return
				}
				m, err := readOne(paths[i], buf, *split)
				magics.Add(int64(m))
				if err != nil {
					failed.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	fmt.Fprintf(os.Stderr, "readlimit: %d paths, %d md magics, %d failed\n", len(paths), magics.Load(), failed.Load())
}

// readOne opens path, reads the four superblock locations (three reads:
// 1.1 and 1.2 are adjacent) and closes it, returning how many held the md
// magic.
func readOne(path string, buf []byte, split bool) (int, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_DIRECT|unix.O_NONBLOCK, 0)
	if err == unix.EINVAL {
		fd, err = unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	}
	if err != nil {
		return 0, err
	}
	defer unix.Close(fd)
	size, err := unix.Seek(fd, 0, 2)
	if err != nil {
		return 0, err
	}
	bs := int64(superblock.BlockSize)
	type span struct{ off, n int64 }
	spans := make([]span, 0, 4)
	if !split && size >= 2*bs {
		spans = append(spans, span{0, 2 * bs})
	}
	for _, v := range superblock.Versions {
		off, err := v.Offset(size)
		if err != nil || off+bs > size {
			continue
		}
		if !split && off < 2*bs || slices.ContainsFunc(spans, func(p span) bool { return p.off == off }) {
			continue // in the first read, or read already (small devices)
		}
		spans = append(spans, span{off, bs})
	}
	magics := 0
	for _, s := range spans {
		b := buf[:s.n]
		if _, err := unix.Pread(fd, b, s.off); err != nil {
			return magics, err
		}
		for o := int64(0); o < s.n; o += bs {
			if binary.LittleEndian.Uint32(b[o:]) == superblock.Magic || binary.BigEndian.Uint32(b[o:]) == superblock.Magic {
				magics++
			}
		}
	}
	return magics, nil
}

// aligned returns n bytes aligned to align, as O_DIRECT needs.
func aligned(n, align int) []byte {
	b := make([]byte, n+align)
	off := 0
	if rem := int(uintptr(unsafe.Pointer(&b[0])) % uintptr(align)); rem != 0 {
		off = align - rem
	}
	return b[off : off+n : off+n]
}
