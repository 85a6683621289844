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
	"github.com/go-mdraid/mdraid/sysfs"
)

// Tests for the holes of issue 10 in the write path: each refusal
// leaves the candidate byte-identical.

// readImage returns the whole image.
func readImage(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func writeImage(t testing.TB, path string, off int64, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}

// checkStatus returns the status of the named check, or "" if absent.
func checkStatus(p *Plan, name string) CheckStatus {
	for _, ck := range p.Checks {
		if ck.Name == name {
			return ck.Status
		}
	}
	return ""
}

// TestReplaceRefusesPartitionData (item 1): a disk whose MBR was wiped
// but whose partition at 1 MiB still holds an ext4 (or an LVM PV) is
// refused, and nothing is written.
func TestReplaceRefusesPartitionData(t *testing.T) {
	for _, tt := range []struct {
		name string
		off  int64
		b    []byte
	}{
		{"ext4 at 1 MiB", 1<<20 + 1080, u16le(0xef53)},
		{"LVM2 PV at 1 MiB + 512", 1<<20 + 512, []byte("LABELONE")},
		{"XFS at 16 MiB", 16 << 20, []byte("XFSB")},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := qt.New(t)
			r, path := replaceOn(t, "raid1-degraded-missing")
			writeImage(t, path, tt.off, tt.b)
			before := readImage(t, path)
			_, err := r.m.Replace(context.Background(), ReplaceRequest{Array: r.name, With: path, AllowImageFile: true})
			c.Assert(err, qt.ErrorIs, ErrRefused)
			c.Check(err, qt.ErrorIs, errHasSignature)
			c.Check(err, qt.ErrorMatches, `.*in a partition at byte.*blkdiscard.*wipefs -a alone is not enough.*`)
			c.Check(r.k.Calls(), qt.HasLen, 0)
			c.Check(bytes.Equal(readImage(t, path), before), qt.IsTrue, qt.Commentf("the candidate changed"))
		})
	}
}

