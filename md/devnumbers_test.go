package md

import (
	"errors"
	"testing"

	qt "github.com/frankban/quicktest"
	"github.com/google/uuid"

	"github.com/go-mdraid/mdraid/sysfs"
)

// TestChooseDevNumberKernel (issue 10 item 3): the descriptor number of
// a new member must be free in the kernel, not only in the superblocks.
func TestChooseDevNumberKernel(t *testing.T) {
	vda := sysfs.DevNum{Major: 253, Minor: 0}
	vdb := sysfs.DevNum{Major: 253, Minor: 16}
	tests := []struct {
		name     string
		fixture  string
		edit     []func(*snapshot)
		removing string
		kernel   map[uint32]sysfs.DevNum // nil: the ioctl could not be issued
		want     uint32
		wantErr  error
	}{
		// super_90_sync gave the faulty member number raid_disks (2); its
		// own superblock still says 1.
		{name: "0.90 faulty still bound, kernel asked", fixture: "raid1-v0.90", edit: []func(*snapshot){failMember("vdb")},
			kernel: map[uint32]sysfs.DevNum{0: vda, 2: vdb}, want: 3},
		{name: "0.90 faulty still bound, sysfs only", fixture: "raid1-v0.90", edit: []func(*snapshot){failMember("vdb")}, want: 3},
		// Once it is removed the renumbering can move others down, but
		// never above raid_disks+k-1, k counting the one leaving.
		{name: "0.90 faulty removed first", fixture: "raid1-v0.90", edit: []func(*snapshot){failMember("vdb")}, removing: "vdb",
			kernel: map[uint32]sysfs.DevNum{0: vda, 2: vdb}, want: 3},
		{name: "0.90 missing member", fixture: "raid1-v0.90", edit: []func(*snapshot){dropMember("vdb")},
			kernel: map[uint32]sysfs.DevNum{0: vda}, want: 2},
		{name: "1.2 kernel holds a number no superblock names", fixture: "raid1-failed",
			kernel: map[uint32]sysfs.DevNum{0: vda, 1: vdb, 2: {Major: 8, Minor: 0}}, want: 3},
		// A member whose superblock cannot be read: the kernel names its
		// number, so the choice is still known.
		{name: "1.2 unreadable superblock, kernel asked", fixture: "raid1-v1.2", edit: []func(*snapshot){unreadable("vdb")},
			kernel: map[uint32]sysfs.DevNum{0: vda, 1: vdb}, want: 2},
		{name: "1.2 unreadable superblock, kernel not asked", fixture: "raid1-v1.2", edit: []func(*snapshot){unreadable("vdb")},
			wantErr: errMemberUnknown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := qt.New(t)
			r := newReplaceRig(t, tt.fixture)
			f := r.facts(t, "")
			s := cloneSnapshot(f.s)
			for _, e := range tt.edit {
				e(s)
			}
			src := cloneSource(s)
			c.Assert(src, qt.Not(qt.IsNil))
			if tt.kernel != nil {
				s.kernelNums = &kernelNumbers{held: tt.kernel, upTo: uint32(numbersToAsk(s, src.sb.Version))}
			}
			n, err := chooseDevNumber(s, s.raidDisks, src.sb.Version, tt.removing)
			if tt.wantErr != nil {
				c.Assert(err, qt.ErrorIs, tt.wantErr)
				return
			}
			c.Assert(err, qt.IsNil)
			c.Assert(n, qt.Equals, tt.want)
		})
	}
}

func unreadable(name string) func(*snapshot) {
	return func(s *snapshot) {
		for i := range s.members {
			if s.members[i].Device == name {
				s.members[i].DevNumber, s.members[i].sb = nil, nil
				s.members[i].Error = "superblock: input/output error"
			}
		}
	}
}

// TestPlanAsksKernelNumbers checks that the planner's facts carry what
// GET_DISK_INFO said, for the numbers it asked, and that the plan's
// superblock then avoids them; a failing ioctl leaves the superblocks and
// the 0.90 rule to decide.
func TestPlanAsksKernelNumbers(t *testing.T) {
	c := qt.New(t)
	r := newReplaceRig(t, "raid1-failed")
	var asked int
	r.m.ops.diskNumbers = func(array string, upTo int) (map[uint32]sysfs.DevNum, error) {
		c.Check(array, qt.Equals, r.name)
		asked = upTo
		return map[uint32]sysfs.DevNum{0: {Major: 253}, 1: {Major: 253, Minor: 16}, 2: {Major: 8}}, nil
	}
	f := r.facts(t, "vdb")
	c.Assert(f.s.kernelNums, qt.Not(qt.IsNil))
	c.Assert(asked >= f.s.raidDisks+len(f.s.members)+1, qt.IsTrue, qt.Commentf("asked %d", asked))
	path := r.candidate(t, "vdz", 64<<20)
	req := ReplaceRequest{Array: r.name, With: path, Member: "vdb", AllowImageFile: true}
	p, err := planReplace(f, r.m.candidateFacts(path, true), req, uuid.New())
	c.Assert(err, qt.IsNil)
	c.Assert(p.DevNumber, qt.Equals, uint32(3))

	r.m.ops.diskNumbers = func(string, int) (map[uint32]sysfs.DevNum, error) { return nil, errors.New("EACCES") }
	f = r.facts(t, "vdb")
	c.Assert(f.s.kernelNums, qt.IsNil)
	p, err = planReplace(f, r.m.candidateFacts(path, true), req, uuid.New())
	c.Assert(err, qt.IsNil)
	c.Assert(p.DevNumber, qt.Equals, uint32(2))
}
