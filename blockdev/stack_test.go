package blockdev

import (
	"fmt"
	"io/fs"
	"strings"
	"testing"

	qt "github.com/frankban/quicktest"

	"github.com/go-mdraid/mdraid/sysfs"
)

// stackManifest is a machine with a raid array md127 on vdb and vdc, an
// LVM volume on the array, loop devices over a member, over a file on the
// array, over a file on tmpfs and over a spare disk vdd and its
// partition, a loop whose file was deleted, and two loops over each other.
func stackManifest(extra ...string) string {
	virt := func(name, devnum string) string { return blk("devices/virtual/block/"+name, devnum, 2048, 0) }
	slave := func(upper, lower, lowerDir string) string {
		up := "devices/virtual/block/" + upper
		return fmt.Sprintf("l %q %q\n", up+"/slaves/"+lower, "../../../../../"+lowerDir) +
			fmt.Sprintf("l %q %q\n", lowerDir+"/holders/"+upper, strings.Repeat("../", strings.Count(lowerDir, "/")+2)+up)
	}
	backing := func(loop, file string) string {
		return attr("devices/virtual/block/"+loop, "loop/backing_file", file)
	}
	vdb := "devices/pci0000:00/0000:00:10.0/virtio2/block/vdb"
	vdc := "devices/pci0000:00/0000:00:11.0/virtio3/block/vdc"
	vdd := "devices/pci0000:00/0000:00:12.0/virtio4/block/vdd"
	return strings.Join([]string{
		blk(vdb, "254:16", 131072, 0), blk(vdc, "254:32", 131072, 0),
		blk(vdd, "254:48", 131072, 0), blk(vdd+"/vdd1", "254:49", 4096, 1),
		virt("md127", "9:127"), fmt.Sprintf("d %q\n", "devices/virtual/block/md127/md"),
		slave("md127", "vdb", vdb), slave("md127", "vdc", vdc),
		virt("dm-0", "253:0"), slave("dm-0", "md127", "devices/virtual/block/md127"),
		virt("loop0", "7:0"), backing("loop0", "/dev/vdb"),
		virt("loop1", "7:1"), backing("loop1", "/srv/on-md/img"),
		virt("loop2", "7:2"), backing("loop2", "/tmp/img"),
		virt("loop3", "7:3"), backing("loop3", "/dev/vdd"),
		virt("loop4", "7:4"), backing("loop4", "/dev/vdd1"),
		virt("loop6", "7:6"), backing("loop6", "/dev/loop7"),
		virt("loop7", "7:7"), backing("loop7", "/dev/loop6"),
		virt("loop8", "7:8"), // unbound: no loop/ directory
	}, "") + strings.Join(extra, "")
}

func fakeStat(files map[string]FileStat) func(string) (FileStat, error) {
	return func(p string) (FileStat, error) {
		if st, ok := files[p]; ok {
			return st, nil
		}
		return FileStat{}, &fs.PathError{Op: "stat", Path: p, Err: fs.ErrNotExist}
	}
}

func blockNode(major, minor uint32) FileStat {
	return FileStat{Dev: sysfs.DevNum{Major: 0, Minor: 6}, Block: true, Rdev: sysfs.DevNum{Major: major, Minor: minor}}
}

var stackFiles = map[string]FileStat{
	"/dev/vdb":       blockNode(254, 16),
	"/dev/vdd":       blockNode(254, 48),
	"/dev/vdd1":      blockNode(254, 49),
	"/dev/loop6":     blockNode(7, 6),
	"/dev/loop7":     blockNode(7, 7),
	"/srv/on-md/img": {Dev: sysfs.DevNum{Major: 9, Minor: 127}},
	"/tmp/img":       {Dev: sysfs.DevNum{Major: 0, Minor: 40}}, // tmpfs
}

type layerSum struct {
	Name, Via, From string
	Array           bool
	Holders         string
}

func sums(ls []Layer) []layerSum {
	var out []layerSum
	for _, l := range ls {
		out = append(out, layerSum{l.Name, string(l.Via), l.From, l.Array, strings.Join(l.Holders, ",")})
	}
	return out
}

