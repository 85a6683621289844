package md_test

// Tests written as an importer writes them, on md/mdtest: the scenarios
// a newcomer meets first (issue 35).

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	qt "github.com/frankban/quicktest"
	"github.com/go-mdraid/mdraid/md"
	"github.com/go-mdraid/mdraid/md/mdtest"
	"github.com/go-mdraid/mdraid/sysfs"
)

// TestDryRunOnCaptures: a replace dry run on every shipped capture
// either plans or is refused for a reason a user can act on (a
// *RefusedError), never fails for want of a fact the capture should
// carry. Every capture whose array is degraded and idle (or, being
// healthy, idle and writable, once mdtest fails its last slot's member)
// plans the fill of the slot with a blank disk put in a free port, and
// the dry run writes nothing to that disk.
func TestDryRunOnCaptures(t *testing.T) {
	planned := 0
	for _, name := range mdtest.Captures() {
		t.Run(name, func(t *testing.T) {
			c := qt.New(t)
			sys := mdtest.Capture(t, name)
			m, err := md.Open(sys.Config())
			c.Assert(err, qt.IsNil)
			a, err := m.Status(context.Background(), sys.Array())
			c.Assert(err, qt.IsNil)
			idle := a.Activity.Kind == sysfs.ActionIdle
			req := md.ReplaceRequest{Array: sys.Array(), AllowImageFile: true}
			if a.Availability == md.Online && idle && a.Redundancy != md.NoRedundancy {
				last := a.Slots[len(a.Slots)-1].Member
				sys.Fail(last.Device)
				req.Member = last.Device
				a, err = m.Status(context.Background(), sys.Array())
				c.Assert(err, qt.IsNil)
			}
			req.With = sys.AddDisk("vdz", "pci-0000:00:18.0", 64<<20)
			p, err := m.PlanReplace(context.Background(), req)
			if a.Availability != md.Degraded || !idle {
				c.Assert(err, qt.ErrorIs, md.ErrRefused)
				return
			}
			c.Assert(err, qt.IsNil)
			c.Check(p.Slot, qt.Equals, len(a.Slots)-1)
			c.Check(p.Steps, qt.Not(qt.HasLen), 0)
			b, err := os.ReadFile(req.With)
			c.Assert(err, qt.IsNil)
			c.Check(bytes.Count(b, []byte{0}), qt.Equals, len(b), qt.Commentf("the dry run wrote to the disk"))
			planned++
		})
	}
	if planned < 10 {
		t.Errorf("%d captures planned: the test no longer tests what it says", planned)
	}
}

// TestDryRunUnreadableAttribute: an attribute the plan needs that cannot
// be read is a refusal naming it, never a pass.
func TestDryRunUnreadableAttribute(t *testing.T) {
	for _, attr := range []string{"queue/logical_block_size", "md/sync_action", "md/component_size", "md/dev-vda/state"} {
		t.Run(attr, func(t *testing.T) {
			c := qt.New(t)
			sys := mdtest.Capture(t, "raid1-failed-k7.2")
			disk := sys.AddDisk("vdz", "pci-0000:00:18.0", 64<<20)
			m, err := md.Open(sys.Config())
			c.Assert(err, qt.IsNil)
			req := md.ReplaceRequest{Array: sys.Array(), Member: "vdb", With: disk, AllowImageFile: true}
			_, err = m.PlanReplace(context.Background(), req)
			c.Assert(err, qt.IsNil) // the capture as it is plans
			sys.Unreadable(attr)
			_, err = m.PlanReplace(context.Background(), req)
			c.Assert(err, qt.ErrorIs, md.ErrRefused)
			var re *md.RefusedError
			c.Assert(errors.As(err, &re), qt.IsTrue)
		})
	}
}

// TestStatusUnreadableArrayState: an array whose array_state cannot be
// read is of unknown health, not inactive (nothing says it is), and
// status names the attribute.
func TestStatusUnreadableArrayState(t *testing.T) {
	c := qt.New(t)
	sys := mdtest.Capture(t, "raid1-v1.2")
	m, err := md.Open(sys.Config())
	c.Assert(err, qt.IsNil)
	sys.Unreadable("md/array_state")
	a, err := m.Status(context.Background(), sys.Array())
	c.Assert(err, qt.IsNil)
	c.Check(a.Availability, qt.Equals, md.Unknown)
	c.Check(strings.Join(a.Errors, "\n"), qt.Contains, "array_state")
}

