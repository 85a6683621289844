package superblock

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"math"
	"math/big"
	"testing"

	"github.com/go-mdraid/mdraid/superblock/superblocktest"
)

// The targets below cover the structures a superblock points at: the
// bitmap superblock, the PPL header and the bad-block log, decoded from
// bytes and read through the offsets a (hostile) superblock gives.

// maxHeaderDevice bounds the device images FuzzReadHeaders looks at.
const maxHeaderDevice = 64 << 10

// realRegions returns, for every real image whose best superblock points
// at a bitmap, PPL or bad-block log, the bytes found there.
func realRegions(f *testing.F) (bitmaps, ppls, bblogs [][]byte) {
	f.Helper()
	for _, img := range superblocktest.Images(f) {
		res, err := Probe(img.ReaderAt, img.Size)
		if err != nil || res.Best() == nil {
			continue
		}
		sb := res.Best().Superblock
		if off, err := BitmapLocation(sb); err == nil {
			b := make([]byte, BitmapSize)
			if readFull(img.ReaderAt, b, off) == nil {
				bitmaps = append(bitmaps, b)
			}
		}
		if sb.HasPPL() {
			if off, err := sectorOffset(sb.SuperOffset, int64(sb.PPLOffset()), 0, ""); err == nil {
				b := make([]byte, PPLHeaderSize)
				if readFull(img.ReaderAt, b, off) == nil {
					ppls = append(ppls, b)
				}
			}
		}
		if off, n, ok, err := BadBlockLogLocation(sb); err == nil && ok && n <= maxBBLogRead*512 {
			b := make([]byte, n)
			if readFull(img.ReaderAt, b, off) == nil {
				bblogs = append(bblogs, b)
			}
		}
	}
	return bitmaps, ppls, bblogs
}

// pplSeed returns a valid PPL header with n entries for the UUID of
// testSB1 (no real capture has a PPL).
func pplSeed(n int) []byte {
	b := bytes.Repeat([]byte{0xff}, PPLHeaderSize)
	binary.LittleEndian.PutUint32(b[offPPLSignature:], PPLSignature(testSB1(Version12).SetUUID))
	binary.LittleEndian.PutUint32(b[offPPLPadding:], 0)
	binary.LittleEndian.PutUint64(b[offPPLGeneration:], 7)
	binary.LittleEndian.PutUint32(b[offPPLEntries:], uint32(n))
	for i := 0; i < n; i++ {
		e := b[offPPLEntry0+i*pplEntrySize:]
		binary.LittleEndian.PutUint64(e, uint64(i)*128)
		binary.LittleEndian.PutUint32(e[8:], 4096)
		binary.LittleEndian.PutUint32(e[12:], 8192)
		binary.LittleEndian.PutUint32(e[16:], uint32(i%3))
		binary.LittleEndian.PutUint32(e[20:], 0x12345678)
	}
	binary.LittleEndian.PutUint32(b[offPPLChecksum:], pplChecksum(b))
	return b
}

// bitmapSeed is the bitmap superblock of a typical 1.2 member, for when
// the real captures are not available.
func bitmapSeed() []byte {
	bm := &Bitmap{Version: BitmapMajorHi, UUID: testSB1(Version12).SetUUID, Events: 42, EventsCleared: 40,
		SyncSize: 2048, ChunkSize: 64 << 20, DaemonSleep: 5}
	b, err := bm.MarshalBinary()
	if err != nil {
		panic(err)
	}
	return b
}

