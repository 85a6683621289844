package blockdev

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	qt "github.com/frankban/quicktest"

	"github.com/go-mdraid/mdraid/sysfs"
)

func TestPorts(t *testing.T) {
	c := qt.New(t)
	fsys := materialize(c, c.TempDir(), manifest)
	ports, err := Ports(fsys)
	c.Assert(err, qt.IsNil)
	c.Check(ports["pci-0000:00:10.0"], qt.DeepEquals, []string{"vdb"})
	c.Check(ports["pci-0000:00:10.0-part1"], qt.DeepEquals, []string{"vdb1"})
	c.Check(ports["pci-0000:00:1f.2-ata-3.0"], qt.DeepEquals, []string{"sda"})
	c.Check(ports["pci-0000:00:1f.2-ata-3.0-part2"], qt.DeepEquals, []string{"sda2"})
	// Every entry is PathID's answer, and every device with an identity
	// is in the map.
	ents, err := os.ReadDir(fsys.Path("class", "block"))
	c.Assert(err, qt.IsNil)
	n := 0
	for _, e := range ents {
		id, err := PathID(fsys, e.Name())
		if err != nil {
			for _, names := range ports {
				c.Check(names, qt.Not(qt.Contains), e.Name())
			}
			continue
		}
		n++
		c.Check(ports[id], qt.Contains, e.Name())
	}
	total := 0
	for _, names := range ports {
		total += len(names)
	}
	c.Check(total, qt.Equals, n)
	c.Check(n > 4, qt.IsTrue)
	for _, virtual := range []string{"loop0", "md127"} {
		for id, names := range ports {
			c.Check(names, qt.Not(qt.Contains), virtual, qt.Commentf("%s has %s", virtual, id))
		}
	}

	// No class/block: an error and an empty map.
	empty, err := sysfs.NewFS(c.TempDir())
	c.Assert(err, qt.IsNil)
	ports, err = Ports(empty)
	c.Check(err, qt.ErrorIs, fs.ErrNotExist)
	c.Check(ports, qt.HasLen, 0)
}

func TestPartitions(t *testing.T) {
	c := qt.New(t)
	fsys := materialize(c, c.TempDir(), manifest)
	tests := []struct {
		name string
		want []string
		err  error
	}{
		{name: "vdb", want: []string{"vdb1"}},
		{name: "sda", want: []string{"sda2"}},
		{name: "nvme0n1", want: []string{"nvme0n1p2"}},
		{name: "sdb"},
		{name: "vdb1"}, // a partition has none
		{name: "sdz", err: fs.ErrNotExist},
		{name: "../sda", err: fs.ErrInvalid},
		{name: "", err: fs.ErrInvalid},
	}
	for _, tt := range tests {
		c.Run(tt.name, func(c *qt.C) {
			got, err := Partitions(fsys, tt.name)
			if tt.err != nil {
				c.Assert(err, qt.ErrorIs, tt.err)
				c.Check(got, qt.IsNil)
				return
			}
			c.Assert(err, qt.IsNil)
			c.Check(got, qt.DeepEquals, tt.want)
		})
	}
}

