package md

import (
	"context"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	qt "github.com/frankban/quicktest"
	"github.com/go-mdraid/mdraid/internal/fixture"
)

// countOpens makes m count the member devices it opens.
func countOpens(m *Manager) *atomic.Int64 {
	var n atomic.Int64
	open := m.open
	m.open = func(name string) (device, error) {
		n.Add(1)
		return open(name)
	}
	return &n
}

// TestPollerReadsNoDiskInSteadyState: on the eight-array capture a Poller
// reads the 16 superblocks once, then none while sysfs stays as it is or
// only moves between clean and active; its reports equal Discover's. A
// member failed between two polls shows in the next one, which reads that
// array's superblocks again, and only those.
func TestPollerReadsNoDiskInSteadyState(t *testing.T) {
	c := qt.New(t)
	m, sys, _ := eightArrays(t)
	m.now = func() time.Time { return time.Unix(1e9, 0) }
	opens := countOpens(m)
	ctx := context.Background()
	p := m.NewPoller()

	// 16 superblocks, and the bitmap of md4 (internal).
	want, err := m.Discover(ctx)
	c.Assert(err, qt.IsNil)
	c.Assert(opens.Load(), qt.Equals, int64(17))
	c.Assert(want.Arrays[4].Bitmap, qt.IsNotNil)
	c.Assert(want.Arrays[4].Bitmap.Dirty, qt.IsNotNil)
	opens.Store(0)

	got, err := p.Discover(ctx)
	c.Assert(err, qt.IsNil)
	c.Assert(got, qt.DeepEquals, want)
	c.Assert(opens.Load(), qt.Equals, int64(17))
	c.Assert(p.SuperblockReads(), qt.Equals, uint64(16))

	md0 := filepath.Join(sys, "block", "md0", "md")
	set := func(attr, v string) {
		c.Helper()
		c.Assert(os.WriteFile(filepath.Join(md0, attr), []byte(v+"\n"), 0o644), qt.IsNil)
	}
	for _, state := range []string{"clean", "active", "write-pending", "active-idle", "clean"} {
		set("array_state", state)
		got, err = p.Discover(ctx)
		c.Assert(err, qt.IsNil)
		c.Assert(got.Arrays[0].State, qt.Equals, state)
	}
	c.Assert(opens.Load(), qt.Equals, int64(17), qt.Commentf("steady state opened a member device"))

	// vdb fails, as the kernel shows it (mdtest.System.Fail).
	set("dev-vdb/state", "faulty")
	set("dev-vdb/slot", "none")
	c.Assert(os.Remove(filepath.Join(md0, "rd1")), qt.IsNil)
	set("degraded", "1")
	got, err = p.Discover(ctx)
	c.Assert(err, qt.IsNil)
	fresh, err := m.Discover(ctx)
	c.Assert(err, qt.IsNil)
	c.Assert(got, qt.DeepEquals, fresh)
	c.Assert(got.Arrays[0].Availability, qt.Equals, Degraded)
	c.Assert(got.Arrays[0].Faulty, qt.HasLen, 1)
	c.Assert(got.Arrays[0].Faulty[0].Device, qt.Equals, "vdb")
	c.Assert(p.SuperblockReads(), qt.Equals, uint64(18), qt.Commentf("md0's two superblocks again, no other"))

	got, err = p.Discover(ctx)
	c.Assert(err, qt.IsNil)
	c.Assert(got, qt.DeepEquals, fresh)
	c.Assert(p.SuperblockReads(), qt.Equals, uint64(18))

	p.Reset()
	_, err = p.Discover(ctx)
	c.Assert(err, qt.IsNil)
	c.Assert(p.SuperblockReads(), qt.Equals, uint64(34))
}

// TestPollerRetriesUnreadSuperblocks: a superblock that could not be read
// is not remembered: the next poll tries again, and reports it once it
// can be read.
func TestPollerRetriesUnreadSuperblocks(t *testing.T) {
	c := qt.New(t)
	m := fixtureManager(t, fixture.Named(t, "eight-arrays"))
	ctx := context.Background()
	dev := filepath.Join(m.devRoot, "vdc")
	c.Assert(os.Rename(dev, dev+".away"), qt.IsNil)
	p := m.NewPoller()
	for range 2 {
		r, err := p.Discover(ctx)
		c.Assert(err, qt.IsNil)
		c.Assert(r.Arrays[1].Members()[0].Error, qt.Not(qt.Equals), "")
	}
	c.Assert(p.SuperblockReads(), qt.Equals, uint64(18))
	c.Assert(os.Rename(dev+".away", dev), qt.IsNil)
	r, err := p.Discover(ctx)
	c.Assert(err, qt.IsNil)
	c.Assert(r.Arrays[1].Members()[0].Error, qt.Equals, "")
	c.Assert(r.Arrays[1].Members()[0].Events, qt.IsNotNil)
	c.Assert(p.SuperblockReads(), qt.Equals, uint64(20))
	_, err = p.Discover(ctx)
	c.Assert(err, qt.IsNil)
	c.Assert(p.SuperblockReads(), qt.Equals, uint64(20))
}

// TestPollerSeesASwappedDisk: a member's disk swapped between two polls
// under the same kernel name and device number (its serial differs, as
// sysfs shows it) has its superblock read again.
func TestPollerSeesASwappedDisk(t *testing.T) {
	c := qt.New(t)
	m, sys, _ := eightArrays(t)
	p := m.NewPoller()
	ctx := context.Background()
	r, err := p.Discover(ctx)
	c.Assert(err, qt.IsNil)
	c.Assert(p.SuperblockReads(), qt.Equals, uint64(16))
	serial := filepath.Join(sys, "block", "vdb", "serial")
	old, err := os.ReadFile(serial)
	c.Assert(err, qt.IsNil)
	c.Assert(os.WriteFile(serial, []byte("another-disk\n"), 0o644), qt.IsNil)
	r2, err := p.Discover(ctx)
	c.Assert(err, qt.IsNil)
	c.Assert(p.SuperblockReads(), qt.Equals, uint64(18), qt.Commentf("md0's superblocks again (serial was %q)", old))
	c.Assert(r2.Arrays[0].Slots[1].Member.Serial, qt.Not(qt.Equals), r.Arrays[0].Slots[1].Member.Serial)
}
