package md

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	qt "github.com/frankban/quicktest"
	"github.com/google/uuid"

	"github.com/go-mdraid/mdraid/internal/fixture"
	"github.com/go-mdraid/mdraid/superblock"
)

// createFacts returns facts for devices of size bytes and 512-byte
// blocks, all blank and unused; "missing" entries are Missing.
func createFacts(devs []string, size int64) CreateFacts {
	f := CreateFacts{Now: time.Unix(1796054553, 0), ArrayUUID: uuid.MustParse("27f6dbfe-477c-0a6f-be93-609d5be6dc76")}
	for i, d := range devs {
		f.Devices = append(f.Devices, CreateDevice{Path: d, Missing: d == Missing, SizeBytes: size, LogicalBlockSize: 512})
		f.DeviceUUIDs = append(f.DeviceUUIDs, uuid.NewSHA1(uuid.Nil, []byte{byte(i)}))
	}
	return f
}

// layoutFields are the fields of a 1.x superblock that a create decides
// and that the kernel keeps as written while the array runs: what
// mdadm --examine shows as the layout.
type layoutFields struct {
	Version                           superblock.Version
	Features                          superblock.FeatureMap
	Level                             superblock.Level
	Layout                            uint32
	Size, ChunkSize                   uint64
	RaidDisks                         uint32
	DataOffset, DataSize, SuperOffset uint64
	BitmapOffset                      int32
	BBLogSize                         uint16
	BBLogOffset                       int32
	DevNumber                         uint32
	MaxDev                            int
	Name                              string
	BitmapChunk                       uint32
	BitmapSync                        uint64
	BitmapVersion, BitmapDaemonSleep  uint32
}

func fieldsOf(sb *superblock.Superblock, bm *superblock.Bitmap) layoutFields {
	l := layoutFields{
		Version: sb.Version, Features: sb.Features, Level: sb.Level, Layout: sb.Layout,
		Size: sb.Size, ChunkSize: sb.ChunkSize, RaidDisks: sb.RaidDisks,
		DataOffset: sb.DataOffset, DataSize: sb.DataSize, SuperOffset: sb.SuperOffset,
		BitmapOffset: sb.BitmapOffset, BBLogSize: sb.BBLogSize, BBLogOffset: sb.BBLogOffset,
		DevNumber: sb.DevNumber, MaxDev: sb.MaxDev(), Name: sb.FullName(),
	}
	if bm != nil {
		l.BitmapChunk, l.BitmapSync, l.BitmapVersion, l.BitmapDaemonSleep = bm.ChunkSize, bm.SyncSize, bm.Version, bm.DaemonSleep
	}
	return l
}

