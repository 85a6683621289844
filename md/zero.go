package md

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/go-mdraid/mdraid/blockdev"
	"github.com/go-mdraid/mdraid/superblock"
	"github.com/go-mdraid/mdraid/sysfs"
)

// Retiring a device: ZeroSuperblock erases the md superblocks of devices
// that no array uses, as mdadm --zero-superblock does, and the metadata
// that belongs to each (its write-intent bitmap, bad-block log and
// partial parity log), and nothing else. mdadm zeroes the first 512
// bytes of each superblock it recognises and leaves the rest; it
// refuses only a device it cannot open exclusively. Here every area is
// computed from the superblock, bounded by the device, and must lie
// outside the data the superblock describes; a device that holds
// anything beside its array's data (a signature or partition table
// outside it, which means the disk was used again after the array), a
// damaged superblock, or whose use cannot be established is refused with
// nothing written. docs/create.md ("Retiring a device") records the facts.

// The checks of a zero-superblock beyond those it shares with replace
// (CheckFacts, CheckBlockDevice, CheckNotMember, CheckNotInUse).
const (
	// CheckSuperblockFound: the device carries an md superblock.
	CheckSuperblockFound Check = "md superblock found"
	// CheckSuperblockIntact: every md superblock on the device decodes,
	// checksum and location included.
	CheckSuperblockIntact Check = "md superblock intact"
	// CheckMetadataAreas: every area to erase lies on the device, in
	// the metadata room of its superblock (before the data for 1.1 and
	// 1.2, after it for 1.0, the reserved 64 KiB for 0.90), and outside
	// the data of every superblock found.
	CheckMetadataAreas Check = "metadata outside the data"
	// CheckNothingElse: every signature or partition table on the device
	// lies inside the data of a superblock found (it is the array's).
	CheckNothingElse Check = "nothing beside the array's data"
)

// ZeroRequest names the devices whose md superblocks ZeroSuperblock
// erases.
type ZeroRequest struct {
	// Devices are paths (or kernel names) of the devices.
	Devices []string
	// AllowImageFile accepts regular files as devices. It exists for
	// tests; mdctl never sets it.
	AllowImageFile bool
}

// ZeroPlan is what ZeroSuperblock erases, per device.
type ZeroPlan struct {
	Devices []ZeroDevice `json:"devices"`
}

// ZeroDevice is one device of a ZeroPlan.
type ZeroDevice struct {
	// Path is the device as named; Device its kernel name, DevNum its
	// device number (empty for an image file).
	Path   string `json:"path"`
	Device string `json:"device,omitempty"`
	DevNum string `json:"devnum,omitempty"`
	// SizeBytes and LogicalBlockSize are what the plan was made for;
	// the write refuses a device that differs.
	SizeBytes        int64 `json:"size_bytes"`
	LogicalBlockSize int64 `json:"logical_block_size"`
	// Superblocks are the md superblocks found, each with the areas
	// erased for it.
	Superblocks []ZeroSuperblock `json:"superblocks"`

	dev sysfs.DevNum
}

// ZeroSuperblock is one md superblock of a ZeroDevice.
type ZeroSuperblock struct {
	// Version is the metadata version: "0.90", "1.0", "1.1" or "1.2".
	Version string `json:"version"`
	// ArrayUUID and Name identify the array it belonged to. Name is raw
	// bytes from the disk: escape it before showing it.
	ArrayUUID string `json:"array_uuid"`
	Name      string `json:"name,omitempty"`
	// Areas are erased last to first in the order listed: the
	// superblock itself is the last one written.
	Areas []ZeroArea `json:"areas"`
}

// ZeroArea is a byte range erased (written with zeros).
type ZeroArea struct {
	// What is "superblock", "bitmap", "bad-block log" or "ppl".
	What   string `json:"what"`
	Offset int64  `json:"offset"`
	Bytes  int64  `json:"bytes"`
}

// ZeroResult is what ZeroSuperblock did.
type ZeroResult struct {
	Plan *ZeroPlan `json:"plan"`
	// Zeroed are the devices (paths) erased, in order; on a failure
	// the devices before the one that failed.
	Zeroed []string `json:"zeroed"`
}

// zeroOp is the Op of a zero-superblock refusal.
const zeroOp = "zero-superblock"

