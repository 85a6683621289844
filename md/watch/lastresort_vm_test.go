//go:build vmtest

package watch

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	qt "github.com/frankban/quicktest"

	"github.com/go-mdraid/mdraid/blockdev"
	"github.com/go-mdraid/mdraid/internal/vmtest/guest"
	"github.com/go-mdraid/mdraid/md"
)

// TestVMWatchLastResort: issue 34's watch --last-resort on the real
// kernel. A mirror assembled one member short (mdadm -I: inactive) is
// started read-auto no sooner than Options.LastResort after the watch
// began; a raid5 two members short beside it is refused once and never
// started, its members untouched.
func TestVMWatchLastResort(t *testing.T) {
	c := qt.New(t)
	disks := guest.ScratchDisks(t, 6)
	guest.RequireLevel(c, "--level=5")
	create := func(dev string, args ...string) {
		guest.Mdadm(c, append([]string{"--create", dev, "--run", "--assume-clean", "--metadata=1.2"}, args...)...)
		// In use: written once. A set whose superblocks no running
		// array has updated is held back short of a member, as an
		// unfinished create (md.Manager.Run).
		f, err := os.OpenFile(dev, os.O_WRONLY|os.O_SYNC, 0)
		c.Assert(err, qt.IsNil)
		_, err = f.Write(bytes.Repeat([]byte{0xa5}, 4096))
		c.Assert(err, qt.IsNil)
		c.Assert(f.Close(), qt.IsNil)
		guest.Mdadm(c, "--stop", dev)
	}
	create("/dev/md/lrmirror", "--level=1", "--raid-devices=2", disks[0].Path, disks[1].Path)
	create("/dev/md/lrraid5", "--level=5", "--raid-devices=4", disks[2].Path, disks[3].Path, disks[4].Path, disks[5].Path)
	for _, d := range []guest.Disk{disks[0], disks[2], disks[3]} {
		guest.Mdadm(c, "--incremental", d.Path)
	}
	// Not by /dev/md/NAME: without udev, mdadm --stop may leave the
	// link of the created array, and -I assembles under another number.
	mirror, raid5 := holder(c, disks[0]), holder(c, disks[2])
	c.Assert(holder(c, disks[3]), qt.Equals, raid5)
	c.Assert(guest.ReadAttr(c, mirror, "array_state"), qt.Equals, "inactive")
	c.Assert(guest.ReadAttr(c, raid5, "array_state"), qt.Equals, "inactive")
	before := map[string][32]byte{}
	for _, d := range disks[2:] {
		before[d.Name] = hashDisk(c, d)
	}

	m, err := md.Open(nil)
	c.Assert(err, qt.IsNil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const after = 3 * time.Second
	start := time.Now()
	ch, err := Start(ctx, m, &Options{Rescan: time.Hour, LastResort: after})
	c.Assert(err, qt.IsNil)
	var started, refused *Event
	deadline := time.After(2 * time.Minute)
	for started == nil || refused == nil {
		select {
		case e, ok := <-ch:
			c.Assert(ok, qt.IsTrue)
			t.Logf("event %s", e)
			switch {
			case e.Type == LastResortStarted && e.Array == mirror:
				c.Assert(started, qt.IsNil, qt.Commentf("started twice"))
				c.Check(time.Since(start) >= after, qt.IsTrue, qt.Commentf("started %v after the watch began", time.Since(start)))
				started = &e
			case e.Type == LastResortRefused && e.Array == raid5:
				c.Assert(refused, qt.IsNil, qt.Commentf("refused twice for one reason"))
				refused = &e
			case e.Type == LastResortStarted:
				c.Fatalf("started %s: %s", e.Array, e)
			}
		case <-deadline:
			c.Fatalf("after 2 minutes: started %v, refused %v\n%s", started, refused, guest.MDStat(c))
		}
	}
	c.Check(started.Reason, qt.Equals, fmt.Sprintf("inactive for %s: started with the members it has (array_state=read-auto)", after))
	c.Check(refused.Reason, qt.Matches, `md: not enough members to start the array: `+raid5+` \(raid5\) has 2 of 4 slots`)
	c.Check(guest.ReadAttr(c, mirror, "array_state"), qt.Equals, "read-auto")
	c.Check(guest.ReadAttr(c, mirror, "degraded"), qt.Equals, "1")
	c.Check(guest.ReadAttr(c, raid5, "array_state"), qt.Equals, "inactive")
	cancel()
	for e := range ch {
		t.Logf("event %s", e)
		c.Check(e.Type == LastResortStarted && e.Array == raid5, qt.IsFalse)
	}
	c.Check(guest.ReadAttr(c, raid5, "array_state"), qt.Equals, "inactive")
	for _, d := range disks[2:] {
		c.Check(hashDisk(c, d), qt.Equals, before[d.Name], qt.Commentf("%s", d.Name))
	}
}

// hashDisk hashes the first 4 MiB of a disk, read with O_DIRECT: the 1.2
// superblock, the bad-block log and the start of the data, which a
// start would write (the superblock's events and state at least).
func hashDisk(c *qt.C, d guest.Disk) [32]byte {
	c.Helper()
	f, err := blockdev.OpenDirect(d.Path)
	c.Assert(err, qt.IsNil)
	defer f.Close()
	h := sha256.New()
	buf := blockdev.AlignedBuf(1<<20, 4096)
	for off := int64(0); off < min(d.Size, 4<<20); off += int64(len(buf)) {
		n, err := f.ReadAt(buf, off)
		c.Assert(err, qt.IsNil, qt.Commentf("%s at %d", d.Path, off))
		h.Write(buf[:n])
	}
	var out [32]byte
	copy(out[:], h.Sum(nil))
	return out
}

// holder is the md array a disk is bound to (its one holder).
func holder(c *qt.C, d guest.Disk) string {
	c.Helper()
	ents, err := os.ReadDir(filepath.Join("/sys/class/block", d.Name, "holders"))
	c.Assert(err, qt.IsNil)
	c.Assert(ents, qt.HasLen, 1, qt.Commentf("holders of %s", d.Name))
	return ents[0].Name()
}