// TestPlanCreateMatchesMdadm plans the requests that made the fixtures
// (mdadm 4.2 on Linux 6.1 and 7.2, 64 MiB disks; testdata/README.md has
// the commands) and compares every layout field of each planned
// superblock and bitmap with what mdadm wrote, as read back from the
// captured members.
func TestPlanCreateMatchesMdadm(t *testing.T) {
	devs2 := []string{"/dev/vda", "/dev/vdb"}
	devs4 := []string{"/dev/vda", "/dev/vdb", "/dev/vdc", "/dev/vdd"}
	tests := []struct {
		fixture string
		req     CreateRequest
		// features the newer mdadm sets and 4.2 did not.
		newer superblock.FeatureMap
	}{
		{fixture: "raid1-v1.0", req: CreateRequest{Array: "/dev/md0", Level: 1, RaidDevices: 2, Metadata: superblock.Version10, Homehost: "vmtest", Devices: devs2}},
		{fixture: "raid1-v1.0-k7.2", req: CreateRequest{Array: "/dev/md0", Level: 1, RaidDevices: 2, Metadata: superblock.Version10, Homehost: "vmtest", Devices: devs2}},
		{fixture: "raid1-v0.90", req: CreateRequest{Array: "/dev/md0", Level: 1, RaidDevices: 2, Metadata: superblock.Version090, Homehost: "vmtest", Devices: devs2}},
		{fixture: "raid1-v1.1", req: CreateRequest{Array: "/dev/md0", Level: 1, RaidDevices: 2, Metadata: superblock.Version11, Homehost: "vmtest", Devices: devs2}},
		{fixture: "raid1-v1.2", req: CreateRequest{Array: "/dev/md0", Level: 1, RaidDevices: 2, Metadata: superblock.Version12, Homehost: "vmtest", Devices: devs2}},
		{fixture: "boot-mirror", req: CreateRequest{Array: "/dev/md/boot", Name: "boot", Homehost: "talos", Level: 1, RaidDevices: 2, Metadata: superblock.Version10, Devices: devs2}},
		{fixture: "boot-mirror-k7.2", req: CreateRequest{Array: "/dev/md/boot", Name: "boot", Homehost: "talos", Level: 1, RaidDevices: 2, Metadata: superblock.Version10, Devices: devs2}},
		{fixture: "raid1-bitmap", req: CreateRequest{Array: "/dev/md0", Level: 1, RaidDevices: 2, Homehost: "vmtest", Bitmap: BitmapInternal, Devices: devs2}},
		{fixture: "raid1-degraded-missing", req: CreateRequest{Array: "/dev/md0", Level: 1, RaidDevices: 2, Homehost: "vmtest", Devices: []string{"/dev/vda", Missing}}},
		{fixture: "raid5", req: CreateRequest{Array: "/dev/md0", Level: 5, RaidDevices: 4, Homehost: "vmtest", Devices: devs4}},
		{fixture: "raid6", req: CreateRequest{Array: "/dev/md0", Level: 6, RaidDevices: 4, Homehost: "vmtest", Devices: devs4}},
		{fixture: "raid10", req: CreateRequest{Array: "/dev/md0", Level: 10, RaidDevices: 4, Homehost: "vmtest", Devices: devs4}},
		{fixture: "raid0", req: CreateRequest{Array: "/dev/md0", Level: 0, RaidDevices: 2, Homehost: "vmtest", Devices: devs2},
			newer: superblock.FeatureRAID0Layout},
	}
	for _, tt := range tests {
		t.Run(tt.fixture, func(t *testing.T) {
			c := qt.New(t)
			fc := fixture.Named(t, tt.fixture)
			c.Assert(strings.Contains(fc.Info.MdadmVersion, "v4.2"), qt.IsTrue, qt.Commentf("fixture made by %s", fc.Info.MdadmVersion))
			size := fc.Info.Members[0].Size
			p, err := PlanCreate(tt.req, createFacts(tt.req.Devices, size))
			c.Assert(err, qt.IsNil)
			byPath := map[string]CreateMember{}
			for _, m := range p.Members {
				byPath[m.Path] = m
			}
			c.Assert(len(p.Members), qt.Equals, len(fc.Members))
			for _, fm := range fc.Members {
				img, err := fm.Open()
				c.Assert(err, qt.IsNil)
				sb, err := superblock.Read(img, img.Size(), p.Version)
				c.Assert(err, qt.IsNil)
				var bm *superblock.Bitmap
				if sb.HasBitmap() {
					bm, err = superblock.ReadBitmap(img, sb)
					c.Assert(err, qt.IsNil)
				}
				want := fieldsOf(sb, bm)
				want.Features |= tt.newer
				m, ok := byPath["/dev/"+fm.Name]
				c.Assert(ok, qt.IsTrue, qt.Commentf("%s not planned", fm.Name))
				c.Check(fieldsOf(m.Superblock, m.Bitmap), qt.DeepEquals, want, qt.Commentf("%s", fm.Name))
				// The planned bytes decode to the planned superblock.
				got, err := superblock.Decode(m.Writes[0].Data)
				c.Assert(err, qt.IsNil)
				c.Check(fieldsOf(got, nil).DataOffset, qt.Equals, m.Superblock.DataOffset)
				c.Check(m.Writes[0].Offset, qt.Equals, sb.DiskOffset)
				if p.Version == superblock.Version090 {
					// mdadm's mark of a local 0.90 array: the UUID's
					// last 8 bytes are the SHA-1 of the homehost.
					c.Check(m.Superblock.SetUUID[8:], qt.DeepEquals, sb.SetUUID[8:], qt.Commentf("%s vs %s", m.Superblock.SetUUID, sb.SetUUID))
					c.Check(m.Superblock.MDMinor, qt.Equals, sb.MDMinor)
				}
				// The slot the member fills once the array runs.
				c.Check(sb.Role(), qt.Equals, superblock.Role(m.Slot), qt.Commentf("%s", fm.Name))
			}
			if sz, ok := arraySizeOf(t, fc); ok {
				c.Check(p.ArraySectors, qt.Equals, sz)
			}
		})
	}
}

