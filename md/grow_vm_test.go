//go:build vmtest

package md

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	qt "github.com/frankban/quicktest"
	"golang.org/x/sys/unix"

	"github.com/go-mdraid/mdraid/internal/vmtest/guest"
)

// TestVMGrow (issue 33, size after bigger disks) on the real kernel: a
// mirror created with mdadm --size=24 MiB on two disks has each member
// replaced, one at a time, by a disk it can use whole (mdctl replace);
// Grow to max then gives the array what md gives a twin mirror on which
// mdadm --grow --size=max ran (component_size, the array's size, the
// members' Used Dev Size, Avail Dev Size, data and super offsets in
// mdadm --examine, and with 1.2 the bitmap's sync size and chunk in
// mdadm --examine-bitmap), md resyncs the new space, the data written
// before is intact, and a pattern written at the new end of the array is
// on each member. Refused while recovery is frozen, every member byte
// identical. (1.0 with an internal bitmap: TestVMGrowInPlace.)
func TestVMGrow(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct{ meta, bitmap string }{{"1.2", "internal"}, {"1.0", "none"}} {
		t.Run(tc.meta+"-bitmap-"+tc.bitmap, func(t *testing.T) {
			c := qt.New(t)
			disks := guest.ScratchDisks(t, 6)
			m := vmManager(t)
			args := []string{"--level=1", "--metadata=" + tc.meta, "--raid-devices=2", "--size=24576", "--bitmap=" + tc.bitmap}
			ours := createArray(c, "/dev/md/ours", append(args, "--name=ours"), disks[:2])
			theirs := createArray(c, "/dev/md/theirs", append(args, "--name=theirs"), disks[4:6])
			sum := writeData(c, "/dev/"+ours)
			for i := range 2 {
				guest.Mdadm(c, "--fail", "/dev/"+ours, disks[i].Path)
				guest.Mdadm(c, "--remove", "/dev/"+ours, disks[i].Path)
				_, err := m.Replace(ctx, ReplaceRequest{Array: ours, With: disks[2+i].Path})
				c.Assert(err, qt.IsNil)
				guest.WaitSync(c, ours)
			}
			members := []guest.Disk{disks[2], disks[3]}
			hashes := func() [][32]byte {
				var h [][32]byte
				for _, d := range members {
					h = append(h, diskHash(c, d.Path))
				}
				return h
			}
			attr := func(md, a string) string { return strings.TrimSpace(guest.ReadAttr(c, md, a)) }
			before := hashes()
			guest.WriteAttr(c, ours, "sync_action", "frozen")
			_, err := m.Grow(ctx, GrowRequest{Array: ours})
			c.Check(err, qt.ErrorIs, ErrRefused)
			c.Logf("frozen: %v", err)
			guest.WriteAttr(c, ours, "sync_action", "idle")
			c.Check(hashes(), qt.DeepEquals, before)

			p, err := m.PlanGrow(ctx, GrowRequest{Array: ours})
			c.Assert(err, qt.IsNil)
			for _, gm := range p.Members {
				c.Logf("plan: %s gives %d KiB, can give %d; superblock %d -> %d", gm.Device, gm.NowKiB, gm.MaxKiB, gm.SuperblockSector, gm.NewSuperblockSector)
			}
			res, err := m.Grow(ctx, GrowRequest{Array: ours})
			c.Assert(err, qt.IsNil)
			c.Logf("grow: %d -> %d KiB (resized %v), array %d KiB, sync_action %s", p.FromKiB, res.ComponentKiB, res.Resized, res.ArrayKiB, res.SyncAction)
			guest.Mdadm(c, "--grow", "/dev/md/theirs", "--size=max")
			c.Check(res.ComponentKiB > p.FromKiB, qt.IsTrue)
			c.Check(res.ComponentKiB, qt.Equals, p.ToKiB)
			c.Check(attr(ours, "component_size"), qt.Equals, attr(theirs, "component_size"))
			size := func(md string) int64 {
				n, err := strconv.ParseInt(strings.TrimSpace(guest.ReadAttr(c, md, "../size")), 10, 64)
				c.Assert(err, qt.IsNil)
				return n * 512
			}
			c.Check(size(ours), qt.Equals, size(theirs))
			c.Check(uint64(size(ours))/1024, qt.Equals, res.ArrayKiB)
			guest.WaitSync(c, ours)
			guest.WaitSync(c, theirs)
			c.Logf("after: last_sync_action %s", attr(ours, "last_sync_action"))
			for i := range 2 {
				o, th := members[i].Path, disks[4+i].Path
				for _, key := range []string{"Avail Dev Size", "Used Dev Size", "Array Size", "Data Offset", "Super Offset"} {
					c.Check(examineLine(c, "--examine", o, key), qt.Equals, examineLine(c, "--examine", th, key), qt.Commentf("%s", key))
				}
				if tc.bitmap == "internal" {
					for _, key := range []string{"Sync Size", "Chunksize"} {
						c.Check(examineLine(c, "--examine-bitmap", o, key), qt.Equals, examineLine(c, "--examine-bitmap", th, key), qt.Commentf("%s", key))
					}
					c.Logf("%s: -X Sync Size %s, Chunksize %s", members[i].Name, examineLine(c, "--examine-bitmap", o, "Sync Size"), examineLine(c, "--examine-bitmap", o, "Chunksize"))
				}
				c.Logf("%s: Used Dev Size %s, Array Size %s", members[i].Name, examineLine(c, "--examine", o, "Used Dev Size"), examineLine(c, "--examine", o, "Array Size"))
			}
			c.Check(readData(c, "/dev/"+ours), qt.Equals, sum)
			// The new space is the array's, on every member.
			end := size(ours) - 1<<20
			fillPattern(c, "/dev/"+ours, end, 1<<20, 0x5a)
			for _, d := range members {
				got := readAt(c, d.Path, dataOffset(c, d.Path)+end, 1<<20)
				c.Check(bytes.Equal(got, bytes.Repeat([]byte{0x5a}, 1<<20)), qt.IsTrue, qt.Commentf("%s", d.Name))
			}
			// Again: nothing to do.
			again, err := m.Grow(ctx, GrowRequest{Array: ours})
			c.Assert(err, qt.IsNil)
			c.Check(again.Plan.Unchanged, qt.IsTrue)
			c.Check(again.Resized, qt.HasLen, 0)
			_, err = m.Grow(ctx, GrowRequest{Array: ours, SizeKiB: 1024})
			c.Check(err, qt.ErrorIs, ErrShrink)
			c.Check(fmt.Sprint(size(ours)/1024), qt.Equals, fmt.Sprint(res.ArrayKiB))
			guest.Mdadm(c, "--stop", "/dev/"+ours)
			guest.Mdadm(c, "--stop", "/dev/md/theirs")
		})
	}
}