// FuzzDecodeBitmap: DecodeBitmap never panics or modifies its input,
// fails only with its documented sentinels, and what it decodes encodes
// back to the same 256 bytes (every byte of bitmap_super_t has a field).
// Bits, Size and Validate are total.
func FuzzDecodeBitmap(f *testing.F) {
	bitmaps, _, _ := realRegions(f)
	for _, b := range append(bitmaps, bitmapSeed()) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > 2*BitmapSize {
			return
		}
		orig := bytes.Clone(b)
		bm, err := DecodeBitmap(b)
		if !bytes.Equal(b, orig) {
			t.Fatal("DecodeBitmap modified its input")
		}
		if err != nil {
			if bm != nil {
				t.Fatalf("value returned with %v", err)
			}
			if !errors.Is(err, ErrTruncated) && !errors.Is(err, ErrNoBitmap) && !errors.Is(err, ErrUnsupportedVersion) {
				t.Fatalf("undocumented error: %v", err)
			}
			return
		}
		enc, err := bm.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(enc, b[:BitmapSize]) {
			t.Fatalf("encode(decode(b)) != b[:%d]", BitmapSize)
		}
		checkBits(t, bm)
		if err := bm.Validate(testSB1(Version12)); err != nil && !errors.Is(err, ErrInvalid) && !errors.Is(err, ErrOutOfRange) {
			t.Fatalf("Validate: undocumented error: %v", err)
		}
		_ = bm.State.String()
	})
}

// checkBits checks Bits and Size against arbitrary-precision arithmetic.
func checkBits(t *testing.T, bm *Bitmap) {
	t.Helper()
	got := bm.Bits()
	if bm.ChunkSize == 0 {
		if got != 0 {
			t.Fatalf("Bits with chunk size 0 = %d", got)
		}
		return
	}
	// ceil(SyncSize*512 / ChunkSize), saturated.
	want := new(big.Int).SetUint64(bm.SyncSize)
	want.Mul(want, big.NewInt(512))
	want.Add(want, new(big.Int).SetUint64(uint64(bm.ChunkSize)-1))
	want.Div(want, new(big.Int).SetUint64(uint64(bm.ChunkSize)))
	if !want.IsUint64() {
		want.SetUint64(math.MaxUint64)
	}
	if got != want.Uint64() {
		t.Fatalf("Bits = %d, want %d (sync %d, chunk %d)", got, want.Uint64(), bm.SyncSize, bm.ChunkSize)
	}
	if s := bm.Size(4096); s < BitmapSize || (s != math.MaxUint64 && s%4096 != 0) {
		t.Fatalf("Size(4096) = %d", s)
	}
	if s := bm.Size(0); s < BitmapSize {
		t.Fatalf("Size(0) = %d", s)
	}
}

// naivePPLChecksum is ~crc32c(~0, header) with the checksum zeroed in a
// copy.
func naivePPLChecksum(b []byte) uint32 {
	c := bytes.Clone(b[:PPLHeaderSize])
	binary.LittleEndian.PutUint32(c[offPPLChecksum:], 0)
	return crc32.Checksum(c, crc32.MakeTable(crc32.Castagnoli))
}

// FuzzDecodePPL: DecodePPL never panics or modifies its input, fails
// only with its documented sentinels (a checksum mismatch returns the
// header too), decodes exactly entries_count entries at their offsets, and
// its checksum agrees with the obvious computation.
func FuzzDecodePPL(f *testing.F) {
	_, ppls, _ := realRegions(f)
	for _, b := range append(ppls, pplSeed(0), pplSeed(3), pplSeed(PPLMaxEntries)) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > 2*PPLHeaderSize {
			return
		}
		orig := bytes.Clone(b)
		h, err := DecodePPL(b)
		if !bytes.Equal(b, orig) {
			t.Fatal("DecodePPL modified its input")
		}
		switch {
		case err == nil:
		case errors.Is(err, ErrChecksum):
			if h == nil {
				t.Fatal("checksum error without the header")
			}
		case errors.Is(err, ErrTruncated), errors.Is(err, ErrOutOfRange):
			if h != nil {
				t.Fatalf("header returned with %v", err)
			}
			return
		default:
			t.Fatalf("undocumented error: %v", err)
		}
		if (err == nil) != (naivePPLChecksum(b) == binary.LittleEndian.Uint32(b[offPPLChecksum:])) {
			t.Fatalf("checksum verdict %v disagrees with the naive checksum %#x", err, naivePPLChecksum(b))
		}
		if uint32(len(h.Entries)) != h.EntriesCount || h.EntriesCount > PPLMaxEntries {
			t.Fatalf("%d entries for entries_count %d", len(h.Entries), h.EntriesCount)
		}
		for i, e := range h.Entries {
			raw := b[offPPLEntry0+i*pplEntrySize:]
			if e.DataSector != binary.LittleEndian.Uint64(raw) || e.Checksum != binary.LittleEndian.Uint32(raw[20:]) {
				t.Fatalf("entry %d = %+v does not match its bytes", i, e)
			}
		}
	})
}

