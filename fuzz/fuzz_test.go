package fuzz

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/go-mdraid/mdraid/superblock"
	"github.com/go-mdraid/mdraid/superblock/superblocktest"
)

// maxInput bounds what the targets look at, to keep memory bounded.
const (
	maxInput      = 1 << 20
	maxProbeInput = 128 << 10
)

// exampleValues are superblock values built through the exported API, one
// per format, encoded as seeds.
func exampleValues() []*superblock.Superblock {
	sb1 := &superblock.Superblock{
		Version:      superblock.Version12,
		SetUUID:      uuid.MustParse("6a1c2f9e-0b7d-4c36-9d0e-51f2a3b4c5d6"),
		CTime:        superblock.PackTime(time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC)),
		Level:        superblock.LevelRAID10,
		Layout:       0x102,
		Size:         2048,
		ChunkSize:    512 << 10,
		RaidDisks:    4,
		Features:     superblock.FeatureBitmapOffset | superblock.FeatureBadBlocks | superblock.FeatureReshapeActive,
		BitmapOffset: 8,
		DeltaDisks:   -1,
		DataOffset:   4096,
		DataSize:     2048,
		SuperOffset:  8,
		BBLogSize:    8,
		BBLogOffset:  4080,
		DevNumber:    2,
		Events:       42,
		ResyncOffset: 100,
		// As Linux 6.19+ writes it, plus a word of a future field.
		LogicalBlockSize: 512,
		Pad3:             [28]byte{4: 1},
		DevRoles:         []superblock.Role{0, 1, 2, 3, superblock.RoleSpare},
	}
	sb10 := sb1.Clone()
	sb10.Version, sb10.SuperOffset, sb10.DataOffset = superblock.Version10, 8176, 0
	sb10.Features = superblock.FeaturePPL
	sb10.SetPPL(-2048, 2048)
	sb0 := &superblock.Superblock{
		Version:      superblock.Version090,
		MinorVersion: 91,
		Level:        superblock.LevelRAID5,
		Layout:       2,
		Size:         4096,
		ChunkSize:    64 << 10,
		RaidDisks:    3,
		DeltaDisks:   1,
		State:        superblock.ArrayBitmapPresent,
		Events:       1<<32 + 3,
		ThisDisk:     superblock.Descriptor{Number: 1, RaidDisk: 1, State: superblock.DiskActive | superblock.DiskSync},
	}
	return []*superblock.Superblock{sb1, sb10, sb0}
}

