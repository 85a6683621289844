package superblock

import (
	"fmt"
	"io"
	"math/bits"
)

// The lockless bitmap (llbitmap, bitmap version 6, Linux 6.18 and later
// when built with CONFIG_MD_LLBITMAP). Facts from md-llbitmap.c of 6.18.15,
// 7.1.8 and 7.2.8 (docs/kernels.md §4): it has the classic bitmap
// superblock, but its chunk size is in 512-byte sectors, and the chunks
// are one byte each, holding the chunk's state, from LLBitmapDataOffset
// bytes after the bitmap superblock's start, contiguous on the disk
// (llbitmap_read, llbitmap_write_page). The number of chunks is
// ceil(sync_size / chunksize) (llbitmap_read_sb).

// LLBitmapDataOffset is the distance in bytes from the start of a lockless
// bitmap's superblock to its first chunk state (BITMAP_DATA_OFFSET).
const LLBitmapDataOffset = 1024

// LLBitmapState is the state byte of one chunk of a lockless bitmap.
type LLBitmapState uint8

// The chunk states: 0 to 4 since 6.18, 5 to 7 since 7.1.
const (
	// LLUnwritten: no data written since the array was made (or the
	// chunk discarded): nothing to sync.
	LLUnwritten LLBitmapState = iota
	// LLClean: the copies (or parity) agree.
	LLClean
	// LLDirty: written; consistent once the writes in flight end.
	LLDirty
	// LLNeedSync: to be resynced (written while degraded, found dirty
	// at assembly, or a raid4/5/6 chunk's first write).
	LLNeedSync
	// LLSyncing: being resynced.
	LLSyncing
	// LLNeedSyncUnwritten, LLSyncingUnwritten and LLCleanUnwritten (7.1+):
	// the same for chunks never written, as a proactive sync marks them.
	LLNeedSyncUnwritten
	LLSyncingUnwritten
	LLCleanUnwritten
	// LLStates is the number of states; a byte at or above it is not a
	// state any kernel writes.
	LLStates
)

var llStateNames = [LLStates]string{"unwritten", "clean", "dirty", "need-sync", "syncing",
	"need-sync-unwritten", "syncing-unwritten", "clean-unwritten"}

// String returns the state's name as md's llbitmap/bits file spells it
// ("need sync" with a dash), or "invalid(N)".
func (s LLBitmapState) String() string {
	if s < LLStates {
		return llStateNames[s]
	}
	return fmt.Sprintf("invalid(%d)", uint8(s))
}

// LLChunks returns the number of chunks of the lockless bitmap bm and the
// bytes of data each covers. It fails, matching ErrInvalid, for a bitmap
// that is not version 6, or whose chunk size is 0 or not a power of two
// (the kernel refuses those).
func (bm *Bitmap) LLChunks() (chunks, chunkBytes uint64, err error) {
	if bm.Version != BitmapMajorLockless {
		return 0, 0, fmt.Errorf("%w: bitmap version %d is not the lockless bitmap's", ErrInvalid, bm.Version)
	}
	c := uint64(bm.ChunkSize)
	if c == 0 || c&(c-1) != 0 {
		return 0, 0, formatErr(offBitmapChunkSize, "llbitmap chunksize", bm.ChunkSize, fmt.Errorf("%w: not a power of two", ErrInvalid))
	}
	chunks = bm.SyncSize / c
	if bm.SyncSize%c != 0 {
		chunks++
	}
	return chunks, c * 512, nil
}

// LLBitmapCounts is how many chunks of a lockless bitmap are in each
// state; Invalid counts bytes that hold no state a kernel writes.
type LLBitmapCounts struct {
	ByState [LLStates]uint64
	Invalid uint64
}

// ToSync is the number of chunks whose copies a resync or a returning
// member's recovery would write: dirty, need-sync and syncing, written or
// not, and the invalid ones (the kernel forces a resync of those).
func (c LLBitmapCounts) ToSync() uint64 {
	return c.ByState[LLDirty] + c.ByState[LLNeedSync] + c.ByState[LLSyncing] +
		c.ByState[LLNeedSyncUnwritten] + c.ByState[LLSyncingUnwritten] + c.Invalid
}

// CountLLBitmap counts the chunk states in b, one byte per chunk.
func CountLLBitmap(b []byte) LLBitmapCounts {
	var c LLBitmapCounts
	for _, s := range b {
		if s < uint8(LLStates) {
			c.ByState[s]++
		} else {
			c.Invalid++
		}
	}
	return c
}

// ReadLLBitmap reads the chunk states of bm, the lockless bitmap of sb,
// from r (a device of size bytes) and counts them. It reads at most
// maxChunks bytes: the count comes from the disk. Errors match ErrInvalid
// (see LLChunks), ErrOutOfRange (more chunks than maxChunks, or states
// beyond the device), or are I/O errors.
func ReadLLBitmap(r io.ReaderAt, size int64, sb *Superblock, bm *Bitmap, maxChunks uint64) (LLBitmapCounts, error) {
	chunks, _, err := bm.LLChunks()
	if err != nil {
		return LLBitmapCounts{}, err
	}
	if chunks > maxChunks {
		return LLBitmapCounts{}, fmt.Errorf("%w: %d llbitmap chunks: more than %d are read", ErrOutOfRange, chunks, maxChunks)
	}
	off, err := BitmapLocation(sb)
	if err != nil {
		return LLBitmapCounts{}, err
	}
	start, carry := bits.Add64(uint64(off), LLBitmapDataOffset, 0)
	end, carry2 := bits.Add64(start, chunks, 0)
	if carry != 0 || carry2 != 0 || size < 0 || end > uint64(size) {
		return LLBitmapCounts{}, fmt.Errorf("%w: %d llbitmap chunk states at byte %d of a %d-byte device", ErrOutOfRange, chunks, start, size)
	}
	buf := make([]byte, chunks)
	if err := readFull(r, buf, int64(start)); err != nil {
		return LLBitmapCounts{}, err
	}
	return CountLLBitmap(buf), nil
}
