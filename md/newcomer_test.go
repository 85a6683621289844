package md_test

// Tests written as an importer writes them, on md/mdtest: the scenarios
// a newcomer meets first (issue 35).

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
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
