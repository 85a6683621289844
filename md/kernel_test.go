package md

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	qt "github.com/frankban/quicktest"
	"github.com/google/uuid"
	"golang.org/x/sys/unix"

	"github.com/go-mdraid/mdraid/sysfs"
)

// TestWriteDeviceChecksTheDevice: the superblock write opens the path and
// checks that it is still the planned device before writing anything.
func TestWriteDeviceChecksTheDevice(t *testing.T) {
	c := qt.New(t)
	path := filepath.Join(t.TempDir(), "disk")
	c.Assert(os.WriteFile(path, make([]byte, 8192), 0o644), qt.IsNil)
	err := sysKernel{}.WriteDevice(deviceWrite{Path: path, Dev: sysfs.DevNum{Major: 254, Minor: 32}, Size: 8192, LBS: 512, MaxLBS: 512, Regions: []region{{What: "sb", Off: 4096, Data: []byte{1, 2, 3}}}})
	c.Check(err, qt.ErrorIs, ErrPlanChanged)
	b, err := os.ReadFile(path)
	c.Assert(err, qt.IsNil)
	c.Check(b, qt.DeepEquals, make([]byte, 8192))
}

// resumeWritten writes a planned replace's regions to a 64 MiB candidate of
// raid1-degraded-missing and plans again; it returns the candidate and the
// second plan, which resumes the written disk.
func resumeWritten(c *qt.C) (string, *Plan) {
	c.Helper()
	r := newReplaceRig(c, "raid1-degraded-missing")
	path := r.candidate(c, "vdz", 64<<20)
	req := ReplaceRequest{Array: r.name, With: path, AllowImageFile: true}
	p1, err := planReplace(r.facts(c, ""), r.m.candidateFacts(path, true), req, uuid.New())
	c.Assert(err, qt.IsNil)
	c.Assert(sysKernel{}.WriteDevice(deviceWrite{Path: path, Size: 64 << 20, LBS: 512, MaxLBS: 512, Regions: p1.regions}), qt.IsNil)
	p2, err := planReplace(r.facts(c, ""), r.m.candidateFacts(path, true), req, uuid.New())
	c.Assert(err, qt.IsNil)
	c.Assert(p2.Resume, qt.Equals, ResumeWritten)
	return path, p2
}

// TestWriteDeviceResumeChecksOwnArea: resuming, the final check on the
// writing descriptor verifies that the area left out of the blank rule
// still holds what the plan resumes. A bcache superblock that appeared
// there since the plan is refused, and the disk is byte-identical.
func TestWriteDeviceResumeChecksOwnArea(t *testing.T) {
	c := qt.New(t)
	path, p2 := resumeWritten(c)
	// Between the plan and the write, the disk becomes a bcache backing
	// device: its superblock sits at 4096+24, inside the area left out.
	bc := make([]byte, 4096)
	copy(bc[24:], "\xc6\x85\x73\xf6\x4e\x1a\x45\xca\x82\x65\xf5\x7f\x48\xba\x6d\x81")
	writeImage(t, path, 4096, bc)
	before := readImage(t, path)
	err := sysKernel{}.WriteDevice(deviceWrite{Path: path, Size: 64 << 20, LBS: 512, MaxLBS: 512, Regions: p2.regions, Own: regionArea(p2.regions)})
	c.Check(err, qt.ErrorIs, ErrPlanChanged)
	c.Check(nothingWritten(err), qt.IsTrue)
	c.Check(bytes.Equal(readImage(t, path), before), qt.IsTrue, qt.Commentf("the bcache superblock was overwritten"))
}

// TestWriteDeviceResumeAcceptsOwnArea: the same resume with our
// superblock untouched writes.
func TestWriteDeviceResumeAcceptsOwnArea(t *testing.T) {
	c := qt.New(t)
	path, p2 := resumeWritten(c)
	c.Check(sysKernel{}.WriteDevice(deviceWrite{Path: path, Size: 64 << 20, LBS: 512, MaxLBS: 512, Regions: p2.regions, Own: regionArea(p2.regions)}), qt.IsNil)
}

// TestWriteDeviceOpensPlannedDeviceExclusively: with a planned device
// number, WriteDevice opens with O_EXCL whatever a stat before the open
// said, and refuses what turns out not to be the planned block device.
func TestWriteDeviceOpensPlannedDeviceExclusively(t *testing.T) {
	c := qt.New(t)
	r := newReplaceRig(t, "raid1-degraded-missing")
	path := r.candidate(t, "vdz", 64<<20)
	p, err := r.plan(r.facts(t, ""), path)
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

// TestWriteDeviceRefusesBlockSize (item 2, the final check): the write
// refuses a device whose logical block size exceeds the array's, or
// differs from the planned one, and writes nothing.
func TestWriteDeviceRefusesBlockSize(t *testing.T) {
	c := qt.New(t)
	path := filepath.Join(t.TempDir(), "disk")
	c.Assert(os.WriteFile(path, make([]byte, 64<<10), 0o644), qt.IsNil)
	w := deviceWrite{Path: path, Size: 64 << 10, LBS: 512, MaxLBS: 256, Regions: []region{{What: "sb", Off: 4096, Data: []byte{1, 2, 3}}}}
	err := sysKernel{}.WriteDevice(w)
	c.Check(err, qt.ErrorIs, ErrPlanChanged)
	c.Check(err, qt.ErrorIs, errCandidateBlockSize)
	c.Check(nothingWritten(err), qt.IsTrue)
	w.MaxLBS, w.LBS = 512, 4096
	c.Check(sysKernel{}.WriteDevice(w), qt.ErrorIs, ErrPlanChanged)
	w.LBS, w.Size = 512, 1<<20
	c.Check(sysKernel{}.WriteDevice(w), qt.ErrorIs, ErrPlanChanged)
	c.Check(bytes.Equal(readImage(t, path), make([]byte, 64<<10)), qt.IsTrue, qt.Commentf("the candidate changed"))
}

// WriteDevice claims w's device and writes it: ClaimDevice and Write in
// one call, for tests of the checks and the write.
func (k sysKernel) WriteDevice(w deviceWrite) error {
	c, err := k.ClaimDevice(w)
	if err != nil {
		return err
	}
	return c.Write()
}

// TestClaimWriteChecksAgain: a non-exclusive writer (O_EXCL keeps out
// only exclusive openers) that writes a file system on the claimed disk
// before the claim's Write is found by the checks Write runs again on the
// same descriptor, and nothing is written over it.
func TestClaimWriteChecksAgain(t *testing.T) {
	c := qt.New(t)
	r := newReplaceRig(c, "raid1-degraded-missing")
	path := r.candidate(c, "vdz", 64<<20)
	p, err := planReplace(r.facts(c, ""), r.m.candidateFacts(path, true), ReplaceRequest{Array: r.name, With: path, AllowImageFile: true}, uuid.New())
	c.Assert(err, qt.IsNil)
	cl, err := sysKernel{}.ClaimDevice(deviceWrite{Path: path, Size: 64 << 20, LBS: 512, MaxLBS: 512, Regions: p.regions})
	c.Assert(err, qt.IsNil)
	writeImage(t, path, 0, []byte("XFSB"))
	before := readImage(t, path)
	err = cl.Write()
	c.Check(err, qt.ErrorIs, ErrPlanChanged)
	c.Check(err, qt.ErrorIs, errHasSignature)
	c.Check(nothingWritten(err), qt.IsTrue)
	c.Check(bytes.Equal(readImage(t, path), before), qt.IsTrue, qt.Commentf("written over"))
	c.Check(cl.Close(), qt.IsNil)
}