// TestPlanRefusesBlockSize (item 2): a candidate with larger logical
// blocks than the array's is refused, and so is one whose block size, or
// the array's, is unknown.
func TestPlanRefusesBlockSize(t *testing.T) {
	c := qt.New(t)
	r, path := replaceOn(t, "raid1-degraded-missing")
	req := ReplaceRequest{Array: r.name, With: path, AllowImageFile: true}
	f := r.facts(t, "")
	c.Assert(f.lbs, qt.Equals, int64(512))

	cand := r.m.candidateFacts(path, true)
	cand.LogicalBlockSize = 4096 // a 4Kn disk
	p, err := planReplace(f, cand, req, uuid.New())
	c.Check(err, qt.ErrorIs, ErrRefused)
	c.Check(err, qt.ErrorIs, errCandidateBlockSize)
	c.Check(checkStatus(p, checkBlockSize), qt.Equals, StatusFail)

	cand.LogicalBlockSize = 0
	_, err = planReplace(f, cand, req, uuid.New())
	c.Check(err, qt.ErrorIs, errUnknownFact)

	// A 4Kn array takes a 512-byte disk.
	cand.LogicalBlockSize = 512
	f.lbs = 4096
	_, err = planReplace(f, cand, req, uuid.New())
	c.Check(err, qt.IsNil)

	// The array's block size unknown.
	c.Assert(os.Remove(r.m.fs.Path("block", r.name, "queue", "logical_block_size")), qt.IsNil)
	before := readImage(t, path)
	_, err = r.m.Replace(context.Background(), req)
	c.Check(err, qt.ErrorIs, errUnknownFact)
	c.Check(r.k.Calls(), qt.HasLen, 0)
	c.Check(bytes.Equal(readImage(t, path), before), qt.IsTrue, qt.Commentf("the candidate changed"))
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

// TestPlanCandidateNotInSysfs (item 5): facts that could not be
// established are refusals, and checks that did not run are shown as
// skipped, never passed.
func TestPlanCandidateNotInSysfs(t *testing.T) {
	c := qt.New(t)
	r, path := replaceOn(t, "raid1-degraded-missing")
	writeImage(t, path, 1080, u16le(0xef53))
	f := r.facts(t, "")
	req := ReplaceRequest{Array: r.name, With: path, AllowImageFile: true}

	// A block device the sysfs root does not know: the blank scan still
	// runs (and finds the ext4), membership and holders are unknown.
	cand := r.m.candidateFacts(path, true)
	cand.Image, cand.BlockDevice, cand.Device = false, true, ""
	cand.Holders = nil
	cand.unknown(&cand.sysfsErr, "not in sysfs", os.ErrNotExist)
	p, err := planReplace(f, cand, req, uuid.New())
	c.Assert(err, qt.ErrorIs, ErrRefused)
	c.Check(err, qt.ErrorIs, errUnknownFact)
	c.Check(checkStatus(p, checkNotMember), qt.Equals, StatusFail)
	c.Check(checkStatus(p, checkNotInUse), qt.Equals, StatusFail)
	c.Check(checkStatus(p, checkBlank), qt.Equals, StatusFail)

	// The scan could not run: a refusal, not a pass.
	cand = r.m.candidateFacts(path, true)
	cand.Findings, cand.scanned = nil, false
	p, err = planReplace(f, cand, req, uuid.New())
	c.Check(err, qt.ErrorIs, errUnknownFact)
	c.Check(checkStatus(p, checkBlank), qt.Equals, StatusFail)

	// Not a block device: the candidate checks did not run.
	cand = r.m.candidateFacts(path, true)
	cand.Image = false
	p, err = planReplace(f, cand, req, uuid.New())
	c.Check(err, qt.ErrorIs, errNotBlockDevice)
	for _, name := range []string{checkNotMember, checkNotInUse, checkBlank, checkBlockSize, checkSize} {
		c.Check(checkStatus(p, name), qt.Equals, StatusSkip, qt.Commentf("%s", name))
	}

	// A plan whose only blemish is a skipped check is refused.
	pl := &planner{p: &Plan{Array: "md0"}}
	pl.pass("a", "fine")
	pl.skip("b", "did not run")
	c.Check(pl.first, qt.IsNil)
}

// TestPlanSkipIsRefused: planReplace refuses a plan with a skipped check
// even when no check failed.
func TestPlanSkipIsRefused(t *testing.T) {
	c := qt.New(t)
	r, path := replaceOn(t, "raid1-degraded-missing")
	f := r.facts(t, "")
	f.s.raidDisks = 0 // planSlot skips: no slots to look at
	for i := range f.s.members {
		f.s.members[i].Slot = -1
	}
	p, err := planReplace(f, r.m.candidateFacts(path, true), ReplaceRequest{Array: r.name, With: path, AllowImageFile: true}, uuid.New())
	c.Check(err, qt.ErrorIs, ErrRefused)
	c.Check(p.Steps, qt.HasLen, 0)
}

// TestReplaceRefusesResumeOverData (item 6): a disk carrying our own
// half-written superblock, reused meanwhile for headerless data (plain
// dm-crypt, a raw image), is refused, and nothing is written.
func TestReplaceRefusesResumeOverData(t *testing.T) {
	for _, fx := range []string{"raid1-degraded-missing"} { // the other metadata versions: TestPlanResume
		t.Run(fx, func(t *testing.T) {
			c := qt.New(t)
			r, path := replaceOn(t, fx)
			req := ReplaceRequest{Array: r.name, With: path, AllowImageFile: true}
			r.k.fail = map[string]error{"AddNewDisk": errors.New("killed")}
			_, err := r.m.Replace(context.Background(), req)
			var ee *ExecError
			c.Assert(errors.As(err, &ee), qt.IsTrue, qt.Commentf("%v", err))
			r.k.fail, r.k.calls = nil, nil

			// The rerun resumes a disk that carries only our writes.
			p, err := r.m.PlanReplace(context.Background(), req)
			c.Assert(err, qt.IsNil)
			c.Check(p.Resume, qt.Equals, ResumeWritten)
			c.Check(checkStatus(p, checkResume), qt.Equals, StatusPass)

			// Within the first or last 4 MiB, or in a sampled block.
			const size = 64 << 20
			for _, off := range []int64{8192 + 4096*4, 3 << 20, ((size - 4096) * 32 / 63) &^ 4095, size - 16<<10} {
				writeImage(t, path, off, []byte("dm-crypt ciphertext"))
				before := readImage(t, path)
				_, err = r.m.Replace(context.Background(), req)
				c.Check(err, qt.ErrorIs, ErrRefused, qt.Commentf("data at %d", off))
				c.Check(err, qt.ErrorIs, ErrNotBlank, qt.Commentf("data at %d", off))
				c.Check(r.k.Calls(), qt.HasLen, 0)
				c.Check(bytes.Equal(readImage(t, path), before), qt.IsTrue, qt.Commentf("the candidate changed"))
				writeImage(t, path, off, make([]byte, len("dm-crypt ciphertext")))
			}
		})
	}
}

// TestPlanRefusesClusteredAndExternal (item 9).
func TestPlanRefusesClusteredAndExternal(t *testing.T) {
	c := qt.New(t)
	r, path := replaceOn(t, "raid1-degraded-missing")
	req := ReplaceRequest{Array: r.name, With: path, AllowImageFile: true}
	cand := r.m.candidateFacts(path, true)

	f := r.facts(t, "")
	f.s = cloneSnapshot(f.s)
	f.s.metadata = sysfs.MetadataVersion{Raw: "external:/md127/0", Kind: sysfs.MetadataExternal, External: "/md127/0"}
	_, err := planReplace(f, cand, req, uuid.New())
	c.Check(err, qt.ErrorIs, errUnsupportedArray)
	c.Check(err, qt.ErrorMatches, `.*external metadata.*`)

	f = r.facts(t, "")
	f.s = cloneSnapshot(f.s)
	sb := f.s.members[0].sb.Clone()
	sb.Features |= superblock.FeatureClustered
	f.s.members[0].sb = sb
	_, err = planReplace(f, cand, req, uuid.New())
	c.Check(err, qt.ErrorIs, errUnsupportedArray)
	c.Check(err, qt.ErrorMatches, `.*clustered \(feature bit clustered.*`)

	r2, path2 := replaceOn(t, "raid1-bitmap")
	f = r2.facts(t, "")
	c.Assert(f.bitmap, qt.Not(qt.IsNil))
	bm := *f.bitmap
	bm.Version = superblock.BitmapMajorClustered
	f.bitmap = &bm
	_, err = planReplace(f, r2.m.candidateFacts(path2, true), ReplaceRequest{Array: r2.name, With: path2, AllowImageFile: true}, uuid.New())
	c.Check(err, qt.ErrorIs, errUnsupportedArray)
	c.Check(err, qt.ErrorMatches, `.*bitmap version 5.*`)

	// A lockless bitmap (Linux 6.18+, version 6) is refused too: its
	// chunk size, bit area and per-chunk states differ from the classic
	// bitmap the clone would copy (docs/kernels.md).
	bm.Version = superblock.BitmapMajorLockless
	f.bitmap = &bm
	_, err = planReplace(f, r2.m.candidateFacts(path2, true), ReplaceRequest{Array: r2.name, With: path2, AllowImageFile: true}, uuid.New())
	c.Check(err, qt.ErrorIs, errUnsupportedArray)
	c.Check(err, qt.ErrorMatches, `.*lockless bitmap \(llbitmap.*`)
}

// TestExecuteFinalBlankCheck (item 10): a file system made between the
// plan (and the executor's re-plan) and the write is found by the check
// on the descriptor that writes, and is not overwritten.
func TestExecuteFinalBlankCheck(t *testing.T) {
	c := qt.New(t)
	r, path := replaceOn(t, "raid1-failed")
	var before []byte
	r.m.ops.afterStep = func(k StepKind) error {
		if k == StepFreeze { // mkfs finishes now
			writeImage(t, path, 0, []byte("XFSB"))
			before = readImage(t, path)
		}
		return nil
	}
	_, err := r.m.Replace(context.Background(), ReplaceRequest{Array: r.name, With: path, Member: "vdb", AllowImageFile: true})
	c.Assert(err, qt.ErrorIs, ErrPlanChanged)
	c.Check(err, qt.ErrorIs, errHasSignature)
	var ee *ExecError
	c.Assert(errors.As(err, &ee), qt.IsTrue)
	c.Check(ee.Step, qt.Equals, StepWriteSuperblock)
	c.Check(ee.State, qt.Contains, "nothing was written to "+path)
	c.Check(ee.State, qt.Contains, "vdb")
	c.Check(ee.State, qt.Not(qt.Contains), "zero-superblock")
	c.Check(bytes.Equal(readImage(t, path), before), qt.IsTrue, qt.Commentf("the candidate changed"))
	for _, call := range r.k.Calls() {
		c.Check(strings.HasPrefix(call, "AddNewDisk"), qt.IsFalse)
	}
}

// TestNotBlankNamesSerial: the refusal names the disk by serial and
// path and says how to blank it.
func TestNotBlankNamesSerial(t *testing.T) {
	c := qt.New(t)
	r, path := replaceOn(t, "raid1-degraded-missing")
	writeImage(t, path, 1080, u16le(0xef53))
	cand := r.m.candidateFacts(path, true)
	cand.Serial = "WD-WCC4E1234567"
	_, err := planReplace(r.facts(t, ""), cand, ReplaceRequest{Array: r.name, With: path, AllowImageFile: true}, uuid.New())
	c.Check(err, qt.ErrorIs, errHasSignature)
	c.Check(err, qt.ErrorMatches, `.*`+path+` \(serial WD-WCC4E1234567\) is not blank: ext2/3/4 superblock at byte 1080\. .*blkdiscard `+path+`; wipefs -a alone is not enough.*`)
}
