package md

import (
	"errors"
	"fmt"
	"math/bits"
	"path"

	"github.com/go-mdraid/mdraid/superblock"
	"github.com/go-mdraid/mdraid/sysfs"
)

// ArrayBitmap is an array's internal write-intent bitmap: where it is,
// its chunk, and how much of it is dirty, read from one member's disk as
// mdadm --examine-bitmap reads it.
type ArrayBitmap struct {
	// OffsetSectors is the bitmap's distance from the superblock in
	// 512-byte sectors (+8 after a 1.1/1.2 superblock, negative before
	// a 1.0 one; 0.90 keeps it 4 KiB after its superblock, shown as 8).
	OffsetSectors int64 `json:"offset_sectors"`
	// ChunkBytes is the data one bit covers; Chunks the number of bits
	// (the array's sync size in chunks). Zero when the bitmap could not
	// be read.
	ChunkBytes uint64 `json:"chunk_bytes,omitempty"`
	Chunks     uint64 `json:"chunks,omitempty"`
	// Dirty is how many bits are set in the on-disk bitmap of member
	// From, counted as mdadm --examine-bitmap counts them: the chunks
	// written (or being written) since the kernel last cleared them,
	// which a member coming back would resync. The kernel sets a bit on
	// the disk before it writes the chunk and clears it lazily (every
	// few daemon_sleep periods) once every member has it; while the array
	// is degraded it clears none. Nil when it was not read (Error says
	// why).
	Dirty *uint64 `json:"dirty,omitempty"`
	// From is the member read: the in-sync member in the lowest slot,
	// or for an array not started one holding the freshest superblock.
	From string `json:"from,omitempty"`
	// Version is the bitmap superblock's version (4 on Linux; 6 is the
	// lockless bitmap).
	Version uint32 `json:"version,omitempty"`
	// Lockless is, for a lockless bitmap (version 6, Linux 6.18+), how
	// many chunks are in each state; Dirty is then the chunks a resync
	// or a returning member's recovery writes (dirty, need-sync,
	// syncing, and bytes of no known state), and ChunkBytes and Chunks
	// are the lockless bitmap's.
	Lockless *LocklessBitmap `json:"lockless,omitempty"`
	// Err is why the bitmap could not be read; Error its text.
	Err   error  `json:"-"`
	Error string `json:"error,omitempty"`
}

// maxBitmapStatusRead bounds the bitmap bytes a status reads from a
// member: the size comes from the disk. mdadm reserves at most 128 KiB
// for a 1.x bitmap it creates; a bitmap of 1 MiB covers 8 Mi chunks.
const maxBitmapStatusRead = 1 << 20

// bitmapOf reads the bitmap of the snapshot's freshest superblock from
// the first member, in slot order, that is in sync and whose superblock
// is that array's, or (an array not started) that holds that freshest
// superblock; nil when the superblock says there is none.
func (m *Manager) bitmapOf(s *snapshot, newest *superblock.Superblock) *ArrayBitmap {
	if newest == nil || !newest.HasBitmap() {
		return nil
	}
	b := &ArrayBitmap{OffsetSectors: int64(newest.BitmapOffset)}
	if newest.Version == superblock.Version090 {
		b.OffsetSectors = 8
	}
	var from *memberSnap
	for i := range s.members {
		ms := &s.members[i]
		if ms.sb == nil || ms.sb.SetUUID != newest.SetUUID || !ms.state.Has(sysfs.FlagInSync) || ms.state.Failed() {
			continue
		}
		if from == nil || (ms.Slot >= 0 && (from.Slot < 0 || ms.Slot < from.Slot)) {
			from = ms
		}
	}
	if from == nil {
		// An array that is not started has no in-sync member: read a
		// member holding the freshest superblock, whose bitmap is the
		// array's as it was left.
		for i := range s.members {
			ms := &s.members[i]
			if ms.sb == nil || ms.sb.SetUUID != newest.SetUUID || ms.sb.Events != newest.Events || ms.state.Failed() {
				continue
			}
			if from == nil || (ms.Slot >= 0 && (from.Slot < 0 || ms.Slot < from.Slot)) {
				from = ms
			}
		}
	}
	if from == nil {
		b.setErr(errors.New("no superblock of an in-sync member, nor the freshest one, was read"))
		return b
	}
	b.From = from.Device
	val, err := m.reads.do(path.Join(m.devRoot, from.Device)+" bitmap", func() (any, error) {
		return m.readBitmapNow(from.Device, from.sb)
	})
	if r, ok := val.(bitmapRead); ok {
		b.Version, b.ChunkBytes, b.Chunks, b.Lockless = r.version, r.chunk, r.chunks, r.lockless
		if err == nil {
			d := r.dirty
			b.Dirty = &d
		}
	}
	if err != nil {
		b.setErr(err)
	}
	return b
}

