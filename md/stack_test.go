package md

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"testing"

	qt "github.com/frankban/quicktest"
	"github.com/google/uuid"

	"github.com/go-mdraid/mdraid/blockdev"
	"github.com/go-mdraid/mdraid/internal/sysfstree"
	"github.com/go-mdraid/mdraid/sysfs"
)

// stackTree adds to the raid1-failed capture (md0 on vda and vdb) what a
// machine with stacked devices shows: an LVM volume on md0, loop devices
// over the member vdb, over a file on md0, over a file on tmpfs, over a
// mounted disk vdy, and a disk vdz (the candidate) with a loop over it.
func stackTree(c *qt.C, root string) {
	c.Helper()
	md0 := "devices/virtual/block/md0"
	virt := func(name, devnum string) string {
		dir := "devices/virtual/block/" + name
		s := fmt.Sprintf("f %q %q\n", dir+"/dev", devnum+"\n")
		s += fmt.Sprintf("f %q %q\n", dir+"/size", "131072\n")
		s += fmt.Sprintf("f %q %q\n", dir+"/uevent", "DEVNAME="+name+"\nDEVTYPE=disk\n")
		s += fmt.Sprintf("d %q\n", dir+"/holders")
		s += fmt.Sprintf("l %q %q\n", "class/block/"+name, "../../"+dir)
		s += fmt.Sprintf("l %q %q\n", "dev/block/"+devnum, "../../"+dir)
		return s
	}
	lines := strings.Join([]string{
		fmt.Sprintf("l %q %q\n", "class/block/md0", "../../"+md0),
		fmt.Sprintf("l %q %q\n", "dev/block/9:0", "../../"+md0),
		virt("dm-0", "253:0"),
		fmt.Sprintf("l %q %q\n", "devices/virtual/block/dm-0/slaves/md0", "../../md0"),
		fmt.Sprintf("l %q %q\n", md0+"/holders/dm-0", "../../dm-0"),
		virt("loop0", "7:0"), fmt.Sprintf("f %q %q\n", "devices/virtual/block/loop0/loop/backing_file", "/dev/vdb\n"),
		virt("loop1", "7:1"), fmt.Sprintf("f %q %q\n", "devices/virtual/block/loop1/loop/backing_file", "/srv/md/img\n"),
		virt("loop2", "7:2"), fmt.Sprintf("f %q %q\n", "devices/virtual/block/loop2/loop/backing_file", "/tmp/img\n"),
		virt("loop3", "7:3"), fmt.Sprintf("f %q %q\n", "devices/virtual/block/loop3/loop/backing_file", "/dev/vdy\n"),
		virt("loop4", "7:4"), fmt.Sprintf("f %q %q\n", "devices/virtual/block/loop4/loop/backing_file", "/dev/vdz\n"),
		virt("vdy", "254:96"), virt("vdz", "254:112"),
	}, "")
	sysfstree.TreeIn(c, root, lines)
}

func stackStat(p string) (blockdev.FileStat, error) {
	node := func(maj, min uint32) blockdev.FileStat {
		return blockdev.FileStat{Dev: sysfs.DevNum{Minor: 6}, Block: true, Rdev: sysfs.DevNum{Major: maj, Minor: min}}
	}
	switch p {
	case "/dev/vdb":
		return node(254, 16), nil
	case "/dev/vdy":
		return node(254, 96), nil
	case "/dev/vdz":
		return node(254, 112), nil
	case "/srv/md/img":
		return blockdev.FileStat{Dev: sysfs.DevNum{Major: 9, Minor: 0}}, nil
	case "/tmp/img":
		return blockdev.FileStat{Dev: sysfs.DevNum{Major: 0, Minor: 40}}, nil
	}
	return blockdev.FileStat{}, &fs.PathError{Op: "stat", Path: p, Err: fs.ErrNotExist}
}

