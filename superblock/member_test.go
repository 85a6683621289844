package superblock

import (
	"encoding/binary"
	"errors"
	"testing"

	qt "github.com/frankban/quicktest"
	"github.com/google/uuid"
)

func TestReshaping(t *testing.T) {
	tests := []struct {
		name string
		edit func(*Superblock)
		v090 bool
		want bool
	}{
		{name: "1.2 idle", edit: func(*Superblock) {}},
		{name: "1.2 reshape active", edit: func(sb *Superblock) { sb.Features |= FeatureReshapeActive }, want: true},
		{name: "1.2 position without the feature", edit: func(sb *Superblock) { sb.ReshapePosition = 1024 }},
		{name: "0.90 minor 90", v090: true, edit: func(sb *Superblock) { sb.ReshapePosition = 1024 }},
		{name: "0.90 minor 91 reshaping", v090: true, edit: func(sb *Superblock) { sb.MinorVersion = 91; sb.ReshapePosition = 1024 }, want: true},
		{name: "0.90 minor 91 no position", v090: true, edit: func(sb *Superblock) { sb.MinorVersion = 91; sb.ReshapePosition = ^uint64(0) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sb := testSB1(Version12)
			if tt.v090 {
				sb = testSB090(binary.LittleEndian)
			}
			tt.edit(sb)
			qt.Assert(t, sb.Reshaping(), qt.Equals, tt.want)
		})
	}
}

func TestDataStartRoom(t *testing.T) {
	c := qt.New(t)
	sb := testSB1(Version12)
	c.Check(sb.DataStart(), qt.Equals, uint64(4096))
	c.Check(sb.DataRoom(), qt.Equals, uint64(2048))
	sb090 := testSB090(binary.BigEndian)
	sb090.DataOffset = 77 // not a 0.90 field: ignored
	sb090.DiskOffset = 64 << 20
	c.Check(sb090.DataStart(), qt.Equals, uint64(0))
	c.Check(sb090.DataRoom(), qt.Equals, uint64(64<<20/512))
}

// TestNewMember: the fields a new member gets, and that the source is
// left alone.
func TestNewMember(t *testing.T) {
	const size = 8 << 20
	devUUID := uuid.MustParse("11111111-2222-3333-4444-555555555555")
	for _, v := range []Version{Version10, Version11, Version12} {
		t.Run(v.String(), func(t *testing.T) {
			c := qt.New(t)
			src := testSB1(v)
			src.Features |= FeatureBadBlocks | FeatureRecoveryOffset
			src.RecoveryOffset = 99
			src.DevFlags = DevFlags(1)
			src.CntCorrectedRead = 3
			if v == Version10 {
				src.SuperOffset = 2048 + 32 // 32 sectors of gap
			}
			before := src.Clone()
			sb, err := src.NewMember(size, 7, devUUID, 8, 32)
			c.Assert(err, qt.IsNil)
			c.Check(src, qt.DeepEquals, before)
			off, _ := v.Offset(size)
			c.Check(sb.DiskOffset, qt.Equals, off)
			c.Check(sb.SuperOffset, qt.Equals, uint64(off/512))
			c.Check(sb.Events, qt.Equals, uint64(0))
			c.Check(sb.DevNumber, qt.Equals, uint32(7))
			c.Check(sb.DeviceUUID, qt.Equals, devUUID)
			c.Check(sb.DevFlags, qt.Equals, DevFlags(0))
			c.Check(sb.RecoveryOffset, qt.Equals, uint64(0))
			c.Check(sb.CntCorrectedRead, qt.Equals, uint32(0))
			c.Check(sb.Features&(FeatureBadBlocks|FeatureRecoveryOffset), qt.Equals, FeatureMap(0))
			c.Assert(sb.DevRoles, qt.HasLen, 8)
			c.Check(sb.DevRoles[:5], qt.DeepEquals, before.DevRoles)
			c.Check(sb.DevRoles[5:], qt.DeepEquals, []Role{RoleFaulty, RoleFaulty, RoleSpare})
			switch v {
			case Version10:
				c.Check(sb.DataSize, qt.Equals, sb.SuperOffset-32)
			default:
				c.Check(sb.DataSize, qt.Equals, uint64(size/512)-sb.DataOffset)
			}
			c.Check(sb.DataRoom(), qt.Equals, sb.DataSize)
			c.Check(sb.Validate(size), qt.IsNil)
		})
	}
	t.Run("0.90", func(t *testing.T) {
		c := qt.New(t)
		src := testSB090(binary.LittleEndian)
		sb, err := src.NewMember(size, 3, devUUID, 8, 48)
		c.Assert(err, qt.IsNil)
		want := Descriptor{Number: 3, Major: 8, Minor: 48, RaidDisk: 3}
		c.Check(sb.ThisDisk, qt.DeepEquals, want)
		c.Check(sb.Disks[3], qt.DeepEquals, want)
		c.Check(sb.Disks[0], qt.DeepEquals, src.Disks[0])
		c.Check(sb.Events, qt.Equals, uint64(0))
		c.Check(sb.CPEvents, qt.Equals, uint64(0))
		c.Check(src.ThisDisk.Number, qt.Equals, uint32(1))
		off, _ := Version090.Offset(size)
		c.Check(sb.DiskOffset, qt.Equals, off)
	})
}

