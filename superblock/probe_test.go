package superblock

import (
	"bytes"
	"testing"

	qt "github.com/frankban/quicktest"

	"github.com/go-mdraid/mdraid/superblock/superblocktest"
)

// TestProbeStale puts the real 0.90 superblock (a stale one) at the 0.90
// location of the real 1.2 image, which has the same size: Probe must
// report both, and mdadm's choice is the newer 1.2 one (2022 vs 2009).
func TestProbeStale(t *testing.T) {
	c := qt.New(t)
	old := superblocktest.ByName(t, "util-linux/mdraid")
	cur := superblocktest.ByName(t, "util-linux/mdraid-1")
	c.Assert(old.Size, qt.Equals, cur.Size)
	size := cur.Size
	off, err := Version090.Offset(size)
	c.Assert(err, qt.IsNil)
	dev := cur.Bytes(t)
	copy(dev[off:off+Size090], old.Bytes(t)[off:off+Size090])

	res, err := Probe(bytes.NewReader(dev), size)
	c.Assert(err, qt.IsNil)
	c.Assert(res.Candidates, qt.HasLen, 2)
	c.Check(res.Candidates[0].Version, qt.Equals, Version090)
	c.Check(res.Candidates[1].Version, qt.Equals, Version12)
	c.Check(res.Valid(), qt.HasLen, 2)
	c.Check(res.Chosen, qt.Equals, 1)

	// A damaged checksum does not stop mdadm from choosing it.
	dev[4096+off1SetName] ^= 1
	res, err = Probe(bytes.NewReader(dev), size)
	c.Assert(err, qt.IsNil)
	c.Check(res.Candidates[1].Err, qt.ErrorIs, ErrChecksum)
	c.Check(res.Valid(), qt.HasLen, 1)
	c.Check(res.Chosen, qt.Equals, 1)
}

func TestChooseMdadm(t *testing.T) {
	sb := func(v Version, ctime uint64) Candidate {
		return Candidate{Version: v, Superblock: &Superblock{Version: v, CTime: ctime}}
	}
	bad := func(cd Candidate) Candidate {
		cd.Err = formatErr(off1SuperOffset, "super_offset", 0, ErrWrongLocation)
		return cd
	}
	tests := []struct {
		name string
		in   []Candidate
		want int
	}{
		{"none", nil, -1},
		{"only 0.90", []Candidate{sb(Version090, 5)}, 0},
		{"0.90 wins ties", []Candidate{sb(Version090, 5), sb(Version12, 5)}, 0},
		{"newer 1.x wins", []Candidate{sb(Version090, 5), sb(Version12, 6)}, 1},
		{"older 1.x loses", []Candidate{sb(Version090, 7), sb(Version12, 6)}, 0},
		{"1.x compared on 32 bits against 0.90", []Candidate{sb(Version090, 5), sb(Version10, 1<<32|4)}, 0},
		{"1.0 keeps ties", []Candidate{sb(Version10, 9), sb(Version11, 9), sb(Version12, 9)}, 0},
		{"newest 1.x by raw ctime", []Candidate{sb(Version10, 9), sb(Version11, 10), sb(Version12, 3)}, 1},
		{"microseconds weigh more than seconds", []Candidate{sb(Version10, 1<<40|1), sb(Version12, 100)}, 0},
		{"wrong location never chosen", []Candidate{bad(sb(Version12, 100)), sb(Version11, 1)}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			qt.New(t).Assert(chooseMdadm(tt.in), qt.Equals, tt.want)
		})
	}
}

func TestOffsets(t *testing.T) {
	tests := []struct {
		v    Version
		size int64
		want int64
	}{
		{Version090, 64 << 10, 0},
		{Version090, 128<<10 - 1, 0},
		{Version090, 10 << 20, 10<<20 - 64<<10},
		{Version090, 10<<20 + 65535, 10<<20 - 64<<10},
		{Version10, 24 * 512, 8 * 512},
		{Version10, 10 << 20, (20480 - 16) * 512},
		{Version10, 10<<20 + 7*512, (20480 - 16 + 7) &^ 7 * 512},
		{Version11, 1 << 40, 0},
		{Version12, 1 << 40, 4096},
	}
	for _, tt := range tests {
		got, err := tt.v.Offset(tt.size)
		qt.Check(t, err, qt.IsNil)
		qt.Check(t, got, qt.Equals, tt.want, qt.Commentf("%v %d", tt.v, tt.size))
	}
	_, err := Version(0).Offset(1 << 30)
	qt.Check(t, err, qt.ErrorIs, ErrUnsupportedVersion)
	for s, want := range map[string]Version{"0.90": Version090, "1.0": Version10, "1.01": Version11, "1.02": Version12} {
		v, err := ParseVersion(s)
		qt.Check(t, err, qt.IsNil)
		qt.Check(t, v, qt.Equals, want)
	}
}

