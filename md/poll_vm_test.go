//go:build vmtest

package md

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	qt "github.com/frankban/quicktest"
	"golang.org/x/sys/unix"

	"github.com/go-mdraid/mdraid/blockdev"
	"github.com/go-mdraid/mdraid/internal/vmtest/guest"
)

// TestVMPollerReadsNoDisk: on the real kernel, a Poller's reports of a
// mirror under writes (array_state moving between active and clean, the
// superblocks' events rising) read nothing from the members, by the
// disks' own read counters (/sys/block/NAME/stat); a member failed with
// mdadm shows in the next poll, which reads the superblocks again.
func TestVMPollerReadsNoDisk(t *testing.T) {
	c := qt.New(t)
	disks := guest.ScratchDisks(t, 2)
	dev := "/dev/md/poll"
	guest.Mdadm(c, "--create", dev, "--run", "--assume-clean", "--level=1", "--raid-devices=2", disks[0].Path, disks[1].Path)
	t.Cleanup(func() { guest.RunMdadm("--stop", dev) })
	array := guest.ArrayName(c, dev)
	reads := func() (n uint64) {
		for _, d := range disks {
			b, err := os.ReadFile("/sys/block/" + d.Name + "/stat")
			c.Assert(err, qt.IsNil)
			f := strings.Fields(string(b))
			v, err := strconv.ParseUint(f[0], 10, 64)
			c.Assert(err, qt.IsNil)
			n += v
		}
		return n
	}
	m, err := Open(nil)
	c.Assert(err, qt.IsNil)
	p := m.NewPoller()
	ctx := context.Background()
	find := func(r *Report) Array {
		for _, a := range r.Arrays {
			if a.Device == array {
				return a
			}
		}
		c.Fatalf("%s not in the report", array)
		return Array{}
	}
	r, err := p.Discover(ctx)
	c.Assert(err, qt.IsNil)
	first := find(r)
	c.Assert(first.Availability, qt.Equals, Online)

	// Writes through the array, with O_DIRECT (no page-cache reads).
	f, err := os.OpenFile(dev, os.O_WRONLY|unix.O_DIRECT, 0)
	c.Assert(err, qt.IsNil)
	defer f.Close()
	buf := blockdev.AlignedBuf(64<<10, 4096)
	before := reads()
	states := map[string]bool{}
	for i := range 20 {
		_, err := f.WriteAt(buf, int64(i)*int64(len(buf)))
		c.Assert(err, qt.IsNil)
		r, err := p.Discover(ctx)
		c.Assert(err, qt.IsNil)
		a := find(r)
		states[a.State] = true
		c.Assert(a.Availability, qt.Equals, Online)
		time.Sleep(30 * time.Millisecond)
	}
	// Past safe_mode_delay (200 ms): the kernel marks the array clean.
	guest.WaitAttr(c, array, "array_state", "clean", 10*time.Second)
	r, err = p.Discover(ctx)
	c.Assert(err, qt.IsNil)
	states[find(r).State] = true
	c.Check(reads()-before, qt.Equals, uint64(0), qt.Commentf("array states seen by the poller: %v", states))
	c.Check(states["clean"], qt.IsTrue, qt.Commentf("states %v", states))
	fresh, err := m.Status(ctx, array)
	c.Assert(err, qt.IsNil)
	t.Logf("events: poller %d, disk %d (array states seen %v)", *find(r).Slots[0].Member.Events, *fresh.Slots[0].Member.Events, states)

	guest.Mdadm(c, dev, "--fail", disks[1].Path)
	before = reads()
	r, err = p.Discover(ctx)
	c.Assert(err, qt.IsNil)
	a := find(r)
	c.Check(a.Availability, qt.Equals, Degraded)
	c.Check(len(a.Faulty) == 1 && a.Faulty[0].Device == disks[1].Name, qt.IsTrue, qt.Commentf("faulty %+v", a.Faulty))
	c.Check(reads()-before >= 2, qt.IsTrue, qt.Commentf("%d reads: the failed array's two superblocks are read again", reads()-before))
	c.Check(*a.Faulty[0].Events <= *a.Slots[0].Member.Events, qt.IsTrue)
}
