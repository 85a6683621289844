//go:build vmtest

package md

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"testing"
	"time"

	qt "github.com/frankban/quicktest"

	"github.com/go-mdraid/mdraid/internal/vmtest/guest"
	"github.com/go-mdraid/mdraid/superblock"
)

// fillPattern writes n bytes of byte b at off of path (O_SYNC), then
// flushes the device's buffers.
func fillPattern(c *qt.C, path string, off, n int64, b byte) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_SYNC, 0)
	c.Assert(err, qt.IsNil)
	_, err = f.WriteAt(bytes.Repeat([]byte{b}, int(n)), off)
	c.Assert(err, qt.IsNil)
	c.Assert(f.Close(), qt.IsNil)
	c.Assert(guest.FlushBuffers(path), qt.IsNil)
}

// readAt reads n bytes at off of path, after dropping its buffers.
func readAt(c *qt.C, path string, off, n int64) []byte {
	c.Assert(guest.FlushBuffers(path), qt.IsNil)
	f, err := os.Open(path)
	c.Assert(err, qt.IsNil)
	defer f.Close()
	b := make([]byte, n)
	_, err = f.ReadAt(b, off)
	c.Assert(err, qt.IsNil)
	return b
}

// diskHash is the SHA-256 of the whole disk.
func diskHash(c *qt.C, path string) [32]byte {
	c.Assert(guest.FlushBuffers(path), qt.IsNil)
	f, err := os.Open(path)
	c.Assert(err, qt.IsNil)
	defer f.Close()
	h := sha256.New()
	_, err = io.Copy(h, f)
	c.Assert(err, qt.IsNil)
	var out [32]byte
	copy(out[:], h.Sum(nil))
	return out
}

// bestSuperblock is the superblock mdadm would use on path, read after
// its buffers are dropped.
func bestSuperblock(c *qt.C, path string) *superblock.Superblock {
	c.Assert(guest.FlushBuffers(path), qt.IsNil)
	f, err := os.Open(path)
	c.Assert(err, qt.IsNil)
	defer f.Close()
	size, err := f.Seek(0, io.SeekEnd)
	c.Assert(err, qt.IsNil)
	pr, err := superblock.Probe(f, size)
	c.Assert(err, qt.IsNil)
	c.Assert(pr.Best(), qt.IsNotNil)
	return pr.Best().Superblock
}

// dataOffset is the byte offset of the data on a member.
func dataOffset(c *qt.C, path string) int64 {
	return int64(bestSuperblock(c, path).DataOffset) * 512
}

