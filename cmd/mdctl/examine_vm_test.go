//go:build vmtest

package main

import (
	"strings"
	"testing"

	qt "github.com/frankban/quicktest"

	"github.com/go-mdraid/mdraid/internal/vmtest/guest"
)

// TestVMExamineLiveMembers creates arrays of each kind on the real kernel
// and compares `mdctl examine` of every live member with what
// `mdadm --examine` prints for it there, line by line.
func TestVMExamineLiveMembers(t *testing.T) {
	cases := []struct {
		name  string
		disks int
		args  []string
		after func(c *qt.C, dev string, disks []guest.Disk)
	}{
		{name: "raid1-0.90", disks: 2, args: []string{"--level=1", "--metadata=0.90", "--raid-devices=2"}},
		{name: "raid1-1.0-boot", disks: 2, args: []string{"--level=1", "--metadata=1.0", "--name=boot", "--homehost=talos", "--raid-devices=2"}},
		{name: "raid1-1.1", disks: 2, args: []string{"--level=1", "--metadata=1.1", "--raid-devices=2"}},
		{name: "raid1-1.2-bitmap", disks: 2, args: []string{"--level=1", "--metadata=1.2", "--bitmap=internal", "--raid-devices=2"}},
		{name: "raid5-degraded", disks: 3, args: []string{"--level=5", "--raid-devices=4", "missing"}},
		{name: "raid6", disks: 4, args: []string{"--level=6", "--raid-devices=4"}},
		{name: "raid10", disks: 4, args: []string{"--level=10", "--raid-devices=4"}},
		{name: "raid0", disks: 2, args: []string{"--level=0", "--raid-devices=2"}},
		{name: "linear", disks: 2, args: []string{"--level=linear", "--raid-devices=2"}},
		{name: "raid1-failed", disks: 3, args: []string{"--level=1", "--raid-devices=3"},
			after: func(c *qt.C, dev string, disks []guest.Disk) {
				guest.Mdadm(c, dev, "--fail", disks[2].Path)
			}},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			guest.RequireLevel(t, tt.args...)
			c := qt.New(t)
			disks := guest.ScratchDisks(t, tt.disks)
			dev := "/dev/md/x" + strings.ReplaceAll(tt.name, ".", "")
			args := append([]string{"--create", dev, "--run", "--assume-clean"}, tt.args...)
			for _, d := range disks {
				args = append(args, d.Path)
			}
			guest.Mdadm(c, args...)
			if tt.after != nil {
				tt.after(c, dev, disks)
			}
			// Stop the array so that md has written its last superblocks
			// and nothing changes under the two readers.
			guest.Mdadm(c, "--stop", dev)
			for _, d := range disks {
				// No cache drop: examine reads with O_DIRECT and must see
				// what md wrote past the page cache, as a user's would.
				want, err := guest.RunMdadm("--examine", d.Path)
				c.Assert(err, qt.IsNil, qt.Commentf("%s", want))
				got, stderr, code := mdctl(t, "examine", d.Path)
				c.Assert(code, qt.Equals, 0, qt.Commentf("stderr: %s", stderr))
				want = localTo.ReplaceAllString(want, "")
				// 0.90 rows name the device as mdadm does: on this
				// system the nodes are the guest's.
				// Linux 6.19+ records logical_block_size, which mdadm
				// does not print: drop our line, and check it and the
				// note that goes with it.
				if m := lbsLine.FindStringSubmatch(got); m != nil {
					c.Check(m[1] == "512" || m[1] == "4096", qt.IsTrue, qt.Commentf("%s", m[0]))
					c.Check(stderr, qt.Contains, "kernels before 6.19 refuse to import this superblock")
					got = strings.Replace(got, m[0], "", 1)
				} else {
					c.Check(stderr, qt.Not(qt.Contains), "logical_block_size")
				}
				c.Check(strings.TrimRight(got, "\n"), qt.Equals, strings.TrimRight(want, "\n"), qt.Commentf("member %s", d.Path))
			}
		})
	}
}