// blkpgPartition and blkpgArg are the kernel's struct blkpg_partition
// and struct blkpg_ioctl_arg (include/uapi/linux/blkpg.h).
type blkpgPartition struct {
	Start, Length int64
	Pno           int32
	Devname       [64]byte
	Volname       [64]byte
}

type blkpgArg struct {
	Op, Flags, Datalen int32
	Data               unsafe.Pointer
}

// resizePartition grows partition pno of disk to length bytes in place
// (BLKPG_RESIZE_PARTITION, as growpart does), also while it is in use,
// and rewrites its MBR entry to match.
func resizePartition(c *qt.C, disk string, pno int, start, length int64) {
	c.Helper()
	f, err := os.OpenFile(disk, os.O_RDWR, 0)
	c.Assert(err, qt.IsNil)
	defer f.Close()
	mbr := make([]byte, 512)
	_, err = f.ReadAt(mbr, 0)
	c.Assert(err, qt.IsNil)
	binary.LittleEndian.PutUint32(mbr[446+16*(pno-1)+12:], uint32(length/512))
	_, err = f.WriteAt(mbr, 0)
	c.Assert(err, qt.IsNil)
	p := blkpgPartition{Start: start, Length: length, Pno: int32(pno)}
	arg := blkpgArg{Op: 3 /* BLKPG_RESIZE_PARTITION */, Datalen: int32(unsafe.Sizeof(p)), Data: unsafe.Pointer(&p)}
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, f.Fd(), unix.BLKPG, uintptr(unsafe.Pointer(&arg)))
	c.Assert(errno, qt.Equals, syscall.Errno(0), qt.Commentf("BLKPG_RESIZE_PARTITION %s%d", disk, pno))
}

