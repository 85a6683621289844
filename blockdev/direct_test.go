package blockdev

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"testing"

	qt "github.com/frankban/quicktest"
	"golang.org/x/sys/unix"
)

// TestOpenMemberReads checks that reads through OpenDirect return the
// same bytes as the file holds at any offset and length, aligned or not,
// including a short read at the end of a file whose size is not a
// multiple of the alignment.
func TestOpenMemberReads(t *testing.T) {
	c := qt.New(t)
	data := make([]byte, 3*4096+700)
	for i := range data {
		data[i] = byte(i*7 + i/251)
	}
	d := openImage(c, data)
	size, err := d.Size()
	c.Assert(err, qt.IsNil)
	c.Assert(size, qt.Equals, int64(len(data)))

	for _, tt := range []struct {
		name    string
		off, n  int
		wantN   int
		wantEOF bool
	}{
		{"aligned", 4096, 4096, 4096, false},
		{"unaligned start", 100, 256, 256, false},
		{"across blocks", 4000, 300, 300, false},
		{"superblock at 8 sectors", 8 * 512, 256, 256, false},
		{"up to the end", len(data) - 256, 256, 256, false},
		{"past the end", len(data) - 100, 256, 100, true},
		{"at the end", len(data), 16, 0, true},
	} {
		c.Run(tt.name, func(c *qt.C) {
			p := make([]byte, tt.n)
			n, err := d.ReadAt(p, int64(tt.off))
			c.Assert(n, qt.Equals, tt.wantN)
			if tt.wantEOF {
				c.Assert(err, qt.ErrorIs, io.EOF)
			} else {
				c.Assert(err, qt.IsNil)
			}
			c.Assert(bytes.Equal(p[:n], data[tt.off:tt.off+n]), qt.IsTrue)
		})
	}
}

// TestOpenMemberUsesODirect checks that the descriptor really carries
// O_DIRECT unless the file system refused it, in which case (and only
// for a regular file) the reads are buffered and say so.
func TestOpenMemberUsesODirect(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("O_DIRECT is Linux-only")
	}
	c := qt.New(t)
	path := filepath.Join(t.TempDir(), "member.img")
	c.Assert(os.WriteFile(path, make([]byte, 8192), 0o644), qt.IsNil)
	d, err := OpenDirect(path)
	c.Assert(err, qt.IsNil)
	defer d.Close()
	fl, err := unix.FcntlInt(uintptr(d.f.fd), unix.F_GETFL, 0)
	c.Assert(err, qt.IsNil)
	if d.buffered.Load() {
		c.Assert(fl&unix.O_DIRECT, qt.Equals, 0)
		t.Logf("the file system of %s refuses O_DIRECT; buffered fallback", path)
		return
	}
	c.Assert(fl&unix.O_DIRECT, qt.Not(qt.Equals), 0)
	c.Assert(d.align, qt.Equals, int64(4096))
}

// TestOpenMemberErrors checks that a missing device keeps its
// fs.ErrNotExist and an oversized read is refused without allocating.
func TestOpenMemberErrors(t *testing.T) {
	c := qt.New(t)
	_, err := OpenDirect(filepath.Join(t.TempDir(), "gone"))
	c.Assert(err, qt.ErrorIs, os.ErrNotExist)
	c.Assert(errors.Is(err, ErrNoDirectIO), qt.IsFalse)

	path := filepath.Join(t.TempDir(), "member.img")
	c.Assert(os.WriteFile(path, make([]byte, 4096), 0o644), qt.IsNil)
	d, err := OpenDirect(path)
	c.Assert(err, qt.IsNil)
	defer d.Close()
	_, err = d.ReadAt(make([]byte, maxDirectRead+1), 0)
	c.Assert(err, qt.ErrorMatches, `.*more than .*`)
}

// TestDirectReaderBuffers checks where reads go: an aligned read into an
// aligned buffer straight into it, an unaligned one through the reader's
// scratch buffer, allocated once; and concurrent reads, which cannot
// share the scratch, still return the file's bytes.
func TestDirectReaderBuffers(t *testing.T) {
	c := qt.New(t)
	data := make([]byte, 64<<10)
	for i := range data {
		data[i] = byte(i*13 + i/4093)
	}
	d := openImage(c, data)

	p := AlignedBuf(8192, 4096)
	allocs := testing.AllocsPerRun(20, func() {
		if n, err := d.ReadAt(p, 4096); n != len(p) || err != nil {
			t.Fatalf("aligned read: %d, %v", n, err)
		}
	})
	c.Check(p, qt.DeepEquals, data[4096:4096+8192])
	c.Check(allocs, qt.Equals, 0.0)

	q := make([]byte, 300)
	allocs = testing.AllocsPerRun(20, func() {
		if n, err := d.ReadAt(q, 5000); n != len(q) || err != nil {
			t.Fatalf("unaligned read: %d, %v", n, err)
		}
	})
	c.Check(q, qt.DeepEquals, data[5000:5300])
	c.Check(allocs, qt.Equals, 0.0)

	errs := make(chan error, 8)
	for g := range 8 {
		go func() {
			b := make([]byte, 777)
			for i := range 200 {
				off := (g*7919 + i*4099) % (len(data) - len(b))
				if n, err := d.ReadAt(b, int64(off)); n != len(b) || err != nil || !bytes.Equal(b, data[off:off+len(b)]) {
					errs <- fmt.Errorf("read of %d at %d: %d, %v, equal %v", len(b), off, n, err, bytes.Equal(b[:n], data[off:off+n]))
					return
				}
			}
			errs <- nil
		}()
	}
	for range 8 {
		c.Check(<-errs, qt.IsNil)
	}
}

// TestOpenDirectNotADevice checks that a directory is refused with an
// error naming it rather than read.
func TestOpenDirectNotADevice(t *testing.T) {
	c := qt.New(t)
	dir := t.TempDir()
	d, err := OpenDirect(dir)
	if err == nil {
		d.Close()
	}
	c.Assert(err, qt.ErrorMatches, `.*`+regexp.QuoteMeta(dir)+`.*`)
}

// openImage writes data to an image file and opens it with OpenDirect,
// closed when the test ends.
func openImage(c *qt.C, data []byte) *DirectReader {
	path := filepath.Join(c.TempDir(), "member.img")
	c.Assert(os.WriteFile(path, data, 0o644), qt.IsNil)
	d, err := OpenDirect(path)
	c.Assert(err, qt.IsNil)
	c.Cleanup(func() { d.Close() })
	return d
}
