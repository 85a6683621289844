package md

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	qt "github.com/frankban/quicktest"
	"github.com/google/uuid"
)

// TestResumeBetweenSuperblockAndBitmap: a run killed after the superblock
// region and before the bitmap region converges: the rerun resumes.
func TestResumeBetweenSuperblockAndBitmap(t *testing.T) {
	c := qt.New(t)
	r := newReplaceRig(t, "raid1-bitmap")
	path := r.candidate(t, "vdz", 64<<20)
	req := ReplaceRequest{Array: r.name, With: path, AllowImageFile: true}
	plan := func() (*Plan, error) {
		f := pulledFacts(t, r, "vdb")
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
	f := pulledFacts(t, r, "vdb")
	p1, err := planReplace(f, r.m.candidateFacts(path, true), req, uuid.New())
	c.Assert(err, qt.IsNil)
	c.Assert(sysKernel{}.WriteDevice(deviceWrite{Path: path, Size: 64 << 20, LBS: 512, MaxLBS: 512, Regions: p1.regions[:1]}), qt.IsNil)
	writeImage(t, path, p1.regions[1].Off+4096, bytes.Repeat([]byte("data"), 1024))
	_, err = planReplace(f, r.m.candidateFacts(path, true), req, uuid.New())
	c.Check(err, qt.ErrorIs, ErrRefused)
	var nb *NotBlankError
	c.Check(errors.As(err, &nb), qt.IsTrue)
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
			c.Check(checkStatus(p, CheckResume), qt.Equals, StatusPass)

			// Within the first or last 4 MiB, or in a sampled block.
			const size = 64 << 20
			for _, off := range []int64{8192 + 4096*4, 3 << 20, ((size - 4096) * 32 / 63) &^ 4095, size - 16<<10} {
				writeImage(t, path, off, []byte("dm-crypt ciphertext"))
				before := readImage(t, path)
				_, err = r.m.Replace(context.Background(), req)
				c.Check(err, qt.ErrorIs, ErrRefused, qt.Commentf("data at %d", off))
				c.Check(err, qt.ErrorIs, ErrNotBlank, qt.Commentf("data at %d", off))
				r.checkNothingWritten(c, path, before)
				writeImage(t, path, off, make([]byte, len("dm-crypt ciphertext")))
			}
		})
	}
}

// TestReplaceRefusesFormerMember (issue 31): a disk carrying the array's
// own superblock (a former member, pulled and offered back) is refused
// with what it is and what adds it back, before the advice to erase it;
// nothing is written.
func TestReplaceRefusesFormerMember(t *testing.T) {
	tests := []struct {
		fixture string
		bitmap  string
	}{
		{"raid1-bitmap", "with the array's write-intent bitmap, copies only what changed"},
		{"raid1-degraded-missing", "md rebuilds it in full (the array has no write-intent bitmap)"},
	}
	for _, tt := range tests {
		t.Run(tt.fixture, func(t *testing.T) {
			c := qt.New(t)
			r := newReplaceRig(t, tt.fixture)
			f := pulledFacts(t, r, "vdb")
			path := r.candidate(t, "vdz", 64<<20)
			member := readImage(t, filepath.Join(r.dev, "vda"))
			writeImage(t, path, 0, member[:min(len(member), 64<<20)])
			before := readImage(t, path)
			_, err := r.plan(f, path)
			c.Assert(err, qt.ErrorIs, ErrRefused)
			c.Assert(err, qt.ErrorIs, ErrNotBlank)
			msg := err.Error()
			c.Check(msg, qt.Contains, path+" is a former member of "+r.name+": its md superblock carries "+r.name+"'s array UUID")
			c.Check(msg, qt.Contains, "mdctl re-add md0 "+path+" puts it back into its slot")
			c.Check(msg, qt.Contains, tt.bitmap)
			former, erase := strings.Index(msg, "former member"), strings.Index(msg, "blkdiscard")
			c.Check(erase > former && former >= 0, qt.IsTrue, qt.Commentf("the way back comes before the advice to erase: %s", msg))
			r.checkNothingWritten(c, path, before)
		})
	}
}

// TestReplaceForeignArrayIsNoFormerMember: another array's superblock is
// "not blank" without the former-member advice.
func TestReplaceForeignArrayIsNoFormerMember(t *testing.T) {
	c := qt.New(t)
	r := newReplaceRig(t, "raid1-bitmap")
	other := newReplaceRig(t, "raid1-degraded-missing")
	f := pulledFacts(t, r, "vdb")
	path := r.candidate(t, "vdz", 64<<20)
	member := readImage(t, filepath.Join(other.dev, "vda"))
	writeImage(t, path, 0, member[:min(len(member), 64<<20)])
	before := readImage(t, path)
	_, err := r.plan(f, path)
	c.Assert(err, qt.ErrorIs, ErrNotBlank)
	c.Check(err.Error(), qt.Not(qt.Contains), "former member")
	r.checkNothingWritten(c, path, before)
}
