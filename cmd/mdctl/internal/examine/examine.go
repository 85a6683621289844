// Package examine gathers what `mdctl examine` shows about one member
// device: the superblocks found on it, the one mdadm would use, and the
// structures it points to. Rendering is left to the command.
package examine

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/go-mdraid/mdraid/blockdev"
	"github.com/go-mdraid/mdraid/superblock"
)

// Status classifies a device; a higher value is worse.
type Status int

// Statuses, in increasing severity. The values are the exit codes of
// `mdctl examine`.
const (
	OK           Status = 0 // a valid superblock, possibly with fields of a newer kernel (Report.Unknown)
	Damaged      Status = 1 // a superblock with a bad checksum, a wrong location, or values the kernel refuses
	NoSuperblock Status = 2 // no md superblock at any location
	Unreadable   Status = 3 // the device could not be opened or read
)

// String returns "ok", "damaged", "no-superblock" or "unreadable".
func (s Status) String() string {
	switch s {
	case OK:
		return "ok"
	case Damaged:
		return "damaged"
	case NoSuperblock:
		return "no-superblock"
	}
	return "unreadable"
}

// Report is what was found on one device.
type Report struct {
	Device string
	Size   int64 // bytes
	Status Status
	// Err explains a non-OK status: the open/read error, the missing
	// superblock, or the first problem with the superblock.
	Err error
	// Probe is every superblock location with something on it.
	Probe *superblock.ProbeResult
	// Candidate is the superblock shown: the one mdadm would use, or,
	// when none is usable, the first one that decoded. Nil when none.
	Candidate *superblock.Candidate
	// Problems are the kernel checks the superblock fails
	// (superblock.Validate), one error each.
	Problems []error
	// Unknown is the 1.x padding that holds non-zero words
	// (superblock.UnknownFields): fields of a kernel newer than this
	// program. They do not change Status.
	Unknown []superblock.UnknownField
	// Bitmap, BadBlocks and PPL are read when the superblock announces
	// them; their errors are kept apart and do not change Status.
	Bitmap    *superblock.Bitmap
	BitmapErr error
	// LLBitmap counts the chunk states of a lockless bitmap (version 6),
	// read when the bitmap superblock is; LLBitmapErr says why they were
	// not.
	LLBitmap     *superblock.LLBitmapCounts
	LLBitmapErr  error
	BadBlocks    []superblock.BadBlock
	BadBlocksErr error
	PPL          *superblock.PPLHeader
	PPLErr       error
}

// MaxLLBitmapChunks bounds the lockless bitmap states examine reads (one
// byte a chunk; the count comes from the disk): 1 MiB, eight times what
// the 128 KiB a create reserves can hold.
const MaxLLBitmapChunks = 1 << 20

// Superblock returns the superblock shown, or nil.
func (r *Report) Superblock() *superblock.Superblock {
	if r.Candidate == nil {
		return nil
	}
	return r.Candidate.Superblock
}

// ErrNotDevice means a path is neither a block device nor a regular
// (image) file.
var ErrNotDevice = errors.New("not a block device or an image file")

// notDevice names what a file of mode m is when it is neither a block
// device nor a regular file, and returns "" when it is one of those.
func notDevice(m fs.FileMode) string {
	switch {
	case m.IsRegular(), m&fs.ModeDevice != 0 && m&fs.ModeCharDevice == 0:
		return ""
	case m.IsDir():
		return "a directory"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	}
	return "not a regular file"
}

// InspectPath opens path (an image file or a block device) read-only and
// inspects it. A block device is read with O_DIRECT (blockdev.OpenDirect):
// md writes superblocks past the page cache, so a cached copy can be stale.
//
// Anything else (a directory, a character device, a FIFO, a socket) is
// Unreadable with an error matching ErrNotDevice, without being opened:
// a FIFO would block the open, and a directory's "size" is garbage.
func InspectPath(path string) *Report {
	return new(Inspector).InspectPath(path)
}

// Inspect examines a device of size bytes read through r.
//
// Each block is read once: the 1.1 and 1.2 locations (bytes 0 and 4096)
// with one 8 KiB read (see withHead), the 0.90 and 1.0 locations near the
// end with one 4 KiB read each, then the bitmap, bad-block log and PPL
// the superblock announces.
func Inspect(r io.ReaderAt, size int64, name string) *Report {
	return new(Inspector).Inspect(r, size, name)
}

// Inspector inspects devices one after the other, reusing its buffers:
// one per goroutine. The zero value is ready to use.
type Inspector struct {
	head []byte // withHead's, aligned so that O_DIRECT reads straight into it
}

