package md

import (
	"errors"
	"io/fs"
	"os"
	"testing"

	qt "github.com/frankban/quicktest"
	"golang.org/x/sys/unix"

	"github.com/go-mdraid/mdraid/internal/fixture"
)

// TestMemberLeft: a member listed a moment ago has left its array when
// reading it fails with ENODEV (unbound; Linux 6.1 keeps its directory a
// moment longer) or when its directory is gone; a missing attribute in a
// directory that is still there proves nothing.
func TestMemberLeft(t *testing.T) {
	c := qt.New(t)
	m := fixtureManager(t, fixture.Named(t, "raid1-failed"))
	a, err := m.FS().Array("md0")
	c.Assert(err, qt.IsNil)
	members, err := a.Members()
	c.Assert(err, qt.IsNil)
	c.Assert(len(members) >= 2, qt.IsTrue)
	mem := members[0]
	enodev := &fs.PathError{Op: "read", Path: mem.Path("state"), Err: unix.ENODEV}
	enoent := &fs.PathError{Op: "open", Path: mem.Path("state"), Err: unix.ENOENT}
	for _, tt := range []struct {
		name string
		err  error
		want bool
	}{
		{"read", nil, false},
		{"unbound (ENODEV)", enodev, true},
		{"attribute missing, directory there", enoent, false},
		{"permission denied", &fs.PathError{Op: "open", Path: mem.Path("state"), Err: unix.EACCES}, false},
		{"garbage", errors.New("sysfs: unexpected attribute value"), false},
	} {
		c.Run(tt.name, func(c *qt.C) { c.Check(memberLeft(mem, tt.err), qt.Equals, tt.want) })
	}

	// The attributes gone while the directory is still listed, as 6.1's
	// worker leaves it for a moment: the member left when its block link
	// is gone too (the unbind removes it at once), and memberLeft says so
	// at once, without waiting for the directory.
	c.Assert(os.Remove(mem.Path("state")), qt.IsNil)
	c.Check(memberLeft(mem, enoent), qt.IsFalse)
	c.Assert(os.Remove(mem.Path("block")), qt.IsNil)
	c.Check(memberLeft(mem, enoent), qt.IsTrue)
	c.Assert(os.RemoveAll(mem.Path("")), qt.IsNil)

	// The directory deleted since the listing: gone, and the snapshot
	// leaves the member out. The other member is read as before.
	c.Check(memberLeft(mem, enoent), qt.IsTrue)
	bound, known := memberBinding(m.fs, "md0", mem.Name())
	c.Check(bound, qt.IsFalse)
	c.Check(known, qt.IsTrue)
	s := m.read("md0")
	c.Check(len(s.members), qt.Equals, len(members)-1)
	for _, ms := range s.members {
		c.Check(ms.Device, qt.Not(qt.Equals), mem.Name())
		c.Check(ms.Error, qt.Equals, "")
	}
	c.Check(s.errs, qt.HasLen, 0)
}
