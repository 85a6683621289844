package md

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/go-mdraid/mdraid/ioctl"
	"github.com/go-mdraid/mdraid/superblock"
	"github.com/go-mdraid/mdraid/sysfs"
)

// Adding and removing the internal write-intent bitmap of a running
// array, as mdadm --grow --bitmap=internal|none does (Grow.c
// Grow_addbitmap, super1.c add_internal_bitmap1 and write_bitmap1, read
// in md-raid-utilities/mdadm at d1447022; md-bitmap.c location_store).
// docs/kernels.md §12 records the facts.

// The checks of a bitmap change.
const (
	// CheckBitmapArray: the array runs, is redundant, has 1.x metadata
	// of its own (not external) and no partial parity log.
	CheckBitmapArray Check = "array takes a bitmap"
	// CheckBitmapState: the array has a bitmap to remove, or none when
	// one is to be added.
	CheckBitmapState Check = "bitmap present or absent"
	// CheckBitmapRoom: every in-sync member has room for the bitmap
	// between its superblock and its data (1.1, 1.2) or between its data
	// and its bad-block log (1.0), the same place on each, and that room
	// holds nothing but zeros or an old bitmap of this array.
	CheckBitmapRoom Check = "room for the bitmap"
)

// BitmapRequest asks for an array's internal bitmap to be added or
// removed.
type BitmapRequest struct {
	// Array is named as in the package documentation ("Naming arrays").
	Array string
	// Internal adds the internal bitmap; false removes it.
	Internal bool
	// ChunkKiB is the bitmap chunk (a power of two of at least 4 KiB);
	// zero is mdadm's default: 64 MiB, or more when the room needs it.
	ChunkKiB uint64
}

// BitmapPlan is what a bitmap change writes.
type BitmapPlan struct {
	// Array is the array's kernel name.
	Array string `json:"array"`
	// Add is true to add the bitmap, false to remove it.
	Add bool `json:"add"`
	// Location is what is written to md/bitmap/location: the bitmap's
	// offset from the superblock in sectors ("+8", "-16"), or "none".
	Location string `json:"location"`
	// ChunkBytes and SyncSectors are the new bitmap's chunk and the
	// sectors it covers (add only).
	ChunkBytes  uint64 `json:"chunk_bytes,omitempty"`
	SyncSectors uint64 `json:"sync_sectors,omitempty"`
	// Members are the bitmap writes, one per in-sync member (add only):
	// its superblock and every bit set, as mdadm writes it; md then
	// keeps it.
	Members []BitmapWrite `json:"members,omitempty"`

	sbs []*superblock.Superblock
}

// BitmapWrite is the bitmap written to one member.
type BitmapWrite struct {
	Device string       `json:"device"`
	DevNum sysfs.DevNum `json:"devnum"`
	// Offset and Bytes are the byte range written on the member.
	Offset int64 `json:"offset"`
	Bytes  int64 `json:"bytes"`

	data []byte
}

// BitmapResult is what SetBitmap did.
type BitmapResult struct {
	Plan *BitmapPlan `json:"plan"`
	// Written are the members whose bitmap area was written.
	Written []string `json:"written"`
	// Location is md/bitmap/location read back after the change.
	Location string `json:"location"`
}

const bitmapOp = "change the bitmap"

// PlanBitmap is the dry run of SetBitmap: what would be written, or the
// refusal. It writes nothing.
func (m *Manager) PlanBitmap(ctx context.Context, req BitmapRequest) (*BitmapPlan, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	name, err := m.resolve(req.Array)
	if err != nil {
		return nil, refuseLookup(bitmapOp, req.Array, "", err)
	}
	return m.planBitmap(name, req)
}

// refuseBitmap is a refusal of the bitmap change of array at check.
func refuseBitmap(array string, check Check, cause error, format string, a ...any) error {
	return &RefusedError{Op: bitmapOp, Array: array, Check: check, Reason: fmt.Sprintf(format, a...), Err: cause}
}

