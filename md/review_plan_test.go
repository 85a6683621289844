package md

import (
	"bytes"
	"context"
	"errors"
	"os"
	"runtime"
	"strings"
	"testing"

	qt "github.com/frankban/quicktest"
	"github.com/google/uuid"
	"golang.org/x/sys/unix"

	"github.com/go-mdraid/mdraid/sysfs"
)

// These tests come from the adversarial review of the replace write path
// (issue 10, review findings 1, 2, 3, 6, 7 and 8).

// TestPlanRefusesUnreadableSyncAction: an unreadable sync_action is no
// evidence that nothing runs. The plan refuses with errUnknownFact, shows
// the check as skipped, and writes nothing.
func TestPlanRefusesUnreadableSyncAction(t *testing.T) {
	c := qt.New(t)
	r := newReplaceRig(t, "raid1-degraded-missing")
	path := r.candidate(t, "vdz", 64<<20)
	f := r.facts(t, "")
	f.s.action = ""
	f.s.errs = append(f.s.errs, "sync_action: permission denied")
	p, err := planReplace(f, r.m.candidateFacts(path, true), ReplaceRequest{Array: r.name, With: path, AllowImageFile: true}, uuid.New())
	c.Assert(err, qt.ErrorIs, errUnknownFact)
	c.Check(err, qt.ErrorIs, ErrRefused)
	c.Check(checkStatus(p, checkIdle), qt.Equals, StatusSkip)
	c.Check(p.Steps, qt.HasLen, 0)
}

// TestPlanRefusesEmptySyncAction: a redundant array always has a
// sync_action; reading none (the attribute missing) is not "idle".
func TestPlanRefusesEmptySyncAction(t *testing.T) {
	c := qt.New(t)
	r := newReplaceRig(t, "raid1-degraded-missing")
	path := r.candidate(t, "vdz", 64<<20)
	f := r.facts(t, "")
	f.s.action = ""
	p, err := planReplace(f, r.m.candidateFacts(path, true), ReplaceRequest{Array: r.name, With: path, AllowImageFile: true}, uuid.New())
	c.Assert(err, qt.ErrorIs, errUnknownFact)
	c.Check(checkStatus(p, checkIdle), qt.Equals, StatusSkip)
}

// TestPlanRefusesUnreadableArrayFacts: every attribute the decision uses
// that could not be read is a refusal, shown as [skip], never [pass].
func TestPlanRefusesUnreadableArrayFacts(t *testing.T) {
	for _, tt := range []struct {
		attr  string
		check string
		edit  func(*snapshot)
	}{
		{"sync_completed", checkIdle, func(s *snapshot) { s.progress = sysfs.Progress{} }},
		{"array_state", checkRunning, func(s *snapshot) { s.state = "" }},
		{"degraded", checkRunning, func(s *snapshot) { s.degraded = nil }},
		{"raid_disks", checkSlot, func(s *snapshot) {}},
		{"members", checkSlot, func(s *snapshot) {}},
		{"component_size", checkSize, func(s *snapshot) { s.component = 0 }},
	} {
		t.Run(tt.attr, func(t *testing.T) {
			c := qt.New(t)
			r := newReplaceRig(t, "raid1-degraded-missing")
			path := r.candidate(t, "vdz", 64<<20)
			f := r.facts(t, "")
			tt.edit(f.s)
			f.s.errs = append(f.s.errs, tt.attr+": permission denied")
			p, err := planReplace(f, r.m.candidateFacts(path, true), ReplaceRequest{Array: r.name, With: path, AllowImageFile: true}, uuid.New())
			c.Assert(err, qt.ErrorIs, errUnknownFact)
			c.Check(checkStatus(p, tt.check), qt.Equals, StatusSkip)
			c.Check(err, qt.ErrorMatches, ".*"+tt.attr+".*")
		})
	}
}