// FuzzReadHeaders points a 1.2 superblock with fuzzed geometry (bitmap
// offset, PPL offset and size, bad-block log offset, size and shift) at a
// fuzzed device and reads all three structures: no panic, no allocation
// beyond what the package bounds, and only the documented errors.
func FuzzReadHeaders(f *testing.F) {
	bitmaps, ppls, bblogs := realRegions(f)
	add := func(region []byte, bm, ppl int16, bbOff int16, bbSize uint16, shift uint8, feat uint16) {
		// SuperOffset is 8: regions go at (8+offset)*512.
		dev := make([]byte, 16<<10)
		for _, o := range []int16{bm, ppl, bbOff} {
			if at := (8 + int(o)) * 512; at >= 0 && at < len(dev) {
				copy(dev[at:], region)
			}
		}
		f.Add(dev, bm, ppl, uint16(8), bbOff, bbSize, shift, feat)
	}
	for _, b := range append(bitmaps, bitmapSeed()) {
		add(b, 8, 0, 0, 0, 0, uint16(FeatureBitmapOffset))
	}
	for _, b := range append(ppls, pplSeed(2)) {
		add(b, 0, 8, 0, 0, 0, uint16(FeaturePPL))
	}
	log, err := AppendBadBlocks(nil, []BadBlock{{Sector: 10240, Length: 8}, {Sector: 20480, Length: 16}}, 0, 4096)
	if err != nil {
		f.Fatal(err)
	}
	for _, b := range append(bblogs, log) {
		add(b, 0, 0, 16, 8, 0, uint16(FeatureBadBlocks))
	}
	f.Fuzz(func(t *testing.T, dev []byte, bmOff, pplOff int16, pplSize uint16, bbOff int16, bbSize uint16, shift uint8, feat uint16) {
		if len(dev) > maxHeaderDevice {
			return
		}
		sb := testSB1(Version12)
		sb.Features = FeatureMap(feat) & (FeatureBitmapOffset | FeatureBadBlocks | FeaturePPL | FeatureMultiplePPLs)
		sb.BitmapOffset = int32(bmOff)
		if sb.HasPPL() {
			sb.SetPPL(pplOff, pplSize)
		}
		sb.BBLogOffset, sb.BBLogSize, sb.BBLogShift = int32(bbOff), bbSize, shift
		r := bytes.NewReader(dev)
		documented := func(what string, err error, sentinels ...error) {
			t.Helper()
			if err == nil {
				return
			}
			for _, s := range sentinels {
				if errors.Is(err, s) {
					return
				}
			}
			t.Fatalf("%s: undocumented error: %v", what, err)
		}
		bm, err := ReadBitmap(r, sb)
		documented("ReadBitmap", err, ErrNoBitmap, ErrTruncated, ErrOutOfRange, ErrUnsupportedVersion, ErrInvalid)
		if bm != nil {
			checkBits(t, bm)
			_ = bm.Validate(sb)
			_, _ = sb.UnusedSpace(int64(len(dev)), bm)
		}
		h, err := ReadPPL(r, sb)
		documented("ReadPPL", err, ErrNoPPL, ErrTruncated, ErrOutOfRange, ErrChecksum, ErrInvalid)
		if h != nil && uint32(len(h.Entries)) != h.EntriesCount {
			t.Fatalf("%d PPL entries for entries_count %d", len(h.Entries), h.EntriesCount)
		}
		bbs, err := ReadBadBlocks(r, sb)
		documented("ReadBadBlocks", err, ErrTruncated, ErrOutOfRange)
		if len(bbs) > int(bbSize)*512/8 {
			t.Fatalf("%d bad blocks from a log of %d sectors", len(bbs), bbSize)
		}
		for _, bb := range bbs {
			if shift < 64 && (bb.Sector%(1<<shift) != 0 || bb.Length%(1<<shift) != 0) {
				t.Fatalf("bad block %+v not in units of 1<<%d", bb, shift)
			}
		}
	})
}