func (m *Manager) planBitmap(name string, req BitmapRequest) (*BitmapPlan, error) {
	s := m.read(name)
	if len(s.errs) > 0 {
		return nil, refuseBitmap(name, CheckFactsReadable, errUnknownFact, "cannot read %v", problems(s.errs))
	}
	a, err := m.fs.Array(name)
	if err != nil {
		return nil, err
	}
	d := derive(s)
	switch {
	case !d.running:
		return nil, refuseBitmap(name, CheckBitmapArray, errArrayNotRunning, "it is not running (%s)", s.state)
	case s.metadata.Kind != sysfs.MetadataNative || s.metadata.Major != 1:
		return nil, refuseBitmap(name, CheckBitmapArray, ErrUnsupported, "its metadata is %q: only 1.x metadata of its own is handled", s.metadata.Raw)
	case !s.level.Redundant():
		return nil, refuseBitmap(name, CheckBitmapArray, ErrUnsupported, "%s has no redundancy: a bitmap is not meaningful", s.level)
	case s.action != sysfs.ActionIdle:
		return nil, refuseBitmap(name, CheckSyncIdle, ErrCheckBusy, "sync_action is %s: md refuses a bitmap change while a resync, recovery, reshape or check runs", s.action)
	}
	if cp, err := a.ConsistencyPolicy(); err == nil && cp == "ppl" {
		return nil, refuseBitmap(name, CheckBitmapArray, ErrUnsupported, "it keeps a partial parity log (consistency_policy ppl)")
	}
	loc, err := a.BitmapLocation()
	if err != nil {
		return nil, refuseBitmap(name, CheckFactsReadable, err, "cannot read bitmap/location: %v", err)
	}
	p := &BitmapPlan{Array: name, Add: req.Internal}
	if !req.Internal {
		if loc.Kind == "none" {
			return nil, refuseBitmap(name, CheckBitmapState, ErrNoBitmapToRemove, "it has no bitmap")
		}
		if loc.Kind != "offset" {
			return nil, refuseBitmap(name, CheckBitmapState, ErrUnsupported, "its bitmap is %s, not internal", loc)
		}
		p.Location = "none"
		return p, nil
	}
	if loc.Kind != "none" {
		return nil, refuseBitmap(name, CheckBitmapState, ErrBitmapPresent, "it has a bitmap already (bitmap/location %s)", loc)
	}
	if req.ChunkKiB != 0 && (req.ChunkKiB < 4 || req.ChunkKiB&(req.ChunkKiB-1) != 0) {
		return nil, refuseBitmap(name, CheckBitmapRoom, ErrUnsupported, "chunk %d KiB: a power of two of at least 4 KiB", req.ChunkKiB)
	}
	// The sectors the bitmap covers: mdadm's array.size (KiB per
	// device) in sectors; for raid10 the array's resync size.
	size := s.component * 2
	if s.level == sysfs.LevelRAID10 {
		copies := (s.layout & 255) * ((s.layout >> 8) & 255)
		if copies <= 0 || s.raidDisks <= 0 {
			return nil, refuseBitmap(name, CheckBitmapArray, errUnknownFact, "raid10 layout %d: cannot tell its copies", s.layout)
		}
		size = size * uint64(s.raidDisks) / uint64(copies)
	}
	if size == 0 {
		return nil, refuseBitmap(name, CheckBitmapArray, errUnknownFact, "its component size is unknown")
	}
	p.SyncSectors = size
	var offset int32
	for _, ms := range s.members {
		if !ms.state.Has(sysfs.FlagInSync) || ms.Slot < 0 || ms.state.Failed() {
			continue
		}
		if ms.sb == nil || ms.DevNum.IsZero() {
			return nil, refuseBitmap(name, CheckBitmapRoom, errUnknownFact, "the superblock or device number of %s cannot be read: %s", ms.Device, ms.Error)
		}
		off, chunk, err := bitmapPlace(ms.sb, size, req.ChunkKiB*1024)
		if err != nil {
			return nil, refuseBitmap(name, CheckBitmapRoom, err, "%s: %v", ms.Device, err)
		}
		if len(p.Members) > 0 && (off != offset || chunk != p.ChunkBytes) {
			return nil, refuseBitmap(name, CheckBitmapRoom, ErrUnsupported, "the members' layouts differ: the bitmap would be at %+d sectors with %d-byte chunks on %s, at %+d with %d on %s",
				off, chunk, ms.Device, offset, p.ChunkBytes, p.Members[0].Device)
		}
		offset, p.ChunkBytes = off, chunk
		bm := &superblock.Bitmap{Version: superblock.BitmapMajorHi, UUID: ms.sb.BitmapUUID(), SyncSize: size,
			ChunkSize: uint32(chunk), DaemonSleep: bitmapDelay}
		hdr, err := bm.MarshalBinary()
		if err != nil {
			return nil, fmt.Errorf("md: bitmap of %s: %w", name, err)
		}
		bits := size*512/chunk + 1
		n := (uint64(len(hdr)) + (bits+7)/8 + 4095) &^ 4095
		data := bytes.Repeat([]byte{0xff}, int(n))
		copy(data, hdr)
		p.Members = append(p.Members, BitmapWrite{Device: ms.Device, DevNum: ms.DevNum,
			Offset: (int64(ms.sb.SuperOffset) + int64(off)) * 512, Bytes: int64(n), data: data})
		p.sbs = append(p.sbs, ms.sb)
	}
	if len(p.Members) == 0 {
		return nil, refuseBitmap(name, CheckBitmapRoom, errUnknownFact, "it has no in-sync member to write the bitmap to")
	}
	p.Location = fmt.Sprintf("%+d", offset)
	return p, nil
}