// TestStackedCandidate: a candidate built on the array or on a member,
// or in use through a loop device, is refused, and the planner writes
// nothing. Before the stack walk each of these planned a replace.
func TestStackedCandidate(t *testing.T) {
	tests := []struct {
		name    string
		dev     string
		stat    func(string) (blockdev.FileStat, error)
		want    error
		stacked string // substring of StackedOn
		used    string // substring of UsedBy
	}{
		{name: "volume on the array", dev: "dm-0", want: errCandidateMember, stacked: "array md0 (dm-0 is on md0)"},
		{name: "loop over a member", dev: "loop0", want: errCandidateMember, stacked: "vdb, a member of md0 (loop0 is a loop device over vdb)"},
		{name: "loop over a file on the array", dev: "loop1", want: errCandidateMember, stacked: "array md0 (loop1 is a loop device over /srv/md/img, a file on md0)"},
		{name: "loop over a mounted disk", dev: "loop3", want: errCandidateBusy, used: "loop3 is a loop device over vdy, which is mounted on /srv"},
		{name: "disk with a loop over it", dev: "vdz", want: errCandidateBusy, used: "loop4 is a loop device over vdz"},
		{name: "backing file gone", dev: "vdz", want: errUnknownFact, stat: func(string) (blockdev.FileStat, error) {
			return blockdev.FileStat{}, fs.ErrNotExist
		}},
		{name: "loop over a file on tmpfs", dev: "loop2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := qt.New(t)
			r := newReplaceRig(t, "raid1-failed")
			stackTree(c, r.m.fs.Root())
			c.Assert(os.WriteFile(r.m.ops.mountInfo, []byte("36 25 254:96 / /srv rw - ext4 /dev/vdy rw\n"), 0o644), qt.IsNil)
			r.m.ops.statFile = stackStat
			if tt.stat != nil {
				r.m.ops.statFile = tt.stat
			}
			path := r.candidate(t, "vdz-image", 64<<20)
			before, err := os.ReadFile(path)
			c.Assert(err, qt.IsNil)
			cand := r.m.candidateFacts(path, true)
			c.Assert(cand.Error, qt.Equals, "")
			r.m.stackFacts(cand, tt.dev)
			cand.Error = strings.Join(cand.Unknown, "; ")
			c.Check(strings.Join(cand.StackedOn, "\n"), qt.Contains, tt.stacked)
			c.Check(strings.Join(cand.UsedBy, "\n"), qt.Contains, tt.used)
			req := ReplaceRequest{Array: r.name, With: path, AllowImageFile: true}
			p, err := planReplace(r.facts(t, ""), cand, req, uuid.New())
			if tt.want == nil {
				c.Assert(err, qt.IsNil, qt.Commentf("%+v", cand))
				return
			}
			c.Assert(err, qt.ErrorIs, tt.want)
			c.Assert(err, qt.ErrorIs, ErrRefused)
			c.Check(p.Steps, qt.HasLen, 0)
			c.Check(r.k.Calls(), qt.HasLen, 0)
			t.Logf("refused: %v", err)
			after, err := os.ReadFile(path)
			c.Assert(err, qt.IsNil)
			c.Check(bytes.Equal(after, before), qt.IsTrue, qt.Commentf("the candidate changed"))
		})
	}
}

// TestExecuteChecksPort: heal asks for the disk it found in a port
// (ReplaceRequest.ByPath); when the disk is no longer there at the
// executor's final plan, under the lock, nothing is written.
func TestExecuteChecksPort(t *testing.T) {
	c := qt.New(t)
	r := newReplaceRig(t, "raid1-failed")
	path := r.candidate(t, "vdz", 64<<20)
	before, err := os.ReadFile(path)
	c.Assert(err, qt.IsNil)
	req := ReplaceRequest{Array: r.name, With: path, AllowImageFile: true, ByPath: "pci-0000:00:12.0"}
	cand := r.m.candidateFacts(path, true)
	cand.ByPath = "pci-0000:00:12.0" // where heal found it
	p, err := planReplace(r.facts(t, ""), cand, req, uuid.New())
	c.Assert(err, qt.IsNil)
	// The image has no port: to the final plan the disk has moved.
	_, err = r.m.ExecuteReplace(context.Background(), p)
	c.Assert(err, qt.ErrorIs, ErrPlanChanged)
	c.Assert(err, qt.ErrorIs, errPortChanged)
	c.Check(r.k.Calls(), qt.HasLen, 0)
	after, err := os.ReadFile(path)
	c.Assert(err, qt.IsNil)
	c.Check(bytes.Equal(after, before), qt.IsTrue)
}

// TestBlockInUseUnlistedPartitions: the partitions of the device below a
// loop that cannot be listed are a fact not established, not "none": one
// of them could be mounted.
func TestBlockInUseUnlistedPartitions(t *testing.T) {
	c := qt.New(t)
	r := newReplaceRig(t, "raid1-failed")
	stackTree(c, r.m.fs.Root())
	c.Assert(os.WriteFile(r.m.ops.mountInfo, nil, 0o644), qt.IsNil)
	why, err := r.m.blockInUse("vdy", sysfs.DevNum{Major: 254, Minor: 96}, nil)
	c.Assert(err, qt.IsNil)
	c.Check(why, qt.Equals, "")
	c.Assert(os.Remove(r.m.fs.Path("class", "block", "vdy")), qt.IsNil)
	_, err = r.m.blockInUse("vdy", sysfs.DevNum{Major: 254, Minor: 96}, nil)
	c.Check(err, qt.ErrorIs, fs.ErrNotExist)
}
