package md

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	qt "github.com/frankban/quicktest"
	"golang.org/x/sys/unix"

	"github.com/go-mdraid/mdraid/superblock"
	"github.com/go-mdraid/mdraid/sysfs"
)

// formerMember copies member kname's image of the rig's capture to a new
// image name under the dev root, its superblock changed by change (nil:
// as it is), and returns its path.
func formerMember(t testing.TB, r *replaceRig, kname, name string, change func(sb *superblock.Superblock)) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(r.dev, kname))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(r.dev, name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if change == nil {
		return p
	}
	f, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	size, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		t.Fatal(err)
	}
	pr, err := superblock.Probe(f, size)
	if err != nil || pr.Best() == nil || pr.Best().Superblock == nil {
		t.Fatalf("no superblock on %s: %v", kname, err)
	}
	sb := pr.Best().Superblock
	change(sb)
	out, err := sb.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(out, sb.DiskOffset); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestDecideReAdd: the checks of a re-add on the raid1-bitmap capture
// with vdb gone from the array; the former member is a copy of vdb's
// image.
func TestDecideReAdd(t *testing.T) {
	r := newReplaceRig(t, "raid1-bitmap")
	vda, err := r.m.probe("vda")
	if err != nil {
		t.Fatal(err)
	}
	vdb, err := r.m.probe("vdb")
	if err != nil {
		t.Fatal(err)
	}
	other := superblock.Superblock{}
	other.SetUUID[0] = 0x42
	for _, tt := range []struct {
		name    string
		change  func(sb *superblock.Superblock)
		facts   func(f *arrayFacts)
		cand    func(c *Candidate)
		records *Records
		want    error // nil: accepted
		match   string
	}{
		{name: "former member", match: `ADD_NEW_DISK .*re-add: number 1, slot 1, in sync\)`},
		{name: "behind", change: func(sb *superblock.Superblock) { sb.Events -= 3 }},
		{name: "another array", change: func(sb *superblock.Superblock) { sb.SetUUID = other.SetUUID }, want: ErrMismatch, match: `.*belongs to another array.*`},
		{name: "same UUID, other array", change: func(sb *superblock.Superblock) { sb.CTime++ }, want: ErrMismatch, match: `.*differs in creation time`},
		{name: "newer", change: func(sb *superblock.Superblock) { sb.Events += 2 }, want: ErrSplitBrain, match: `.*split brain.*`},
		{name: "spare", change: func(sb *superblock.Superblock) { sb.DevRoles[sb.DevNumber] = superblock.RoleSpare }, want: errNotReAddable, match: `.*does not name it in a slot.*`},
		{name: "slot taken", facts: func(f *arrayFacts) { *f = r.facts(t, "") }, want: ErrSlotTaken, match: `.*slot 1 of md0 is held by vdb`},
		{name: "mounted", cand: func(c *Candidate) { c.Mounts = []string{"/mnt"} }, want: ErrInUse, match: `.*is mounted on /mnt`},
		{name: "held", cand: func(c *Candidate) { c.Holders = []string{"dm-0"} }, want: ErrInUse, match: `.*is held by dm-0`},
		{name: "built on an array", cand: func(c *Candidate) {
			c.StackedOn = []string{"array md1 (loop1 is a loop device over /srv/img, a file on md1)"}
		}, want: ErrInUse, match: `.*is built on array md1 .*`},
		{name: "loop device over it", cand: func(c *Candidate) { c.UsedBy = []string{"loop4 is a loop device over vdz"} }, want: ErrInUse, match: `.*is in use through a loop device \(loop4 .*`},
		{name: "open", cand: func(c *Candidate) { c.ExclusiveBusy = true }, want: ErrInUse},
		{name: "partitions", cand: func(c *Candidate) { c.Partitions = []string{"vdx1"} }, want: ErrInUse},
		{name: "unknown fact", cand: func(c *Candidate) { c.Error = "mounts: permission denied" }, want: errUnknownFact},
		{name: "no superblock", cand: func(c *Candidate) { c.mdsb = nil }, want: ErrNotMember},
		{name: "not running", facts: func(f *arrayFacts) { f.s.state = sysfs.StateInactive }, want: errNotReAddable, match: `.*not running.*`},
		{name: "raid0", facts: func(f *arrayFacts) { f.s.level = "raid0" }, want: errNotReAddable, match: `.*no redundancy.*`},
		{name: "reshape", facts: func(f *arrayFacts) { f.s.action = sysfs.ActionReshape }, want: errArrayBusy},
		{name: "number held", facts: func(f *arrayFacts) { one := uint32(1); f.s.members[0].DevNumber = &one }, want: ErrSlotTaken, match: `.*descriptor number 1 is held by vda.*`},
		{name: "recorded disk", records: &Records{Arrays: []Record{{UUID: "RIGUUID", Slots: []SlotRecord{{Slot: 0}, {Slot: 1, DeviceUUID: vdb.DeviceUUID.String()}}}}}, match: `.*`},
		{name: "another disk recorded", records: &Records{Arrays: []Record{{UUID: "RIGUUID", Slots: []SlotRecord{{Slot: 0}, {Slot: 1, DeviceUUID: vda.DeviceUUID.String()}}}}}, want: ErrNotRecordedDisk, match: `.*slot 1 of md0 was device UUID .*carries device UUID.*`},
		{name: "no record", records: &Records{}, want: ErrNotRecordedDisk},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := qt.New(t)
			path := formerMember(t, r, "vdb", "vdx", tt.change)
			f := pulledFacts(t, r, "vdb")
			if tt.facts != nil {
				tt.facts(&f)
			}
			cand := r.m.candidateFacts(path, true)
			if tt.cand != nil {
				tt.cand(cand)
			}
			rs := tt.records
			if rs != nil {
				for i := range rs.Arrays {
					if rs.Arrays[i].UUID == "RIGUUID" {
						rs.Arrays[i].UUID = snapshotUUID(f.s)
					}
				}
			}
			p, err := decideReAdd(f, cand, rs)
			if tt.want != nil {
				c.Assert(err, qt.ErrorIs, tt.want)
				if tt.match != "" {
					c.Check(err, qt.ErrorMatches, tt.match)
				}
				return
			}
			c.Assert(err, qt.IsNil)
			c.Check(p.Slot, qt.Equals, 1)
			c.Check(p.Bitmap, qt.IsTrue)
			c.Check(p.ArrayEvents, qt.Equals, vda.Events)
			c.Check(p.Fallback, qt.Matches, `.*slot 1, the only free slot, rebuilt in full.*`)
			if tt.match != "" {
				c.Check(p.Write, qt.Matches, tt.match)
			}
			if rs != nil {
				c.Check(p.Identity, qt.Contains, "the slot record's device UUID "+vdb.DeviceUUID.String())
			}
		})
	}
}