func TestLogicalBlockSize(t *testing.T) {
	c := qt.New(t)
	root := c.TempDir()
	fsys, err := sysfs.NewFS(root)
	c.Assert(err, qt.IsNil)
	write := func(name, v string) {
		p := filepath.Join(root, "block", name, "queue")
		c.Assert(os.MkdirAll(p, 0o755), qt.IsNil)
		c.Assert(os.WriteFile(filepath.Join(p, "logical_block_size"), []byte(v), 0o644), qt.IsNil)
	}
	tests := []struct {
		name, val string
		want      int64
		err       string
	}{
		{name: "md0", val: "512\n", want: 512},
		{name: "md1", val: "4096\n", want: 4096},
		{name: "md2", val: "65536", want: 65536},
		{name: "md3", val: "256\n", err: `.*"256" is not a logical block size`},
		{name: "md4", val: "131072\n", err: `.*is not a logical block size`},
		{name: "md5", val: "1536\n", err: `.*"1536" is not a logical block size`},
		{name: "md6", val: "garbage\x1b[2J", err: `.*is not a logical block size`},
		{name: "md7", val: "", err: `.*"" is not a logical block size`},
	}
	for _, tt := range tests {
		write(tt.name, tt.val)
	}
	for _, tt := range tests {
		c.Run(tt.name, func(c *qt.C) {
			got, err := LogicalBlockSize(fsys, tt.name)
			if tt.err != "" {
				c.Assert(err, qt.ErrorMatches, tt.err)
				c.Check(strings.Contains(err.Error(), "\x1b"), qt.IsFalse)
				return
			}
			c.Assert(err, qt.IsNil)
			c.Check(got, qt.Equals, tt.want)
		})
	}
	_, err = LogicalBlockSize(fsys, "md9")
	c.Check(err, qt.ErrorIs, fs.ErrNotExist)
	_, err = LogicalBlockSize(fsys, "../md0")
	c.Check(err, qt.ErrorIs, fs.ErrInvalid)
}

const mountInfo = `22 28 0:21 / /proc rw,nosuid,nodev,noexec,relatime shared:12 - proc proc rw
28 1 254:1 / / rw,relatime shared:1 - ext4 /dev/vda1 rw
40 28 254:17 / /mnt/data rw,relatime shared:20 - ext4 /dev/vdb1 rw
41 28 254:17 /sub /srv/with\040space rw,relatime shared:21 - ext4 /dev/vdb1 rw
42 28 8:0 / /boot rw - vfat /dev/sda rw
short line
`

func TestParseMounts(t *testing.T) {
	dn := func(maj, min uint32) sysfs.DevNum { return sysfs.DevNum{Major: maj, Minor: min} }
	tests := []struct {
		name string
		devs []sysfs.DevNum
		want []string
	}{
		{name: "none asked"},
		{name: "a partition mounted twice", devs: []sysfs.DevNum{dn(254, 17)}, want: []string{"/mnt/data", `/srv/with\040space`}},
		{name: "disk and partition", devs: []sysfs.DevNum{dn(8, 0), dn(254, 17)}, want: []string{"/boot", "/mnt/data", `/srv/with\040space`}},
		{name: "not mounted", devs: []sysfs.DevNum{dn(254, 16)}},
		{name: "minor is not a prefix", devs: []sysfs.DevNum{dn(254, 1)}, want: []string{"/"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseMounts(strings.NewReader(mountInfo), tt.devs)
			qt.Assert(t, err, qt.IsNil)
			qt.Assert(t, got, qt.DeepEquals, tt.want)
		})
	}
	// A line past 1 MiB is an error, not a short table.
	long := strings.Repeat("x", 2<<20) + "\n40 28 254:17 / /mnt/data rw - ext4 /dev/vdb1 rw\n"
	_, err := ParseMounts(strings.NewReader(long), []sysfs.DevNum{dn(254, 17)})
	qt.Assert(t, err, qt.IsNotNil)
}

func TestMounts(t *testing.T) {
	c := qt.New(t)
	dir := c.TempDir()
	p := filepath.Join(dir, "mountinfo")
	c.Assert(os.WriteFile(p, []byte(mountInfo), 0o644), qt.IsNil)
	got, err := Mounts(p, []sysfs.DevNum{{Major: 8, Minor: 0}})
	c.Assert(err, qt.IsNil)
	c.Check(got, qt.DeepEquals, []string{"/boot"})

	// A missing table is no mounts.
	got, err = Mounts(filepath.Join(dir, "absent"), []sysfs.DevNum{{Major: 8, Minor: 0}})
	c.Assert(err, qt.IsNil)
	c.Check(got, qt.IsNil)

	// One that cannot be read is an error.
	_, err = Mounts(dir, []sysfs.DevNum{{Major: 8, Minor: 0}})
	c.Assert(err, qt.IsNotNil)
	c.Check(errors.Is(err, fs.ErrNotExist), qt.IsFalse)
	c.Check(err, qt.ErrorMatches, "blockdev: reading mounts: .*")
}
