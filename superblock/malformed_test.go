package superblock

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"testing"

	qt "github.com/frankban/quicktest"
)

// Hand-assembled inputs for error paths: a valid superblock value is
// encoded, then a field is changed either in the value (so the checksum
// stays right and only the intended check fires) or in the bytes.

func enc1(v Version, mod func(*Superblock)) func() []byte {
	return func() []byte {
		sb := testSB1(v)
		if mod != nil {
			mod(sb)
		}
		b, err := sb.MarshalBinary()
		if err != nil {
			panic(err)
		}
		return b
	}
}

func enc090(bo binary.ByteOrder, mod func(*Superblock)) func() []byte {
	return func() []byte {
		sb := testSB090(bo)
		if mod != nil {
			mod(sb)
		}
		b, err := sb.MarshalBinary()
		if err != nil {
			panic(err)
		}
		return b
	}
}

// poke returns a builder that changes the bytes after encoding.
func poke(build func() []byte, f func([]byte) []byte) func() []byte {
	return func() []byte { return f(build()) }
}

func decodeErr(b []byte) error { _, err := Decode(b); return err }

func validateErr(devSize int64) func([]byte) error {
	return func(b []byte) error {
		sb, err := Decode(b)
		if err != nil {
			return errors.New("unexpected decode error: " + err.Error())
		}
		return sb.Validate(devSize)
	}
}

// checkKnownErr decodes b, checks that Validate accepts it, and returns
// CheckKnown's error.
func checkKnownErr(b []byte) error {
	sb, err := Decode(b)
	if err != nil {
		return errors.New("unexpected decode error: " + err.Error())
	}
	if err := sb.Validate(devSize); err != nil {
		return errors.New("unexpected validate error: " + err.Error())
	}
	return sb.CheckKnown()
}

// device places sb at byte offset at of a zeroed device of size bytes.
func device(size int, at int64, build func() []byte) func() []byte {
	return func() []byte {
		d := make([]byte, size)
		copy(d[at:], build())
		return d
	}
}

func readErr(v Version) func([]byte) error {
	return func(d []byte) error {
		_, err := Read(bytes.NewReader(d), int64(len(d)), v)
		return err
	}
}

const devSize = 4 << 20 // a 4 MiB member: 0.90 at 0x3f0000

