// Package diskimage builds in-memory devices for the tests of code that
// reads disks (package signature's scan, package md's blank rule): a
// sparse image that stores only the bytes written to it, and valid md
// superblocks to put on one.
package diskimage

import (
	"io"
	"testing"

	"github.com/google/uuid"

	"github.com/go-mdraid/mdraid/superblock"
)

// Sparse is a device of Size bytes that reads as zeros but where bytes
// were put. It implements io.ReaderAt; a read past Size is cut short with
// io.EOF, as a block device's would be.
type Sparse struct {
	Size   int64
	chunks map[int64][]byte // offset -> bytes
}

// New returns an all-zero device of size bytes.
func New(size int64) *Sparse { return &Sparse{Size: size, chunks: map[int64][]byte{}} }

// Put stores a copy of b at byte off (replacing what was put at off
// before) and returns im, so puts chain.
func (im *Sparse) Put(off int64, b []byte) *Sparse {
	im.chunks[off] = append([]byte(nil), b...)
	return im
}

// ReadAt reads the bytes at off: what was put there, zeros elsewhere.
func (im *Sparse) ReadAt(p []byte, off int64) (int, error) {
	if off >= im.Size {
		return 0, io.EOF
	}
	n := len(p)
	if off+int64(n) > im.Size {
		n = int(im.Size - off)
	}
	clear(p[:n])
	for o, b := range im.chunks {
		// overlap of [o, o+len(b)) with [off, off+n)
		lo, hi := max(o, off), min(o+int64(len(b)), off+int64(n))
		if lo < hi {
			copy(p[lo-off:hi-off], b[lo-o:hi-o])
		}
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// Superblock1x returns the offset and bytes of a valid md superblock of
// version v (1.0, 1.1 or 1.2) for a device of size bytes: a 2-disk raid1
// with a new set UUID. An error fails the test.
func Superblock1x(t testing.TB, v superblock.Version, size int64) (int64, []byte) {
	t.Helper()
	off, err := v.Offset(size)
	if err != nil {
		t.Fatal(err)
	}
	sb := &superblock.Superblock{Version: v, Level: 1, RaidDisks: 2, SetUUID: uuid.New(),
		DataOffset: 2048, DataSize: 4096, SuperOffset: uint64(off / 512), DevRoles: []superblock.Role{0, 1}}
	if v == superblock.Version10 {
		sb.DataOffset = 0
	}
	b, err := sb.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	return off, b
}