func TestNewMemberErrors(t *testing.T) {
	tests := []struct {
		name   string
		src    func() *Superblock
		size   int64
		n      uint32
		want   error
		reason string // for a *SizeError
	}{
		{name: "too small for a superblock", src: func() *Superblock { return testSB1(Version12) }, size: 4096, want: ErrDeviceTooSmall},
		{name: "ends before the data offset", src: func() *Superblock { return testSB1(Version12) }, size: 2 << 20, want: ErrDeviceTooSmall, reason: "the device ends before the data offset 4096"},
		{name: "1.0 no room before the superblock", src: func() *Superblock {
			sb := testSB1(Version10)
			sb.DataSize, sb.SuperOffset = 2048, 2048+8192 // a 4 MiB gap
			return sb
		}, size: 2 << 20, want: ErrDeviceTooSmall, reason: "no room for data before the superblock"},
		{name: "1.0 data past the superblock", src: func() *Superblock {
			sb := testSB1(Version10)
			sb.DataSize, sb.SuperOffset = 4096, 2048
			return sb
		}, size: 8 << 20, want: ErrInvalid},
		{name: "1.x dev_number out of range", src: func() *Superblock { return testSB1(Version12) }, size: 8 << 20, n: MaxDev1, want: ErrOutOfRange},
		{name: "0.90 descriptor out of range", src: func() *Superblock { return testSB090(binary.LittleEndian) }, size: 8 << 20, n: Disks090, want: ErrOutOfRange},
		{name: "0.90 too small", src: func() *Superblock { return testSB090(binary.LittleEndian) }, size: 32 << 10, want: ErrDeviceTooSmall},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := qt.New(t)
			sb, err := tt.src().NewMember(tt.size, tt.n, uuid.New(), 8, 16)
			c.Assert(err, qt.ErrorIs, tt.want)
			c.Check(sb, qt.IsNil)
			var se *SizeError
			if tt.reason != "" {
				c.Assert(errors.As(err, &se), qt.IsTrue)
				c.Check(se.Reason, qt.Equals, tt.reason)
				c.Check(err.Error(), qt.Equals, "superblock: device too small: "+tt.reason)
			} else {
				c.Check(errors.As(err, &se), qt.IsFalse)
			}
		})
	}
}

// TestMinDeviceBytes: a device of MinDeviceBytes holds the component,
// one sector less does not (or is refused).
func TestMinDeviceBytes(t *testing.T) {
	const component = 10000 // sectors
	srcs := map[string]*Superblock{
		"0.90": testSB090(binary.LittleEndian),
		"1.0":  testSB1(Version10),
		"1.1":  testSB1(Version11),
		"1.2":  testSB1(Version12),
	}
	srcs["1.0"].SuperOffset = 2048 + 24 // a 24-sector gap
	for name, src := range srcs {
		t.Run(name, func(t *testing.T) {
			c := qt.New(t)
			need := src.MinDeviceBytes(component)
			sb, err := src.NewMember(need, 2, uuid.New(), 8, 16)
			c.Assert(err, qt.IsNil)
			c.Check(sb.DataRoom() >= component, qt.IsTrue, qt.Commentf("room %d at %d bytes", sb.DataRoom(), need))
			// 0.90 and 1.0 round to 64 KiB and 4 KiB: step a whole unit.
			step := int64(512)
			switch src.Version {
			case Version090:
				step = 64 << 10
			case Version10:
				step = 4096
			}
			sb, err = src.NewMember(need-step, 2, uuid.New(), 8, 16)
			if err == nil {
				c.Check(sb.DataRoom() < component, qt.IsTrue, qt.Commentf("room %d at %d bytes", sb.DataRoom(), need-step))
			}
		})
	}
}

func TestBitmapRoom(t *testing.T) {
	sb12 := testSB1(Version12) // superblock at 8, bad-block log at 8+4080, data at 4096
	sb12bb := testSB1(Version12)
	sb12bb.BBLogOffset = 16 // bad-block log 16 sectors after the superblock
	sb12nobb := testSB1(Version12)
	sb12nobb.BBLogSize = 0
	sb10 := testSB1(Version10) // bad-block log 8 sectors before the superblock
	sb10.SuperOffset = 8176
	sb10nobb := testSB1(Version10)
	sb10nobb.SuperOffset = 8176
	sb10nobb.BBLogSize = 0
	sb090 := testSB090(binary.LittleEndian)
	sb090.DiskOffset = 1 << 20
	tests := []struct {
		name string
		sb   *Superblock
		loc  int64
		want uint64
	}{
		{name: "1.2 up to the bad-block log", sb: sb12, loc: 8*512 + 4096, want: (8+4080)*512 - (8*512 + 4096)},
		{name: "1.2 up to the data", sb: sb12nobb, loc: 8*512 + 4096, want: 4096*512 - (8*512 + 4096)},
		{name: "1.2 up to a near bad-block log", sb: sb12bb, loc: 8*512 + 1024, want: 16*512 - 1024},
		{name: "1.2 past everything", sb: sb12, loc: 8 << 20},
		{name: "1.0 up to the bad-block log", sb: sb10, loc: (8176 - 16) * 512, want: 8 * 512},
		{name: "1.0 up to the superblock", sb: sb10nobb, loc: (8176 - 16) * 512, want: 16 * 512},
		{name: "1.0 after the superblock", sb: sb10, loc: 8176*512 + 1024, want: 4096 - 1024},
		{name: "0.90 to the end of the reserved area", sb: sb090, loc: 1<<20 + 4096, want: 64<<10 - 4096},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			qt.Assert(t, tt.sb.BitmapRoom(tt.loc), qt.Equals, tt.want)
		})
	}
}
