//go:build vmtest

package md

import (
	"bytes"
	"context"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	qt "github.com/frankban/quicktest"

	"github.com/go-mdraid/mdraid/internal/vmtest/guest"
)

// examineLine is the value of one "Key : value" line of mdadm's output
// for path (--examine, or --examine-bitmap), "" when absent.
func examineLine(c *qt.C, flag, path, key string) string {
	c.Helper()
	out, _ := exec.Command("mdadm", flag, path).CombinedOutput()
	m := regexp.MustCompile(`(?m)^\s*` + regexp.QuoteMeta(key) + `\s*:\s*(.*)$`).FindSubmatch(out)
	if m == nil {
		return ""
	}
	return strings.TrimSpace(string(m[1]))
}

// TestVMBitmap (issue 33, bitmaps) on the real kernel, metadata 1.2 and
// 1.0: mdctl adds the internal bitmap to a running mirror where mdadm
// --grow --bitmap=internal puts it on a twin mirror (same bitmap/location
// and chunk, same "Internal Bitmap" line in mdadm --examine, same chunk
// and sync size in mdadm --examine-bitmap), no resync starts, and the
// bitmap works: a member that leaves and comes back is re-added with
// only what changed copied. Refused while recovery is frozen (nothing
// written to the members' bitmap areas). Removed, as mdadm removes it:
// bitmap/location none and no bitmap in the superblocks.
func TestVMBitmap(t *testing.T) {
	ctx := context.Background()
	for _, meta := range []string{"1.2", "1.0"} {
		t.Run(meta, func(t *testing.T) {
			c := qt.New(t)
			disks := guest.ScratchDisks(t, 4)
			m := vmManager(t)
			args := []string{"--level=1", "--metadata=" + meta, "--raid-devices=2"}
			ours := createArray(c, "/dev/md/ours", append(args, "--name=ours"), disks[:2])
			theirs := createArray(c, "/dev/md/theirs", append(args, "--name=theirs"), disks[2:4])

			// Frozen: refused, nothing written where the bitmap goes.
			p, err := m.PlanBitmap(ctx, BitmapRequest{Array: ours, Internal: true})
			c.Assert(err, qt.IsNil)
			for _, w := range p.Members {
				c.Logf("plan: location %s chunk %d sync %d: %s %d bytes at byte %d", p.Location, p.ChunkBytes, p.SyncSectors, w.Device, w.Bytes, w.Offset)
			}
			area := func() []byte {
				var b []byte
				for _, w := range p.Members {
					b = append(b, readAt(c, "/dev/"+w.Device, w.Offset, w.Bytes)...)
				}
				return b
			}
			before := area()
			guest.WriteAttr(c, ours, "sync_action", "frozen")
			_, err = m.SetBitmap(ctx, BitmapRequest{Array: ours, Internal: true})
			c.Assert(err, qt.ErrorIs, ErrRefused)
			c.Logf("refused: %v", err)
			guest.WriteAttr(c, ours, "sync_action", "idle")
			c.Check(bytes.Equal(area(), before), qt.IsTrue)
			c.Check(strings.TrimSpace(guest.ReadAttr(c, ours, "bitmap/location")), qt.Equals, "none")

			start := time.Now()
			res, err := m.SetBitmap(ctx, BitmapRequest{Array: ours, Internal: true})
			c.Assert(err, qt.IsNil)
			t.Logf("PERF bitmap add %s: mdctl %v", meta, time.Since(start).Round(time.Millisecond))
			start = time.Now()
			guest.Mdadm(c, "--grow", "/dev/md/theirs", "--bitmap=internal")
			t.Logf("PERF bitmap add %s: mdadm --grow %v", meta, time.Since(start).Round(time.Millisecond))
			for _, attr := range []string{"bitmap/location", "bitmap/chunksize"} {
				c.Check(guest.ReadAttr(c, ours, attr), qt.Equals, guest.ReadAttr(c, theirs, attr), qt.Commentf("%s", attr))
			}
			c.Check(res.Location, qt.Equals, strings.TrimSpace(guest.ReadAttr(c, theirs, "bitmap/location")))
			// md writes the superblocks with the bitmap feature soon
			// after; wait for the arrays to settle.
			guest.WaitAttr(c, ours, "array_state", "clean", 10*time.Second)
			guest.WaitAttr(c, theirs, "array_state", "clean", 10*time.Second)
			for i := range 2 {
				o, th := disks[i].Path, disks[2+i].Path
				c.Check(examineLine(c, "--examine", o, "Internal Bitmap"), qt.Equals, examineLine(c, "--examine", th, "Internal Bitmap"))
				c.Check(examineLine(c, "--examine", o, "Internal Bitmap"), qt.Not(qt.Equals), "")
				for _, key := range []string{"Chunksize", "Sync Size"} {
					c.Check(examineLine(c, "--examine-bitmap", o, key), qt.Equals, examineLine(c, "--examine-bitmap", th, key), qt.Commentf("%s", key))
				}
				c.Logf("%s: Internal Bitmap %s; -X: Chunksize %s, Bitmap %s", disks[i].Name, examineLine(c, "--examine", o, "Internal Bitmap"),
					examineLine(c, "--examine-bitmap", o, "Chunksize"), examineLine(c, "--examine-bitmap", o, "Bitmap"))
			}
			// No resync: the array was in sync from end to end.
			time.Sleep(time.Second)
			c.Check(strings.TrimSpace(guest.ReadAttr(c, ours, "sync_action")), qt.Equals, "idle")
			last := strings.TrimSpace(guest.ReadAttr(c, ours, "last_sync_action"))
			c.Check(last == "none" || last == "idle", qt.IsTrue, qt.Commentf("last_sync_action %s", last))

			// The bitmap works: a member that leaves and comes back is
			// re-added, not rebuilt.
			guest.Mdadm(c, "--fail", "/dev/"+ours, disks[1].Path)
			guest.Mdadm(c, "--remove", "/dev/"+ours, disks[1].Path)
			writeData(c, "/dev/"+ours)
			ra, err := m.ReAdd(ctx, ReAddRequest{Array: ours, Device: disks[1].Path})
			c.Assert(err, qt.IsNil)
			c.Check(ra.Outcome, qt.Equals, ReAdded)
			guest.WaitSync(c, ours)

			// Removed: as mdadm removes it.
			_, err = m.SetBitmap(ctx, BitmapRequest{Array: ours})
			c.Assert(err, qt.IsNil)
			guest.Mdadm(c, "--grow", "/dev/md/theirs", "--bitmap=none")
			c.Check(strings.TrimSpace(guest.ReadAttr(c, ours, "bitmap/location")), qt.Equals, "none")
			guest.WaitAttr(c, ours, "array_state", "clean", 10*time.Second)
			guest.WaitAttr(c, theirs, "array_state", "clean", 10*time.Second)
			for i := range 2 {
				c.Check(examineLine(c, "--examine", disks[i].Path, "Internal Bitmap"), qt.Equals, "")
				c.Check(examineLine(c, "--examine", disks[i].Path, "Feature Map"), qt.Equals, examineLine(c, "--examine", disks[2+i].Path, "Feature Map"))
			}
			_, err = m.SetBitmap(ctx, BitmapRequest{Array: ours})
			c.Check(err, qt.ErrorIs, ErrNoBitmapToRemove)
			// Added again over the old bitmap md left on the disks.
			_, err = m.SetBitmap(ctx, BitmapRequest{Array: ours, Internal: true})
			c.Assert(err, qt.IsNil)
			guest.Mdadm(c, "--stop", "/dev/"+ours)
			guest.Mdadm(c, "--stop", "/dev/md/theirs")
		})
	}
}