// Errors of a bitmap change.
var (
	// ErrBitmapPresent is matched by the refusal to add a bitmap to an
	// array that has one.
	ErrBitmapPresent = errors.New("md: the array has a bitmap")
	// ErrNoBitmapToRemove is matched by the refusal to remove the bitmap
	// of an array that has none.
	ErrNoBitmapToRemove = errors.New("md: the array has no bitmap")
)

// bitmapPlace is where mdadm puts a bitmap added to a running array with
// 1.x metadata (add_internal_bitmap1, not creating, the offset settable
// through sysfs) and its chunk: size is the sectors covered, chunk the
// requested chunk in bytes (0: mdadm's default).
//
// 1.1, 1.2: the room runs from the superblock to the end of the bad-block
// log (or to the data, without one; the log is then taken to be 8
// sectors), less 4 KiB for the superblock and the log; the bitmap starts
// 4 KiB after the superblock. 1.0: the room is the space between the data
// and the superblock, less the log (at least 8 sectors, and at least
// what reaches from the log to the superblock); the bitmap ends where the
// log begins. mdadm falls back to 3 sectors 1 KiB after a 1.0 superblock
// when less than 3 KiB are free; that is refused here. The bitmap takes
// at most 128 KiB when no chunk is asked for; the chunk is the smallest
// power of two from 4 KiB whose bits fit, and at least 64 MiB by default.
func bitmapPlace(sb *superblock.Superblock, size, chunk uint64) (offset int32, chunkBytes uint64, err error) {
	var room, bbl int64
	switch sb.Version {
	case superblock.Version11, superblock.Version12:
		if sb.DataOffset <= sb.SuperOffset {
			return 0, 0, fmt.Errorf("data offset %d is not after the superblock at %d", sb.DataOffset, sb.SuperOffset)
		}
		room = int64(sb.DataOffset - sb.SuperOffset)
		bbl = int64(sb.BBLogSize)
		if bbl != 0 {
			room = int64(sb.BBLogOffset) + bbl
		} else {
			bbl = 8
		}
		room -= 8
		offset = 8
	case superblock.Version10:
		end := sb.DataOffset + sb.DataSize
		if end > sb.SuperOffset {
			return 0, 0, fmt.Errorf("data (to sector %d) runs past the superblock at %d", end, sb.SuperOffset)
		}
		room = int64(sb.SuperOffset - end)
		bbl = max(int64(sb.BBLogSize), 8)
		if -int64(sb.BBLogOffset) > bbl {
			bbl = -int64(sb.BBLogOffset)
		}
		if room < 6 {
			return 0, 0, fmt.Errorf("%d sectors between the data and the superblock: mdadm would put the bitmap in the superblock's own 4 KiB, which is not done here", room)
		}
		offset = 0
	default:
		return 0, 0, fmt.Errorf("metadata %v", sb.Version)
	}
	room -= bbl
	if chunk == 0 && room > 256 {
		room = 256
	}
	if room <= 1 {
		return 0, 0, errors.New("no room for a bitmap")
	}
	maxBits := uint64(room*512-superblock.BitmapSize) * 8
	minChunk := uint64(4096)
	bits := size*512/minChunk + 1
	for bits > maxBits {
		minChunk *= 2
		bits = (bits + 1) / 2
	}
	switch {
	case chunk == 0:
		chunk = max(minChunk, 64<<20)
	case chunk < minChunk:
		return 0, 0, fmt.Errorf("chunk %d bytes is too small: the bitmap needs at least %d", chunk, minChunk)
	}
	if chunk > 1<<31 {
		return 0, 0, fmt.Errorf("chunk %d bytes: more than the bitmap can say", chunk)
	}
	if offset == 0 {
		bits = size*512/chunk + 1
		blocks := ((bits+7)/8 + superblock.BitmapSize + 4095) / 4096
		offset = -int32(blocks*8) - int32(bbl)
	}
	return offset, chunk, nil
}