// seedBlocks returns 4 KiB superblock blocks from the real images (when
// present) and the encoded example values.
func seedBlocks(f *testing.F) [][]byte {
	var out [][]byte
	for _, img := range superblocktest.Images(f) {
		res, err := superblock.Probe(img.ReaderAt, img.Size)
		if err != nil {
			continue
		}
		for _, c := range res.Candidates {
			b := make([]byte, superblock.BlockSize)
			if _, err := img.ReaderAt.ReadAt(b, c.Offset); err == nil {
				out = append(out, b)
			}
		}
	}
	for _, sb := range exampleValues() {
		b, err := sb.MarshalBinary()
		if err != nil {
			f.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

// exercise calls everything examine would on a decoded value; none of it
// may panic.
func exercise(sb *superblock.Superblock, devSize int64) {
	_, _ = sb.ArrayState()
	_ = sb.RoleText()
	_ = sb.StateText()
	_ = sb.LayoutName()
	_, _ = sb.ArraySize()
	_ = sb.Created()
	_ = sb.Updated()
	_, _ = sb.UnusedSpace(devSize, nil)
	_, _ = sb.UnusedSpace(devSize, &superblock.Bitmap{ChunkSize: 1, SyncSize: ^uint64(0)})
	_ = sb.Validate(devSize)
	_ = sb.Name()
	_ = sb.Homehost()
	_ = sb.Features.String()
	_ = sb.Level.String()
	_ = sb.ComputedChecksum()
	for _, f := range sb.UnknownFields() {
		_ = f.String()
	}
	_ = sb.CheckKnown()
}

func FuzzDecode(f *testing.F) {
	for _, b := range seedBlocks(f) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > maxInput {
			return
		}
		orig := bytes.Clone(b)
		sb, err := superblock.Decode(b)
		if !bytes.Equal(b, orig) {
			t.Fatal("Decode modified its input")
		}
		if sb == nil {
			if err == nil {
				t.Fatal("nil superblock without error")
			}
			return
		}
		if err != nil && !errors.Is(err, superblock.ErrChecksum) {
			t.Fatalf("value returned with a non-checksum error: %v", err)
		}
		exercise(sb, int64(len(b)))
	})
}

func FuzzProbe(f *testing.F) {
	for _, b := range seedBlocks(f) {
		// A 16 KiB device with the block at the 1.2 location; for 0.90
		// blocks one of 64 KiB, where the 0.90 and 1.1 locations are
		// both 0.
		dev := make([]byte, 16<<10)
		copy(dev[4096:], b)
		f.Add(dev, uint16(0))
		if bytes.Equal(b[4:8], []byte{0, 0, 0, 0}) {
			dev = make([]byte, 64<<10)
			copy(dev, b)
			f.Add(dev, uint16(3))
		}
	}
	f.Fuzz(func(t *testing.T, dev []byte, extraSectors uint16) {
		if len(dev) > maxProbeInput {
			return
		}
		size := int64(len(dev)) + int64(extraSectors)*512
		r := bytes.NewReader(dev)
		res, err := superblock.Probe(r, size)
		if res == nil {
			t.Fatal("nil result")
		}
		if err == nil && len(res.Candidates) == 0 {
			t.Fatal("no candidates without error")
		}
		for _, c := range res.Candidates {
			if c.Superblock == nil {
				continue
			}
			exercise(c.Superblock, size)
			if bm, err := superblock.ReadBitmap(r, c.Superblock); err == nil || bm != nil {
				_ = bm.Bits()
				_ = bm.Size(4096)
				_ = bm.Validate(c.Superblock)
				_, _ = c.Superblock.UnusedSpace(size, bm)
			}
			_, _ = superblock.ReadBadBlocks(r, c.Superblock)
			_, _ = superblock.ReadPPL(r, c.Superblock)
		}
		if best := res.Best(); best != nil && !best.Usable() {
			t.Fatalf("chosen candidate is not usable: %v", best.Err)
		}
	})
}

func FuzzRoundTrip(f *testing.F) {
	for _, b := range seedBlocks(f) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > maxInput {
			return
		}
		sb1, err := superblock.Decode(b)
		if sb1 == nil {
			return
		}
		decodedClean := err == nil
		enc1, err := sb1.MarshalBinary()
		if err != nil {
			t.Fatalf("encoding a decoded superblock: %v", err)
		}
		sb2, err := superblock.Decode(enc1)
		if err != nil {
			t.Fatalf("decoding an encoded superblock: %v", err)
		}
		// The checksum is recomputed on encoding; everything else must
		// survive.
		if decodedClean && sb1.Checksum == sb2.Checksum {
			n := superblock.Size090
			if sb1.Version != superblock.Version090 {
				n = superblock.Size1 + 2*sb1.MaxDev()
			}
			if !bytes.Equal(enc1[:n], b[:n]) {
				t.Fatalf("encode(decode(b)) differs from b over %d checksummed bytes", n)
			}
		}
		sb1.Checksum = sb2.Checksum
		if !reflect.DeepEqual(sb1, sb2) {
			t.Fatalf("decode(encode(sb)) != sb:\n%+v\n%+v", sb1, sb2)
		}
		enc2, err := sb2.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(enc1, enc2) {
			t.Fatal("second and third encodings differ")
		}
		var reuse superblock.Superblock
		reuse.DevRoles = make([]superblock.Role, 3, 4)
		if err := reuse.UnmarshalBinary(enc2); err != nil || !reflect.DeepEqual(&reuse, sb2) {
			t.Fatalf("UnmarshalBinary into a reused value: %v", err)
		}
	})
}