func TestMalformed(t *testing.T) {
	le16 := binary.LittleEndian
	tests := []struct {
		name  string
		input func() []byte
		run   func([]byte) error
		want  error
		// kind is "format", "checksum" or "" (no type assertion).
		kind string
	}{
		// Truncation at every point Decode looks at.
		{"empty", func() []byte { return nil }, decodeErr, ErrTruncated, "format"},
		{"magic only", func() []byte { return []byte{0xfc, 0x4e, 0x2b, 0xa9} }, decodeErr, ErrTruncated, "format"},
		{"1.x header truncated", poke(enc1(Version12, nil), func(b []byte) []byte { return b[:Size1-1] }), decodeErr, ErrTruncated, "format"},
		{"1.x dev_roles truncated", poke(enc1(Version12, nil), func(b []byte) []byte { return b[:Size1+2*5-1] }), decodeErr, ErrTruncated, "format"},
		{"0.90 LE truncated", poke(enc090(binary.LittleEndian, nil), func(b []byte) []byte { return b[:Size090-1] }), decodeErr, ErrTruncated, "format"},
		{"0.90 BE truncated", poke(enc090(binary.BigEndian, nil), func(b []byte) []byte { return b[:off0ThisDisk] }), decodeErr, ErrTruncated, "format"},

		// Magic and version.
		{"zeros", func() []byte { return make([]byte, 4096) }, decodeErr, ErrNoSuperblock, "format"},
		{"ones", func() []byte { return bytes.Repeat([]byte{0xff}, 4096) }, decodeErr, ErrNoSuperblock, "format"},
		{"bitmap magic", func() []byte {
			b := make([]byte, 4096)
			le16.PutUint32(b, BitmapMagic)
			return b
		}, decodeErr, ErrNoSuperblock, "format"},
		{"major version 2", poke(enc1(Version12, nil), func(b []byte) []byte { le16.PutUint32(b[4:], 2); return b }), decodeErr, ErrUnsupportedVersion, "format"},
		{"big-endian 1.x", poke(enc1(Version12, nil), func(b []byte) []byte {
			binary.BigEndian.PutUint32(b, Magic)
			binary.BigEndian.PutUint32(b[4:], 1)
			return b
		}), decodeErr, ErrUnsupportedVersion, "format"},

		// Bounds checked before allocating.
		{"max_dev 1921", poke(enc1(Version12, nil), func(b []byte) []byte {
			b = append(b, make([]byte, 4096)...)
			le16.PutUint32(b[off1MaxDev:], 1921)
			return b
		}), decodeErr, ErrOutOfRange, "format"},
		{"max_dev all ones", poke(enc1(Version12, nil), func(b []byte) []byte { le16.PutUint32(b[off1MaxDev:], ^uint32(0)); return b }), decodeErr, ErrOutOfRange, "format"},

		// Checksums.
		{"1.x flipped name byte", poke(enc1(Version12, nil), func(b []byte) []byte { b[off1SetName] ^= 1; return b }), decodeErr, ErrChecksum, "checksum"},
		{"1.x flipped trailing role", poke(enc1(Version12, nil), func(b []byte) []byte { b[off1DevRoles+2*4] ^= 0x80; return b }), decodeErr, ErrChecksum, "checksum"},
		{"1.x stored checksum", poke(enc1(Version12, nil), func(b []byte) []byte { b[off1SBCsum] ^= 0x10; return b }), decodeErr, ErrChecksum, "checksum"},
		{"0.90 LE flipped byte", poke(enc090(binary.LittleEndian, nil), func(b []byte) []byte { b[off0Level] ^= 4; return b }), decodeErr, ErrChecksum, "checksum"},
		{"0.90 BE flipped reserved byte", poke(enc090(binary.BigEndian, nil), func(b []byte) []byte { b[off0PStateReserved+9] ^= 1; return b }), decodeErr, ErrChecksum, "checksum"},

		// Kernel rules, reported by Validate.
		{"unknown feature", enc1(Version12, func(sb *Superblock) { sb.Features |= 1 << 13 }), validateErr(devSize), ErrUnknownFeature, "format"},

		// Padding of a newer kernel: not damage (Validate passes, see
		// TestUnknownFields), but CheckKnown names it.
		{"pad0 non-zero", enc1(Version12, func(sb *Superblock) { sb.Pad0 = 1 }), checkKnownErr, ErrUnknownField, "format"},
		{"pad3 last byte non-zero", enc1(Version12, func(sb *Superblock) { sb.Pad3[27] = 1 }), checkKnownErr, ErrUnknownField, "format"},
		{"pad3 first byte after logical_block_size", poke(enc1(Version12, nil), func(b []byte) []byte {
			b[off1Pad3] = 7
			le16.PutUint32(b[off1SBCsum:], csum1(b[:Size1+2*5]))
			return b
		}), checkKnownErr, ErrUnknownField, "format"},
		{"data_size below 10", enc1(Version12, func(sb *Superblock) { sb.DataSize = 9 }), validateErr(devSize), ErrInvalid, "format"},
		{"bblog too large", enc1(Version12, func(sb *Superblock) { sb.Features |= FeatureBadBlocks; sb.BBLogSize = 9 }), validateErr(devSize), ErrOutOfRange, "format"},
		{"bblog at offset 0", enc1(Version12, func(sb *Superblock) { sb.Features |= FeatureBadBlocks; sb.BBLogOffset = 0 }), validateErr(devSize), ErrInvalid, "format"},
		{"raid0 layout on raid5", enc1(Version12, func(sb *Superblock) { sb.Features |= FeatureRAID0Layout }), validateErr(devSize), ErrInvalid, "format"},
		{"ppl with bitmap", enc1(Version12, func(sb *Superblock) { sb.Features |= FeaturePPL | FeatureBitmapOffset; sb.BitmapOffset = 8 }), validateErr(devSize), ErrInvalid, "format"},
		{"ppl with multiple ppls", enc1(Version12, func(sb *Superblock) { sb.Features |= FeaturePPL | FeatureMultiplePPLs; sb.SetPPL(8, 8) }), validateErr(devSize), ErrInvalid, "format"},
		{"data inside superblock", enc1(Version12, func(sb *Superblock) { sb.DataOffset = 8 }), validateErr(devSize), ErrInvalid, "format"},
		{"new offset inside superblock", enc1(Version11, func(sb *Superblock) { sb.Features |= FeatureNewOffset; sb.NewOffset = -4096 }), validateErr(devSize), ErrInvalid, "format"},
		{"data beyond device", enc1(Version12, nil), validateErr(2 << 20), ErrOutOfRange, "format"},
		{"1.0 data into superblock", enc1(Version10, func(sb *Superblock) { sb.DataSize = sb.SuperOffset + 1 }), validateErr(devSize), ErrOutOfRange, "format"},
		{"bitmap beyond device", enc1(Version12, func(sb *Superblock) { sb.Features |= FeatureBitmapOffset; sb.BitmapOffset = 1 << 30 }), validateErr(devSize), ErrOutOfRange, "format"},
		{"bitmap before device start", enc1(Version12, func(sb *Superblock) { sb.Features |= FeatureBitmapOffset; sb.BitmapOffset = -9 }), validateErr(devSize), ErrOutOfRange, "format"},
		{"0.90 minor version 89", enc090(binary.LittleEndian, func(sb *Superblock) { sb.MinorVersion = 89 }), validateErr(devSize), ErrUnsupportedVersion, "format"},
		{"0.90 raid_disks 0", enc090(binary.LittleEndian, func(sb *Superblock) { sb.RaidDisks = 0 }), validateErr(devSize), ErrOutOfRange, "format"},
		{"0.90 raid_disks negative", enc090(binary.BigEndian, func(sb *Superblock) { sb.RaidDisks = ^uint32(0) }), validateErr(devSize), ErrOutOfRange, "format"},
		{"0.90 raid_disks 28", enc090(binary.LittleEndian, func(sb *Superblock) { sb.RaidDisks = 28 }), validateErr(devSize), ErrOutOfRange, "format"},
		{"0.90 this_disk number 27", enc090(binary.LittleEndian, func(sb *Superblock) { sb.ThisDisk.Number = 27 }), validateErr(devSize), ErrOutOfRange, "format"},
		{"0.90 size beyond device", enc090(binary.LittleEndian, func(sb *Superblock) { sb.Size = devSize / 512 }), validateErr(devSize), ErrOutOfRange, "format"},

		// Locations.
		{"1.2 with super_offset 0", device(devSize, 4096, enc1(Version11, nil)), readErr(Version12), ErrWrongLocation, "format"},
		{"1.1 superblock at 1.0 location", device(1<<20, (1<<20)-8192, enc1(Version11, nil)), readErr(Version10), ErrWrongLocation, "format"},
		{"1.x superblock at 0.90 location", device(devSize, devSize-0x10000, enc1(Version10, nil)), readErr(Version090), ErrWrongLocation, "format"},
		{"0.90 superblock at 1.2 location", device(devSize, 4096, enc090(binary.LittleEndian, nil)), readErr(Version12), ErrWrongLocation, "format"},
		{"0.90 device too small", func() []byte { return make([]byte, 64<<10-1) }, readErr(Version090), ErrDeviceTooSmall, "format"},
		{"1.x device too small", func() []byte { return make([]byte, 24*512-1) }, readErr(Version12), ErrDeviceTooSmall, "format"},
		{"probe empty device", func() []byte { return make([]byte, 1<<20) }, func(d []byte) error {
			_, err := Probe(bytes.NewReader(d), int64(len(d)))
			return err
		}, ErrNoSuperblock, "format"},
		{"probe device claims more than it has", device(1<<20, 4096, enc1(Version12, nil)), func(d []byte) error {
			_, err := Read(bytes.NewReader(d[:4096+512]), int64(len(d)), Version12)
			return err
		}, ErrTruncated, "format"},

		// Bitmap, bad-block log and PPL.
		{"bitmap truncated", func() []byte { return make([]byte, BitmapSize-1) }, func(b []byte) error { _, err := DecodeBitmap(b); return err }, ErrTruncated, "format"},
		{"bitmap bad magic", func() []byte { return make([]byte, BitmapSize) }, func(b []byte) error { _, err := DecodeBitmap(b); return err }, ErrNoBitmap, "format"},
		{"bitmap version 7", func() []byte {
			b, _ := (&Bitmap{Version: 7}).MarshalBinary()
			return b
		}, func(b []byte) error { _, err := DecodeBitmap(b); return err }, ErrUnsupportedVersion, "format"},
		{"bitmap of another array", poke(device(devSize, 4096, enc1(Version12, func(sb *Superblock) {
			sb.Features |= FeatureBitmapOffset
			sb.BitmapOffset = 8
		})), func(d []byte) []byte {
			bm, _ := (&Bitmap{Version: 4, ChunkSize: 64 << 20, DaemonSleep: 5, SyncSize: 2048}).MarshalBinary()
			copy(d[8192:], bm)
			return d
		}), func(d []byte) error {
			sb, err := Read(bytes.NewReader(d), int64(len(d)), Version12)
			if err != nil {
				return err
			}
			_, err = ReadBitmap(bytes.NewReader(d), sb)
			return err
		}, ErrInvalid, "format"},
		{"bitmap chunk not a power of two", func() []byte {
			b, _ := (&Bitmap{Version: 4, ChunkSize: 3 << 20, DaemonSleep: 5}).MarshalBinary()
			return b
		}, func(b []byte) error {
			bm, err := DecodeBitmap(b)
			if err != nil {
				return err
			}
			return bm.Validate(nil)
		}, ErrInvalid, "format"},
		{"bad-block log too large to read", device(devSize, 4096, enc1(Version12, func(sb *Superblock) {
			sb.Features |= FeatureBadBlocks
			sb.BBLogSize = 101
		})), func(d []byte) error {
			sb, _ := Read(bytes.NewReader(d), int64(len(d)), Version12)
			_, err := ReadBadBlocks(bytes.NewReader(d), sb)
			return err
		}, ErrOutOfRange, "format"},
		{"bad-block log before device start", device(devSize, 4096, enc1(Version12, func(sb *Superblock) {
			sb.Features |= FeatureBadBlocks
			sb.BBLogOffset = -16
		})), func(d []byte) error {
			sb, _ := Read(bytes.NewReader(d), int64(len(d)), Version12)
			_, err := ReadBadBlocks(bytes.NewReader(d), sb)
			return err
		}, ErrOutOfRange, "format"},
		{"ppl header truncated", func() []byte { return make([]byte, PPLHeaderSize-1) }, func(b []byte) error { _, err := DecodePPL(b); return err }, ErrTruncated, "format"},
		{"ppl too many entries", func() []byte {
			b := make([]byte, PPLHeaderSize)
			le16.PutUint32(b[offPPLEntries:], PPLMaxEntries+1)
			return b
		}, func(b []byte) error { _, err := DecodePPL(b); return err }, ErrOutOfRange, "format"},
		{"ppl bad checksum", func() []byte {
			b := make([]byte, PPLHeaderSize)
			le16.PutUint32(b[offPPLChecksum:], 1)
			return b
		}, func(b []byte) error { _, err := DecodePPL(b); return err }, ErrChecksum, "format"},
		{"ppl of another array", poke(device(devSize, 4096, enc1(Version12, func(sb *Superblock) {
			sb.Features |= FeaturePPL
			sb.SetPPL(8, 2048)
		})), func(d []byte) []byte {
			h := d[8192 : 8192+PPLHeaderSize]
			le16.PutUint32(h[offPPLSignature:], 0x12345678)
			le16.PutUint32(h[offPPLChecksum:], pplChecksum(h))
			return d
		}), func(d []byte) error {
			sb, _ := Read(bytes.NewReader(d), int64(len(d)), Version12)
			_, err := ReadPPL(bytes.NewReader(d), sb)
			return err
		}, ErrInvalid, "format"},

		// Encoding values that do not fit.
		{"encode chunk not in sectors", func() []byte { return nil }, func([]byte) error {
			sb := testSB1(Version12)
			sb.ChunkSize = 1000
			_, err := sb.MarshalBinary()
			return err
		}, ErrOutOfRange, "format"},
		{"encode too many roles", func() []byte { return nil }, func([]byte) error {
			sb := testSB1(Version12)
			sb.DevRoles = make([]Role, MaxDev1+1)
			_, err := sb.MarshalBinary()
			return err
		}, ErrOutOfRange, "format"},
		{"encode 0.90 odd size", func() []byte { return nil }, func([]byte) error {
			sb := testSB090(binary.LittleEndian)
			sb.Size++
			_, err := sb.MarshalBinary()
			return err
		}, ErrOutOfRange, "format"},
		{"encode 0.90 ctime beyond 32 bits", func() []byte { return nil }, func([]byte) error {
			sb := testSB090(binary.LittleEndian)
			sb.CTime = 1 << 32
			_, err := sb.MarshalBinary()
			return err
		}, ErrOutOfRange, "format"},
		{"encode version mismatching super_offset", func() []byte { return nil }, func([]byte) error {
			sb := testSB1(Version12)
			sb.SuperOffset = 0
			_, err := sb.MarshalBinary()
			return err
		}, ErrWrongLocation, "format"},
		{"encode unknown version", func() []byte { return nil }, func([]byte) error {
			_, err := (&Superblock{}).MarshalBinary()
			return err
		}, ErrUnsupportedVersion, "format"},
		{"parse version 2.0", func() []byte { return nil }, func([]byte) error {
			_, err := ParseVersion("2.0")
			return err
		}, ErrUnsupportedVersion, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := qt.New(t)
			in := tt.input()
			orig := bytes.Clone(in)
			err := tt.run(in)
			c.Assert(err, qt.ErrorIs, tt.want)
			c.Assert(bytes.Equal(in, orig), qt.IsTrue, qt.Commentf("input modified"))
			switch tt.kind {
			case "format":
				var fe *FormatError
				c.Assert(errors.As(err, &fe), qt.IsTrue, qt.Commentf("%T %v", err, err))
				c.Assert(fe.Field, qt.Not(qt.Equals), "")
			case "checksum":
				var ce *ChecksumError
				c.Assert(errors.As(err, &ce), qt.IsTrue)
				c.Assert(ce.Superblock, qt.IsNotNil)
				c.Assert(ce.Stored, qt.Not(qt.Equals), ce.Computed)
				// The damaged value is returned too, and re-encoding
				// it repairs the checksum.
				sb, err := Decode(in)
				c.Assert(sb, qt.IsNotNil)
				c.Assert(err, qt.ErrorIs, ErrChecksum)
				fixed, err := sb.MarshalBinary()
				c.Assert(err, qt.IsNil)
				_, err = Decode(fixed)
				c.Assert(err, qt.IsNil)
			}
		})
	}
	if n := len(tests); n < 30 {
		t.Errorf("only %d malformed-input classes", n)
	}
}