// TestDryRunNotBlank: a disk that is not blank (a member of another
// array) in the port is refused, and stays as it was.
func TestDryRunNotBlank(t *testing.T) {
	c := qt.New(t)
	sys := mdtest.Capture(t, "raid1-degraded-missing")
	disk := sys.AddUsedDisk("vdz", "pci-0000:00:18.0", "raid1-v1.2", "vda")
	before, err := os.ReadFile(disk)
	c.Assert(err, qt.IsNil)
	m, err := md.Open(sys.Config())
	c.Assert(err, qt.IsNil)
	_, err = m.PlanReplace(context.Background(), md.ReplaceRequest{Array: sys.Array(), With: disk, AllowImageFile: true})
	c.Assert(err, qt.ErrorIs, md.ErrRefused)
	c.Assert(err, qt.ErrorIs, md.ErrNotBlank)
	// The condition, without reading the message: which check refused.
	var re *md.RefusedError
	c.Assert(errors.As(err, &re), qt.IsTrue)
	c.Check(re.Check, qt.Equals, md.CheckBlankDevice)
	after, err := os.ReadFile(disk)
	c.Assert(err, qt.IsNil)
	c.Check(bytes.Equal(before, after), qt.IsTrue)
}

// TestOpenCaptureWithoutDevRoot: a capture's sysfs root without a device
// root is refused at Open (ErrConfig): md would otherwise read the
// host's /dev beside another system's sysfs.
func TestOpenCaptureWithoutDevRoot(t *testing.T) {
	c := qt.New(t)
	sys := mdtest.Capture(t, "raid1-v1.2")
	_, err := md.Open(&md.Config{SysRoot: sys.SysRoot()})
	c.Assert(err, qt.ErrorIs, md.ErrConfig)
	cfg := sys.Config()
	cfg.DevRoot = ""
	_, err = md.Open(cfg)
	c.Assert(err, qt.ErrorIs, md.ErrConfig)
	_, err = md.Open(sys.Config())
	c.Assert(err, qt.IsNil)
}

// TestReportErrorsAreTyped: the problems in a Report are error values a
// controller matches with errors.Is (issue 35), one for one with the
// texts of the JSON form: an attribute that cannot be read matches its
// cause, a word no kernel of ours writes matches ErrUnknownValue, a
// member whose disk is gone matches fs.ErrNotExist.
func TestReportErrorsAreTyped(t *testing.T) {
	c := qt.New(t)
	sys := mdtest.Capture(t, "raid1-v1.2")
	m, err := md.Open(sys.Config())
	c.Assert(err, qt.IsNil)
	a, err := m.Status(context.Background(), sys.Array())
	c.Assert(err, qt.IsNil)
	c.Assert(a.Errs, qt.HasLen, 0)
	c.Assert(a.Errors, qt.HasLen, 0)
	member := a.Slots[0].Member
	c.Assert(member, qt.IsNotNil)
	c.Assert(member.Err, qt.IsNil)

	sys.Unreadable("md/sync_action")
	sys.Set("md/array_state", "frobnicated")
	c.Assert(os.Remove(filepath.Join(sys.DevRoot(), member.Device)), qt.IsNil)
	a, err = m.Status(context.Background(), sys.Array())
	c.Assert(err, qt.IsNil)
	c.Assert(a.Errs, qt.HasLen, len(a.Errors))
	for i, e := range a.Errs {
		c.Check(e.Error(), qt.Equals, a.Errors[i])
	}
	c.Check(errors.Is(errors.Join(a.Errs...), syscall.EISDIR), qt.IsTrue, qt.Commentf("%q", a.Errors))
	c.Check(errors.Is(errors.Join(a.Errs...), md.ErrUnknownValue), qt.IsTrue, qt.Commentf("%q", a.Errors))
	c.Check(a.Readable(), qt.IsFalse)
	var got *md.Member
	for _, s := range a.Slots {
		if s.Member != nil && s.Member.Device == member.Device {
			got = s.Member
		}
	}
	c.Assert(got, qt.IsNotNil)
	c.Check(got.Err, qt.ErrorIs, fs.ErrNotExist)
	c.Check(got.Err.Error(), qt.Equals, got.Error)

	// The JSON form is the texts, as before.
	b, err := json.Marshal(a)
	c.Assert(err, qt.IsNil)
	var back md.Array
	c.Assert(json.Unmarshal(b, &back), qt.IsNil)
	c.Check(back.Errors, qt.DeepEquals, a.Errors)
	c.Check(back.Errs, qt.IsNil)
}