// TestPlanRefusesUnreadableComponentSize: without component_size, no
// candidate is known to be big enough; an 8 MiB disk for a 64 MiB
// mirror must not pass.
func TestPlanRefusesUnreadableComponentSize(t *testing.T) {
	c := qt.New(t)
	r := newReplaceRig(t, "raid1-degraded-missing")
	path := r.candidate(t, "vdz", 8<<20)
	f := r.facts(t, "")
	f.s.component = 0
	f.s.errs = append(f.s.errs, "component_size: permission denied")
	p, err := planReplace(f, r.m.candidateFacts(path, true), ReplaceRequest{Array: r.name, With: path, AllowImageFile: true}, uuid.New())
	c.Assert(err, qt.ErrorIs, errUnknownFact)
	c.Check(checkStatus(p, checkSize), qt.Equals, StatusSkip)
}

// TestExecuteRefusesUnreadableSyncActionWritesNothing: through the
// executor, the refusal writes nothing to the candidate.
func TestExecuteRefusesUnreadableSyncActionWritesNothing(t *testing.T) {
	c := qt.New(t)
	r, path := replaceOn(t, "raid1-degraded-missing")
	before := readImage(t, path)
	c.Assert(os.Remove(r.m.fs.Path("block", r.name, "md", "sync_action")), qt.IsNil)
	_, err := r.m.Replace(context.Background(), ReplaceRequest{Array: r.name, With: path, AllowImageFile: true})
	c.Assert(err, qt.ErrorIs, errUnknownFact)
	c.Check(r.k.Calls(), qt.HasLen, 0)
	c.Check(bytes.Equal(readImage(t, path), before), qt.IsTrue, qt.Commentf("the candidate changed"))
}

// TestResumeBetweenSuperblockAndBitmap: a run killed after the superblock
// region and before the bitmap region converges: the rerun resumes.
func TestResumeBetweenSuperblockAndBitmap(t *testing.T) {
	c := qt.New(t)
	r := newReplaceRig(t, "raid1-bitmap")
	path := r.candidate(t, "vdz", 64<<20)
	req := ReplaceRequest{Array: r.name, With: path, AllowImageFile: true}
	plan := func() (*Plan, error) {
		f := r.facts(t, "")
		setAction(sysfs.ActionIdle)(f.s)
		dropMember("vdb")(f.s)
		return planReplace(f, r.m.candidateFacts(path, true), req, uuid.New())
	}
	p1, err := plan()
	c.Assert(err, qt.IsNil)
	c.Assert(p1.regions, qt.HasLen, 2)
	c.Assert(sysKernel{}.WriteDevice(deviceWrite{Path: path, Size: 64 << 20, LBS: 512, MaxLBS: 512, Regions: p1.regions[:1]}), qt.IsNil)
	p2, err := plan()
	c.Assert(err, qt.IsNil)
	c.Check(p2.Resume, qt.Equals, ResumeWritten)
	c.Check(p2.DeviceUUID, qt.Equals, p1.DeviceUUID)
	// The resumed write completes the disk as a fresh run would.
	c.Assert(sysKernel{}.WriteDevice(deviceWrite{Path: path, Size: 64 << 20, LBS: 512, MaxLBS: 512, Regions: p2.regions, Own: regionArea(p2.regions)}), qt.IsNil)
	for _, rg := range p1.regions {
		got := readImage(t, path)[rg.Off : rg.Off+int64(len(rg.Data))]
		c.Check(bytes.Equal(got, rg.Data), qt.IsTrue, qt.Commentf("%s", rg.What))
	}
}

// TestResumeRefusesForeignBitmapArea: the bitmap area of a half-done run
// holds something else than nothing or our bitmap: not blank.
func TestResumeRefusesForeignBitmapArea(t *testing.T) {
	c := qt.New(t)
	r := newReplaceRig(t, "raid1-bitmap")
	path := r.candidate(t, "vdz", 64<<20)
	req := ReplaceRequest{Array: r.name, With: path, AllowImageFile: true}
	f := r.facts(t, "")
	setAction(sysfs.ActionIdle)(f.s)
	dropMember("vdb")(f.s)
	p1, err := planReplace(f, r.m.candidateFacts(path, true), req, uuid.New())
	c.Assert(err, qt.IsNil)
	c.Assert(sysKernel{}.WriteDevice(deviceWrite{Path: path, Size: 64 << 20, LBS: 512, MaxLBS: 512, Regions: p1.regions[:1]}), qt.IsNil)
	writeImage(t, path, p1.regions[1].Off+4096, bytes.Repeat([]byte("data"), 1024))
	_, err = planReplace(f, r.m.candidateFacts(path, true), req, uuid.New())
	c.Check(err, qt.ErrorIs, ErrRefused)
	var nb *NotBlankError
	c.Check(errors.As(err, &nb), qt.IsTrue)
}

