package md_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	qt "github.com/frankban/quicktest"
	"github.com/go-mdraid/mdraid/md"
	"github.com/go-mdraid/mdraid/md/mdtest"
	"github.com/go-mdraid/mdraid/md/store"
	"github.com/go-mdraid/mdraid/sysfs"
)

// tree hashes every file and link below the roots, by path.
func tree(c *qt.C, roots ...string) map[string][32]byte {
	out := map[string][32]byte{}
	for _, root := range roots {
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			switch {
			case d.Type()&fs.ModeSymlink != 0:
				l, err := os.Readlink(p)
				if err != nil {
					return err
				}
				out[p] = sha256.Sum256([]byte("link:" + l))
			case d.Type().IsRegular():
				b, err := os.ReadFile(p)
				if err != nil {
					return err
				}
				out[p] = sha256.Sum256(b)
			default:
				out[p] = sha256.Sum256([]byte("dir"))
			}
			return nil
		})
		c.Assert(err, qt.IsNil)
	}
	return out
}

// TestPlanCallsWriteNothing: every Plan… call of a writing operation
// (issue 35's one dry-run shape) says what the operation would write and
// leaves the capture's sysfs and device trees as they were, byte for
// byte; a refusal is the operation's.
func TestPlanCallsWriteNothing(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name, capture string
		plan          func(m *md.Manager, sys *mdtest.System) (string, error)
		want          string // the write planned, or the refusal's check
	}{{
		name: "fail", capture: "raid1-v1.2",
		plan: func(m *md.Manager, sys *mdtest.System) (string, error) {
			ch, err := m.PlanFail(ctx, sys.Array(), "vda")
			return ch.Write, err
		},
		want: "SET_DISK_FAULTY 254:0",
	}, {
		name: "remove", capture: "raid1-failed-k7.2",
		plan: func(m *md.Manager, sys *mdtest.System) (string, error) {
			ch, err := m.PlanRemove(ctx, sys.Array(), "vdb")
			return ch.Write, err
		},
		want: "HOT_REMOVE_DISK 254:16",
	}, {
		name: "run", capture: "raid5-inactive-k7.2",
		plan: func(m *md.Manager, sys *mdtest.System) (string, error) {
			ch, err := m.PlanRun(ctx, sys.Array())
			return ch.Write, err
		},
		want: "array_state=read-auto",
	}, {
		name: "set write-mostly", capture: "raid1-v1.2",
		plan: func(m *md.Manager, sys *mdtest.System) (string, error) {
			ch, err := m.PlanSetMemberFlag(ctx, sys.Array(), "vdb", sysfs.FlagWriteMostly, true)
			return ch.Write, err
		},
		want: "dev-vdb/state=writemostly",
	}, {
		name: "check", capture: "raid1-v1.2",
		plan: func(m *md.Manager, sys *mdtest.System) (string, error) {
			rs, err := m.PlanCheck(ctx, md.CheckRequest{Arrays: []string{sys.Array()}})
			if err != nil || len(rs) != 1 {
				return "", err
			}
			return string(rs[0].Result), rs[0].Err
		},
		want: string(md.CheckWouldStart),
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := qt.New(t)
			sys := mdtest.Capture(t, tt.capture)
			m, err := md.Open(sys.Config())
			c.Assert(err, qt.IsNil)
			before := tree(c, sys.SysRoot(), sys.DevRoot())
			got, err := tt.plan(m, sys)
			c.Assert(err, qt.IsNil)
			c.Check(got, qt.Equals, tt.want)
			c.Check(tree(c, sys.SysRoot(), sys.DevRoot()), qt.DeepEquals, before)
		})
	}
}

// TestPlanHealAfterOfflineSwap: the heal a controller plans on md/mdtest
// once a failed member's disk was swapped offline for a blank one in the
// same port: it would fill the slot from the new disk, and the plan
// writes nothing (to the trees, the new disk or the store).
func TestPlanHealAfterOfflineSwap(t *testing.T) {
	c := qt.New(t)
	ctx := context.Background()
	sys := mdtest.Capture(t, "raid1-v1.2")
	m, err := md.Open(sys.Config())
	c.Assert(err, qt.IsNil)
	st := &store.Memory{}
	_, err = m.Record(ctx, md.RecordOptions{Store: st})
	c.Assert(err, qt.IsNil)
	rs, err := st.Load(ctx)
	c.Assert(err, qt.IsNil)
	c.Assert(rs.Arrays, qt.HasLen, 1)
	port := rs.Arrays[0].Slots[1].ByPath
	c.Assert(port, qt.Not(qt.Equals), "")
	size, err := strconv.ParseInt(strings.TrimSpace(sys.Get("md/dev-vdb/block/size")), 10, 64)
	c.Assert(err, qt.IsNil)

	sys.Fail("vdb")
	sys.Pull("vdb")
	disk := sys.AddDisk("vdz", port, size*512)
	before := tree(c, sys.SysRoot(), sys.DevRoot())
	ds, err := m.PlanHeal(ctx, md.HealOptions{Store: st, AllowImageFile: true})
	c.Assert(err, qt.IsNil)
	c.Assert(ds, qt.HasLen, 1, qt.Commentf("%+v", ds))
	d := ds[0]
	c.Check(d.Outcome, qt.Equals, md.OutcomeWouldHeal, qt.Commentf("%s", d.Reason))
	c.Check(d.Slot, qt.Equals, 1)
	c.Check(d.Disk, qt.Equals, disk)
	c.Check(d.ByPath, qt.Equals, port)
	c.Check(tree(c, sys.SysRoot(), sys.DevRoot()), qt.DeepEquals, before)
	after, err := st.Load(ctx)
	c.Assert(err, qt.IsNil)
	c.Check(after, qt.DeepEquals, rs)

	// Without AllowImageFile the image file is no disk: refused.
	ds, err = m.PlanHeal(ctx, md.HealOptions{Store: st})
	c.Assert(err, qt.IsNil)
	c.Assert(ds, qt.HasLen, 1)
	c.Check(ds[0].Outcome, qt.Equals, md.OutcomeRefused)
	var re *md.RefusedError
	c.Assert(errors.As(ds[0].Err, &re), qt.IsTrue)
	c.Check(re.Check, qt.Equals, md.CheckBlockDevice)
}