// InspectPath is the package's InspectPath, with x's buffers.
func (x *Inspector) InspectPath(path string) *Report {
	if fi, err := os.Stat(path); err == nil {
		if kind := notDevice(fi.Mode()); kind != "" {
			return &Report{Device: path, Status: Unreadable, Err: fmt.Errorf("is %s, %w", kind, ErrNotDevice)}
		}
	}
	f, err := blockdev.OpenDirect(path)
	if err != nil {
		return &Report{Device: path, Status: Unreadable, Err: err}
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return &Report{Device: path, Status: Unreadable, Err: err}
	}
	return x.Inspect(f, size, path)
}

// Inspect is the package's Inspect, with x's buffers. Nothing in the
// report refers to them.
func (x *Inspector) Inspect(r io.ReaderAt, size int64, name string) *Report {
	rep := &Report{Device: name, Size: size}
	if x.head == nil {
		x.head = blockdev.AlignedBuf(headSize, 4096)
	}
	r = withHead(r, size, x.head)
	res, err := superblock.Probe(r, size)
	rep.Probe = res
	switch {
	case errors.Is(err, superblock.ErrNoSuperblock), errors.Is(err, superblock.ErrDeviceTooSmall):
		rep.Status, rep.Err = NoSuperblock, err
		return rep
	case err != nil:
		rep.Status, rep.Err = Unreadable, err
		return rep
	}
	rep.Candidate = res.Best()
	if rep.Candidate == nil {
		for i := range res.Candidates {
			if res.Candidates[i].Superblock != nil {
				rep.Candidate = &res.Candidates[i]
				break
			}
		}
	}
	if rep.Candidate == nil {
		rep.Status, rep.Err = Unreadable, res.Candidates[0].Err
		return rep
	}
	sb := rep.Candidate.Superblock
	if rep.Candidate.Err != nil {
		rep.Status, rep.Err = Damaged, rep.Candidate.Err
	}
	rep.Unknown = sb.UnknownFields()
	if verr := sb.Validate(size); verr != nil {
		rep.Problems = unjoin(verr)
		if rep.Status == OK {
			rep.Status, rep.Err = Damaged, rep.Problems[0]
		}
	}
	if sb.HasBitmap() {
		rep.Bitmap, rep.BitmapErr = superblock.ReadBitmap(r, sb)
		if rep.BitmapErr == nil && rep.Bitmap.Version == superblock.BitmapMajorLockless {
			var c superblock.LLBitmapCounts
			if c, rep.LLBitmapErr = superblock.ReadLLBitmap(r, size, sb, rep.Bitmap, MaxLLBitmapChunks); rep.LLBitmapErr == nil {
				rep.LLBitmap = &c
			}
		}
	}
	rep.BadBlocks, rep.BadBlocksErr = superblock.ReadBadBlocks(r, sb)
	if sb.HasPPL() {
		rep.PPL, rep.PPLErr = superblock.ReadPPL(r, sb)
	}
	return rep
}

// headSize is what withHead reads: the 1.1 location (byte 0) and the 1.2
// location (byte 4096), one superblock.BlockSize each.
const headSize = 2 * superblock.BlockSize

// withHead reads bytes 0 to headSize of a device of size bytes into head
// (headSize bytes) with one read and returns a reader that serves reads inside them from that copy
// and passes the others to r. The two locations are adjacent, so one read
// costs one I/O where two cost two; both are always probed, so nothing
// extra is read. When the device is smaller, or the read fails or comes
// back short, r is returned as it is: every location then gets its own
// read and its own error, as before.
func withHead(r io.ReaderAt, size int64, head []byte) io.ReaderAt {
	if size < headSize {
		return r
	}
	if n, _ := r.ReadAt(head, 0); n != len(head) {
		return r
	}
	return &headReader{r: r, head: head}
}

// headReader is withHead's reader.
type headReader struct {
	r    io.ReaderAt
	head []byte
}

// ReadAt implements io.ReaderAt.
func (h *headReader) ReadAt(p []byte, off int64) (int, error) {
	if off >= 0 && off <= int64(len(h.head)) && int64(len(p)) <= int64(len(h.head))-off {
		return copy(p, h.head[off:]), nil
	}
	return h.r.ReadAt(p, off)
}

// unjoin splits an errors.Join result into its parts.
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// Stale returns the other superblocks found on the device: those that are
// not the one shown.
func (r *Report) Stale() []superblock.Candidate {
	if r.Probe == nil {
		return nil
	}
	var out []superblock.Candidate
	for _, c := range r.Probe.Candidates {
		if r.Candidate == nil || c.Offset != r.Candidate.Offset {
			out = append(out, c)
		}
	}
	return out
}