// LocklessBitmap counts the chunks of a lockless bitmap by state, read
// from the member's disk (md-llbitmap.c: one state byte a chunk).
type LocklessBitmap struct {
	Unwritten uint64 `json:"unwritten"`
	Clean     uint64 `json:"clean"`
	Dirty     uint64 `json:"dirty"`
	NeedSync  uint64 `json:"need_sync"`
	Syncing   uint64 `json:"syncing"`
	// The states of chunks never written that a proactive sync marks
	// (Linux 7.1+).
	NeedSyncUnwritten uint64 `json:"need_sync_unwritten"`
	SyncingUnwritten  uint64 `json:"syncing_unwritten"`
	CleanUnwritten    uint64 `json:"clean_unwritten"`
	// Invalid counts bytes that hold no state a kernel writes.
	Invalid uint64 `json:"invalid"`
	// FirstUse: the bitmap was created and not yet started: the first
	// start sets every chunk (unwritten, or clean with --assume-clean).
	FirstUse bool `json:"first_use"`
}

func locklessOf(c superblock.LLBitmapCounts, state superblock.BitmapState) *LocklessBitmap {
	b := c.ByState
	return &LocklessBitmap{Unwritten: b[superblock.LLUnwritten], Clean: b[superblock.LLClean], Dirty: b[superblock.LLDirty],
		NeedSync: b[superblock.LLNeedSync], Syncing: b[superblock.LLSyncing], NeedSyncUnwritten: b[superblock.LLNeedSyncUnwritten],
		SyncingUnwritten: b[superblock.LLSyncingUnwritten], CleanUnwritten: b[superblock.LLCleanUnwritten], Invalid: c.Invalid,
		FirstUse: state&superblock.BitmapFirstUse != 0}
}

func (b *ArrayBitmap) setErr(err error) {
	b.Err = &readError{"bitmap", err}
	b.Error = b.Err.Error()
}

// bitmapRead is what readBitmapNow found.
type bitmapRead struct {
	version       uint32
	chunk, chunks uint64
	dirty         uint64
	lockless      *LocklessBitmap
}

// readBitmapNow reads the bitmap superblock of sb and its bits from the
// member kname and counts the dirty bits.
func (m *Manager) readBitmapNow(kname string, sb *superblock.Superblock) (bitmapRead, error) {
	dev, size, err := m.openSized(kname)
	if err != nil {
		return bitmapRead{}, err
	}
	defer dev.Close()
	bm, err := superblock.ReadBitmap(dev, sb)
	if err != nil {
		return bitmapRead{}, err
	}
	r := bitmapRead{version: bm.Version, chunk: uint64(bm.ChunkSize), chunks: bm.Bits()}
	if bm.Version == superblock.BitmapMajorLockless {
		r.chunks, r.chunk, err = bm.LLChunks()
		if err != nil {
			return bitmapRead{version: bm.Version}, err
		}
		c, err := superblock.ReadLLBitmap(dev, size, sb, bm, maxBitmapStatusRead)
		if err != nil {
			return r, err
		}
		r.dirty, r.lockless = c.ToSync(), locklessOf(c, bm.State)
		return r, nil
	}
	if err := bm.Validate(sb); err != nil {
		return r, err
	}
	if r.chunks > 8*maxBitmapStatusRead {
		return r, fmt.Errorf("%w: %d bitmap bits: more than a status reads (%d bytes)", superblock.ErrOutOfRange, r.chunks, maxBitmapStatusRead)
	}
	n := (r.chunks + 7) / 8
	off, err := superblock.BitmapLocation(sb)
	if err != nil {
		return r, err
	}
	off += superblock.BitmapSize
	if off < 0 || n > uint64(size) || uint64(off) > uint64(size)-n {
		return r, fmt.Errorf("%w: %d bitmap bytes at byte %d of a %d-byte device", superblock.ErrOutOfRange, n, off, size)
	}
	buf := make([]byte, n)
	if _, err := dev.ReadAt(buf, off); err != nil {
		return r, err
	}
	r.dirty = countDirty(buf, r.chunks)
	return r, nil
}

// countDirty counts the set bits among the first nbits of buf, the low
// bits of a partial last byte first (mdadm's count_dirty_bits).
func countDirty(buf []byte, nbits uint64) uint64 {
	var n uint64
	full := nbits / 8
	for _, c := range buf[:full] {
		n += uint64(bits.OnesCount8(c))
	}
	if r := nbits % 8; r != 0 {
		n += uint64(bits.OnesCount8(buf[full] & (1<<r - 1)))
	}
	return n
}
