package md

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	qt "github.com/frankban/quicktest"

	"github.com/go-mdraid/mdraid/superblock"
)

// createRig is a captured system with a fake kernel (the claims are real,
// on image files), a fake assembly door and two blank 64 MiB images.
func createRig(t *testing.T) (*replaceRig, *fakeAssembly, []string) {
	t.Helper()
	r := newReplaceRig(t, "raid1-v1.2")
	f := &fakeAssembly{}
	r.m.asm = f
	return r, f, []string{r.candidate(t, "vdx", 64<<20), r.candidate(t, "vdy", 64<<20)}
}

func mirrorRequest(devs []string) CreateRequest {
	return CreateRequest{Array: "/dev/md/boot", Level: superblock.LevelRAID1, RaidDevices: 2,
		Metadata: superblock.Version10, Homehost: "talos", Devices: devs, AllowImageFile: true}
}

// TestCreateSequence: the devices are claimed before anything is written,
// then written, then the array is made and started as assembly does, and
// each device carries the planned superblock in its slot.
func TestCreateSequence(t *testing.T) {
	c := qt.New(t)
	r, f, devs := createRig(t)
	res, err := r.m.Create(context.Background(), mirrorRequest(devs))
	c.Assert(err, qt.IsNil)
	c.Check(r.k.Calls()[:2], qt.DeepEquals, []string{"ClaimDevice(vdx)", "ClaimDevice(vdy)"})
	c.Check(r.k.Calls()[2:], qt.HasLen, 2) // the two writes
	c.Assert(len(f.calls) >= 5, qt.IsTrue, qt.Commentf("%q", f.calls))
	a := res.Array
	c.Check(f.calls[0], qt.Equals, "NewArray "+a)
	c.Check(f.calls[2:6], qt.DeepEquals, []string{"SetArrayInfo " + a + " 1.0", "AddDisk " + a + " 0:0", "AddDisk " + a + " 0:0", "Start " + a + " false"})
	c.Check(res.Path, qt.Equals, "/dev/md/boot")
	for i, p := range devs {
		img := bytes.NewReader(readImage(t, p))
		sb, err := superblock.Read(img, img.Size(), superblock.Version10)
		c.Assert(err, qt.IsNil)
		c.Check(sb.SetUUID, qt.Equals, res.Plan.Members[i].Superblock.SetUUID)
		c.Check(sb.FullName(), qt.Equals, "talos:boot")
		c.Check(sb.Role(), qt.Equals, superblock.Role(i))
	}
}

// TestCreateRefusalWritesNothing: a device that is not blank, or is not a
// device, is refused by the plan: nothing is claimed, nothing written to
// any device, no md device made.
func TestCreateRefusalWritesNothing(t *testing.T) {
	for _, tt := range []struct {
		name  string
		setup func(t *testing.T, req *CreateRequest)
		is    error
	}{
		{name: "ext4", setup: func(t *testing.T, req *CreateRequest) {
			writeImage(t, req.Devices[1], 1080, []byte{0x53, 0xef})
		}, is: ErrNotBlank},
		{name: "image-file-not-allowed", setup: func(t *testing.T, req *CreateRequest) {
			req.AllowImageFile = false
		}, is: ErrCreateRefused},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := qt.New(t)
			r, f, devs := createRig(t)
			req := mirrorRequest(devs)
			tt.setup(t, &req)
			before := [][]byte{readImage(t, devs[0]), readImage(t, devs[1])}
			_, err := r.m.Create(context.Background(), req)
			c.Assert(err, qt.ErrorIs, ErrRefused)
			c.Assert(err, qt.ErrorIs, tt.is)
			c.Check(r.k.Calls(), qt.HasLen, 0)
			c.Check(f.calls, qt.HasLen, 0)
			for i, p := range devs {
				c.Check(bytes.Equal(readImage(t, p), before[i]), qt.IsTrue, qt.Commentf("%s changed", p))
			}
		})
	}
}

// TestCreateFinalBlankCheck: a file system made on the second device
// after the plan is found by the blank check on its exclusive descriptor;
// the first device, already claimed, is released unwritten, and no md
// device is made.
func TestCreateFinalBlankCheck(t *testing.T) {
	c := qt.New(t)
	r, f, devs := createRig(t)
	var before [][]byte
	r.k.onCall = func(name string) {
		if name == "ClaimDevice" && before == nil {
			writeImage(t, devs[1], 0, []byte("XFSB")) // mkfs finishes now
			before = [][]byte{readImage(t, devs[0]), readImage(t, devs[1])}
		}
	}
	_, err := r.m.Create(context.Background(), mirrorRequest(devs))
	c.Assert(err, qt.ErrorIs, ErrPlanChanged)
	c.Check(err, qt.ErrorIs, errHasSignature)
	c.Check(err, qt.ErrorMatches, ".*"+regexpQuote(filepath.Base(devs[1]))+" is no longer blank.*")
	var ce *CreateError
	c.Check(errors.As(err, &ce), qt.IsFalse, qt.Commentf("nothing was written: a refusal, not a CreateError"))
	c.Check(r.k.Calls(), qt.DeepEquals, []string{"ClaimDevice(vdx)", "ClaimDevice(vdy)"})
	c.Check(f.calls, qt.HasLen, 0)
	for i, p := range devs {
		c.Check(bytes.Equal(readImage(t, p), before[i]), qt.IsTrue, qt.Commentf("%s changed", p))
	}
}

// TestCreateWriteFailureNamesWrites: a write that fails on the second
// device is a CreateError naming the device written and the one possibly
// part-written; no md device is made.
func TestCreateWriteFailureNamesWrites(t *testing.T) {
	c := qt.New(t)
	r, f, devs := createRig(t)
	n := 0
	r.k.onCall = func(name string) {
		if name == "WriteDevice" {
			n++
			if n == 2 {
				r.k.mu.Lock()
				r.k.fail = map[string]error{"WriteDevice": errors.New("EIO")}
				r.k.mu.Unlock()
			}
		}
	}
	_, err := r.m.Create(context.Background(), mirrorRequest(devs))
	var ce *CreateError
	c.Assert(errors.As(err, &ce), qt.IsTrue, qt.Commentf("%v", err))
	c.Check(ce.Written, qt.DeepEquals, devs[:1])
	c.Check(ce.State, qt.Equals, "superblocks written on "+devs[0]+", "+devs[1]+" possibly part-written; no array was started")
	c.Check(f.calls, qt.HasLen, 0)
}

func regexpQuote(s string) string { return strings.NewReplacer(".", `\.`).Replace(s) }

// TestCreateFirstWriteRefusedIsNoWrite: a claim whose write is refused
// before its first byte (the device changed under the claim) on the
// first device is a refusal saying nothing was written, not a
// CreateError that reports a part-written device.
func TestCreateFirstWriteRefusedIsNoWrite(t *testing.T) {
	c := qt.New(t)
	r, f, devs := createRig(t)
	r.k.fail = map[string]error{"WriteDevice": &notWrittenError{errors.New("md: vdx changed since it was claimed")}}
	_, err := r.m.Create(context.Background(), mirrorRequest(devs))
	c.Assert(err, qt.ErrorIs, ErrRefused)
	c.Check(err, qt.ErrorMatches, `.*nothing was written to any device`)
	var ce *CreateError
	c.Check(errors.As(err, &ce), qt.IsFalse)
	c.Check(f.calls, qt.HasLen, 0)
}