// TestVMReAdd (issue 33) on the real kernel: a mirror loses member 1
// (failed and removed), is written to, and gets it back with ReAdd.
// With a write-intent bitmap (64 KiB chunks) md takes it back into slot
// 1 and copies only what was written while it was gone: a marker written
// straight onto the returned disk, in a region the array did not write,
// is still there once md is done, and the region the array wrote is the
// array's. Without a bitmap md refuses the re-add (EINVAL) and ReAdd adds
// it as a spare into its slot, the only free one: the marker is
// overwritten (a full rebuild). Refusals change nothing: a live member
// (the array's members are the same), a disk of another array and a
// device newer than the array (every byte as it was). mdadm's return of
// the same disk (--re-add, or --add without a bitmap) is timed beside
// mdctl's for bench/readd-vm.sh.
func TestVMReAdd(t *testing.T) {
	ctx := context.Background()
	const mib = 1 << 20
	for _, tt := range []struct {
		name    string
		bitmap  []string
		outcome ReAddOutcome
		partial bool
	}{
		{"bitmap", []string{"--bitmap=internal", "--bitmap-chunk=64K"}, ReAdded, true},
		{"no bitmap", []string{"--bitmap=none"}, ReAddedFull, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := qt.New(t)
			disks := guest.ScratchDisks(t, 3)
			md := createArray(c, "/dev/md/ra", append([]string{"--level=1", "--name=ra", "--raid-devices=2"}, tt.bitmap...), disks[:2])
			arr := "/dev/" + md
			m := vmManager(t)
			fillPattern(c, arr, 0, 16*mib, 0xa1)
			guest.Mdadm(c, arr, "--fail", disks[1].Path)
			guest.Mdadm(c, arr, "--remove", disks[1].Path)
			// Written while it is gone: the first MiB.
			fillPattern(c, arr, 0, mib, 0xb2)
			off := dataOffset(c, disks[1].Path)
			// A marker on the returned disk where the array wrote
			// nothing while it was gone (8 MiB into the data).
			fillPattern(c, disks[1].Path, off+8*mib, mib, 0xc3)

			p, err := m.PlanReAdd(ctx, ReAddRequest{Array: md, Device: disks[1].Path})
			c.Assert(err, qt.IsNil)
			c.Check(p.Slot, qt.Equals, 1)
			c.Check(p.Bitmap, qt.Equals, tt.partial)
			c.Check(p.Events < p.ArrayEvents, qt.IsTrue, qt.Commentf("%d < %d", p.Events, p.ArrayEvents))

			start := time.Now()
			res, err := m.ReAdd(ctx, ReAddRequest{Array: md, Device: disks[1].Path})
			c.Assert(err, qt.IsNil)
			c.Check(res.Outcome, qt.Equals, tt.outcome)
			c.Logf("writes %v, sync_action %s", res.Writes, res.SyncAction)
			guest.WaitSync(c, md)
			t.Logf("PERF re-add %s: mdctl re-add to a clean array: %v", tt.name, time.Since(start).Round(time.Millisecond))
			ms := guest.Members(c, md)
			slotOf := map[string]string{}
			for _, x := range ms {
				slotOf[x.Name] = x.Slot
			}
			c.Check(slotOf[disks[1].Name], qt.Equals, "1", qt.Commentf("%+v", ms))
			c.Check(fillDesc(readAt(c, disks[1].Path, off, mib)), qt.Equals, fillDesc(bytes.Repeat([]byte{0xb2}, mib)), qt.Commentf("what the array wrote while the disk was gone"))
			marker := readAt(c, disks[1].Path, off+8*mib, mib)
			if tt.partial {
				c.Check(bytes.Equal(marker, bytes.Repeat([]byte{0xc3}, mib)), qt.IsTrue, qt.Commentf("a region the bitmap did not mark was copied: not a partial resync"))
			} else {
				c.Check(bytes.Equal(marker, bytes.Repeat([]byte{0xa1}, mib)), qt.IsTrue, qt.Commentf("the marker survived a full rebuild"))
			}

			// The same return with mdadm, for the benchmark
			// (bench/readd-vm.sh): --re-add where md takes it back,
			// --add (a full rebuild) where it does not.
			guest.Mdadm(c, arr, "--fail", disks[1].Path)
			guest.Mdadm(c, arr, "--remove", disks[1].Path)
			fillPattern(c, arr, 0, mib, 0xd4)
			op := "--re-add"
			if !tt.partial {
				op = "--add"
			}
			start = time.Now()
			guest.Mdadm(c, arr, op, disks[1].Path)
			guest.WaitSync(c, md)
			t.Logf("PERF re-add %s: mdadm %s to a clean array: %v", tt.name, op, time.Since(start).Round(time.Millisecond))

			// Refusals, each leaving the device byte-identical.
			// A live member: md itself writes its superblock at any
			// time (events, clean and active), so the array's members
			// are compared, not the disk's bytes.
			before := guest.Members(c, md)
			_, err = m.ReAdd(ctx, ReAddRequest{Array: md, Device: disks[0].Path})
			c.Check(err, qt.ErrorIs, ErrInUse)
			c.Check(guest.Members(c, md), qt.DeepEquals, before)

			guest.Mdadm(c, "--create", "/dev/md/other", "--run", "--assume-clean", "--level=1", "--raid-devices=2", "--force", disks[2].Path, "missing")
			guest.Mdadm(c, "--stop", "/dev/md/other")
			h2 := diskHash(c, disks[2].Path)
			_, err = m.ReAdd(ctx, ReAddRequest{Array: md, Device: disks[2].Path})
			c.Check(err, qt.ErrorIs, ErrMismatch)
			c.Check(diskHash(c, disks[2].Path), qt.Equals, h2)

			guest.Mdadm(c, arr, "--fail", disks[1].Path)
			guest.Mdadm(c, arr, "--remove", disks[1].Path)
			editSuperblock(c, disks[1].Path, func(sb *superblock.Superblock) { sb.Events += 100 })
			h1 := diskHash(c, disks[1].Path)
			_, err = m.ReAdd(ctx, ReAddRequest{Array: md, Device: disks[1].Path})
			c.Check(err, qt.ErrorIs, ErrSplitBrain)
			c.Check(diskHash(c, disks[1].Path), qt.Equals, h1)
			c.Check(len(guest.Members(c, md)), qt.Equals, 1)
		})
	}
}

// fillDesc describes a region for a message: one fill byte, or its
// first and last bytes.
func fillDesc(b []byte) string {
	if len(b) == 0 {
		return "empty"
	}
	if bytes.Count(b, b[:1]) == len(b) {
		return fmt.Sprintf("all %#02x", b[0])
	}
	return fmt.Sprintf("mixed, first %#02x, last %#02x", b[0], b[len(b)-1])
}