func TestExamineHelpers(t *testing.T) {
	c := qt.New(t)
	sb := &Superblock{Version: Version12, Level: LevelRAID1, RaidDisks: 2, DevNumber: 2,
		DevRoles: []Role{0, RoleFaulty, 0, RoleSpare, RoleJournal}}
	state, ok := sb.ArrayState()
	c.Check(state, qt.Equals, "R.")
	c.Check(ok, qt.IsTrue)
	c.Check(sb.RoleText(), qt.Equals, "Active device 0")
	sb.Features = FeatureReplacement
	c.Check(sb.RoleText(), qt.Equals, "Replacement device 0")
	for _, tt := range []struct {
		dev  uint32
		want string
	}{{1, "spare"}, {3, "spare"}, {4, "Journal"}, {99, "spare"}} {
		sb.DevNumber = tt.dev
		c.Check(sb.RoleText(), qt.Equals, tt.want)
	}
	sb.Level = LevelRAID0
	state, ok = sb.ArrayState()
	c.Check([]any{state, ok}, qt.DeepEquals, []any{"?.", false})
	sb.DevRoles = []Role{5}
	_, ok = sb.ArrayState()
	c.Check(ok, qt.IsFalse)
	sb.RaidDisks = ^uint32(0)
	state, _ = sb.ArrayState()
	c.Check(len(state), qt.Equals, int(RoleMax))

	for _, tt := range []struct {
		level  Level
		layout uint32
		want   string
	}{
		{LevelRAID5, 0, "left-asymmetric"}, {LevelRAID5, 2, "left-symmetric"}, {LevelRAID5, 5, "parity-last"},
		{LevelRAID5, 8, "-unknown-"}, {LevelRAID6, 9, "ddf-N-restart"}, {LevelRAID6, 18, "left-symmetric-6"},
		{LevelRAID10, 0x102, "near=2"}, {LevelRAID10, 0x201, "far=2"}, {LevelRAID10, 0x10201, "offset=2"},
		{LevelRAID10, 0x202, "near=2, far=2"}, {LevelRAID10, 0x101, "NO REDUNDANCY"},
		{LevelRAID0, 2, "alternate"}, {LevelRAID1, 0, ""}, {LevelLinear, 0, ""},
	} {
		c.Check(LayoutName(tt.level, tt.layout), qt.Equals, tt.want, qt.Commentf("%v %#x", tt.level, tt.layout))
	}
	for l, want := range map[Level]string{-100: "container", -5: "faulty", -4: "multipath", -1: "linear", 0: "raid0", 10: "raid10", 7: "level(7)"} {
		c.Check(l.String(), qt.Equals, want)
	}
	size, ok := (&Superblock{Level: LevelRAID10, RaidDisks: 4, Layout: 0x102, Size: 2048}).ArraySize()
	c.Check([]any{size, ok}, qt.DeepEquals, []any{uint64(2 * 2048 * 512), true})
	_, ok = (&Superblock{Level: LevelRAID10, RaidDisks: 4, Layout: 0, Size: 2048}).ArraySize()
	c.Check(ok, qt.IsFalse)
	c.Check(FeatureMap(0x1011).String(), qt.Equals, "bitmap-offset|replacement|raid0-layout")
	c.Check(FeatureMap(1<<20).Unknown(), qt.Equals, FeatureMap(1<<20))
}

func TestBitmapBadBlocksCodec(t *testing.T) {
	c := qt.New(t)
	bm := &Bitmap{Version: BitmapMajorHi, Events: 7, SyncSize: 2048, ChunkSize: 64 << 20, DaemonSleep: 5, State: BitmapClean}
	b, err := bm.MarshalBinary()
	c.Assert(err, qt.IsNil)
	bm2, err := DecodeBitmap(b)
	c.Assert(err, qt.IsNil)
	c.Check(bm2, qt.DeepEquals, bm)
	c.Check(bm.Bits(), qt.Equals, uint64(1))
	c.Check(bm.Size(4096), qt.Equals, uint64(4096))
	c.Check(bm.Validate(nil), qt.IsNil)

	bbs := []BadBlock{{Sector: 16, Length: 8}, {Sector: 1 << 30, Length: 1016}}
	enc, err := AppendBadBlocks(nil, bbs, 3, 4096)
	c.Assert(err, qt.IsNil)
	c.Check(len(enc), qt.Equals, 4096)
	c.Check(DecodeBadBlocks(enc, 3), qt.DeepEquals, bbs)
	_, err = AppendBadBlocks(nil, []BadBlock{{Sector: 1, Length: 8}}, 3, 4096)
	c.Check(err, qt.ErrorIs, ErrOutOfRange)
}