// partitioned gives each disk a DOS partition table with one partition
// of sectors sectors at sector 2048 and returns the partitions.
func partitioned(c *qt.C, disks []guest.Disk, sectors uint32) []guest.Disk {
	var parts []guest.Disk
	for _, d := range disks {
		mbr := make([]byte, 512)
		copy(mbr[446:], []byte{0, 0, 0, 0, 0xfd, 0, 0, 0})
		binary.LittleEndian.PutUint32(mbr[446+8:], 2048)
		binary.LittleEndian.PutUint32(mbr[446+12:], sectors)
		mbr[510], mbr[511] = 0x55, 0xaa
		f, err := os.OpenFile(d.Path, os.O_RDWR, 0)
		c.Assert(err, qt.IsNil)
		_, err = f.WriteAt(mbr, 0)
		c.Assert(err, qt.IsNil)
		c.Assert(f.Close(), qt.IsNil)
		rereadPartitions(c, d.Path)
		parts = append(parts, guest.Disk{Name: d.Name + "1", Path: d.Path + "1"})
	}
	return parts
}

// TestVMGrowInPlace (issue 33) on the real kernel: the partitions under
// a mirror grow in place (BLKPG_RESIZE_PARTITION, as growpart does after
// a cloud volume grew); Grow to max raises what each member gives
// (md/dev-N/size: md writes the member's new data size into its
// superblock, and for 1.0 writes the superblock at the partition's new
// end) and then the array, as mdadm --grow --size=max does on a twin:
// the same component size, array size, Avail Dev Size, Used Dev Size,
// data and super offsets. The data written before is intact, the new
// space is on each member, and the array assembles again from the moved
// superblocks. With 1.0 and an internal bitmap md will not move the
// superblock: Grow goes as far as the members give already (as mdadm),
// then refuses with the reason, the members' superblocks as they were,
// and mdadm's try leaves the twin's size as it was.
func TestVMGrowInPlace(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct{ meta, bitmap string }{{"1.2", "none"}, {"1.0", "none"}, {"1.0", "internal"}} {
		t.Run(tc.meta+"-bitmap-"+tc.bitmap, func(t *testing.T) {
			c := qt.New(t)
			disks := guest.ScratchDisks(t, 4)
			parts := partitioned(c, disks, 49152) // 24 MiB
			m := vmManager(t)
			args := []string{"--level=1", "--metadata=" + tc.meta, "--raid-devices=2", "--bitmap=" + tc.bitmap}
			ours := createArray(c, "/dev/md/ours", append(args, "--name=ours"), parts[:2])
			theirs := createArray(c, "/dev/md/theirs", append(args, "--name=theirs"), parts[2:4])
			guest.WaitSync(c, ours)
			sum := writeData(c, "/dev/"+ours)
			attr := func(md, a string) string { return strings.TrimSpace(guest.ReadAttr(c, md, a)) }
			from := attr(ours, "component_size")
			for _, d := range disks {
				resizePartition(c, d.Path, 1, 2048*512, 126976*512) // 62 MiB
			}
			if tc.bitmap == "internal" {
				// As far as the members give already (mdadm made their data
				// size a little more than the array uses), as mdadm does.
				res, err := m.Grow(ctx, GrowRequest{Array: ours})
				c.Assert(err, qt.IsNil)
				c.Check(res.Resized, qt.HasLen, 0)
				guest.Mdadm(c, "--grow", "/dev/md/theirs", "--size=max")
				c.Logf("grow: %s -> %d KiB, mdadm: %s", from, res.ComponentKiB, attr(theirs, "component_size"))
				c.Check(attr(ours, "component_size"), qt.Equals, attr(theirs, "component_size"))
				guest.WaitSync(c, ours)
				guest.WaitSync(c, theirs)
				// Beyond that md would have to move the superblock past the
				// bitmap: refused, md asked nothing.
				examine := func() []string {
					var v []string
					for _, d := range parts[:2] {
						for _, key := range []string{"Avail Dev Size", "Super Offset", "Array Size", "Internal Bitmap"} {
							v = append(v, examineLine(c, "--examine", d.Path, key))
						}
					}
					return v
				}
				before, size := examine(), attr(ours, "component_size")
				_, err = m.Grow(ctx, GrowRequest{Array: ours})
				c.Assert(err, qt.ErrorIs, ErrRefused)
				c.Check(err, qt.ErrorMatches, `.*keeps its internal bitmap.*`)
				c.Logf("refused: %v", err)
				c.Check(examine(), qt.DeepEquals, before)
				c.Check(attr(ours, "component_size"), qt.Equals, size)
				out, merr := guest.RunMdadm("--grow", "/dev/md/theirs", "--size=max")
				c.Logf("mdadm --grow --size=max again: %v: %s", merr, out)
				c.Check(attr(theirs, "component_size"), qt.Equals, size)
				c.Check(readData(c, "/dev/"+ours), qt.Equals, sum)
				guest.Mdadm(c, "--stop", "/dev/"+ours)
				guest.Mdadm(c, "--stop", "/dev/md/theirs")
				return
			}
			p, err := m.PlanGrow(ctx, GrowRequest{Array: ours})
			c.Assert(err, qt.IsNil)
			for _, gm := range p.Members {
				c.Logf("plan: %s gives %d KiB, can give %d; superblock %d -> %d", gm.Device, gm.NowKiB, gm.MaxKiB, gm.SuperblockSector, gm.NewSuperblockSector)
			}
			res, err := m.Grow(ctx, GrowRequest{Array: ours})
			c.Assert(err, qt.IsNil)
			c.Logf("grow: %s -> %d KiB (resized %v), array %d KiB, sync_action %s", from, res.ComponentKiB, res.Resized, res.ArrayKiB, res.SyncAction)
			c.Check(res.Resized, qt.DeepEquals, []string{parts[0].Name, parts[1].Name})
			guest.Mdadm(c, "--grow", "/dev/md/theirs", "--size=max")
			c.Check(attr(ours, "component_size"), qt.Equals, attr(theirs, "component_size"))
			c.Check(attr(ours, "component_size"), qt.Equals, fmt.Sprint(p.ToKiB))
			c.Check(attr(ours, "../size"), qt.Equals, attr(theirs, "../size"))
			guest.WaitSync(c, ours)
			guest.WaitSync(c, theirs)
			for i := range 2 {
				o, th := parts[i].Path, parts[2+i].Path
				for _, key := range []string{"Avail Dev Size", "Used Dev Size", "Array Size", "Data Offset", "Super Offset"} {
					c.Check(examineLine(c, "--examine", o, key), qt.Equals, examineLine(c, "--examine", th, key), qt.Commentf("%s", key))
				}
				c.Logf("%s: Super Offset %s, Avail Dev Size %s", parts[i].Name, examineLine(c, "--examine", o, "Super Offset"), examineLine(c, "--examine", o, "Avail Dev Size"))
			}
			c.Check(readData(c, "/dev/"+ours), qt.Equals, sum)
			n, err := strconv.ParseInt(attr(ours, "../size"), 10, 64)
			c.Assert(err, qt.IsNil)
			end := n*512 - 1<<20
			fillPattern(c, "/dev/"+ours, end, 1<<20, 0xa5)
			for _, d := range parts[:2] {
				got := readAt(c, d.Path, dataOffset(c, d.Path)+end, 1<<20)
				c.Check(bytes.Equal(got, bytes.Repeat([]byte{0xa5}, 1<<20)), qt.IsTrue, qt.Commentf("%s", d.Name))
			}
			// The moved superblocks assemble the array again, at its new size.
			guest.Mdadm(c, "--stop", "/dev/"+ours)
			guest.Mdadm(c, "--assemble", "/dev/md/ours", parts[0].Path, parts[1].Path)
			again := guest.ArrayName(c, "/dev/md/ours")
			c.Check(attr(again, "component_size"), qt.Equals, fmt.Sprint(p.ToKiB))
			c.Check(readData(c, "/dev/"+again), qt.Equals, sum)
			guest.Mdadm(c, "--stop", "/dev/"+again)
			guest.Mdadm(c, "--stop", "/dev/md/theirs")
		})
	}
}