// SetBitmap adds or removes an array's internal bitmap, as mdadm --grow
// --bitmap=internal|none. Removing is one write of "none" to
// md/bitmap/location; md drops the bitmap and clears the feature from
// the superblocks. Adding writes the new bitmap (its superblock, every
// bit set) to each in-sync member where mdadm writes it, then its offset
// to md/bitmap/location; md loads it and records it in the superblocks.
// md refuses the location write (EBUSY) while a resync, recovery,
// reshape or check runs. On a clean array md syncs nothing for the set
// bits (the array is in sync from end to end); it clears them. Each
// member is written through a descriptor opened after checking that it
// is still the array's member of that device number, whose superblock
// is still this array's, and whose bitmap area holds only zeros or an
// old bitmap of this array; a member that fails the check stops the
// change before anything is written to it.
func (m *Manager) SetBitmap(ctx context.Context, req BitmapRequest) (*BitmapResult, error) {
	p, err := m.PlanBitmap(ctx, req)
	if err != nil {
		return nil, err
	}
	res := &BitmapResult{Plan: p, Written: []string{}}
	for i, w := range p.Members {
		if err := ctx.Err(); err != nil {
			return res, bitmapFailed(res, err)
		}
		if err := m.writeMemberBitmap(p.Array, w, p.sbs[i]); err != nil {
			if len(res.Written) == 0 && errors.Is(err, ErrPlanChanged) {
				return res, refuseBitmap(p.Array, CheckBitmapRoom, err, "%v; nothing written", err)
			}
			return res, bitmapFailed(res, err)
		}
		res.Written = append(res.Written, w.Device)
	}
	if err := m.ops.k.SetBitmapLocation(p.Array, p.Location); err != nil {
		return res, bitmapFailed(res, fmt.Errorf("writing %s to bitmap/location of %s: %w", p.Location, p.Array, err))
	}
	// location_store answers once the bitmap is loaded or dropped.
	deadline := time.Now().Add(2 * time.Second)
	for {
		a, err := m.fs.Array(p.Array)
		var loc sysfs.BitmapLocation
		if err == nil {
			loc, err = a.BitmapLocation()
		}
		if err == nil && loc.String() == p.Location {
			res.Location = loc.String()
			return res, nil
		}
		if time.Now().After(deadline) {
			return res, bitmapFailed(res, fmt.Errorf("wrote %s to bitmap/location of %s, but it reads %v (%v)", p.Location, p.Array, loc, err))
		}
		if err := m.sleep(ctx, 20*time.Millisecond); err != nil {
			return res, bitmapFailed(res, err)
		}
	}
}

// bitmapFailed is the failure of a bitmap change after the plan, saying
// what was written.
func bitmapFailed(res *BitmapResult, err error) error {
	what := "nothing was written"
	if len(res.Written) > 0 {
		what = fmt.Sprintf("the new bitmap was written to %v, outside the data; md does not use it until bitmap/location is set (run the command again, or remove the array's bitmap with --bitmap=none)", res.Written)
	}
	return fmt.Errorf("md: bitmap change of %s failed: %w; %s", res.Plan.Array, err, what)
}