// TestChecksum090Fold checks the kernel's lenient 0.90 comparison: a
// stored checksum with the same 16-bit fold is accepted by Decode, while
// ChecksumValid (mdadm's 32-bit comparison) reports the difference.
func TestChecksum090Fold(t *testing.T) {
	c := qt.New(t)
	for _, bo := range []binary.ByteOrder{binary.LittleEndian, binary.BigEndian} {
		b := mustEncode(t, testSB090(bo))
		sum := bo.Uint32(b[off0SBCsum:])
		alt := sum + 0xffff // high half +1, low half -1: same fold
		if sum&0xffff == 0 || sum>>16 == 0xffff {
			alt = sum - 0xffff
		}
		c.Assert(fold16(alt), qt.Equals, fold16(sum))
		bo.PutUint32(b[off0SBCsum:], alt)
		sb, err := Decode(b)
		c.Assert(err, qt.IsNil)
		c.Check(sb.Checksum, qt.Equals, alt)
		c.Check(sb.ComputedChecksum(), qt.Equals, sum)
		c.Check(sb.ChecksumValid(), qt.IsFalse)
	}
}

type failingReader struct{}

var errDisk = errors.New("disk on fire")

func (failingReader) ReadAt([]byte, int64) (int, error) { return 0, errDisk }

func TestReadIOError(t *testing.T) {
	c := qt.New(t)
	_, err := Read(failingReader{}, devSize, Version12)
	c.Assert(err, qt.ErrorIs, errDisk)
	res, err := Probe(failingReader{}, devSize)
	c.Assert(err, qt.ErrorIs, errDisk)
	c.Assert(res.Candidates, qt.HasLen, 4)
	c.Assert(res.Chosen, qt.Equals, -1)
	var _ io.ReaderAt = failingReader{}
}
