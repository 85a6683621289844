//go:build vmtest

package md

import (
	"context"
	"crypto/sha256"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	qt "github.com/frankban/quicktest"
	"golang.org/x/sys/unix"

	"github.com/go-mdraid/mdraid/internal/mdadmtext"
	"github.com/go-mdraid/mdraid/internal/vmtest/guest"
	"github.com/go-mdraid/mdraid/superblock"
)

// examineLayout is the layout part of mdadm --examine: the fields a
// create decides, without UUIDs, times, events, checksums and states.
func examineLayout(c *qt.C, dev string) map[string]string {
	d := mdadmtext.ParseDetail(guest.Mdadm(c, "--examine", dev))
	out := map[string]string{}
	for _, k := range []string{"Version", "Feature Map", "Raid Level", "Raid Devices", "Avail Dev Size",
		"Array Size", "Used Dev Size", "Data Offset", "Super Offset", "Unused Space", "Internal Bitmap",
		"Bad Block Log", "Layout", "Chunk Size", "Device Role", "Name", "Preferred Minor"} {
		if v, ok := d.Fields[k]; ok {
			out[k] = v
		}
	}
	// 0.90: whether mdadm takes the array for this host's (the UUID's
	// last 8 bytes are the SHA-1 of the homehost).
	if v, ok := d.Fields["UUID"]; ok {
		_, host, _ := strings.Cut(v, " ")
		out["UUID host"] = host
	}
	return out
}