// arraySizeOf reads the array size from the fixture's examine text
// ("Array Size : 190464 KiB").
func arraySizeOf(t *testing.T, fc *fixture.Case) (uint64, bool) {
	for _, line := range strings.Split(fc.Members[0].Examine, "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok || strings.TrimSpace(k) != "Array Size" {
			continue
		}
		var kib uint64
		for _, r := range strings.TrimSpace(v) {
			if r < '0' || r > '9' {
				break
			}
			kib = kib*10 + uint64(r-'0')
		}
		return kib * 2, true
	}
	return 0, false
}

// TestPlanCreateRefuses checks each refusal: it matches ErrRefused and
// ErrCreateRefused, names its check, and says the numbers.
func TestPlanCreateRefuses(t *testing.T) {
	const mib = 1 << 20
	notBlank := &NotBlankError{Kind: KindSignature, What: "ext4 superblock", Offset: 1080}
	tests := []struct {
		name  string
		req   CreateRequest
		facts func(f *CreateFacts)
		check Check
		msg   string
		is    error
	}{
		{name: "not-blank", req: CreateRequest{Level: 1, RaidDevices: 2},
			facts: func(f *CreateFacts) { f.Devices[1].Blank = notBlank },
			check: CheckBlankDevice, msg: `.*/dev/vdb: md: disk is not blank: ext4 superblock at byte 1080`, is: ErrNotBlank},
		{name: "in-use", req: CreateRequest{Level: 1, RaidDevices: 2},
			facts: func(f *CreateFacts) { f.Devices[0].InUse = "member of md127" },
			check: CheckNotInUse, msg: `.*/dev/vda is in use: member of md127`},
		{name: "mixed-block-sizes", req: CreateRequest{Level: 1, RaidDevices: 2},
			facts: func(f *CreateFacts) { f.Devices[1].LogicalBlockSize = 4096 },
			check: CheckBlockSize, msg: `.*/dev/vdb has 4096-byte logical blocks and /dev/vda 512: state the array's block size to mix them`},
		{name: "stated-block-size-too-small", req: CreateRequest{Level: 1, RaidDevices: 2, LogicalBlockSize: 512},
			facts: func(f *CreateFacts) { f.Devices[1].LogicalBlockSize = 4096 },
			check: CheckBlockSize, msg: `.*/dev/vdb has 4096-byte logical blocks, more than the 512 stated`},
		{name: "too-small-for-metadata", req: CreateRequest{Level: 1, RaidDevices: 2},
			facts: func(f *CreateFacts) { f.Devices[1].SizeBytes = 1 * mib },
			check: CheckSize, msg: `.*/dev/vdb is too small: 2048 sectors cannot hold the metadata \(2048 sectors\)`},
		{name: "too-small-for-size", req: CreateRequest{Level: 1, RaidDevices: 2, SizeKiB: 63*1024 + 64},
			check: CheckSize, msg: `.*/dev/vda is too small: 64512 KiB usable, 64576 KiB asked \(--size\)`},
		{name: "too-few-devices", req: CreateRequest{Level: 5, RaidDevices: 2},
			check: CheckRaidDevices, msg: `.*raid5 needs at least 3 devices, not 2`},
		{name: "count-mismatch", req: CreateRequest{Level: 1, RaidDevices: 3, Devices: []string{"/dev/vda", "/dev/vdb"}},
			check: CheckRaidDevices, msg: `.*2 devices named \(real or missing\) for --raid-devices=3`},
		{name: "all-missing", req: CreateRequest{Level: 1, RaidDevices: 2, Devices: []string{Missing, Missing}},
			check: CheckDevices, msg: `.*every device is missing`},
		{name: "raid0-missing", req: CreateRequest{Level: 0, RaidDevices: 2, Devices: []string{"/dev/vda", Missing}},
			check: CheckMissing, msg: `.*raid0 cannot start with 1 of 2 devices missing`},
		{name: "raid5-two-missing", req: CreateRequest{Level: 5, RaidDevices: 3, Devices: []string{"/dev/vda", Missing, Missing}},
			check: CheckMissing, msg: `.*raid5 cannot start with 2 of 3 devices missing`},
		{name: "raid10-near-pair-missing", req: CreateRequest{Level: 10, RaidDevices: 4, Devices: []string{"/dev/vda", "/dev/vdb", Missing, Missing}},
			check: CheckMissing, msg: `.*raid10 cannot start with 2 of 4 devices missing`},
		{name: "raid1-chunk", req: CreateRequest{Level: 1, RaidDevices: 2, ChunkKiB: 64},
			check: CheckChunk, msg: `.*a chunk size is not meaningful for raid1`},
		{name: "chunk-not-power-of-two", req: CreateRequest{Level: 5, RaidDevices: 3, ChunkKiB: 96},
			check: CheckChunk, msg: `.*chunk 96 KiB: must be a power of two from 4 KiB to 1 GiB`},
		{name: "bad-layout", req: CreateRequest{Level: 5, RaidDevices: 3, Layout: "n2"},
			check: CheckLayout, msg: `.*layout "n2" is not one of raid5's`},
		{name: "raid10-layout-too-wide", req: CreateRequest{Level: 10, RaidDevices: 2, Layout: "n3"},
			check: CheckLayout, msg: `.*layout n3 needs at least 3 devices`},
		{name: "raid0-bitmap", req: CreateRequest{Level: 0, RaidDevices: 2, Bitmap: BitmapInternal},
			check: CheckBitmap, msg: `.*a bitmap is not meaningful for raid0`},
		{name: "level", req: CreateRequest{Level: superblock.LevelLinear, RaidDevices: 2},
			check: CheckLevel, msg: `.*level linear cannot be created.*`},
		{name: "duplicate", req: CreateRequest{Level: 1, RaidDevices: 2, Devices: []string{"/dev/vda", "/dev/vda"}},
			check: CheckDevices, msg: `.*/dev/vda is named twice`},
		{name: "name-too-long", req: CreateRequest{Level: 1, RaidDevices: 2, Name: "an-array-name-of-thirty-two-byte", Homehost: "host"},
			check: CheckName, msg: `.*name "an-array-name-of-thirty-two-byte" is 32 bytes: at most 31 fit \(mdadm would cut it\)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := qt.New(t)
			req := tt.req
			req.Array = "/dev/md/x"
			if req.Devices == nil {
				for i := 0; i < req.RaidDevices; i++ {
					req.Devices = append(req.Devices, fmt.Sprintf("/dev/vd%c", 'a'+i))
				}
			}
			f := createFacts(req.Devices, 64*mib)
			if tt.facts != nil {
				tt.facts(&f)
			}
			p, err := PlanCreate(req, f)
			c.Assert(p, qt.IsNil)
			c.Assert(err, qt.ErrorIs, ErrRefused)
			c.Assert(err, qt.ErrorIs, ErrCreateRefused)
			if tt.is != nil {
				c.Assert(err, qt.ErrorIs, tt.is)
			}
			var re *RefusedError
			c.Assert(errors.As(err, &re), qt.IsTrue)
			c.Check(re.Check, qt.Equals, tt.check)
			c.Check(err, qt.ErrorMatches, tt.msg)
		})
	}
}

// TestPlanCreate090: the 0.90 rules mdadm's super0.c follows: the bitmap
// 4 KiB after the superblock, 60 KiB written; the descriptors of a raid5
// whose last device is the spare recovery fills (number and raid_disk 3,
// descriptor 2 unused, as mdadm's two passes number them), and of a
// missing slot;
// the array state; the device limit and raid0's one-size rule.
func TestPlanCreate090(t *testing.T) {
	c := qt.New(t)
	devs := []string{"/dev/vda", "/dev/vdb", "/dev/vdc"}
	p, err := PlanCreate(CreateRequest{Array: "/dev/md0", Level: 5, RaidDevices: 3, Metadata: superblock.Version090,
		Bitmap: BitmapInternal, Devices: devs}, createFacts(devs, 64<<20))
	c.Assert(err, qt.IsNil)
	c.Assert(p.Members, qt.HasLen, 3)
	sb := p.Members[0].Superblock
	c.Check(sb.Size, qt.Equals, uint64(130944)&^1023) // 512 KiB chunks
	c.Check(sb.State, qt.Equals, superblock.ArrayClean|superblock.ArrayBitmapPresent)
	c.Check([]uint32{sb.NrDisks, sb.ActiveDisks, sb.WorkingDisks, sb.FailedDisks, sb.SpareDisks}, qt.DeepEquals, []uint32{4, 2, 3, 1, 1})
	c.Check(sb.Disks[1], qt.Equals, superblock.Descriptor{Number: 1, RaidDisk: 1, State: superblock.DiskActive | superblock.DiskSync})
	c.Check(sb.Disks[2], qt.Equals, superblock.Descriptor{})
	c.Check(sb.Disks[3], qt.Equals, superblock.Descriptor{Number: 3, RaidDisk: 3})
	c.Check(p.Members[2].Superblock.ThisDisk, qt.Equals, sb.Disks[3])
	for _, m := range p.Members {
		c.Assert(m.Writes, qt.HasLen, 2)
		c.Check(m.Writes[0].Offset, qt.Equals, int64(130944)*512)
		c.Check(m.Writes[1].Offset, qt.Equals, int64(130944)*512+4096)
		c.Check(len(m.Writes[1].Data), qt.Equals, 60<<10)
		c.Check(m.Bitmap.State, qt.Equals, superblock.BitmapState(0))
		got, err := superblock.Decode(m.Writes[0].Data)
		c.Assert(err, qt.IsNil)
		c.Check(got.HasBitmap(), qt.IsTrue)
		// The kernel compares the bitmap's UUID with the superblock's
		// words as they are in memory (super_90_validate).
		bm, err := superblock.DecodeBitmap(m.Writes[1].Data[:superblock.BitmapSize])
		c.Assert(err, qt.IsNil)
		c.Check(bm.UUID, qt.Equals, got.BitmapUUID())
		c.Check(bm.UUID, qt.Not(qt.Equals), got.SetUUID)
		// What the executor writes: the bitmap, then the superblock.
		rs := createRegions(m)
		c.Assert(rs, qt.HasLen, 2)
		c.Check(rs[0].Off, qt.Equals, m.Writes[1].Offset)
		c.Check(rs[0].Data, qt.DeepEquals, m.Writes[1].Data)
		c.Check(rs[1].Off, qt.Equals, m.Writes[0].Offset)
	}

	// A missing slot: its descriptor stays zero; clean (degraded raid5).
	devs = []string{"/dev/vda", Missing, "/dev/vdc"}
	p, err = PlanCreate(CreateRequest{Array: "/dev/md0", Level: 5, RaidDevices: 3, Metadata: superblock.Version090, Devices: devs}, createFacts(devs, 64<<20))
	c.Assert(err, qt.IsNil)
	sb = p.Members[0].Superblock
	c.Check(sb.Disks[1], qt.Equals, superblock.Descriptor{})
	c.Check(sb.State, qt.Equals, superblock.ArrayClean)
	c.Check([]uint32{sb.NrDisks, sb.ActiveDisks, sb.WorkingDisks, sb.FailedDisks, sb.SpareDisks}, qt.DeepEquals, []uint32{3, 2, 2, 1, 0})

	// Refusals.
	many := make([]string, 28)
	for i := range many {
		many[i] = fmt.Sprintf("/dev/vd%c", 'a'+i%26) + fmt.Sprint(i)
	}
	_, err = PlanCreate(CreateRequest{Array: "/dev/md0", Level: 1, RaidDevices: 28, Metadata: superblock.Version090, Devices: many}, createFacts(many, 64<<20))
	c.Check(err, qt.ErrorMatches, `.*0.90 metadata holds at most 27`)
	devs = []string{"/dev/vda", "/dev/vdb"}
	f := createFacts(devs, 64<<20)
	f.Devices[1].SizeBytes = 96 << 20
	_, err = PlanCreate(CreateRequest{Array: "/dev/md0", Level: 0, RaidDevices: 2, Metadata: superblock.Version090, Devices: devs}, f)
	c.Check(err, qt.ErrorMatches, `.*raid0 with 0.90 metadata needs devices of one size.*`)
	_, err = PlanCreate(CreateRequest{Array: "/dev/md0", Level: 0, RaidDevices: 2, Metadata: superblock.Version090, Layout: "alternate", Devices: devs}, createFacts(devs, 64<<20))
	c.Check(err, qt.ErrorMatches, `.*0.90 metadata records no raid0 layout.*`)
	p, err = PlanCreate(CreateRequest{Array: "/dev/md0", Level: 0, RaidDevices: 2, Metadata: superblock.Version090, Devices: devs}, createFacts(devs, 64<<20))
	c.Assert(err, qt.IsNil)
	c.Check(p.Layout, qt.Equals, uint32(0))
}
