//go:build vmtest

package md

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	qt "github.com/frankban/quicktest"
	"golang.org/x/sys/unix"

	"github.com/go-mdraid/mdraid/internal/vmtest/guest"
)

// TestVMReplaceCandidateNotInSysfs (issue 10 item 5): the candidate is a
// block device the sysfs root does not know, as in a container's partial
// /sys. /sys/dev/block is covered with a tmpfs that links every block
// device but the candidate, which carries an ext4 superblock. The replace
// must refuse (a fact it cannot establish), run the blank scan anyway,
// and leave the disk byte-identical.
func TestVMReplaceCandidateNotInSysfs(t *testing.T) {
	c := qt.New(t)
	disks := guest.ScratchDisks(t, 3)
	ctx := context.Background()
	md := createArray(c, "/dev/md/nosys", []string{"--level=1", "--metadata=1.2", "--raid-devices=2"}, disks[:2])
	defer guest.Mdadm(c, "--stop", "/dev/"+md)
	m := vmManager(t)
	c.Assert(m.Fail(ctx, md, disks[1].Name), qt.IsNil)
	c.Assert(m.Remove(ctx, md, disks[1].Name), qt.IsNil)

	cand := disks[2]
	f, err := os.OpenFile(cand.Path, os.O_WRONLY, 0)
	c.Assert(err, qt.IsNil)
	sb := make([]byte, 1024)
	sb[56], sb[57] = 0x53, 0xef // ext4 magic at byte 1080 of the disk
	_, err = f.WriteAt(sb, 1024)
	c.Assert(err, qt.IsNil)
	c.Assert(f.Sync(), qt.IsNil)
	c.Assert(f.Close(), qt.IsNil)
	before := hashDisk(c, cand.Path)

	// Every device link but the candidate's, on a tmpfs over the real
	// directory; the links' relative targets still resolve into /sys.
	const dir = "/sys/dev/block"
	ents, err := os.ReadDir(dir)
	c.Assert(err, qt.IsNil)
	links := map[string]string{}
	hidden := ""
	for _, e := range ents {
		target, err := os.Readlink(filepath.Join(dir, e.Name()))
		c.Assert(err, qt.IsNil)
		if filepath.Base(target) == cand.Name {
			hidden = e.Name()
			continue
		}
		links[e.Name()] = target
	}
	c.Assert(hidden, qt.Not(qt.Equals), "", qt.Commentf("no /sys/dev/block link for %s", cand.Name))
	c.Assert(unix.Mount("tmpfs", dir, "tmpfs", 0, "mode=0755"), qt.IsNil)
	mounted := true
	defer func() {
		if mounted {
			unix.Unmount(dir, 0)
		}
	}()
	for name, target := range links {
		c.Assert(os.Symlink(target, filepath.Join(dir, name)), qt.IsNil)
	}

	_, err = m.Replace(ctx, ReplaceRequest{Array: md, With: cand.Path})
	t.Logf("replace with a disk sysfs does not know: %v", err)
	c.Check(err, qt.ErrorIs, ErrRefused)
	c.Check(err, qt.ErrorIs, errUnknownFact)
	// The blank scan ran all the same, and found the file system.
	p, err := m.PlanReplace(ctx, ReplaceRequest{Array: md, With: cand.Path})
	c.Check(err, qt.ErrorIs, ErrRefused)
	c.Assert(p, qt.Not(qt.IsNil))
	var blank *PlanCheck
	for i := range p.Checks {
		t.Logf("[%s] %s: %s", p.Checks[i].Status, p.Checks[i].Name, p.Checks[i].Reason)
		if p.Checks[i].Name == CheckBlankDevice {
			blank = &p.Checks[i]
		}
	}
	c.Assert(blank, qt.Not(qt.IsNil))
	c.Check(blank.Status, qt.Equals, StatusFail)
	c.Check(blank.Reason, qt.Matches, `ext2/3/4 superblock at byte 1080.*`)

	c.Assert(unix.Unmount(dir, 0), qt.IsNil)
	mounted = false
	c.Check(hashDisk(c, cand.Path), qt.Equals, before, qt.Commentf("%s changed", cand.Path))
	c.Check(guest.ReadAttr(c, md, "raid_disks"), qt.Equals, "2")
}