// TestWriteDeviceResumeChecksOwnArea: resuming, the final check on the
// writing descriptor verifies that the area left out of the blank rule
// still holds what the plan resumes. A bcache superblock that appeared
// there since the plan is refused, and the disk is byte-identical.
func TestWriteDeviceResumeChecksOwnArea(t *testing.T) {
	c := qt.New(t)
	r := newReplaceRig(t, "raid1-degraded-missing")
	path := r.candidate(t, "vdz", 64<<20)
	req := ReplaceRequest{Array: r.name, With: path, AllowImageFile: true}
	p1, err := planReplace(r.facts(t, ""), r.m.candidateFacts(path, true), req, uuid.New())
	c.Assert(err, qt.IsNil)
	c.Assert(sysKernel{}.WriteDevice(deviceWrite{Path: path, Size: 64 << 20, LBS: 512, MaxLBS: 512, Regions: p1.regions}), qt.IsNil)
	p2, err := planReplace(r.facts(t, ""), r.m.candidateFacts(path, true), req, uuid.New())
	c.Assert(err, qt.IsNil)
	c.Assert(p2.Resume, qt.Equals, ResumeWritten)
	// Between the plan and the write, the disk becomes a bcache backing
	// device: its superblock sits at 4096+24, inside the area left out.
	bc := make([]byte, 4096)
	copy(bc[24:], "\xc6\x85\x73\xf6\x4e\x1a\x45\xca\x82\x65\xf5\x7f\x48\xba\x6d\x81")
	writeImage(t, path, 4096, bc)
	before := readImage(t, path)
	err = sysKernel{}.WriteDevice(deviceWrite{Path: path, Size: 64 << 20, LBS: 512, MaxLBS: 512, Regions: p2.regions, Own: regionArea(p2.regions)})
	c.Check(err, qt.ErrorIs, ErrPlanChanged)
	c.Check(nothingWritten(err), qt.IsTrue)
	c.Check(bytes.Equal(readImage(t, path), before), qt.IsTrue, qt.Commentf("the bcache superblock was overwritten"))
}

// TestWriteDeviceResumeAcceptsOwnArea: the same resume with our
// superblock untouched writes.
func TestWriteDeviceResumeAcceptsOwnArea(t *testing.T) {
	c := qt.New(t)
	r := newReplaceRig(t, "raid1-degraded-missing")
	path := r.candidate(t, "vdz", 64<<20)
	req := ReplaceRequest{Array: r.name, With: path, AllowImageFile: true}
	p1, err := planReplace(r.facts(t, ""), r.m.candidateFacts(path, true), req, uuid.New())
	c.Assert(err, qt.IsNil)
	c.Assert(sysKernel{}.WriteDevice(deviceWrite{Path: path, Size: 64 << 20, LBS: 512, MaxLBS: 512, Regions: p1.regions}), qt.IsNil)
	p2, err := planReplace(r.facts(t, ""), r.m.candidateFacts(path, true), req, uuid.New())
	c.Assert(err, qt.IsNil)
	c.Assert(p2.Resume, qt.Equals, ResumeWritten)
	c.Check(sysKernel{}.WriteDevice(deviceWrite{Path: path, Size: 64 << 20, LBS: 512, MaxLBS: 512, Regions: p2.regions, Own: regionArea(p2.regions)}), qt.IsNil)
}

