package blockdev

import (
	"errors"
	"fmt"
	"io"
	"os"
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
// aligned buffer, and the asked-for bytes are copied out.
//
// On a regular file (an image file in tests) whose file system refuses
// O_DIRECT (EINVAL, as tmpfs before Linux 6.6 does), it falls back to
// buffered reads: a file's page cache is never stale, since the file is
// written through it. buffered says so. A block device never falls back.
type DirectReader struct {
	f        *os.File
	name     string
	align    int64 // logical block size: offsets and lengths
	buffered bool
}

// OpenDirect opens a member device or image for reading its superblock
// and bitmap, with O_DIRECT (see DirectReader). The error matches
// ErrNoDirectIO when a block device refuses O_DIRECT, and fs.ErrNotExist
// or fs.ErrPermission as the open does.
func OpenDirect(path string) (*DirectReader, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|oDirect, 0)
	if err == nil {
		d := &DirectReader{f: f, name: path, buffered: oDirect == 0}
		fi, serr := f.Stat()
		if serr != nil {
			f.Close()
			return nil, serr
		}
		d.align = 4096 // file system block alignment for image files
		if fi.Mode()&os.ModeDevice != 0 {
			lbs, err := logicalBlockSize(f)
			if err != nil {
				f.Close()
				return nil, &os.PathError{Op: "logical block size", Path: path, Err: err}
			}
			d.align = lbs
		}
		return d, nil
	}
	if !isEINVAL(err) {
		return nil, err
	}
	fi, serr := os.Stat(path)
	if serr != nil || !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: %w", ErrNoDirectIO, err)
	}
	f, err = os.Open(path)
	if err != nil {
		return nil, err
	}
	return &DirectReader{f: f, name: path, align: 1, buffered: true}, nil
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
	if d.buffered || d.align <= 1 {
		return d.f.ReadAt(p, off)
	}
	start := off &^ (d.align - 1)
	end := (off + int64(len(p)) + d.align - 1) &^ (d.align - 1)
	buf := AlignedBuf(int(end-start), 4096)
	n, err := preadFull(d.f, buf, start)
	if err != nil && isEINVAL(err) && d.regular() {
		// The file system accepted O_DIRECT at open but not this read.
		d.buffered = true
		return d.f.ReadAt(p, off)
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

func (d *DirectReader) regular() bool {
	fi, err := d.f.Stat()
	return err == nil && fi.Mode().IsRegular()
}

// Size returns the size of the device or file.
func (d *DirectReader) Size() (int64, error) { return fileSize(d.f) }

// Close closes the descriptor.
func (d *DirectReader) Close() error { return d.f.Close() }

// fileSize returns the size of a device or file by seeking to its end,
// which works for both.
func fileSize(f *os.File) (int64, error) {
	n, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		return 0, fmt.Errorf("size of %s: %w", f.Name(), err)
	}
	return n, nil
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
