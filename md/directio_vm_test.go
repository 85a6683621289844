//go:build vmtest

package md

import (
	"context"
	"os"
	"testing"
	"time"

	qt "github.com/frankban/quicktest"
	"golang.org/x/sys/unix"

	"github.com/go-mdraid/mdraid/internal/vmtest/guest"
	"github.com/go-mdraid/mdraid/superblock"
)

// eventsOnDisk reads the events count of the 1.2 superblock of path with
// its own O_DIRECT descriptor, so that the page cache cannot answer.
func eventsOnDisk(c *qt.C, path string) uint64 {
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_DIRECT, 0)
	c.Assert(err, qt.IsNil)
	defer f.Close()
	buf := alignedBuf(4096, 4096)
	c.Assert(readFull(f, buf, 8*512), qt.IsNil)
	sb, err := superblock.Decode(buf)
	c.Assert(err, qt.IsNil)
	return sb.Events
}

// eventsCached reads the same superblock through the page cache.
func eventsCached(c *qt.C, path string) uint64 {
	f, err := os.Open(path)
	c.Assert(err, qt.IsNil)
	defer f.Close()
	buf := make([]byte, 4096)
	c.Assert(readFull(f, buf, 8*512), qt.IsNil)
	sb, err := superblock.Decode(buf)
	c.Assert(err, qt.IsNil)
	return sb.Events
}

// TestVMStatusReadsPastPageCache (issue 10 item 4): the surviving
// member's superblock is first read through the page cache (as mdadm
// --examine or an old mdctl would), then a member fails and md rewrites
// the superblocks with bios that bypass the cache. Status, in the same
// process and without dropping any cache, must report the events on disk.
func TestVMStatusReadsPastPageCache(t *testing.T) {
	c := qt.New(t)
	disks := guest.ScratchDisks(t, 2)
	dev := "/dev/md/stale"
	guest.Mdadm(c, "--create", dev, "--run", "--assume-clean", "--metadata=1.2", "--level=1", "--raid-devices=2", disks[0].Path, disks[1].Path)
	md := guest.ArrayName(c, dev)
	defer guest.Mdadm(c, "--stop", dev)
	m := vmManager(t)
	ctx := context.Background()

	before := eventsCached(c, disks[0].Path) // fills the page cache
	guest.Mdadm(c, dev, "--fail", disks[1].Path)
	// md updates the superblocks from its thread: wait until it has.
	onDisk := eventsOnDisk(c, disks[0].Path)
	for deadline := time.Now().Add(10 * time.Second); onDisk <= before && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
		onDisk = eventsOnDisk(c, disks[0].Path)
	}
	c.Assert(onDisk > before, qt.IsTrue, qt.Commentf("events on disk %d, before the failure %d", onDisk, before))
	t.Logf("events: %d before, %d on disk, %d through the page cache", before, onDisk, eventsCached(c, disks[0].Path))

	// md may write the superblocks more than once after a failure, so
	// what status reports is bounded by the on-disk count read before and
	// after it; the page cache still holds the count from before the
	// failure, which status must not report.
	a, err := m.Status(ctx, md)
	c.Assert(err, qt.IsNil)
	after := eventsOnDisk(c, disks[0].Path)
	mem, _ := a.Find(disks[0].Name)
	c.Assert(mem, qt.Not(qt.IsNil))
	c.Assert(mem.Events, qt.Not(qt.IsNil), qt.Commentf("member error: %s", mem.Error))
	c.Check(*mem.Events >= onDisk && *mem.Events <= after, qt.IsTrue, qt.Commentf("status %d, on disk %d..%d", *mem.Events, onDisk, after))
	if cached := eventsCached(c, disks[0].Path); cached != before {
		t.Logf("the page cache was not stale here (events %d): status is only shown to agree with the disk", cached)
	}

	// The planner reads the same way: the clone source's events are the
	// ones on disk.
	f := m.arrayFacts(md, "")
	src := cloneSource(f.s)
	after = eventsOnDisk(c, disks[0].Path)
	c.Assert(src, qt.Not(qt.IsNil))
	c.Check(src.sb.Events >= onDisk && src.sb.Events <= after, qt.IsTrue, qt.Commentf("clone source %d, on disk %d..%d", src.sb.Events, onDisk, after))
}
