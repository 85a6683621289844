//go:build vmtest

package md

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	qt "github.com/frankban/quicktest"
	"golang.org/x/sys/unix"

	"github.com/go-mdraid/mdraid/blockdev"
	"github.com/go-mdraid/mdraid/internal/vmtest/guest"
)

// TestVMStatusBitmap (issue 33): status shows an internal bitmap's place,
// chunk and dirty count as mdadm --examine-bitmap reads them from the same
// member, metadata 1.2 and 1.0: all clean once the kernel has cleared
// what mdadm set at create, then the 32 chunks of two 1 MiB writes made
// while the mirror is degraded (a member failed: the kernel clears no
// bit then, so the two read the same bits).
func TestVMStatusBitmap(t *testing.T) {
	for _, meta := range []string{"1.2", "1.0"} {
		t.Run(meta, func(t *testing.T) {
			c := qt.New(t)
			disks := guest.ScratchDisks(t, 2)
			dev := "/dev/md/bmstat"
			// --delay=1: the bitmap daemon runs every second, so the
			// bits mdadm sets at create are cleared within seconds.
			guest.Mdadm(c, "--create", dev, "--run", "--assume-clean", "--level=1", "--raid-devices=2",
				"--metadata="+meta, "--bitmap=internal", "--bitmap-chunk=64K", "--delay=1", disks[0].Path, disks[1].Path)
			t.Cleanup(func() { guest.RunMdadm("--stop", dev) })
			array := guest.ArrayName(c, dev)
			m, err := Open(nil)
			c.Assert(err, qt.IsNil)
			ctx := context.Background()
			deadline := time.Now().Add(30 * time.Second)
			for {
				a, err := m.Status(ctx, array)
				c.Assert(err, qt.IsNil)
				c.Assert(a.Bitmap, qt.IsNotNil)
				c.Assert(a.Bitmap.Dirty, qt.IsNotNil, qt.Commentf("%s", a.Bitmap.Error))
				if *a.Bitmap.Dirty == 0 {
					c.Check(examineLine(c, "--examine-bitmap", disks[0].Path, "Bitmap"), qt.Matches, fmt.Sprintf(`%d bits \(chunks\), 0 dirty .*`, a.Bitmap.Chunks))
					break
				}
				c.Assert(time.Now().Before(deadline), qt.IsTrue, qt.Commentf("still %d dirty after 30 s", *a.Bitmap.Dirty))
				time.Sleep(250 * time.Millisecond)
			}

			guest.Mdadm(c, dev, "--fail", disks[1].Path)
			f, err := os.OpenFile(dev, os.O_WRONLY|unix.O_DIRECT, 0)
			c.Assert(err, qt.IsNil)
			buf := blockdev.AlignedBuf(1<<20, 4096)
			for _, off := range []int64{0, 8 << 20} {
				_, err := f.WriteAt(buf, off)
				c.Assert(err, qt.IsNil)
			}
			c.Assert(f.Sync(), qt.IsNil)
			c.Assert(f.Close(), qt.IsNil)

			a, err := m.Status(ctx, array)
			c.Assert(err, qt.IsNil)
			b := a.Bitmap
			c.Assert(b, qt.IsNotNil)
			c.Assert(b.Error, qt.Equals, "")
			c.Assert(b.Dirty, qt.IsNotNil)
			c.Check(b.From, qt.Equals, disks[0].Name)
			want := examineLine(c, "--examine-bitmap", disks[0].Path, "Bitmap")
			c.Check(want, qt.Matches, fmt.Sprintf(`%d bits \(chunks\), %d dirty .*`, b.Chunks, *b.Dirty))
			c.Check(examineLine(c, "--examine-bitmap", disks[0].Path, "Chunksize"), qt.Equals, "64 KB")
			c.Check(b.ChunkBytes, qt.Equals, uint64(64<<10))
			c.Check(*b.Dirty, qt.Equals, uint64(32), qt.Commentf("2 MiB written in 64 KiB chunks"))
			loc := guest.ReadAttr(c, array, "bitmap/location")
			c.Check(fmt.Sprintf("%+d", b.OffsetSectors), qt.Equals, loc)
			t.Logf("metadata %s: status %+d sectors, %d of %d dirty, read from %s; mdadm -X: %s; bitmap/location %s", meta, b.OffsetSectors, *b.Dirty, b.Chunks, b.From, want, loc)
		})
	}
}
