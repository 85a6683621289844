package sysfs

import (
	"io/fs"
	"testing"

	qt "github.com/frankban/quicktest"
)

func TestArrayRoles(t *testing.T) {
	c := qt.New(t)
	// md1 holds vdb too, under another dev-* name (as after a rename),
	// known only by its block link.
	fsys := newTree(c, memberTree+`l "block/md1" "../devices/virtual/block/md1"
f "devices/virtual/block/md1/dev" "9:1\n"
d "devices/virtual/block/md1/md"
l "devices/virtual/block/md1/md/dev-other/block" "../../../../../pci0000:00/0000:00:10.0/virtio2/block/vdb"
`)
	tests := []struct {
		name     string
		dev      DevNum
		isArray  bool
		memberOf []string
	}{
		{name: "vdb", dev: DevNum{Major: 254, Minor: 16}, memberOf: []string{"md0", "md1"}},
		{name: "sda1", dev: DevNum{Major: 8, Minor: 1}, memberOf: []string{"md0"}},
		{name: "vdc", dev: DevNum{Major: 254, Minor: 32}, memberOf: []string{"md0"}}, // no block link: its dev-* name
		{name: "md0", dev: DevNum{Major: 9, Minor: 99}, isArray: true},
		{name: "md-by-number", dev: DevNum{Major: 9, Minor: 1}, isArray: true},
		{name: "other", dev: DevNum{Major: 8, Minor: 80}},
	}
	for _, tt := range tests {
		c.Run(tt.name, func(c *qt.C) {
			isArray, memberOf, err := fsys.ArrayRoles(tt.name, tt.dev)
			c.Assert(err, qt.IsNil)
			c.Check(isArray, qt.Equals, tt.isArray)
			c.Check(memberOf, qt.DeepEquals, tt.memberOf)
		})
	}

	// No block/ at all: the error, not "not an array, no member".
	empty, err := NewFS(c.TempDir())
	c.Assert(err, qt.IsNil)
	_, _, err = empty.ArrayRoles("vdb", DevNum{Major: 254, Minor: 16})
	c.Check(err, qt.ErrorIs, fs.ErrNotExist)

	// An array whose device number does not parse: the answer could be
	// wrong (it may be the device), so an error.
	bad := newTree(c, memberTree+`l "block/md1" "../devices/virtual/block/md1"
f "devices/virtual/block/md1/dev" "garbage\n"
d "devices/virtual/block/md1/md"
`)
	_, _, err = bad.ArrayRoles("vdq", DevNum{Major: 254, Minor: 99})
	c.Check(err, qt.ErrorMatches, `sysfs: the device number of md1: .*`)
}