// refuseZero is a refusal of the erase of path at check: the message
// says what and why, and errors.Is matches cause.
func refuseZero(path string, check Check, cause error, format string, a ...any) error {
	msg := fmt.Sprintf("md: refusing to erase the md superblock of %s: ", path) + fmt.Sprintf(format, a...)
	return &RefusedError{Op: zeroOp, Member: path, Check: check, Err: &problem{msg, cause}}
}

// PlanZeroSuperblock is the dry run of ZeroSuperblock: what would be
// erased on each device, or the refusal of the first device that may not
// be erased (nothing is written to any device then). It writes nothing.
func (m *Manager) PlanZeroSuperblock(ctx context.Context, req ZeroRequest) (*ZeroPlan, error) {
	if len(req.Devices) == 0 {
		return nil, refuseZero("", CheckFacts, ErrNotMember, "no device named")
	}
	p := &ZeroPlan{}
	seen := map[sysfs.DevNum]string{}
	for _, name := range req.Devices {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		path := m.DevicePath(name)
		d, err := m.planZeroDevice(path, req.AllowImageFile)
		if err != nil {
			return nil, err
		}
		if prev, ok := seen[d.dev]; ok && !d.dev.IsZero() {
			return nil, refuseZero(path, CheckFacts, ErrInUse, "it is the same device as %s, named twice", prev)
		}
		seen[d.dev] = path
		p.Devices = append(p.Devices, *d)
	}
	return p, nil
}

// planZeroDevice decides for one device: the facts a replace candidate
// has (who uses it, what it holds), then the superblocks and their areas.
func (m *Manager) planZeroDevice(path string, allowImage bool) (*ZeroDevice, error) {
	c := m.candidateFacts(path, allowImage)
	switch {
	case c.statErr != nil:
		return nil, refuseZero(path, CheckFacts, c.statErr, "%s", c.Error)
	case !c.BlockDevice && !c.Image:
		return nil, refuseZero(path, CheckBlockDevice, ErrNotMember, "it is not a block device")
	case c.Error != "":
		return nil, refuseZero(path, CheckFacts, errUnknownFact, "cannot establish %s", c.Error)
	}
	if ms := c.memberships(); len(ms) > 0 {
		return nil, refuseZero(path, CheckNotMember, ErrInUse, "it is %s", strings.Join(ms, "; "))
	}
	if us := c.uses(""); len(us) > 0 {
		return nil, refuseZero(path, CheckNotInUse, ErrInUse, "it is %s", strings.Join(us, "; "))
	}
	f, err := blockdev.OpenDirect(path)
	if err != nil {
		return nil, refuseZero(path, CheckFacts, err, "cannot read it: %v", err)
	}
	defer f.Close()
	sbs, err := zeroAreas(f, c.SizeBytes)
	if err != nil {
		var re *RefusedError
		if errors.As(err, &re) {
			return nil, refuseZero(path, re.Check, re.Err, "%s", re.Reason)
		}
		return nil, refuseZero(path, CheckFacts, err, "cannot read it: %v", err)
	}
	return &ZeroDevice{Path: path, Device: c.Device, DevNum: c.DevNum, SizeBytes: c.SizeBytes,
		LogicalBlockSize: c.LogicalBlockSize, Superblocks: sbs, dev: c.dev}, nil
}