// writeMemberBitmap writes w to the member, after checking through the
// writing descriptor that it is still the array's member w.DevNum, that
// its superblock is still sb's array and layout, and that the area holds
// only zeros or a bitmap of this array. Its errors before the write match
// ErrPlanChanged.
func (m *Manager) writeMemberBitmap(array string, w BitmapWrite, sb *superblock.Superblock) error {
	path := m.devRoot + "/" + w.Device
	f, err := os.OpenFile(path, os.O_RDWR|oDirect, 0)
	if err != nil {
		return fmt.Errorf("%w: opening %s: %w", ErrPlanChanged, path, err)
	}
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrPlanChanged, path, err)
	}
	got := sysfs.DevNum{Major: unix.Major(uint64(st.Rdev)), Minor: unix.Minor(uint64(st.Rdev))}
	if st.Mode&unix.S_IFMT != unix.S_IFBLK || got != w.DevNum {
		return fmt.Errorf("%w: %s is device %s, the plan was made for %s", ErrPlanChanged, path, got, w.DevNum)
	}
	// Still the array's in-sync member of that device number, with the
	// device open here (md holds it: while it stays a member the device
	// cannot go away or change).
	s := m.read(array)
	ms := memberOf(s, w.Device)
	if ms == nil || ms.DevNum != w.DevNum || !ms.state.Has(sysfs.FlagInSync) || ms.state.Failed() {
		return fmt.Errorf("%w: %s is no longer an in-sync member of %s", ErrPlanChanged, w.Device, array)
	}
	if s.action != sysfs.ActionIdle {
		return fmt.Errorf("%w: sync_action of %s is %s now", ErrPlanChanged, array, s.action)
	}
	lbs, err := ioctl.LogicalBlockSize(f)
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrPlanChanged, path, err)
	}
	size, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrPlanChanged, path, err)
	}
	r := alignedReader{f: f, lbs: lbs}
	now, err := superblock.Read(r, size, sb.Version)
	if err != nil {
		return fmt.Errorf("%w: the superblock of %s cannot be read: %w", ErrPlanChanged, path, err)
	}
	if now.SetUUID != sb.SetUUID || now.SuperOffset != sb.SuperOffset || now.DataOffset != sb.DataOffset ||
		now.DataSize != sb.DataSize || now.BBLogOffset != sb.BBLogOffset || now.BBLogSize != sb.BBLogSize {
		return fmt.Errorf("%w: the superblock of %s changed since the plan", ErrPlanChanged, path)
	}
	if now.HasBitmap() {
		return fmt.Errorf("%w: the superblock of %s says the array has a bitmap now", ErrPlanChanged, path)
	}
	old := make([]byte, w.Bytes)
	if _, err := r.ReadAt(old, w.Offset); err != nil {
		return fmt.Errorf("%w: reading the bitmap area of %s: %w", ErrPlanChanged, path, err)
	}
	if !oneFill(old) || (old[0] != 0 && old[0] != 0xff) {
		bm, err := superblock.DecodeBitmap(old[:superblock.BitmapSize])
		if err != nil || bm.UUID != sb.BitmapUUID() {
			return fmt.Errorf("%w: the bitmap area of %s (%d bytes at byte %d) holds something other than zeros or a bitmap of this array", ErrPlanChanged, path, w.Bytes, w.Offset)
		}
	}
	buf := alignedBuf(len(w.data), 4096)
	copy(buf, w.data)
	start := w.Offset &^ (lbs - 1)
	if start != w.Offset || int64(len(buf))%lbs != 0 {
		return fmt.Errorf("%w: the bitmap area of %s (byte %d) is not aligned to its %d-byte blocks", ErrPlanChanged, path, w.Offset, lbs)
	}
	if _, err := f.WriteAt(buf, w.Offset); err != nil {
		return fmt.Errorf("writing the bitmap of %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("syncing %s: %w", path, err)
	}
	return readBack(f, []region{{What: "bitmap of " + path, Off: w.Offset, Data: buf}})
}
