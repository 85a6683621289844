//go:build vmtest

package md

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	qt "github.com/frankban/quicktest"
	"golang.org/x/sys/unix"

	"github.com/go-mdraid/mdraid/internal/vmtest/guest"
)

// losetup sets up a loop device with busybox losetup and returns its
// path; the test is skipped when the guest has no loop driver.
func losetup(c *qt.C, args ...string) string {
	c.Helper()
	exec.Command("modprobe", "loop").Run() // built in on some kernels
	out, err := exec.Command("losetup", append([]string{"-f", "--show"}, args...)...).CombinedOutput()
	if err != nil {
		// busybox losetup without --show: find the device afterwards.
		if out2, err2 := exec.Command("losetup", append([]string{"-f"}, args...)...).CombinedOutput(); err2 != nil {
			c.Skipf(guest.SkipMissingPrefix+" no loop devices in the guest (losetup: %v %s; %v %s)", err, out, err2, out2)
		}
		out = []byte(loopOver(c, args[len(args)-1]))
	}
	dev := strings.TrimSpace(string(out))
	c.Cleanup(func() { exec.Command("losetup", "-d", dev).Run() })
	return dev
}

// loopOver finds the loop device whose backing file is file.
func loopOver(c *qt.C, file string) string {
	c.Helper()
	paths, _ := filepath.Glob("/sys/block/loop*/loop/backing_file")
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err == nil && strings.TrimSpace(string(b)) == file {
			return "/dev/" + filepath.Base(filepath.Dir(filepath.Dir(p)))
		}
	}
	c.Fatalf("no loop device over %s", file)
	return ""
}

// TestVMStackedCandidate: on a degraded raid1, a loop device with an
// offset over a bound member (b), and a loop device whose backing file is
// on a file system on the array itself (a, in place of an LVM volume: the
// guest has no lvm), are refused as built on the array, and neither the
// member nor the array changes.
func TestVMStackedCandidate(t *testing.T) {
	c := qt.New(t)
	disks := guest.ScratchDisks(t, 4)
	md := createArray(c, "/dev/md/stack", []string{"--level=1", "--metadata=1.2", "--raid-devices=3"}, disks[:3])
	mdDev := "/dev/" + md
	m := vmManager(t)
	ctx := context.Background()
	c.Assert(m.Fail(ctx, md, disks[2].Path), qt.IsNil)
	c.Assert(m.Remove(ctx, md, disks[2].Path), qt.IsNil)

	c.Run("loop with an offset over a member", func(c *qt.C) {
		loop := losetup(c, "-o", "1048576", disks[0].Path)
		before := hashDisk(c, disks[0].Path)
		p, err := m.PlanReplace(ctx, ReplaceRequest{Array: md, With: loop})
		c.Assert(err, qt.ErrorIs, ErrRefused)
		c.Assert(err, qt.ErrorIs, errCandidateMember, qt.Commentf("%+v", p.Candidate))
		_, err = m.Replace(ctx, ReplaceRequest{Array: md, With: loop})
		c.Assert(err, qt.ErrorIs, ErrRefused)
		c.Check(hashDisk(c, disks[0].Path), qt.Equals, before)
	})

	c.Run("loop over a file on the array", func(c *qt.C) {
		exec.Command("modprobe", "ext4").Run()
		exec.Command("modprobe", "ext2").Run()
		if out, err := exec.Command("mke2fs", "-q", "-F", mdDev).CombinedOutput(); err != nil {
			c.Skipf(guest.SkipMissingPrefix+" no mke2fs in the guest: %v %s", err, out)
		}
		mnt := c.TempDir()
		if err := unix.Mount(mdDev, mnt, "ext2", 0, ""); err != nil {
			if err := unix.Mount(mdDev, mnt, "ext4", 0, ""); err != nil {
				c.Skipf(guest.SkipMissingPrefix+" cannot mount ext2 in the guest: %v", err)
			}
		}
		c.Cleanup(func() { unix.Unmount(mnt, 0) })
		img := filepath.Join(mnt, "img")
		f, err := os.Create(img)
		c.Assert(err, qt.IsNil)
		c.Assert(f.Truncate(64<<20), qt.IsNil)
		c.Assert(f.Close(), qt.IsNil)
		loop := losetup(c, img)
		before := hashDisk(c, loop)
		p, err := m.PlanReplace(ctx, ReplaceRequest{Array: md, With: loop})
		c.Assert(err, qt.ErrorIs, ErrRefused)
		c.Assert(err, qt.ErrorIs, errCandidateMember, qt.Commentf("%+v", p.Candidate))
		_, err = m.Replace(ctx, ReplaceRequest{Array: md, With: loop})
		c.Assert(err, qt.ErrorIs, ErrRefused)
		c.Check(hashDisk(c, loop), qt.Equals, before)
	})

	c.Run("disk with an offset loop over it", func(c *qt.C) {
		spare := disks[3]
		losetup(c, "-o", "1048576", spare.Path)
		before := hashDisk(c, spare.Path)
		_, err := m.Replace(ctx, ReplaceRequest{Array: md, With: spare.Path})
		c.Assert(err, qt.ErrorIs, errCandidateBusy)
		c.Check(hashDisk(c, spare.Path), qt.Equals, before)
	})
}
