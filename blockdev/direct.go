package blockdev

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"unsafe"
)

// ErrNoDirectIO is matched by the error for a block device that refuses
// O_DIRECT. Member superblocks and bitmaps are never read from a block
// device through the page cache: md writes them with bios that bypass it,
// so a cached copy can be stale (older events, roles and marks) for as
// long as the pages stay cached.
var ErrNoDirectIO = errors.New("blockdev: the device refuses O_DIRECT")

// maxDirectRead bounds one read of a DirectReader: superblocks, bitmap
// headers and bad-block logs are a few KiB.
const maxDirectRead = 16 << 20

// DirectReader reads a member device with O_DIRECT: every read is turned
// into a read of whole logical blocks, at an aligned offset, into an
// aligned buffer, and the asked-for bytes are copied out. A read that is
// already aligned (offset, length, and the buffer's address on a 4 KiB
// boundary) goes straight into the caller's buffer. Reads may run
// concurrently, as io.ReaderAt allows.
//
// On a regular file (an image file in tests) whose file system refuses
// O_DIRECT (EINVAL, as tmpfs before Linux 6.6 does), it falls back to
// buffered reads: a file's page cache is never stale, since the file is
// written through it. buffered says so. A block device never falls back.
//
// It holds the descriptor itself rather than an os.File: an os.File costs
// five more system calls per open (the poller's fcntl and epoll_ctl
// calls, which a disk never needs), and examine opens thousands.
type DirectReader struct {
	f        rawFile
	name     string
	align    int64 // logical block size: offsets and lengths
	regular  bool  // a regular file, not a block device
	size     int64 // a regular file's size at open
	buffered atomic.Bool

	mu      sync.Mutex // scratch's; a read that finds it taken allocates
	scratch []byte
}

// memAlign is the address alignment of buffers read with O_DIRECT.
const memAlign = 4096

// OpenDirect opens a member device or image for reading its superblock
// and bitmap, with O_DIRECT (see DirectReader). The error matches
// ErrNoDirectIO when a block device refuses O_DIRECT, and fs.ErrNotExist
// or fs.ErrPermission as the open does.
func OpenDirect(path string) (*DirectReader, error) {
	f, err := openRaw(path, oDirect)
	if err != nil {
		if !isEINVAL(err) {
			return nil, err
		}
		fi, serr := os.Stat(path)
		if serr != nil || !fi.Mode().IsRegular() {
			return nil, fmt.Errorf("%w: %w", ErrNoDirectIO, err)
		}
		f, err = openRaw(path, 0)
		if err != nil {
			return nil, err
		}
		d := &DirectReader{f: f, name: path, align: 1, regular: true, size: fi.Size()}
		d.buffered.Store(true)
		return d, nil
	}
	d := &DirectReader{f: f, name: path, align: 4096} // file system block alignment for image files
	d.buffered.Store(oDirect == 0)
	dev, size, err := f.stat()
	if err != nil {
		f.close()
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	d.regular, d.size = !dev, size
	if dev {
		lbs, err := f.logicalBlockSize()
		if err != nil {
			f.close()
			return nil, &os.PathError{Op: "logical block size", Path: path, Err: err}
		}
		d.align = lbs
	}
	return d, nil
}

// ReadAt reads len(p) bytes at off, as io.ReaderAt.
func (d *DirectReader) ReadAt(p []byte, off int64) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if off < 0 {
		return 0, &os.PathError{Op: "read", Path: d.name, Err: errors.New("negative offset")}
	}
	if len(p) > maxDirectRead {
		return 0, &os.PathError{Op: "read", Path: d.name, Err: fmt.Errorf("%d bytes in one read, more than %d", len(p), maxDirectRead)}
	}
	if d.buffered.Load() || d.align <= 1 {
		return d.readBuffered(p, off)
	}
	if off&(d.align-1) == 0 && int64(len(p))&(d.align-1) == 0 && uintptr(unsafe.Pointer(&p[0]))%memAlign == 0 {
		n, err := d.f.pread(d.name, p, off, true)
		if err != nil && isEINVAL(err) && d.regular {
			d.buffered.Store(true) // the file system accepted O_DIRECT at open but not this read
			return d.readBuffered(p, off)
		}
		return n, err
	}
	start := off &^ (d.align - 1)
	end := (off + int64(len(p)) + d.align - 1) &^ (d.align - 1)
	buf, held := d.buffer(int(end - start))
	if held {
		defer d.mu.Unlock()
	}
	n, err := d.f.pread(d.name, buf, start, true)
	if err != nil && isEINVAL(err) && d.regular {
		d.buffered.Store(true)
		return d.readBuffered(p, off)
	}
	skip := int(off - start)
	c := 0
	if n > skip {
		c = copy(p, buf[skip:n])
	}
	if c < len(p) {
		if err == nil {
			err = io.EOF
		}
		return c, err
	}
	return c, nil
}

// buffer returns an aligned buffer of n bytes: the reader's scratch when
// no other read holds it (held: the caller unlocks d.mu), else a new one.
func (d *DirectReader) buffer(n int) (buf []byte, held bool) {
	if !d.mu.TryLock() {
		return AlignedBuf(n, memAlign), false
	}
	if cap(d.scratch) < n {
		d.scratch = AlignedBuf(n, memAlign)
	}
	return d.scratch[:n], true
}

// readBuffered reads through the page cache (a descriptor opened
// without O_DIRECT, or a file system that refuses it).
func (d *DirectReader) readBuffered(p []byte, off int64) (int, error) {
	return d.f.pread(d.name, p, off, false)
}

// Size returns the size of the device or file.
func (d *DirectReader) Size() (int64, error) {
	if d.regular {
		return d.size, nil
	}
	n, err := d.f.seekEnd()
	if err != nil {
		return 0, fmt.Errorf("size of %s: %w", d.name, err)
	}
	return n, nil
}

// Close closes the descriptor.
func (d *DirectReader) Close() error {
	if err := d.f.close(); err != nil {
		return &os.PathError{Op: "close", Path: d.name, Err: err}
	}
	return nil
}

// AlignedBuf returns n bytes whose start is aligned to align (a power of
// two), as O_DIRECT needs.
func AlignedBuf(n, align int) []byte {
	b := make([]byte, n+align)
	off := 0
	if rem := int(uintptr(unsafe.Pointer(&b[0])) % uintptr(align)); rem != 0 {
		off = align - rem
	}
	return b[off : off+n : off+n]
}