// TestDecideReAddNoFallbackWithTwoFreeSlots: on a raid6 with two slots
// free, md could rebuild a spare into either, so the plan has no fallback.
func TestDecideReAddNoFallbackWithTwoFreeSlots(t *testing.T) {
	c := qt.New(t)
	r := newReplaceRig(t, "raid6")
	f := r.facts(t, "")
	setAction(sysfs.ActionIdle)(f.s)
	var gone []string
	for _, ms := range f.s.members {
		if ms.Slot == 1 || ms.Slot == 2 {
			gone = append(gone, ms.Device)
		}
	}
	c.Assert(gone, qt.HasLen, 2)
	dropMember(gone[0])(f.s)
	dropMember(gone[1])(f.s)
	path := formerMember(t, r, gone[0], "vdx", nil)
	p, err := decideReAdd(f, r.m.candidateFacts(path, true), nil)
	c.Assert(err, qt.IsNil)
	c.Check(p.Fallback, qt.Equals, "")
}

// reAddRig is the raid1-bitmap capture with vdb detached from md0 and
// a copy of its image as vdx, a fake kernel that shows vdx added.
func reAddRig(t *testing.T) (*replaceRig, string) {
	r := newReplaceRig(t, "raid1-bitmap")
	detachMember(t, r.m, r.name, "vdb")
	r.k.show = true
	r.k.added = "vdx"
	r.m.ops.verifyTimeout = 200 * time.Millisecond
	return r, formerMember(t, r, "vdb", "vdx", func(sb *superblock.Superblock) { sb.Events -= 2 })
}