// zeroAreas is the decision on what r (a device of size bytes) holds:
// every md superblock Probe finds, each intact, with the areas that
// belong to it, all on the device and outside the data of every
// superblock found; and no signature or partition table outside that
// data. A refusal is a *RefusedError with Check, Reason and the cause in
// Err (the caller adds the device); any other error is a read error. It
// is run for the plan and again, through the descriptor that writes, just
// before the write.
func zeroAreas(r io.ReaderAt, size int64) ([]ZeroSuperblock, error) {
	refusal := func(check Check, cause error, format string, a ...any) error {
		return &RefusedError{Op: zeroOp, Check: check, Reason: fmt.Sprintf(format, a...), Err: cause}
	}
	pr, err := superblock.Probe(r, size)
	switch {
	case errors.Is(err, superblock.ErrNoSuperblock) || errors.Is(err, superblock.ErrDeviceTooSmall):
		return nil, refusal(CheckSuperblockFound, ErrNotMember, "it carries no md superblock: nothing to erase")
	case err != nil:
		return nil, err
	}
	var sbs []*superblock.Superblock
	for _, cand := range pr.Candidates {
		if cand.Err != nil {
			if cand.Superblock == nil && !isFormatErr(cand.Err) {
				return nil, cand.Err // could not be read
			}
			return nil, refusal(CheckSuperblockIntact, cand.Err, "the md superblock (%v) at byte %d is damaged: %v; what belongs to it cannot be told, so nothing is erased", cand.Version, cand.Offset, cand.Err)
		}
		sbs = append(sbs, cand.Superblock)
	}
	// The data each superblock describes, and the zone its metadata
	// must lie in, in bytes: between the device's start and the data
	// (1.1, 1.2), between the data's end and the device's (1.0), or the
	// 64 KiB reserved at the end for 0.90.
	type extent struct{ off, end int64 }
	var data, zones []extent
	for _, sb := range sbs {
		if sb.Version == superblock.Version090 {
			data = append(data, extent{0, sb.DiskOffset})
			zones = append(zones, extent{sb.DiskOffset, min(sb.DiskOffset+64<<10, size)})
			continue
		}
		off, n := sb.DataOffset, sb.DataSize
		if n == 0 || off > uint64(size)/512 || n > uint64(size)/512-off {
			return nil, refusal(CheckMetadataAreas, superblock.ErrOutOfRange, "the md superblock %v at byte %d describes data (sectors %d to %d) that is empty or beyond the device's %d bytes", sb.Version, sb.DiskOffset, off, off+n, size)
		}
		d := extent{int64(off) * 512, int64(off+n) * 512}
		data = append(data, d)
		switch {
		case sb.DiskOffset >= d.end:
			zones = append(zones, extent{d.end, size})
		case sb.DiskOffset+4096 <= d.off:
			zones = append(zones, extent{0, d.off})
		default:
			return nil, refusal(CheckMetadataAreas, superblock.ErrOutOfRange, "the md superblock %v at byte %d lies inside the data it describes (bytes %d to %d)", sb.Version, sb.DiskOffset, d.off, d.end)
		}
	}
	inData := func(off, n int64) bool {
		for _, d := range data {
			if off >= d.off && off+n <= d.end {
				return true
			}
		}
		return false
	}
	overlapsData := func(off, n int64) bool {
		for _, d := range data {
			if off < d.end && d.off < off+n {
				return true
			}
		}
		return false
	}

	out := make([]ZeroSuperblock, 0, len(sbs))
	for i, sb := range sbs {
		z := ZeroSuperblock{Version: sb.Version.String(), ArrayUUID: sb.SetUUID.String(), Name: sb.FullName()}
		areas, err := metadataAreas(r, sb)
		if err != nil {
			var re *RefusedError
			if errors.As(err, &re) {
				return nil, err
			}
			return nil, refusal(CheckMetadataAreas, superblock.ErrOutOfRange, "the md superblock %v at byte %d: %v", sb.Version, sb.DiskOffset, err)
		}
		zone := zones[i]
		for _, a := range areas {
			switch {
			case a.Offset < 0 || a.Bytes <= 0 || a.Offset > size || a.Bytes > size-a.Offset:
				return nil, refusal(CheckMetadataAreas, superblock.ErrOutOfRange, "its %s (%d bytes at byte %d) is not on the %d-byte device", a.What, a.Bytes, a.Offset, size)
			case a.Offset < zone.off || a.Offset+a.Bytes > zone.end:
				return nil, refusal(CheckMetadataAreas, superblock.ErrOutOfRange, "its %s (%d bytes at byte %d) lies outside the metadata room of the md superblock %v at byte %d (bytes %d to %d)", a.What, a.Bytes, a.Offset, sb.Version, sb.DiskOffset, zone.off, zone.end)
			case overlapsData(a.Offset, a.Bytes):
				return nil, refusal(CheckMetadataAreas, superblock.ErrOutOfRange, "its %s (%d bytes at byte %d) overlaps the data of an md superblock found there", a.What, a.Bytes, a.Offset)
			}
		}
		z.Areas = areas
		out = append(out, z)
	}

	fds, err := blankFindings(r, size)
	if err != nil {
		return nil, err
	}
	for _, f := range fds {
		if f.Kind != KindSignature && f.Kind != KindPartitionTable {
			continue // md superblocks, and bytes that are not one fill
		}
		if !inData(f.Offset, 1) {
			return nil, refusal(CheckNothingElse, f, "it holds a %s at byte %d, outside the data of its md superblocks: the disk was used again after the array, and erasing could write into what uses it now", f.What, f.Offset)
		}
	}
	return out, nil
}