func TestWalkStack(t *testing.T) {
	tests := []struct {
		name         string
		dev          string
		files        map[string]FileStat // nil: stackFiles
		extra        string
		below, above []layerSum
		unknown      bool
	}{{
		// (a) an LVM volume on the degraded array itself.
		name: "volume on the array", dev: "dm-0",
		below: []layerSum{
			{"md127", "slave", "dm-0", true, "dm-0"},
			{"vdb", "slave", "md127", false, "md127"},
			{"vdc", "slave", "md127", false, "md127"},
		},
	}, {
		// (b) a loop device over a bound member: no holder link.
		name: "loop over a member", dev: "loop0",
		below: []layerSum{{"vdb", "loop device", "loop0", false, "md127"}},
	}, {
		// (c) a loop device whose backing file is on the array.
		name: "loop over a file on the array", dev: "loop1",
		below: []layerSum{
			{"md127", "loop file", "loop1", true, "dm-0"},
			{"vdb", "slave", "md127", false, "md127"},
			{"vdc", "slave", "md127", false, "md127"},
		},
	}, {
		name: "loop over a file on tmpfs", dev: "loop2",
	}, {
		// (d) loop devices over the disk and over its partition.
		name: "disk with loops over it", dev: "vdd",
		below: []layerSum(nil),
		above: []layerSum{
			{"loop3", "loop over", "vdd", false, ""},
			{"loop4", "loop over", "vdd1", false, ""},
		},
	}, {
		name: "partition with a loop over it", dev: "vdd1",
		below: []layerSum{{"vdd", "partition", "vdd1", false, ""}},
		above: []layerSum{{"loop4", "loop over", "vdd1", false, ""}},
	}, {
		name: "member", dev: "vdb",
		above: []layerSum{{"loop0", "loop over", "vdb", false, ""}},
	}, {
		name: "loops over each other", dev: "loop6",
		below: []layerSum{{"loop7", "loop device", "loop6", false, ""}},
		above: []layerSum{{"loop7", "loop over", "loop6", false, ""}},
	}, {
		name: "unbound loop", dev: "loop8",
	}, {
		name: "deleted backing file", dev: "loop5", unknown: true,
		extra: blk("devices/virtual/block/loop5", "7:5", 2048, 0) +
			attr("devices/virtual/block/loop5", "loop/backing_file", "/old/img (deleted)"),
	}, {
		// A loop whose backing cannot be established may be over the
		// disk: that is not known, so it is not a pass.
		name: "another loop's backing file deleted", dev: "vdd", unknown: true,
		extra: blk("devices/virtual/block/loop5", "7:5", 2048, 0) +
			attr("devices/virtual/block/loop5", "loop/backing_file", "/old/img (deleted)"),
	}, {
		name: "backing file cannot be stat'ed", dev: "loop0",
		files: map[string]FileStat{}, unknown: true,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := qt.New(t)
			fsys := materialize(c, c.TempDir(), stackManifest(tt.extra))
			files := tt.files
			if files == nil {
				files = stackFiles
			}
			st, err := WalkStack(fsys, tt.dev, StackOptions{Stat: fakeStat(files)})
			if tt.unknown {
				c.Assert(err, qt.ErrorIs, ErrStackUnknown)
				c.Assert(st, qt.IsNotNil)
				return
			}
			c.Assert(err, qt.IsNil)
			c.Check(sums(st.Below), qt.DeepEquals, tt.below)
			c.Check(sums(st.Above), qt.DeepEquals, tt.above)
		})
	}
}

func TestWalkStackUnknownDevice(t *testing.T) {
	c := qt.New(t)
	fsys := materialize(c, c.TempDir(), stackManifest())
	_, err := WalkStack(fsys, "sdz", StackOptions{Stat: fakeStat(stackFiles)})
	c.Assert(err, qt.ErrorIs, fs.ErrNotExist)
}

func TestLayerString(t *testing.T) {
	c := qt.New(t)
	c.Check(Layer{Name: "md127", Via: ViaLoopFile, From: "loop1", BackingFile: "/srv/img"}.String(), qt.Equals,
		"loop1 is a loop device over /srv/img, a file on md127")
	c.Check(Layer{Name: "loop3", Via: ViaLoopOver, From: "vdd"}.String(), qt.Equals, "loop3 is a loop device over vdd")
	c.Check(Layer{Name: "md127", Via: ViaSlave, From: "dm-0"}.String(), qt.Equals, "dm-0 is on md127")
}