// TestVMCreate is the create proof on the real kernel, in one boot: the
// seed's boot mirror made by the library (mdadm only examines and
// assembles it afterwards), the layout of each level and metadata
// against mdadm's on the same disks, and the refusals leaving every
// device byte-identical and no md device behind.
func TestVMCreate(t *testing.T) {
	ctx := context.Background()
	t.Run("boot-mirror", func(t *testing.T) {
		c := qt.New(t)
		disks := guest.ScratchDisks(t, 2)
		m := vmManager(t)
		start := time.Now()
		res, err := m.Create(ctx, CreateRequest{Array: "/dev/md/boot", Level: 1, Metadata: superblock.Version10,
			Name: "boot", Homehost: "talos", RaidDevices: 2, Devices: []string{disks[0].Path, disks[1].Path}})
		c.Assert(err, qt.IsNil)
		t.Logf("PERF create boot mirror: %v; writes %v", time.Since(start), res.Writes)
		c.Check(res.Path, qt.Equals, "/dev/md/boot")
		md := res.Array
		c.Check(guest.ReadAttr(c, md, "array_state"), qt.Not(qt.Equals), "inactive")
		sum := writeData(c, "/dev/"+md)
		guest.WaitSync(c, md)
		// Metadata 1.0: what was written through the array is at byte 0
		// of each raw member.
		for _, d := range disks {
			f, err := os.OpenFile(d.Path, os.O_RDONLY|unix.O_DIRECT, 0)
			c.Assert(err, qt.IsNil)
			buf := alignedBuf(dataBytes, 4096)
			c.Assert(readFull(f, buf, 0), qt.IsNil)
			f.Close()
			c.Check(sha256.Sum256(buf), qt.Equals, sum, qt.Commentf("%s", d.Path))
			e := examineLayout(c, d.Path)
			c.Check(e["Version"], qt.Equals, "1.0")
			c.Check(strings.HasPrefix(e["Name"], "talos:boot"), qt.IsTrue, qt.Commentf("%q", e["Name"]))
		}
		guest.Mdadm(c, "--stop", "/dev/"+md)
		// mdadm assembles it back, with its data.
		guest.Mdadm(c, "--assemble", "/dev/md/boot", disks[0].Path, disks[1].Path)
		md2 := guest.ArrayName(c, "/dev/md/boot")
		c.Check(readData(c, "/dev/"+md2), qt.Equals, sum)
		c.Check(guest.ReadAttr(c, md2, "degraded"), qt.Equals, "0")
		guest.Mdadm(c, "--stop", "/dev/"+md2)
	})

	// missing: the usual way to move a running system onto a mirror. The
	// degraded mirror runs, status says degraded (mdctl status exits 1),
	// and replace fills the missing slot with a blank disk.
	t.Run("missing", func(t *testing.T) {
		c := qt.New(t)
		disks := guest.ScratchDisks(t, 2)
		m := vmManager(t)
		res, err := m.Create(ctx, CreateRequest{Array: "/dev/md/half", Level: 1, Name: "half", RaidDevices: 2,
			Bitmap: "internal", Devices: []string{disks[0].Path, Missing}})
		c.Assert(err, qt.IsNil)
		md := res.Array
		a, err := m.Status(ctx, "/dev/md/half")
		c.Assert(err, qt.IsNil)
		c.Check(a.Availability, qt.Equals, Degraded)
		c.Check(a.Slots[1].State, qt.Equals, SlotMissing)
		c.Check(a.Degraded, qt.Equals, 1)
		sum := writeData(c, "/dev/"+md)
		_, err = m.Replace(ctx, ReplaceRequest{Array: "half", With: disks[1].Path})
		c.Assert(err, qt.IsNil)
		a, err = m.WaitReplace(ctx, WaitRequest{Array: md, Member: disks[1].Name, Interval: 200 * time.Millisecond})
		c.Assert(err, qt.IsNil)
		c.Check(a.Availability, qt.Equals, Online)
		c.Check(a.Slots[1].Member.Device, qt.Equals, disks[1].Name)
		// The data is on the new member: read with the first one failed.
		guest.Mdadm(c, "--fail", "/dev/"+md, disks[0].Path)
		c.Check(readData(c, "/dev/"+md), qt.Equals, sum)
		guest.Mdadm(c, "--stop", "/dev/"+md)
	})

	t.Run("layout-as-mdadm", func(t *testing.T) {
		cases := []struct {
			name  string
			req   CreateRequest
			args  []string
			disks int
		}{
			{"raid1-1.0", CreateRequest{Level: 1, Metadata: superblock.Version10}, []string{"--level=1", "--metadata=1.0"}, 2},
			{"raid1-1.1", CreateRequest{Level: 1, Metadata: superblock.Version11}, []string{"--level=1", "--metadata=1.1"}, 2},
			{"raid1-1.2-bitmap", CreateRequest{Level: 1, Bitmap: BitmapInternal}, []string{"--level=1", "--bitmap=internal"}, 2},
			{"raid1-1.0-bitmap", CreateRequest{Level: 1, Metadata: superblock.Version10, Bitmap: BitmapInternal}, []string{"--level=1", "--metadata=1.0", "--bitmap=internal"}, 2},
			{"raid5", CreateRequest{Level: 5}, []string{"--level=5"}, 4},
			{"raid5-1.0-chunk64-ra", CreateRequest{Level: 5, Metadata: superblock.Version10, ChunkKiB: 64, Layout: "ra"}, []string{"--level=5", "--metadata=1.0", "--chunk=64", "--layout=ra"}, 3},
			{"raid4", CreateRequest{Level: 4}, []string{"--level=4"}, 3},
			{"raid6", CreateRequest{Level: 6}, []string{"--level=6"}, 4},
			{"raid10-n2", CreateRequest{Level: 10}, []string{"--level=10"}, 4},
			{"raid10-f2", CreateRequest{Level: 10, Layout: "f2"}, []string{"--level=10", "--layout=f2"}, 4},
			{"raid10-o2", CreateRequest{Level: 10, Layout: "o2"}, []string{"--level=10", "--layout=o2"}, 3},
			{"raid0", CreateRequest{Level: 0}, []string{"--level=0"}, 2},
			{"raid1-size", CreateRequest{Level: 1, SizeKiB: 32768}, []string{"--level=1", "--size=32768"}, 2},
			{"raid1-0.90", CreateRequest{Level: 1, Metadata: superblock.Version090}, []string{"--level=1", "--metadata=0.90"}, 2},
			{"raid5-0.90-bitmap", CreateRequest{Level: 5, Metadata: superblock.Version090, Bitmap: BitmapInternal}, []string{"--level=5", "--metadata=0.90", "--bitmap=internal"}, 3},
			{"raid10-0.90", CreateRequest{Level: 10, Metadata: superblock.Version090}, []string{"--level=10", "--metadata=0.90"}, 4},
		}
		for _, tt := range cases {
			t.Run(tt.name, func(t *testing.T) {
				c := qt.New(t)
				disks := guest.ScratchDisks(t, tt.disks)
				m := vmManager(t)
				req := tt.req
				req.Array, req.Name, req.Homehost, req.RaidDevices = "/dev/md/lay", "lay", "vmtest", tt.disks
				args := append([]string{"--create", "/dev/md/lay", "--run", "--name=lay", "--homehost=vmtest",
					"--raid-devices=" + strconv.Itoa(tt.disks)}, tt.args...)
				if req.Metadata == superblock.Version090 {
					// 0.90 records no name.
					req.Name = ""
					args = slices.DeleteFunc(args, func(a string) bool { return a == "--name=lay" })
				}
				for _, d := range disks {
					req.Devices = append(req.Devices, d.Path)
					args = append(args, d.Path)
				}
				res, err := m.Create(ctx, req)
				c.Assert(err, qt.IsNil)
				var ours []map[string]string
				for _, d := range disks {
					ours = append(ours, examineLayout(c, d.Path))
				}
				// The array holds data, its initial sync (or recovery
				// onto the inserted spare) completes, and a check then
				// finds every copy and parity consistent.
				sum := writeData(c, "/dev/"+res.Array)
				guest.WaitSync(c, res.Array)
				if tt.req.Level != 0 {
					guest.WriteAttr(c, res.Array, "sync_action", "check")
					guest.WaitSync(c, res.Array)
					c.Check(strings.TrimSpace(guest.ReadAttr(c, res.Array, "mismatch_cnt")), qt.Equals, "0")
					c.Check(strings.TrimSpace(guest.ReadAttr(c, res.Array, "degraded")), qt.Equals, "0")
				}
				c.Check(readData(c, "/dev/"+res.Array), qt.Equals, sum)
				guest.Mdadm(c, "--stop", "/dev/"+res.Array)
				guest.Reset(t)
				guest.Mdadm(c, args...)
				old := strings.Contains(guest.Mdadm(c, "--version"), "v4.2")
				// 0.90's preferred minor is the md device each was made
				// as: which one is free depends on what the tests before
				// left behind.
				for i := range ours {
					if v, ok := ours[i]["Preferred Minor"]; ok {
						c.Check("md"+v, qt.Equals, res.Array)
						delete(ours[i], "Preferred Minor")
					}
				}
				var oursAll []map[string]string
				for _, o := range ours {
					oursAll = append(oursAll, maps.Clone(o))
				}
				for i, d := range disks {
					theirs := examineLayout(c, d.Path)
					if v, ok := theirs["Preferred Minor"]; ok {
						c.Check("md"+v, qt.Equals, guest.ArrayName(c, "/dev/md/lay"))
						delete(theirs, "Preferred Minor")
					}
					if tt.req.Level == 0 && old {
						// mdadm 4.3 and later set the raid0 layout
						// feature on Linux >= 5.4 (docs/create.md);
						// the guest's 4.2 does not: the newer is
						// followed.
						c.Check(ours[i]["Feature Map"], qt.Equals, "0x1000")
						for _, k := range []string{"Feature Map", "Layout"} {
							delete(ours[i], k)
							delete(theirs, k)
						}
					}
					c.Check(ours[i], qt.DeepEquals, theirs, qt.Commentf("%s (-mdctl +mdadm)", d.Path))
				}
				guest.Mdadm(c, "--stop", "/dev/md/lay")

				// The newest Debian release's mdadm (trixie's), the
				// same request on the same disks: ours equals its
				// layout field for field, with no exception (where it
				// and 4.2 differ, the newer is followed).
				nm := guest.FindNewestMdadm(t)
				guest.Reset(t)
				nm.Mdadm(c, args...)
				for i, d := range disks {
					theirs := examineLayout(c, d.Path)
					if v, ok := theirs["Preferred Minor"]; ok {
						c.Check("md"+v, qt.Equals, guest.ArrayName(c, "/dev/md/lay"))
						delete(theirs, "Preferred Minor")
					}
					c.Check(oursAll[i], qt.DeepEquals, theirs, qt.Commentf("%s (-mdctl +mdadm %s)", d.Path, nm.Version))
					if i == 0 {
						c.Logf("mdadm %s, %s: feature map %s, data offset %q, super offset %q", nm.Version, d.Path,
							theirs["Feature Map"], theirs["Data Offset"], theirs["Super Offset"])
					}
				}
				nm.Mdadm(c, "--stop", "/dev/md/lay")
			})
		}
	})

	t.Run("refusals", func(t *testing.T) {
		c := qt.New(t)
		disks := guest.ScratchDisks(t, 3)
		m := vmManager(t)
		check := func(c *qt.C, req CreateRequest) {
			var before []uint64
			for _, d := range req.Devices {
				before = append(before, hashDisk(c, d))
			}
			arrays, err := guest.Arrays()
			c.Assert(err, qt.IsNil)
			_, err = m.Create(ctx, req)
			c.Check(err, qt.ErrorIs, ErrRefused)
			c.Logf("refused: %v", err)
			for i, d := range req.Devices {
				c.Check(hashDisk(c, d), qt.Equals, before[i], qt.Commentf("%s changed", d))
			}
			after, err := guest.Arrays()
			c.Assert(err, qt.IsNil)
			c.Check(after, qt.DeepEquals, arrays)
		}
		req := func() CreateRequest {
			return CreateRequest{Array: "/dev/md/ref", Level: 1, RaidDevices: 2, Devices: []string{disks[0].Path, disks[1].Path}}
		}
		c.Run("ext4", func(c *qt.C) {
			// The guest has no mke2fs: the ext2/3/4 superblock magic,
			// where the blank rule looks for it.
			f, err := os.OpenFile(disks[1].Path, os.O_WRONLY, 0)
			c.Assert(err, qt.IsNil)
			_, err = f.WriteAt([]byte{0x53, 0xef}, 1080)
			c.Assert(err, qt.IsNil)
			c.Assert(f.Close(), qt.IsNil)
			c.Assert(guest.FlushBuffers(disks[1].Path), qt.IsNil)
			defer zeroEnds(c, disks[1])
			check(c, req())
		})
		c.Run("gpt", func(c *qt.C) {
			// The guest has no partitioner: a protective MBR and a GPT
			// header signature, as the blank rule looks for them.
			mbr := make([]byte, 1024)
			mbr[446+4] = 0xee
			mbr[510], mbr[511] = 0x55, 0xaa
			copy(mbr[512:], "EFI PART")
			f, err := os.OpenFile(disks[1].Path, os.O_WRONLY, 0)
			c.Assert(err, qt.IsNil)
			_, err = f.WriteAt(mbr, 0)
			c.Assert(err, qt.IsNil)
			c.Assert(f.Close(), qt.IsNil)
			defer zeroEnds(c, disks[1])
			check(c, req())
		})
		c.Run("foreign-md", func(c *qt.C) {
			guest.Mdadm(c, "--create", "/dev/md/other", "--run", "--level=1", "--metadata=1.2", "--raid-devices=2", disks[1].Path, "missing")
			guest.Mdadm(c, "--stop", "/dev/md/other")
			defer zeroEnds(c, disks[1])
			check(c, req())
		})
		c.Run("member-of-running-array", func(c *qt.C) {
			guest.Mdadm(c, "--create", "/dev/md/other", "--run", "--level=1", "--metadata=1.2", "--raid-devices=2", disks[1].Path, "missing")
			defer func() { guest.Mdadm(c, "--stop", "/dev/md/other"); zeroEnds(c, disks[1]) }()
			r := req()
			_, err := m.Create(ctx, r)
			c.Check(err, qt.ErrorIs, ErrRefused)
			c.Logf("refused: %v", err)
		})
		c.Run("same-disk-twice", func(c *qt.C) {
			// Its node and its by-path link: one disk named twice.
			r := req()
			r.Devices[1] = "/dev/disk/by-path/" + disks[0].ByPath
			check(c, r)
		})
		c.Run("mixed-block-sizes", func(c *qt.C) {
			k := guest.Disk4Kn(t)
			r := req()
			r.Devices[1] = k.Path
			check(c, r)
		})
	})
}