// TestCandidateFactsHostileBitmapAllocation: a hostile candidate (one
// 1.2 superblock with a bitmap whose bits fill almost the whole disk)
// does not make candidateFacts allocate what its superblock says.
func TestCandidateFactsHostileBitmapAllocation(t *testing.T) {
	c := qt.New(t)
	r := newReplaceRig(t, "raid1-bitmap")
	small := r.candidate(t, "vdy", 64<<20)
	f := r.facts(t, "")
	setAction(sysfs.ActionIdle)(f.s)
	dropMember("vdb")(f.s)
	p, err := planReplace(f, r.m.candidateFacts(small, true), ReplaceRequest{Array: r.name, With: small, AllowImageFile: true}, uuid.New())
	c.Assert(err, qt.IsNil)

	const size = 1 << 30
	path := r.candidate(t, "vdz", size)
	sb := p.Superblock.Clone()
	sb.DataOffset = size/512 - 64
	sb.DataSize = 64
	bm := *f.bitmap
	bm.ChunkSize = 512
	bm.SyncSize = 900 << 20 * 8 // bits/8 = 900 MiB
	sb.BBLogOffset, sb.BBLogSize = 0, 0
	hdr, err := sb.MarshalBinary()
	c.Assert(err, qt.IsNil)
	bh, err := bm.MarshalBinary()
	c.Assert(err, qt.IsNil)
	// Only the superblock and the bitmap header: a sparse image.
	writeImage(t, path, sb.DiskOffset, hdr)
	writeImage(t, path, sb.DiskOffset+int64(sb.BitmapOffset)*512, bh)
	before := readImage(t, path)

	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	cand := r.m.candidateFacts(path, true)
	runtime.ReadMemStats(&m1)
	c.Check(m1.TotalAlloc-m0.TotalAlloc < 64<<20, qt.IsTrue, qt.Commentf("candidateFacts allocated %d MiB", (m1.TotalAlloc-m0.TotalAlloc)>>20))
	_, err = planReplace(f, cand, ReplaceRequest{Array: r.name, With: path, AllowImageFile: true}, uuid.New())
	c.Check(err, qt.ErrorIs, ErrRefused)
	c.Check(bytes.Equal(readImage(t, path), before), qt.IsTrue)
}

// TestMemberWritesBoundsTheBitmap: memberWrites never allocates more than
// the bitmap format allows for the array's size, whatever the bitmap
// header says.
func TestMemberWritesBoundsTheBitmap(t *testing.T) {
	c := qt.New(t)
	r := newReplaceRig(t, "raid1-bitmap")
	path := r.candidate(t, "vdy", 64<<20)
	f := r.facts(t, "")
	setAction(sysfs.ActionIdle)(f.s)
	dropMember("vdb")(f.s)
	p, err := planReplace(f, r.m.candidateFacts(path, true), ReplaceRequest{Array: r.name, With: path, AllowImageFile: true}, uuid.New())
	c.Assert(err, qt.IsNil)
	for _, tt := range []struct {
		name               string
		dataSize, syncSize uint64
		chunk              uint32
	}{
		{"bits past the format limit", 200 << 20 * 8, 160 << 20 * 8, 512},
		{"bitmap larger than the member", 64, 160 << 20 * 8, 512},
		{"chunk not a power of two", 200 << 20 * 8, 1 << 20, 1000},
	} {
		c.Run(tt.name, func(c *qt.C) {
			sb := p.Superblock.Clone()
			sb.DataOffset = 1 << 30 // 512 GiB of room before the data
			sb.DataSize = tt.dataSize
			sb.BBLogOffset, sb.BBLogSize = 0, 0
			bm := *f.bitmap
			bm.ChunkSize = tt.chunk
			bm.SyncSize = tt.syncSize
			var m0, m1 runtime.MemStats
			runtime.ReadMemStats(&m0)
			_, err := memberWrites(sb, &bm)
			runtime.ReadMemStats(&m1)
			c.Check(err, qt.Not(qt.IsNil))
			c.Check(m1.TotalAlloc-m0.TotalAlloc < 1<<20, qt.IsTrue)
		})
	}
}

