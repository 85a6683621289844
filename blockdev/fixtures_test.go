package blockdev

import (
	"fmt"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	qt "github.com/frankban/quicktest"

	"github.com/go-mdraid/mdraid/internal/fixture"
	"github.com/go-mdraid/mdraid/internal/sysfstree"
	"github.com/go-mdraid/mdraid/sysfs"
)

// TestFixtures describes every member of every array in the real
// captures under testdata/fixtures and computes its PathID. The capture
// rig attaches scratch disk N as virtio-blk-pci at 0000:00:(0x10+N).0
// with serial "mdtest-N", so the serial predicts the by-path name.
func TestFixtures(t *testing.T) {
	for _, fc := range fixture.All(t) {
		t.Run(filepath.Base(fc.Dir), func(t *testing.T) {
			c := qt.New(t)
			root := c.TempDir()
			c.Assert(sysfstree.MaterializeFile(root, fc.Path("sysfs.txt")), qt.IsNil)
			fsys, err := sysfs.NewFS(root)
			c.Assert(err, qt.IsNil)
			names, err := fsys.Arrays()
			c.Assert(err, qt.IsNil)
			for _, name := range names {
				a, err := fsys.Array(name)
				c.Assert(err, qt.IsNil)
				ms, err := a.Members()
				c.Assert(err, qt.IsNil)
				for _, m := range ms {
					bl, err := m.Block()
					if err != nil {
						continue // no block link captured
					}
					d, err := Lookup(fsys, DefaultDevRoot, bl.Name)
					c.Assert(err, qt.IsNil)
					id, err := PathID(fsys, bl.Name)
					c.Assert(err, qt.IsNil, qt.Commentf("%s", bl.Name))
					id2, err := d.PathID(fsys)
					c.Assert(err, qt.IsNil)
					c.Assert(id2, qt.Equals, id)
					// The virtio shortcut of identity leaves out nothing
					// that probing every attribute finds on the real
					// kernels' trees.
					disk := d.Dir
					if d.Partition > 0 {
						disk = path.Dir(disk)
					}
					model, serial, wwn := probeIdentity(tree{fsys}, disk)
					c.Assert([]string{d.Model, d.Serial, d.WWN}, qt.DeepEquals, []string{model, serial, wwn})
					n, ok := strings.CutPrefix(d.Serial, "mdtest-")
					if !ok {
						continue
					}
					slot, err := strconv.Atoi(n)
					c.Assert(err, qt.IsNil)
					want := fmt.Sprintf("pci-0000:00:%02x.0", 0x10+slot)
					if d.Partition > 0 {
						want += fmt.Sprintf("-part%d", d.Partition)
					}
					c.Check(id, qt.Equals, want, qt.Commentf("%s serial %s", bl.Name, d.Serial))
				}
			}
		})
	}
}
