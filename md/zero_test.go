package md_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"testing"

	qt "github.com/frankban/quicktest"
	"github.com/go-mdraid/mdraid/md"
	"github.com/go-mdraid/mdraid/md/mdtest"
	"github.com/go-mdraid/mdraid/superblock"
)

// usedDisk puts capture from's member vda, as captured, into a free port
// of a system where it belongs to no array, and returns its path and
// bytes.
func usedDisk(c *qt.C, from string) (*md.Manager, string, []byte) {
	sys := mdtest.Capture(c.TB, "raid1-v1.2")
	disk := sys.AddUsedDisk("vdz", "pci-0000:00:18.0", from, "vda")
	b, err := os.ReadFile(disk)
	c.Assert(err, qt.IsNil)
	m, err := md.Open(sys.Config())
	c.Assert(err, qt.IsNil)
	return m, disk, b
}

// TestZeroSuperblock: the superblock, bitmap and bad-block log of a
// former member (1.2 with a bitmap, 1.0 with its log before the
// superblock) are erased and nothing else: every byte outside the
// planned areas is as it was, the areas are zeros, and no superblock is
// found afterwards. The dry run wrote nothing.
func TestZeroSuperblock(t *testing.T) {
	for _, tt := range []struct {
		from  string
		areas []md.ZeroArea
	}{{
		from: "raid1-bitmap",
		areas: []md.ZeroArea{
			{What: "bitmap", Offset: 8192, Bytes: 4096},
			{What: "bad-block log", Offset: 12288, Bytes: 4096},
			{What: "superblock", Offset: 4096, Bytes: 4096},
		},
	}, {
		from: "raid1-v1.0",
		areas: []md.ZeroArea{
			{What: "bad-block log", Offset: (131056 - 8) * 512, Bytes: 4096},
			{What: "superblock", Offset: 131056 * 512, Bytes: 4096},
		},
	}} {
		t.Run(tt.from, func(t *testing.T) {
			c := qt.New(t)
			ctx := context.Background()
			m, disk, before := usedDisk(c, tt.from)
			req := md.ZeroRequest{Devices: []string{disk}, AllowImageFile: true}
			p, err := m.PlanZeroSuperblock(ctx, req)
			c.Assert(err, qt.IsNil)
			c.Assert(p.Devices, qt.HasLen, 1)
			c.Assert(p.Devices[0].Superblocks, qt.HasLen, 1)
			z := p.Devices[0].Superblocks[0]
			c.Check(z.Areas, qt.DeepEquals, tt.areas)
			after, err := os.ReadFile(disk)
			c.Assert(err, qt.IsNil)
			c.Assert(bytes.Equal(before, after), qt.IsTrue, qt.Commentf("the dry run wrote"))

			res, err := m.ZeroSuperblock(ctx, req)
			c.Assert(err, qt.IsNil)
			c.Check(res.Zeroed, qt.DeepEquals, []string{disk})
			after, err = os.ReadFile(disk)
			c.Assert(err, qt.IsNil)
			want := bytes.Clone(before)
			for _, a := range z.Areas {
				clear(want[a.Offset : a.Offset+a.Bytes])
			}
			c.Check(bytes.Equal(after, want), qt.IsTrue, qt.Commentf("bytes outside the areas changed, or an area is not zero"))
			_, err = superblock.Probe(bytes.NewReader(after), int64(len(after)))
			c.Check(err, qt.ErrorIs, superblock.ErrNoSuperblock)

			// Again: nothing to erase, refused, nothing written.
			_, err = m.ZeroSuperblock(ctx, req)
			c.Assert(err, qt.ErrorIs, md.ErrRefused)
			c.Assert(err, qt.ErrorIs, md.ErrNotMember)
			var re *md.RefusedError
			c.Assert(errors.As(err, &re), qt.IsTrue)
			c.Check(re.Check, qt.Equals, md.CheckSuperblockFound)
			again, err := os.ReadFile(disk)
			c.Assert(err, qt.IsNil)
			c.Check(bytes.Equal(again, after), qt.IsTrue)
		})
	}
}