// TestWriteDeviceOpensPlannedDeviceExclusively: with a planned device
// number, WriteDevice opens with O_EXCL whatever a stat before the open
// said, and refuses what turns out not to be the planned block device.
func TestWriteDeviceOpensPlannedDeviceExclusively(t *testing.T) {
	c := qt.New(t)
	r := newReplaceRig(t, "raid1-degraded-missing")
	path := r.candidate(t, "vdz", 64<<20)
	p, err := planReplace(r.facts(t, ""), r.m.candidateFacts(path, true), ReplaceRequest{Array: r.name, With: path, AllowImageFile: true}, uuid.New())
	c.Assert(err, qt.IsNil)
	before := readImage(t, path)
	var flags []int
	k := sysKernel{openFile: func(name string, flag int, perm os.FileMode) (*os.File, error) {
		flags = append(flags, flag)
		return os.OpenFile(name, flag, perm)
	}}
	err = k.WriteDevice(deviceWrite{Path: path, Dev: sysfs.DevNum{Major: 254, Minor: 99}, Size: 64 << 20, LBS: 512, MaxLBS: 512, Regions: p.regions})
	c.Check(err, qt.ErrorIs, ErrPlanChanged)
	c.Check(nothingWritten(err), qt.IsTrue)
	c.Assert(flags, qt.Not(qt.HasLen), 0)
	for _, fl := range flags {
		c.Check(fl&unix.O_EXCL, qt.Not(qt.Equals), 0)
	}
	c.Check(bytes.Equal(readImage(t, path), before), qt.IsTrue)
}

// TestHotSlotFailureSaysWantReplacement: a hot replace whose slot pin
// fails after want_replacement was set says that the old member is
// marked, and how to clear it.
func TestHotSlotFailureSaysWantReplacement(t *testing.T) {
	c := qt.New(t)
	r, path := replaceOn(t, "raid1-v1.2")
	r.k.fail = map[string]error{"SetSlot": unix.EBUSY}
	_, err := r.m.Replace(context.Background(), ReplaceRequest{Array: r.name, With: path, Member: "vdb", Hot: true, AllowImageFile: true})
	var ee *ExecError
	c.Assert(errors.As(err, &ee), qt.IsTrue)
	c.Check(ee.Done, qt.Contains, StepWantReplacement)
	c.Check(ee.State, qt.Contains, "want_replacement")
	c.Check(ee.State, qt.Contains, "-want_replacement")
}

// TestSlotFailureWithoutFreezeSaysNotFrozen: the message of a SetSlot
// failure says recovery is left frozen only when this run froze it.
func TestSlotFailureWithoutFreezeSaysNotFrozen(t *testing.T) {
	c := qt.New(t)
	r, path := replaceOn(t, "raid1-degraded-missing")
	r.k.fail = map[string]error{"SetSlot": unix.EBUSY}
	p, err := r.m.PlanReplace(context.Background(), ReplaceRequest{Array: r.name, With: path, AllowImageFile: true})
	c.Assert(err, qt.IsNil)
	x := &execution{m: r.m, p: p, key: p.UUID, done: []StepKind{StepWriteSuperblock, StepAdd}}
	err = x.failed(StepSetSlot, unix.EBUSY)
	var ee *ExecError
	c.Assert(errors.As(err, &ee), qt.IsTrue)
	c.Check(strings.Contains(ee.State, "left frozen"), qt.IsFalse, qt.Commentf("%s", ee.State))
	c.Check(ee.State, qt.Contains, "not frozen")
}

// TestAdoptedFreezeFailureIsAChange: a run that adopted the freeze an
// interrupted replace left, and fails before writing, unfreezes an array
// that was frozen before it started: that is a change, and
// NothingChanged is not set.
func TestAdoptedFreezeFailureIsAChange(t *testing.T) {
	c := qt.New(t)
	r, path := replaceOn(t, "raid1-degraded-missing")
	p, err := r.m.PlanReplace(context.Background(), ReplaceRequest{Array: r.name, With: path, AllowImageFile: true})
	c.Assert(err, qt.IsNil)
	p.adopted = &freezeRecord{}
	x := &execution{m: r.m, p: p, key: p.UUID, froze: true}
	err = x.failed(StepWriteSuperblock, &notWrittenError{unix.EBUSY})
	var ee *ExecError
	c.Assert(errors.As(err, &ee), qt.IsTrue)
	c.Check(ee.NothingChanged, qt.IsFalse)
	c.Check(ee.State, qt.Contains, "Recovery was unfrozen")
}
