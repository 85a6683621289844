//go:build vmtest

package md

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"regexp"
	"testing"

	qt "github.com/frankban/quicktest"
	"golang.org/x/sys/unix"

	"github.com/go-mdraid/mdraid/internal/vmtest/guest"
	"github.com/go-mdraid/mdraid/superblock"
)

// diskImage reads the whole disk with O_DIRECT (the page cache cannot
// answer).
func diskImage(c *qt.C, d guest.Disk) []byte {
	c.Helper()
	f, err := os.OpenFile(d.Path, os.O_RDONLY|unix.O_DIRECT, 0)
	c.Assert(err, qt.IsNil)
	defer f.Close()
	img := alignedBuf(int(d.Size), 4096)
	for off := int64(0); off < d.Size; off += 4 << 20 {
		c.Assert(readFull(f, img[off:min(off+4<<20, d.Size)], off), qt.IsNil)
	}
	return img
}

// inMdstat reports whether /proc/mdstat lists the device as a member of
// an array (running or not).
func inMdstat(c *qt.C, name string) bool {
	b, err := os.ReadFile("/proc/mdstat")
	c.Assert(err, qt.IsNil)
	return regexp.MustCompile(`\b` + regexp.QuoteMeta(name) + `\[`).Match(b)
}

// TestVMZeroSuperblock (issue 32, retire) on the real kernel: the members
// of a running array, of an assembled inactive one, and a device another
// program holds open exclusively are refused, each named, nothing
// written (the inactive member and the held device byte-identical; md
// itself writes a running member's superblock at any time). Once the
// arrays are stopped, mdctl erases the 1.2 superblock with its bitmap and
// bad-block log, and the 1.0 superblock with its log, and nothing else:
// every other byte is as it was, mdadm --examine finds no superblock,
// and mdadm --assemble --scan assembles nothing from them. mdadm
// --zero-superblock on a like member zeroes less (the first 512 bytes
// of the superblock); the test logs both.
func TestVMZeroSuperblock(t *testing.T) {
	c := qt.New(t)
	ctx := context.Background()
	disks := guest.ScratchDisks(t, 5)
	m := vmManager(t)
	bm := createArray(c, "/dev/md/zb", []string{"--level=1", "--metadata=1.2", "--bitmap=internal", "--name=zb", "--raid-devices=2"}, disks[:2])
	createArray(c, "/dev/md/z0", []string{"--level=1", "--metadata=1.0", "--name=z0", "--raid-devices=2"}, disks[2:4])
	writeData(c, "/dev/md/zb")
	writeData(c, "/dev/md/z0")

	refused := func(path string, check Check) {
		c.Helper()
		_, err := m.ZeroSuperblock(ctx, ZeroRequest{Devices: []string{path}})
		c.Assert(err, qt.ErrorIs, ErrRefused)
		var re *RefusedError
		c.Assert(errors.As(err, &re), qt.IsTrue)
		c.Check(re.Check, qt.Equals, check, qt.Commentf("%v", err))
		c.Logf("refused: %v", err)
	}
	// A member of a running array: refused; the array keeps its members.
	refused(disks[0].Path, CheckNotMember)
	c.Check(bestSuperblock(c, disks[0].Path).SetUUID, qt.Equals, bestSuperblock(c, disks[1].Path).SetUUID)
	c.Check(len(guest.Members(c, bm)), qt.Equals, 2)

	guest.Mdadm(c, "--stop", "/dev/md/zb")
	guest.Mdadm(c, "--stop", "/dev/md/z0")

	// A member of an assembled, inactive array (one of two).
	before := diskImage(c, disks[2])
	// mdadm --incremental leaves it inactive, waiting for the other.
	out, _ := exec.Command("mdadm", "--incremental", disks[2].Path).CombinedOutput()
	c.Logf("mdadm --incremental: %s", bytes.TrimSpace(out))
	c.Assert(inMdstat(c, disks[2].Name), qt.IsTrue)
	refused(disks[2].Path, CheckNotMember)
	guest.Mdadm(c, "--stop", "--scan")
	c.Assert(inMdstat(c, disks[2].Name), qt.IsFalse)
	c.Check(bytes.Equal(diskImage(c, disks[2]), before), qt.IsTrue)

	// Open exclusively by another program; and, named with it, a device
	// that could be erased: neither is written.
	held, err := os.OpenFile(disks[1].Path, os.O_RDONLY|unix.O_EXCL, 0)
	c.Assert(err, qt.IsNil)
	b0, b1 := diskImage(c, disks[0]), diskImage(c, disks[1])
	_, err = m.ZeroSuperblock(ctx, ZeroRequest{Devices: []string{disks[0].Path, disks[1].Path}})
	c.Assert(err, qt.ErrorIs, ErrRefused)
	c.Check(err, qt.ErrorMatches, `.*opened exclusively by another program.*`)
	held.Close()
	c.Check(bytes.Equal(diskImage(c, disks[0]), b0), qt.IsTrue)
	c.Check(bytes.Equal(diskImage(c, disks[1]), b1), qt.IsTrue)

	// A blank disk: nothing to erase.
	refused(disks[4].Path, CheckSuperblockFound)

	// The erase: exactly the planned areas become zeros.
	images := map[string][]byte{}
	for _, d := range disks[:3] {
		images[d.Path] = diskImage(c, d)
	}
	p, err := m.PlanZeroSuperblock(ctx, ZeroRequest{Devices: []string{disks[0].Path, disks[1].Path, disks[2].Path}})
	c.Assert(err, qt.IsNil)
	res, err := m.ZeroSuperblock(ctx, ZeroRequest{Devices: []string{disks[0].Path, disks[1].Path, disks[2].Path}})
	c.Assert(err, qt.IsNil)
	c.Check(res.Zeroed, qt.DeepEquals, []string{disks[0].Path, disks[1].Path, disks[2].Path})
	for i, d := range disks[:3] {
		dev := res.Plan.Devices[i]
		c.Check(dev.Superblocks, qt.DeepEquals, p.Devices[i].Superblocks) // the dry run planned what was done
		c.Assert(dev.Superblocks, qt.HasLen, 1)
		z := dev.Superblocks[0]
		c.Logf("%s: %s %s areas %+v", d.Name, z.Version, z.ArrayUUID, z.Areas)
		var whats []string
		for _, a := range z.Areas {
			whats = append(whats, a.What)
		}
		if i < 2 {
			c.Check(z.Version, qt.Equals, "1.2")
			c.Check(whats, qt.DeepEquals, []string{"bitmap", "bad-block log", "superblock"})
		} else {
			c.Check(z.Version, qt.Equals, "1.0")
			c.Check(whats, qt.DeepEquals, []string{"bad-block log", "superblock"})
		}
		want := bytes.Clone(images[d.Path])
		for _, a := range z.Areas {
			clear(want[a.Offset : a.Offset+a.Bytes])
		}
		got := diskImage(c, d)
		c.Check(bytes.Equal(got, want), qt.IsTrue, qt.Commentf("%s: bytes outside the planned areas changed, or an area is not zero", d.Name))
		_, err := superblock.Probe(bytes.NewReader(got), int64(len(got)))
		c.Check(err, qt.ErrorIs, superblock.ErrNoSuperblock)
		out, err := exec.Command("mdadm", "--examine", d.Path).CombinedOutput()
		c.Check(err, qt.IsNotNil, qt.Commentf("mdadm --examine %s: %s", d.Path, out))
		c.Logf("mdadm --examine %s: %s", d.Path, bytes.TrimSpace(out))
	}

	// mdadm on the other 1.0 member, for the record: which bytes it
	// zeroes.
	before = diskImage(c, disks[3])
	guest.Mdadm(c, "--zero-superblock", disks[3].Path)
	after := diskImage(c, disks[3])
	first, last := -1, -1
	for i := range before {
		if before[i] != after[i] {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	c.Logf("mdadm --zero-superblock %s changed bytes %d to %d", disks[3].Name, first, last)
	out, _ = exec.Command("mdadm", "--assemble", "--scan", "--verbose").CombinedOutput()
	c.Logf("mdadm --assemble --scan: %s", out)
	for _, d := range disks[:4] {
		c.Check(inMdstat(c, d.Name), qt.IsFalse, qt.Commentf("%s was assembled: %s", d.Name, out))
	}
}