// TestZeroSuperblockRefusals: each refusal names its check and leaves
// every device named byte-identical, also the ones that could have been
// erased.
func TestZeroSuperblockRefusals(t *testing.T) {
	tests := []struct {
		name  string
		edit  func(c *qt.C, b []byte)
		check md.Check
		msg   string
	}{{
		name:  "damaged superblock",
		edit:  func(c *qt.C, b []byte) { b[4096+200] ^= 0xff }, // inside the 1.2 superblock: checksum
		check: md.CheckSuperblockIntact, msg: `.*the md superblock \(1.2\) at byte 4096 is damaged: .*`,
	}, {
		name: "a partition table outside the data",
		edit: func(c *qt.C, b []byte) {
			// A protective MBR at byte 510: the disk was partitioned
			// after the array (the data of 1.2 starts at 1 MiB).
			b[510], b[511] = 0x55, 0xaa
			b[446+4] = 0xee
		},
		check: md.CheckNothingElse, msg: `.*outside the data of its md superblocks.*`,
	}, {
		name: "bad-block log in the data",
		edit: func(c *qt.C, b []byte) {
			sb, err := superblock.Decode(b[4096 : 4096+4096])
			c.Assert(err, qt.IsNil)
			sb.BBLogOffset = 4096 // sectors from the superblock: in the data
			enc, err := sb.MarshalBinary()
			c.Assert(err, qt.IsNil)
			copy(b[4096:], enc)
		},
		check: md.CheckMetadataAreas, msg: `.*bad-block log \(4096 bytes at byte 2101248\) lies outside the metadata room .*`,
	}, {
		name: "bad-block log larger than md reads",
		edit: func(c *qt.C, b []byte) {
			sb, err := superblock.Decode(b[4096 : 4096+4096])
			c.Assert(err, qt.IsNil)
			sb.BBLogSize = 16
			enc, err := sb.MarshalBinary()
			c.Assert(err, qt.IsNil)
			copy(b[4096:], enc)
		},
		check: md.CheckMetadataAreas, msg: `.*bad-block log of 16 sectors: md reads at most 8`,
	}, {
		name: "no data",
		edit: func(c *qt.C, b []byte) {
			// A superblock that describes no data could put its
			// areas anywhere: refused.
			sb, err := superblock.Decode(b[4096 : 4096+4096])
			c.Assert(err, qt.IsNil)
			sb.DataSize = 0
			enc, err := sb.MarshalBinary()
			c.Assert(err, qt.IsNil)
			copy(b[4096:], enc)
		},
		check: md.CheckMetadataAreas, msg: `.*describes data \(sectors 2048 to 2048\) that is empty.*`,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := qt.New(t)
			m, disk, before := usedDisk(c, "raid1-bitmap")
			bad := bytes.Clone(before)
			tt.edit(c, bad)
			c.Assert(os.WriteFile(disk, bad, 0o644), qt.IsNil)
			// A second device that could be erased: refused with it.
			sys2 := mdtest.Capture(t, "raid1-v1.2")
			other := sys2.AddUsedDisk("vdy", "pci-0000:00:19.0", "raid1-v1.0", "vda")
			otherBefore, err := os.ReadFile(other)
			c.Assert(err, qt.IsNil)

			_, err = m.ZeroSuperblock(context.Background(), md.ZeroRequest{Devices: []string{other, disk}, AllowImageFile: true})
			c.Assert(err, qt.ErrorIs, md.ErrRefused)
			c.Check(err, qt.ErrorMatches, tt.msg)
			var re *md.RefusedError
			c.Assert(errors.As(err, &re), qt.IsTrue)
			c.Check(re.Check, qt.Equals, tt.check)
			after, err := os.ReadFile(disk)
			c.Assert(err, qt.IsNil)
			c.Check(bytes.Equal(after, bad), qt.IsTrue)
			otherAfter, err := os.ReadFile(other)
			c.Assert(err, qt.IsNil)
			c.Check(bytes.Equal(otherAfter, otherBefore), qt.IsTrue)
		})
	}
}

// TestZeroSuperblockArrayContent: what the array held is not "something
// else": a 1.0 member (data from byte 0) whose array holds a partition
// table shows it at byte 510 of the raw disk, inside the data, and is
// erased (the metadata at its end, and nothing of the data).
func TestZeroSuperblockArrayContent(t *testing.T) {
	c := qt.New(t)
	m, disk, before := usedDisk(c, "boot-mirror-k7.2")
	b := bytes.Clone(before)
	b[510], b[511] = 0x55, 0xaa
	b[446+4] = 0xee
	c.Assert(os.WriteFile(disk, b, 0o644), qt.IsNil)
	res, err := m.ZeroSuperblock(context.Background(), md.ZeroRequest{Devices: []string{disk}, AllowImageFile: true})
	c.Assert(err, qt.IsNil)
	c.Assert(res.Plan.Devices[0].Superblocks, qt.HasLen, 1)
	c.Check(res.Plan.Devices[0].Superblocks[0].Areas, qt.DeepEquals, []md.ZeroArea{
		{What: "bad-block log", Offset: (131056 - 8) * 512, Bytes: 4096},
		{What: "superblock", Offset: 131056 * 512, Bytes: 4096},
	})
	after, err := os.ReadFile(disk)
	c.Assert(err, qt.IsNil)
	c.Check(bytes.Equal(after[:(131056-8)*512], b[:(131056-8)*512]), qt.IsTrue)
}
