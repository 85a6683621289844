package superblock

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	qt "github.com/frankban/quicktest"

	"github.com/go-mdraid/mdraid/superblock/superblocktest"
)

// realBlock1 returns the 1.2 superblock block of a real capture (made on
// Linux 6.1, so logical_block_size is 0) and the device size.
func realBlock1(t *testing.T) ([]byte, int64) {
	t.Helper()
	img := superblocktest.ByName(t, "fixtures/raid1-v1.2/vda")
	b := readBlock(t, img, 4096)
	return b, img.Size
}

// setWord stores v at off of a 1.x superblock block and fixes the
// checksum, as a kernel writing that word would.
func setWord(b []byte, off int, v uint32) []byte {
	b = bytes.Clone(b)
	binary.LittleEndian.PutUint32(b[off:], v)
	n, err := size1(b)
	if err != nil {
		panic(err)
	}
	binary.LittleEndian.PutUint32(b[off1SBCsum:], csum1(b[:n]))
	return b
}

// TestLogicalBlockSize decodes a real superblock with logical_block_size
// set the way Linux 6.19+ writes it (7.2.13 writes 00 02 00 00 at byte
// 224): it is valid, known, and encodes back to the same bytes.
func TestLogicalBlockSize(t *testing.T) {
	orig, size := realBlock1(t)
	for _, lbs := range []uint32{512, 4096, 65536} {
		c := qt.New(t)
		b := setWord(orig, 224, lbs)
		sb, err := Decode(b)
		c.Assert(err, qt.IsNil)
		c.Check(sb.LogicalBlockSize, qt.Equals, lbs)
		c.Check(sb.Pad3, qt.Equals, [28]byte{})
		c.Check(sb.Validate(size), qt.IsNil)
		c.Check(sb.UnknownFields(), qt.IsNil)
		c.Check(sb.CheckKnown(), qt.IsNil)
		enc, err := sb.MarshalBinary()
		c.Assert(err, qt.IsNil)
		n, _ := size1(b)
		c.Check(bytes.Equal(enc[:n], b[:n]), qt.IsTrue)
	}
	// A value no kernel can run with still decodes and validates: the
	// kernel imports it (and refuses only to run the array).
	for _, lbs := range []uint32{1000, 256, 128 << 10} {
		sb, err := Decode(setWord(orig, 224, lbs))
		qt.Assert(t, err, qt.IsNil)
		qt.Check(t, sb.Validate(size), qt.IsNil)
		qt.Check(t, ValidLogicalBlockSize(lbs), qt.IsFalse)
	}
	sb, err := Decode(orig)
	qt.Assert(t, err, qt.IsNil)
	qt.Check(t, sb.LogicalBlockSize, qt.Equals, uint32(0))
}

// TestUnknownFields: non-zero padding decodes and validates, and is
// reported word by word with its name, offset and value.
func TestUnknownFields(t *testing.T) {
	orig, size := realBlock1(t)
	tests := []struct {
		name string
		b    []byte
		want []UnknownField
	}{
		{"pad0", setWord(orig, 12, 0x10), []UnknownField{{Name: "pad0", Offset: 12, Value: 0x10}}},
		{"pad3 first word", setWord(orig, 228, 2), []UnknownField{{Name: "pad3", Offset: 228, Value: 2}}},
		{"pad3 last word and logical_block_size", setWord(setWord(orig, 224, 4096), 252, 0x01000000), []UnknownField{{Name: "pad3", Offset: 252, Value: 0x01000000}}},
		{"pad0 and pad3", setWord(setWord(orig, 12, 1), 240, 3), []UnknownField{{Name: "pad0", Offset: 12, Value: 1}, {Name: "pad3", Offset: 240, Value: 3}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := qt.New(t)
			sb, err := Decode(tt.b)
			c.Assert(err, qt.IsNil)
			c.Check(sb.Validate(size), qt.IsNil)
			c.Check(sb.UnknownFields(), qt.DeepEquals, tt.want)
			err = sb.CheckKnown()
			c.Assert(err, qt.ErrorIs, ErrUnknownField)
			var fe *FormatError
			c.Assert(errors.As(err, &fe), qt.IsTrue)
			c.Check(fe.Field, qt.Equals, tt.want[0].Name)
			c.Check(fe.Offset, qt.Equals, tt.want[0].Offset)
			for _, f := range tt.want {
				c.Check(err.Error(), qt.Contains, f.Name)
			}
			// The words survive a round trip and a clone.
			enc, err := sb.MarshalBinary()
			c.Assert(err, qt.IsNil)
			again, err := Decode(enc)
			c.Assert(err, qt.IsNil)
			c.Check(again.UnknownFields(), qt.DeepEquals, tt.want)
			c.Check(sb.Clone().UnknownFields(), qt.DeepEquals, tt.want)
		})
	}
	c := qt.New(t)
	c.Check(UnknownField{Name: "pad3", Offset: 0xe8, Value: 2}.String(), qt.Equals, "pad3 word at byte 0xe8 = 0x2")
	// 0.90 reserved words are not 1.x padding.
	sb := testSB090(binary.LittleEndian)
	sb.Reserved090 = &Reserved090{}
	sb.Reserved090.Generic[3] = 9
	c.Check(sb.UnknownFields(), qt.IsNil)
	c.Check(sb.CheckKnown(), qt.IsNil)
}

func TestValidLogicalBlockSize(t *testing.T) {
	c := qt.New(t)
	for lbs, want := range map[uint32]bool{
		0: false, 1: false, 256: false, 511: false, 512: true, 1000: false, 1024: true,
		2048: true, 4096: true, 8192: true, 65536: true, 65537: false, 131072: false, 1 << 31: false,
	} {
		c.Check(ValidLogicalBlockSize(lbs), qt.Equals, want, qt.Commentf("%d", lbs))
	}
}
