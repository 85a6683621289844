package md

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	qt "github.com/frankban/quicktest"
	"github.com/google/uuid"

	"github.com/go-mdraid/mdraid/superblock"
)

// rewriteMembers re-encodes the superblock of every member image of the
// rig with edit applied, as a newer kernel would have written it.
func rewriteMembers(t *testing.T, r *replaceRig, edit func(*superblock.Superblock)) {
	t.Helper()
	c := qt.New(t)
	n := 0
	for _, m := range r.fc.Members {
		path := filepath.Join(r.dev, m.Name)
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		c.Assert(err, qt.IsNil)
		st, err := f.Stat()
		c.Assert(err, qt.IsNil)
		res, err := superblock.Probe(f, st.Size())
		c.Assert(err, qt.IsNil)
		best := res.Best()
		c.Assert(best, qt.IsNotNil)
		edit(best.Superblock)
		b, err := best.Superblock.MarshalBinary()
		c.Assert(err, qt.IsNil)
		_, err = f.WriteAt(b, best.Offset)
		c.Assert(err, qt.IsNil)
		c.Assert(f.Close(), qt.IsNil)
		n++
	}
	c.Assert(n > 0, qt.IsTrue)
}

// TestPlanReplaceNewerKernel: members written by Linux 6.19+ (issue 9).
// logical_block_size is kept in the new member's superblock; padding we
// do not know is refused, naming it, before anything is written.
func TestPlanReplaceNewerKernel(t *testing.T) {
	devUUID := uuid.MustParse("00000000-1111-2222-3333-444444444444")
	// A disk a little larger than the array needs, as in the issue
	// (33554432 bytes for 33505280); raid1-failed needs 64 MiB.
	const disk = 64<<20 + 48<<10

	t.Run("logical_block_size kept", func(t *testing.T) {
		c := qt.New(t)
		r := newReplaceRig(t, "raid1-failed")
		rewriteMembers(t, r, func(sb *superblock.Superblock) { sb.LogicalBlockSize = 512 })
		path := r.candidate(t, "vdz", disk)
		f := r.facts(t, "")
		src := cloneSource(f.s)
		c.Assert(src, qt.IsNotNil)
		c.Assert(src.sb.LogicalBlockSize, qt.Equals, uint32(512))
		cand := r.m.candidateFacts(path, true)
		p, err := planReplace(f, cand, ReplaceRequest{Array: r.name, With: path, AllowImageFile: true}, devUUID)
		c.Assert(err, qt.IsNil)
		for _, ck := range p.Checks {
			c.Check(ck.Status, qt.Equals, StatusPass, qt.Commentf("%s: %s", ck.Name, ck.Reason))
		}
		c.Check(p.Superblock.LogicalBlockSize, qt.Equals, uint32(512))
		c.Check(p.Superblock.Validate(disk), qt.IsNil)
		got, err := superblock.Decode(p.regions[0].Data)
		c.Assert(err, qt.IsNil)
		c.Check(got.LogicalBlockSize, qt.Equals, uint32(512))
		c.Check(got.UnknownFields(), qt.IsNil)
	})

	t.Run("unknown padding refused", func(t *testing.T) {
		c := qt.New(t)
		r := newReplaceRig(t, "raid1-failed")
		rewriteMembers(t, r, func(sb *superblock.Superblock) {
			sb.LogicalBlockSize = 4096
			sb.Pad3[4] = 1 // byte 232
		})
		path := r.candidate(t, "vdz", disk)
		before, err := os.ReadFile(path)
		c.Assert(err, qt.IsNil)
		p, err := r.m.PlanReplace(context.Background(), ReplaceRequest{Array: r.name, With: path, AllowImageFile: true})
		c.Assert(err, qt.ErrorIs, ErrRefused)
		c.Assert(err, qt.ErrorIs, superblock.ErrUnknownField)
		c.Check(err, qt.ErrorMatches, `.*superblock of vda holds fields this program does not know, written by a newer kernel \(pad3 word at byte 0xe8 = 0x1\).*`)
		c.Assert(p, qt.IsNotNil)
		c.Check(p.Superblock, qt.IsNil)
		c.Check(p.Steps, qt.HasLen, 0)
		c.Check(p.Writes, qt.HasLen, 0)
		after, err := os.ReadFile(path)
		c.Assert(err, qt.IsNil)
		c.Check(bytes.Equal(before, after), qt.IsTrue)
		c.Check(r.k.Calls(), qt.HasLen, 0)
	})

	t.Run("invalid new superblock is not called too small", func(t *testing.T) {
		c := qt.New(t)
		r := newReplaceRig(t, "raid1-failed")
		// A raid0 layout flag on a raid1: the kernel would not load the
		// clone (nor the source, but the planner only needs its fields).
		rewriteMembers(t, r, func(sb *superblock.Superblock) { sb.Features |= superblock.FeatureRAID0Layout })
		path := r.candidate(t, "vdz", disk)
		cand := r.m.candidateFacts(path, true)
		_, err := planReplace(r.facts(t, ""), cand, ReplaceRequest{Array: r.name, With: path, AllowImageFile: true}, devUUID)
		c.Assert(err, qt.ErrorIs, ErrRefused)
		c.Check(err, qt.ErrorIs, superblock.ErrInvalid)
		c.Check(errors.Is(err, errCandidateTooSmall), qt.IsFalse)
		c.Check(err, qt.ErrorMatches, `.*would not load: .*feature_map.*`)
		c.Check(strings.Contains(err.Error(), "<nil>"), qt.IsFalse)
		c.Check(strings.Contains(err.Error(), "needs at least"), qt.IsFalse)
	})

	t.Run("too small names the size, never nil", func(t *testing.T) {
		c := qt.New(t)
		r := newReplaceRig(t, "raid1-failed")
		rewriteMembers(t, r, func(sb *superblock.Superblock) { sb.LogicalBlockSize = 512 })
		path := r.candidate(t, "vdz", 32<<20)
		cand := r.m.candidateFacts(path, true)
		_, err := planReplace(r.facts(t, ""), cand, ReplaceRequest{Array: r.name, With: path, AllowImageFile: true}, devUUID)
		c.Assert(err, qt.ErrorIs, errCandidateTooSmall)
		c.Check(err, qt.ErrorMatches, `.*has 33554432 bytes, the array needs at least 67108864 \(63488 data sectors, the array uses 129024\)`)
	})
}