// isFormatErr reports whether err says the bytes are not a valid
// superblock (as opposed to an I/O error).
func isFormatErr(err error) bool {
	for _, e := range []error{superblock.ErrTruncated, superblock.ErrChecksum, superblock.ErrUnsupportedVersion,
		superblock.ErrUnknownFeature, superblock.ErrInvalid, superblock.ErrUnknownField, superblock.ErrOutOfRange,
		superblock.ErrWrongLocation, superblock.ErrDeviceTooSmall} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// metadataAreas lists the byte ranges that belong to sb on its device:
// the bitmap (when its own superblock is this array's; as far as it says,
// bounded as replace bounds it: bitmapBytes), the bad-block log (at most
// the 4 KiB md reads) and the partial parity log (when its header is this
// array's) for 1.x, then the superblock's own 4 KiB (md reserves 4 KiB for it: the
// kernel reads 4 KiB at its offset, and 0.90's is 4 KiB). A bitmap the
// superblock points to but whose superblock is not there is left alone
// (nothing of it to erase); one of another array is refused.
func metadataAreas(r io.ReaderAt, sb *superblock.Superblock) ([]ZeroArea, error) {
	var areas []ZeroArea
	if sb.HasBitmap() {
		loc, err := superblock.BitmapLocation(sb)
		if err != nil {
			return nil, err
		}
		bm, err := superblock.ReadBitmap(r, sb)
		switch {
		case errors.Is(err, superblock.ErrNoBitmap):
		case errors.Is(err, superblock.ErrInvalid) && bm != nil:
			return nil, &RefusedError{Op: zeroOp, Check: CheckMetadataAreas, Err: err,
				Reason: fmt.Sprintf("the bitmap at byte %d belongs to another array (%v)", loc, bm.UUID)}
		case err != nil:
			return nil, err
		default:
			n, err := bitmapBytes(sb, bm, loc)
			if err != nil {
				return nil, err
			}
			areas = append(areas, ZeroArea{What: "bitmap", Offset: loc, Bytes: int64(n)})
		}
	}
	if sb.Version != superblock.Version090 {
		so := int64(sb.SuperOffset)
		if sb.BBLogOffset != 0 && sb.BBLogSize != 0 {
			// md refuses a log of more than a page (super_1_load:
			// bblog_size > PAGE_SIZE/512 is EINVAL); mdadm writes 8
			// sectors.
			if sb.BBLogSize > 8 {
				return nil, fmt.Errorf("bad-block log of %d sectors: md reads at most 8", sb.BBLogSize)
			}
			areas = append(areas, ZeroArea{What: "bad-block log", Offset: (so + int64(sb.BBLogOffset)) * 512, Bytes: int64(sb.BBLogSize) * 512})
		}
		// The partial parity log, when its header is this array's (the
		// signature is the array UUID's checksum): its whole area.
		if _, err := superblock.ReadPPL(r, sb); err == nil {
			areas = append(areas, ZeroArea{What: "ppl", Offset: (so + int64(sb.PPLOffset())) * 512, Bytes: int64(sb.PPLSize()) * 512})
		}
	}
	areas = append(areas, ZeroArea{What: "superblock", Offset: sb.DiskOffset, Bytes: 4096})
	return areas, nil
}

// ZeroSuperblock erases the md superblocks of the devices, with their
// bitmaps, bad-block logs and partial parity logs (see
// PlanZeroSuperblock). It plans every device first and writes nothing
// when one is refused. Then, device by device, it opens the device
// exclusively and with O_DIRECT, decides again through that descriptor
// (the same superblocks and areas, nothing else on the disk, the same
// size and block size: else ErrPlanChanged and that device is not
// written), writes zeros over each area (the superblock last), syncs and
// reads them back. On a failure Zeroed names the devices erased before
// it, and the error says what became of the one that failed.
func (m *Manager) ZeroSuperblock(ctx context.Context, req ZeroRequest) (*ZeroResult, error) {
	p, err := m.PlanZeroSuperblock(ctx, req)
	if err != nil {
		return nil, err
	}
	res := &ZeroResult{Plan: p, Zeroed: []string{}}
	for _, d := range p.Devices {
		if err := ctx.Err(); err != nil {
			return res, zeroFailed(res, d.Path, true, err)
		}
		w := deviceWrite{Path: d.Path, Dev: d.dev, Size: d.SizeBytes, LBS: d.LogicalBlockSize, MaxLBS: d.LogicalBlockSize,
			Check: zeroRecheck(d)}
		for _, z := range d.Superblocks {
			for _, a := range z.Areas {
				w.Regions = append(w.Regions, region{What: fmt.Sprintf("%s %s %s", z.Version, z.ArrayUUID, a.What), Off: a.Offset, Data: make([]byte, a.Bytes)})
			}
		}
		cl, err := m.ops.k.ClaimDevice(w)
		if err != nil {
			if errors.Is(err, ErrPlanChanged) {
				return res, refuseZero(d.Path, CheckFacts, err, "%v; nothing written to it%s", err, zeroedBefore(res))
			}
			return res, zeroFailed(res, d.Path, true, err)
		}
		if err := cl.Write(); err != nil {
			if errors.Is(err, ErrPlanChanged) && nothingWritten(err) {
				return res, refuseZero(d.Path, CheckFacts, err, "%v; nothing written to it%s", err, zeroedBefore(res))
			}
			return res, zeroFailed(res, d.Path, nothingWritten(err), err)
		}
		res.Zeroed = append(res.Zeroed, d.Path)
	}
	return res, nil
}

// zeroRecheck is the final check of d through the writing descriptor:
// the decision again gives the planned superblocks and areas.
func zeroRecheck(d ZeroDevice) func(r io.ReaderAt, size int64) error {
	return func(r io.ReaderAt, size int64) error {
		sbs, err := zeroAreas(r, size)
		if err != nil {
			return fmt.Errorf("%w: %s: %w", ErrPlanChanged, d.Path, err)
		}
		if !slices.EqualFunc(sbs, d.Superblocks, func(a, b ZeroSuperblock) bool {
			return a.Version == b.Version && a.ArrayUUID == b.ArrayUUID && slices.Equal(a.Areas, b.Areas)
		}) {
			return fmt.Errorf("%w: %s no longer holds the md superblocks the plan was made for", ErrPlanChanged, d.Path)
		}
		return nil
	}
}

// zeroedBefore names the devices erased before a failure.
func zeroedBefore(res *ZeroResult) string {
	if len(res.Zeroed) == 0 {
		return " (no device was written)"
	}
	return "; erased before it: " + strings.Join(res.Zeroed, "; ")
}

// ZeroError is a failure of ZeroSuperblock while erasing one device (a
// refusal is a *RefusedError instead).
type ZeroError struct {
	// Path is the device that failed.
	Path string
	// NothingWritten is set when nothing was written to Path.
	NothingWritten bool
	// Zeroed are the devices erased before it.
	Zeroed []string
	// Err is the cause.
	Err error
}

// Error says what failed and what was written.
func (e *ZeroError) Error() string {
	what := "it may be partly erased: run mdctl zero-superblock on it again, which erases what is left or says why not"
	if e.NothingWritten {
		what = "nothing was written to it"
	}
	before := " (no device was written before it)"
	if len(e.Zeroed) > 0 {
		before = "; erased before it: " + strings.Join(e.Zeroed, "; ")
	}
	return fmt.Sprintf("md: erasing the md superblock of %s failed: %v; %s%s", e.Path, e.Err, what, before)
}

// Unwrap returns the cause.
func (e *ZeroError) Unwrap() error { return e.Err }

// zeroFailed is the failure of the erase of path.
func zeroFailed(res *ZeroResult, path string, nothing bool, err error) error {
	return &ZeroError{Path: path, NothingWritten: nothing, Zeroed: slices.Clone(res.Zeroed), Err: err}
}