// TestReAdd: the executor issues the re-add with the superblock's number
// and slot and reports md's answer: taken back (ReAdded), or, when md
// answers EINVAL and the slot is the only free one, added as a spare and
// rebuilt in full into it (ReAddedFull). A refusal calls nothing and
// leaves the device byte-identical.
func TestReAdd(t *testing.T) {
	ctx := context.Background()
	t.Run("re-added", func(t *testing.T) {
		c := qt.New(t)
		r, path := reAddRig(t)
		before := readImage(c, path)
		res, err := r.m.ReAdd(ctx, ReAddRequest{Array: r.name, Device: path, AllowImageFile: true})
		c.Assert(err, qt.IsNil)
		c.Check(res.Outcome, qt.Equals, ReAdded)
		c.Check(r.k.Calls(), qt.DeepEquals, []string{"ReAddDisk(md0, 0:0, 1, 1, false, false)"})
		c.Check(res.Writes, qt.HasLen, 1)
		c.Check(bytes.Equal(readImage(c, path), before), qt.IsTrue, qt.Commentf("ReAdd wrote the device"))
	})
	t.Run("rebuilt in full", func(t *testing.T) {
		c := qt.New(t)
		r, path := reAddRig(t)
		r.k.fail = map[string]error{"ReAddDisk": unix.EINVAL}
		one := 1
		r.k.addedSlot = &one
		res, err := r.m.ReAdd(ctx, ReAddRequest{Array: r.name, Device: path, AllowImageFile: true})
		c.Assert(err, qt.IsNil)
		c.Check(res.Outcome, qt.Equals, ReAddedFull)
		c.Check(r.k.Calls(), qt.DeepEquals, []string{"ReAddDisk(md0, 0:0, 1, 1, false, false)", "AddNewDisk(md0, 0:0)"})
		c.Check(res.Writes, qt.HasLen, 2)
	})
	t.Run("landed elsewhere", func(t *testing.T) {
		c := qt.New(t)
		r, path := reAddRig(t)
		r.k.fail = map[string]error{"ReAddDisk": unix.EINVAL}
		zero := 0
		r.k.addedSlot = &zero
		_, err := r.m.ReAdd(ctx, ReAddRequest{Array: r.name, Device: path, AllowImageFile: true})
		c.Assert(err, qt.ErrorMatches, `md: the kernel put vdx into slot 0 of md0, not 1 .*`)
	})
	t.Run("kernel busy", func(t *testing.T) {
		c := qt.New(t)
		r, path := reAddRig(t)
		r.k.fail = map[string]error{"ReAddDisk": unix.EBUSY}
		_, err := r.m.ReAdd(ctx, ReAddRequest{Array: r.name, Device: path, AllowImageFile: true})
		c.Assert(err, qt.ErrorIs, ErrRefused)
		c.Check(errors.Is(err, unix.EBUSY), qt.IsTrue)
		c.Check(err, qt.ErrorMatches, `.*nothing was changed`)
	})
	t.Run("refused", func(t *testing.T) {
		c := qt.New(t)
		r, _ := reAddRig(t)
		path := formerMember(t, r, "vdb", "vdx", func(sb *superblock.Superblock) { sb.Events += 5 })
		before := readImage(c, path)
		_, err := r.m.ReAdd(ctx, ReAddRequest{Array: r.name, Device: path, AllowImageFile: true})
		c.Assert(err, qt.ErrorIs, ErrSplitBrain)
		r.checkNothingWritten(c, path, before)
	})
	t.Run("plan only", func(t *testing.T) {
		c := qt.New(t)
		r, path := reAddRig(t)
		before := readImage(c, path)
		p, err := r.m.PlanReAdd(ctx, ReAddRequest{Array: r.name, Device: path, AllowImageFile: true})
		c.Assert(err, qt.IsNil)
		c.Check(p.Slot, qt.Equals, 1)
		c.Check(p.Events+2, qt.Equals, p.ArrayEvents)
		r.checkNothingWritten(c, path, before)
	})
}
