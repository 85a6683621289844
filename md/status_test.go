package md

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	qt "github.com/frankban/quicktest"
	"github.com/go-mdraid/mdraid/internal/fixture"
)

// TestBuildLeavesSnapshot checks that build derives what it reports
// (stale members, the slots of a not-running array's members from their
// superblock roles) into the Array alone: the snapshot it was given is
// deep-equal afterwards to a second snapshot read from the same capture,
// and building again gives the same Array. The planner decides from the
// snapshot after build, so a change to it would change its decisions.
func TestBuildLeavesSnapshot(t *testing.T) {
	var sawStale, sawRoleSlot bool
	for _, fc := range fixture.All(t) {
		t.Run(filepath.Base(fc.Dir), func(t *testing.T) {
			c := qt.New(t)
			m := fixtureManager(t, fc)
			s, before := m.read(fc.Info.Array), m.read(fc.Info.Array)
			c.Assert(reflect.DeepEqual(s, before), qt.IsTrue, qt.Commentf("two reads of one capture differ"))

			a := build(s, m.devRoot)
			c.Check(reflect.DeepEqual(s, before), qt.IsTrue, qt.Commentf("build changed the snapshot:\n got %+v\nwant %+v", s.members, before.members))
			c.Check(reflect.DeepEqual(build(s, m.devRoot), a), qt.IsTrue, qt.Commentf("a second build differs"))

			for _, mem := range modelMembers(a) {
				sawStale = sawStale || mem.Stale
			}
			for _, ms := range before.members {
				if ms.Slot >= 0 {
					continue
				}
				for _, sl := range a.Slots {
					sawRoleSlot = sawRoleSlot || (sl.Member != nil && sl.Member.Device == ms.Device)
				}
			}
		})
	}
	// The cases that wrote into the snapshot are among the captures.
	qt.Check(t, sawStale, qt.IsTrue, qt.Commentf("no capture has a stale member"))
	qt.Check(t, sawRoleSlot, qt.IsTrue, qt.Commentf("no capture has a member slotted by its superblock role"))
}

// modelMembers lists every member of a, in slots, replacements, spares and
// faulty.
func modelMembers(a Array) []Member {
	var out []Member
	for _, sl := range a.Slots {
		if sl.Member != nil {
			out = append(out, *sl.Member)
		}
		if sl.Replacement != nil {
			out = append(out, *sl.Replacement)
		}
	}
	out = append(out, a.Spares...)
	return append(out, a.Faulty...)
}

// TestUnknownLevelStillRuns: a personality name no kernel had when this
// was written is kept, and the array is not taken for inactive; a bare
// number is what an assembled, not started array shows.
func TestUnknownLevelStillRuns(t *testing.T) {
	c := qt.New(t)
	fc := fixture.Named(t, "boot-mirror")
	m := fixtureManager(t, fc)
	level := m.FS().Path("block", fc.Info.Array, "md", "level")
	for _, tt := range []struct {
		level, want string
		avail       Availability
	}{
		{"raid99\n", "raid99", Online},
		{"1\n", "raid1", Inactive},
	} {
		c.Assert(os.WriteFile(level, []byte(tt.level), 0o644), qt.IsNil)
		a, err := m.Status(context.Background(), fc.Info.Array)
		c.Assert(err, qt.IsNil)
		c.Check(a.Level, qt.Equals, tt.want)
		c.Check(a.Availability, qt.Equals, tt.avail, qt.Commentf("level %q", tt.level))
	}
}

// TestStatusWithoutMemberAccess: a user who may not open the members
// (not root) still gets the array's UUID, from sysfs, and each member
// says why it has no superblock.
func TestStatusWithoutMemberAccess(t *testing.T) {
	c := qt.New(t)
	fc := fixture.Named(t, "boot-mirror")
	full := fixtureManager(t, fc)
	want, err := full.Status(context.Background(), fc.Info.Array)
	c.Assert(err, qt.IsNil)
	m := fixtureManager(t, fc)
	m.open = func(name string) (device, error) {
		return nil, &fs.PathError{Op: "open", Path: "/dev/" + name, Err: fs.ErrPermission}
	}
	got, err := m.Status(context.Background(), fc.Info.Array)
	c.Assert(err, qt.IsNil)
	c.Check(got.UUID, qt.Equals, want.UUID)
	c.Check(got.UUID, qt.Not(qt.Equals), "")
	for _, sl := range got.Slots {
		c.Assert(sl.Member, qt.IsNotNil)
		c.Check(sl.Member.Error, qt.Matches, `.*permission denied`)
	}
}

// TestNameWithoutMemberAccess: a superblock name that cannot be checked
// (not root: no member can be opened) is not "no such array"; the kernel
// name still works.
func TestNameWithoutMemberAccess(t *testing.T) {
	c := qt.New(t)
	fc := fixture.Named(t, "boot-mirror")
	m := fixtureManager(t, fc)
	m.open = func(name string) (device, error) {
		return nil, &fs.PathError{Op: "open", Path: "/dev/" + name, Err: fs.ErrPermission}
	}
	_, err := m.Status(context.Background(), "boot")
	c.Assert(err, qt.ErrorIs, ErrAmbiguous)
	c.Check(errors.Is(err, ErrNoArray), qt.IsFalse)
	c.Check(err, qt.ErrorMatches, `md: cannot tell whether "boot" names an array: cannot read the name of 1 array \(`+fc.Info.Array+`\), no member's superblock could be read \(run as root, or name the array by device\)`)
	_, err = m.Status(context.Background(), fc.Info.Array)
	c.Check(err, qt.IsNil)
	// As root the name resolves.
	_, err = fixtureManager(t, fc).Status(context.Background(), "boot")
	c.Check(err, qt.IsNil)
}

// TestStatusBadBlocksNotYetRecorded: "faulty" beside "in_sync" or
// "spare" (md.c state_show shows it while a member has bad blocks not yet
// recorded) is not a failure: the member keeps its slot as active or
// rebuilding, its rebuild progress is read, and the array is not degraded
// by it.
func TestStatusBadBlocksNotYetRecorded(t *testing.T) {
	c := qt.New(t)
	r := newReplaceRig(t, "raid1-v1.2")
	c.Assert(r.k.set(r.k.attr("md0", "dev-vdb", "state"), "faulty,in_sync,blocked"), qt.IsNil)
	a := build(r.m.read(r.name), r.m.devRoot)
	c.Check(a.Slots[1].State, qt.Equals, SlotActive)
	c.Check(a.Slots[1].Member.Flags.String(), qt.Equals, "faulty,in_sync,blocked")
	c.Check(a.Counts.Failed, qt.Equals, 0)
	c.Check(a.Counts.Active, qt.Equals, 2)
	c.Check(a.Faulty, qt.HasLen, 0)
	c.Check(a.Availability, qt.Equals, Online)

	r = newReplaceRig(t, "raid1-recovering")
	c.Assert(r.k.set(r.k.attr("md0", "dev-vdc", "state"), "faulty,blocked,spare"), qt.IsNil)
	a = build(r.m.read(r.name), r.m.devRoot)
	mem, where := a.Find("vdc")
	c.Assert(mem, qt.Not(qt.IsNil))
	c.Check(where, qt.Equals, "slot")
	c.Check(a.Slots[mem.Slot].State, qt.Equals, SlotRebuilding)
	c.Check(a.Counts.Failed, qt.Equals, 0)
	c.Check(mem.RecoveredSectors, qt.Not(qt.IsNil))
}
