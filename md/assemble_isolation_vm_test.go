//go:build vmtest

package md

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	qt "github.com/frankban/quicktest"

	"github.com/go-mdraid/mdraid/internal/vmtest/guest"
	"github.com/go-mdraid/mdraid/ioctl"
	"github.com/go-mdraid/mdraid/superblock"
)

// editSuperblock rewrites the md superblock of a disk (with a valid
// checksum) and flushes it, as a hostile or broken disk would carry it.
func editSuperblock(c *qt.C, path string, change func(sb *superblock.Superblock)) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	c.Assert(err, qt.IsNil)
	defer f.Close()
	fi, err := f.Seek(0, io.SeekEnd)
	c.Assert(err, qt.IsNil)
	pr, err := superblock.Probe(f, fi)
	c.Assert(err, qt.IsNil)
	c.Assert(pr.Best(), qt.IsNotNil)
	sb := pr.Best().Superblock
	change(sb)
	b, err := sb.MarshalBinary()
	c.Assert(err, qt.IsNil)
	_, err = f.WriteAt(b, sb.DiskOffset)
	c.Assert(err, qt.IsNil)
	c.Assert(f.Sync(), qt.IsNil)
	c.Assert(guest.FlushBuffers(path), qt.IsNil)
}

// stopForAssembly stops every array and forgets what assembly left (the
// map file, /dev/md links): the machine as at boot.
func stopForAssembly(c *qt.C) {
	c.Assert(guest.StopAll(), qt.IsNil)
	os.Remove("/run/mdadm/map")
	links, _ := filepath.Glob("/dev/md/*")
	for _, l := range links {
		os.Remove(l)
	}
}

// arrayOfUUID is the kernel name of the running array with uuid ("" for
// none), and whether it runs.
func arrayOfUUID(c *qt.C, uuid string) (string, string) {
	arrays, err := guest.Arrays()
	c.Assert(err, qt.IsNil)
	for _, a := range arrays {
		if strings.TrimSpace(readOr(guest.SysPath(a, "uuid"))) == uuid {
			return a, strings.TrimSpace(readOr(guest.SysPath(a, "array_state")))
		}
	}
	return "", ""
}

func readOr(p string) string {
	b, _ := os.ReadFile(p)
	return string(b)
}

// halfBuilt lists the md devices left inactive with members attached.
func halfBuilt(c *qt.C) []string {
	arrays, err := guest.Arrays()
	c.Assert(err, qt.IsNil)
	var out []string
	for _, a := range arrays {
		if strings.TrimSpace(readOr(guest.SysPath(a, "array_state"))) == "inactive" {
			ms, _ := filepath.Glob(guest.SysPath(a, "dev-*"))
			if len(ms) > 0 {
				out = append(out, a)
			}
		}
	}
	return out
}

// uuidOf is an array's UUID as sysfs writes it.
func uuidOf(c *qt.C, dev string) string {
	return strings.TrimSpace(guest.ReadAttr(c, dev, "uuid"))
}

// linkTarget is /dev/md/NAME's array ("" for no link).
func linkTarget(name string) string {
	to, err := os.Readlink("/dev/md/" + name)
	if err != nil {
		return ""
	}
	return filepath.Base(to)
}

// TestVMAssembleOneDiskCannotStopIt is issue 30's proof on the real
// kernel: healthy arrays (a 1.0 boot mirror, a raid5, another mirror)
// mixed with one bad device, in several device orders, assembled by
// Manager.Assemble as mdctl assemble --scan does. Every healthy array
// starts with its own name, the bad one is reported, and nothing is left
// half-built.
func TestVMAssembleOneDiskCannotStopIt(t *testing.T) {
	c := qt.New(t)
	disks := guest.ScratchDisks(t, 8)
	ctx := context.Background()
	boot := createArray(c, "/dev/md/boot", []string{"--level=1", "--metadata=1.0", "--name=boot", "--raid-devices=2"}, disks[0:2])
	r5 := createArray(c, "/dev/md/r5", []string{"--level=5", "--name=r5", "--raid-devices=3"}, disks[2:5])
	data := createArray(c, "/dev/md/data", []string{"--level=1", "--name=data", "--raid-devices=2"}, disks[5:7])
	want := map[string]string{"boot": uuidOf(c, boot), "r5": uuidOf(c, r5), "data": uuidOf(c, data)}
	// disks[7]: a member of another mirror named boot whose superblock
	// claims more data than the disk holds: the kernel refuses it at
	// ADD_NEW_DISK (EINVAL).
	guest.Mdadm(c, "--create", "/dev/md/bad", "--run", "--level=1", "--metadata=1.0", "--name=boot", "--homehost=vmtest", "--raid-devices=2", "--force", disks[7].Path, "missing")
	c.Assert(guest.StopAll(), qt.IsNil)
	editSuperblock(c, disks[7].Path, func(sb *superblock.Superblock) { sb.DataSize *= 4 })
	m := vmManager(t)
	names := func(ds []guest.Disk) []string {
		var out []string
		for _, d := range ds {
			out = append(out, d.Path)
		}
		return out
	}
	check := func(c *qt.C, res *AssembleResult, err error, bad string, failed bool) {
		c.Assert(err, qt.IsNil)
		for name, u := range want {
			a, st := arrayOfUUID(c, u)
			c.Check(st, qt.Matches, `clean|active|read-auto`, qt.Commentf("%s (%s) is %q", name, a, st))
			c.Check(linkTarget(name), qt.Equals, a, qt.Commentf("/dev/md/%s", name))
		}
		c.Check(halfBuilt(c), qt.HasLen, 0)
		var got []string
		for _, f := range res.Failed {
			got = append(got, f.Device)
		}
		for _, s := range res.Skipped {
			if errors.Is(s.Reason, ErrConflict) {
				got = append(got, s.Device)
			}
		}
		if failed {
			c.Check(got, qt.DeepEquals, []string{bad})
		}
		_, err = os.Lstat("/dev/md/boot_0")
		c.Check(errors.Is(err, os.ErrNotExist), qt.IsTrue, qt.Commentf("boot_0 left behind"))
	}
	for _, order := range [][]guest.Disk{
		append([]guest.Disk{disks[7]}, disks[:7]...),                                              // first
		append(append(slices.Clone(disks[2:5]), disks[7]), append(disks[:2:2], disks[5:7]...)...), // between arrays
	} {
		t.Run("refused by the kernel at "+filepath.Base(order[0].Path), func(t *testing.T) {
			c := qt.New(t)
			stopForAssembly(c)
			res, err := m.Assemble(ctx, AssembleRequest{Devices: names(order)})
			check(c, res, err, disks[7].Path, true)
			if len(res.Failed) == 1 {
				c.Logf("the kernel refused it: %v", res.Failed[0].Err)
			}
		})
	}

	// The bad disk becomes a raid0 named boot whose start fails (chunk
	// 0), made from disks[7] and a copy of nothing: two members of a
	// new raid0.
	t.Run("an array whose start fails", func(t *testing.T) {
		c := qt.New(t)
		stopForAssembly(c)
		guest.Mdadm(c, "--zero-superblock", disks[7].Path)
		// A raid0 of one member (mdadm allows it with --force), named
		// boot, its chunk then made 0: RUN_ARRAY fails (raid0 needs a
		// chunk size), ADD_NEW_DISK does not.
		guest.Mdadm(c, "--create", "/dev/md/zero", "--run", "--level=0", "--metadata=1.2", "--name=boot", "--homehost=vmtest", "--raid-devices=1", "--force", disks[7].Path)
		c.Assert(guest.StopAll(), qt.IsNil)
		editSuperblock(c, disks[7].Path, func(sb *superblock.Superblock) { sb.ChunkSize = 0 })
		for _, order := range [][]guest.Disk{
			append([]guest.Disk{disks[7]}, disks[:7]...),
			append(append(slices.Clone(disks[2:5]), disks[7]), append(disks[:2:2], disks[5:7]...)...),
		} {
			stopForAssembly(c)
			res, err := m.Assemble(ctx, AssembleRequest{Devices: names(order)})
			check(c, res, err, disks[7].Path, true)
			if len(res.Failed) == 1 {
				c.Check(res.Failed[0].Err, qt.ErrorMatches, `.*did not start.*`)
			}
		}
	})

	// A copy of the boot mirror's slot-0 member: the boot mirror is a
	// conflict (nothing of it assembled, both named); the others start.
	t.Run("a copy of a member", func(t *testing.T) {
		c := qt.New(t)
		stopForAssembly(c)
		src, err := os.ReadFile(disks[0].Path)
		c.Assert(err, qt.IsNil)
		c.Assert(os.WriteFile(disks[7].Path, src, 0), qt.IsNil)
		c.Assert(guest.FlushBuffers(disks[7].Path), qt.IsNil)
		for _, order := range [][]guest.Disk{
			append(slices.Clone(disks[:7]), disks[7]),
			append(append(slices.Clone(disks[2:5]), disks[7]), append(disks[:2:2], disks[5:7]...)...),
		} {
			stopForAssembly(c)
			res, err := m.Assemble(ctx, AssembleRequest{Devices: names(order)})
			c.Assert(err, qt.IsNil)
			var conflict []string
			for _, s := range res.Skipped {
				if errors.Is(s.Reason, ErrConflict) {
					conflict = append(conflict, s.Device)
				}
			}
			c.Check(conflict, qt.HasLen, 3)
			a, _ := arrayOfUUID(c, want["boot"])
			c.Check(a, qt.Equals, "", qt.Commentf("the boot mirror was assembled from a conflict"))
			c.Check(halfBuilt(c), qt.HasLen, 0)
		}
		stopForAssembly(c)
		res, err := m.Assemble(ctx, AssembleRequest{Devices: names(append([]guest.Disk{disks[7]}, disks[:7]...))})
		c.Assert(err, qt.IsNil)
		var conflict []string
		for _, s := range res.Skipped {
			if errors.Is(s.Reason, ErrConflict) {
				conflict = append(conflict, s.Device)
			}
		}
		sort.Strings(conflict)
		c.Check(conflict, qt.DeepEquals, []string{disks[0].Path, disks[1].Path, disks[7].Path})
		a, _ := arrayOfUUID(c, want["boot"])
		c.Check(a, qt.Equals, "", qt.Commentf("the boot mirror was assembled from a conflict"))
		for _, name := range []string{"r5", "data"} {
			a, st := arrayOfUUID(c, want[name])
			c.Check(st, qt.Matches, `clean|active|read-auto`, qt.Commentf("%s (%s) is %q", name, a, st))
		}
		c.Check(halfBuilt(c), qt.HasLen, 0)

		stopForAssembly(c)
		_, err = m.Assemble(ctx, AssembleRequest{Devices: names(append([]guest.Disk{disks[7]}, disks[:7]...)), PickDuplicates: true})
		c.Assert(err, qt.IsNil)
		a, st := arrayOfUUID(c, want["boot"])
		c.Check(st, qt.Matches, `clean|active|read-auto`, qt.Commentf("boot (%s) is %q with PickDuplicates", a, st))
	})
}

// TestVMAssembleRefusesAHostileSpare: a disk whose superblock makes it a
// spare of a degraded running mirror is not hot-added by Incremental nor
// Assemble, nor attached at boot with the mirror's one member in either
// order (the disk stays byte-identical, no recovery starts); with
// AddSpares the kernel takes it and rebuilds onto it at once, which is
// why it is refused.
func TestVMAssembleRefusesAHostileSpare(t *testing.T) {
	c := qt.New(t)
	all := guest.ScratchDisks(t, 5)
	disks := all[:3]
	ctx := context.Background()
	other := createArray(c, "/dev/md/other", []string{"--level=1", "--name=other", "--raid-devices=2"}, all[3:5])
	otherUUID := uuidOf(c, other)
	createArray(c, "/dev/md/sp", []string{"--level=1", "--name=sp", "--raid-devices=2", "--spare-devices=1"}, disks)
	c.Assert(guest.StopAll(), qt.IsNil)
	stopForAssembly(c)
	m := vmManager(t)
	res, err := m.Assemble(ctx, AssembleRequest{Devices: []string{disks[0].Path, disks[1].Path}})
	c.Assert(err, qt.IsNil)
	c.Assert(res.Added, qt.HasLen, 2)
	md := res.Added[0].Array
	guest.Mdadm(c, "/dev/"+md, "--fail", disks[1].Path)
	guest.Mdadm(c, "/dev/"+md, "--remove", disks[1].Path)
	before := hashDisk(c, disks[2].Path)

	_, err = m.Incremental(ctx, IncrementalRequest{Device: disks[2].Path, Run: true})
	c.Check(err, qt.ErrorIs, ErrSpareNotAdded)
	res, err = m.Assemble(ctx, AssembleRequest{Devices: []string{disks[2].Path}, Run: true})
	c.Assert(err, qt.IsNil)
	c.Assert(res.Skipped, qt.HasLen, 1)
	c.Check(res.Skipped[0].Reason, qt.ErrorIs, ErrSpareNotAdded)
	c.Check(guest.ReadAttr(c, md, "degraded"), qt.Equals, "1")
	// Not a member: the kernel has nothing to rebuild onto. (sync_action
	// may read "recover" for a moment after a fail with nothing to
	// recover onto: docs/kernels.md §9.)
	c.Check(isMember(c, md, disks[2].Name), qt.IsFalse, qt.Commentf("the refused spare is in %s", md))
	c.Check(hashDisk(c, disks[2].Path) == before, qt.IsTrue, qt.Commentf("the refused spare was written"))

	// At boot, with the mirror degraded since: the spare is offered with
	// its one member, before and after it, with Run (the last resort).
	for _, order := range [][]string{{disks[2].Path, all[3].Path, disks[0].Path, all[4].Path}, {disks[0].Path, all[4].Path, disks[2].Path, all[3].Path}} {
		stopForAssembly(c)
		res, err = m.Assemble(ctx, AssembleRequest{Devices: order, Run: true})
		c.Assert(err, qt.IsNil)
		c.Assert(res.Skipped, qt.HasLen, 1, qt.Commentf("%+v", res))
		c.Check(res.Skipped[0].Reason, qt.ErrorMatches, `.*would start degraded.*`)
		c.Assert(res.Added, qt.HasLen, 3)
		_, st := arrayOfUUID(c, otherUUID)
		c.Check(st, qt.Matches, `clean|active|read-auto`, qt.Commentf("the other mirror is %q", st))
		md = resultOf(res, disks[0].Name).Array
		c.Check(guest.ReadAttr(c, md, "degraded"), qt.Equals, "1")
		c.Check(isMember(c, md, disks[2].Name), qt.IsFalse, qt.Commentf("the refused spare is in %s", md))
		c.Check(hashDisk(c, disks[2].Path) == before, qt.IsTrue, qt.Commentf("the refused spare was written"))
	}

	_, err = m.Incremental(ctx, IncrementalRequest{Device: disks[2].Path, AddSpares: true})
	c.Assert(err, qt.IsNil)
	guest.WaitSync(c, md)
	c.Check(guest.ReadAttr(c, md, "degraded"), qt.Equals, "0", qt.Commentf("the kernel did not rebuild onto the spare mdadm would add"))
}

// TestVMRunDecisionIsTheKernels compares, for every non-empty subset of
// the members of small raid10 (near, far, offset; even and odd disk
// counts), raid5 and raid6 arrays, the decision of Run (its dry run) with
// the kernel's own answer to RUN_ARRAY on the same members.
func TestVMRunDecisionIsTheKernels(t *testing.T) {
	ctx := context.Background()
	for _, tt := range []struct {
		name string
		args []string
		n    int
	}{
		{"raid10-n2-4", []string{"--level=10", "--layout=n2"}, 4},
		{"raid10-n2-3", []string{"--level=10", "--layout=n2"}, 3},
		{"raid10-f2-4", []string{"--level=10", "--layout=f2"}, 4},
		{"raid10-o2-3", []string{"--level=10", "--layout=o2"}, 3},
		{"raid5-3", []string{"--level=5"}, 3},
		{"raid6-4", []string{"--level=6"}, 4},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := qt.New(t)
			disks := guest.ScratchDisks(t, tt.n)
			createArray(c, "/dev/md/run", append(tt.args, fmt.Sprintf("--raid-devices=%d", tt.n)), disks)
			m := vmManager(t)
			var differ []string
			for set := 1; set < 1<<tt.n; set++ {
				stopForAssembly(c)
				var members []string
				for i, d := range disks {
					if set&(1<<i) != 0 {
						members = append(members, d.Path)
					}
				}
				res, err := m.Assemble(ctx, AssembleRequest{Devices: members})
				c.Assert(err, qt.IsNil)
				c.Assert(res.Added, qt.Not(qt.HasLen), 0)
				md := res.Added[0].Array
				if res.Added[len(res.Added)-1].Started == StartYes {
					continue // every member: started on its own
				}
				// The kernel's capability is compared: the arrays were
				// never written, which Run otherwise holds back as an
				// unfinished create (TestVMCreateKilled).
				ours := m.Run(ctx, md, &Change{DryRun: true, Unfinished: true}) == nil
				dev, err := ioctl.Open("/dev/" + md)
				c.Assert(err, qt.IsNil)
				kernel := dev.RunArray() == nil
				dev.Close()
				if ours != kernel {
					differ = append(differ, fmt.Sprintf("%v: mdctl %v, kernel %v", members, ours, kernel))
				}
			}
			c.Check(differ, qt.HasLen, 0, qt.Commentf("%s", strings.Join(differ, "\n")))
		})
	}
}

// TestVMStopOrderStacked: a mirror built on another mirror and a disk is
// stopped before it (StopOrder), so stopping every array in that order
// stops all of them; StopOrder on the real kernel names both.
func TestVMStopOrderStacked(t *testing.T) {
	c := qt.New(t)
	disks := guest.ScratchDisks(t, 3)
	ctx := context.Background()
	// md5 below md9: by name md5 would come first.
	lower := createArray(c, "/dev/md5", []string{"--level=1", "--metadata=1.2", "--raid-devices=2"}, disks[:2])
	// The upper mirror: the lower array and a disk (1.0 keeps the data
	// offset at 0, so sizes need not match exactly).
	guest.Mdadm(c, "--create", "/dev/md9", "--run", "--assume-clean", "--level=1", "--metadata=1.0", "--raid-devices=2", "--force", "--size=16M", "/dev/"+lower, disks[2].Path)
	upper := guest.ArrayName(c, "/dev/md9")
	m := vmManager(t)
	order, err := m.StopOrder(ctx)
	c.Assert(err, qt.IsNil)
	c.Assert(order, qt.DeepEquals, []string{upper, lower})
	for _, a := range order {
		c.Assert(m.Stop(ctx, a), qt.IsNil)
	}
	order, err = m.StopOrder(ctx)
	c.Assert(err, qt.IsNil)
	c.Check(order, qt.HasLen, 0)
}

// isMember reports whether the kernel lists kname as a member of md.
func isMember(c *qt.C, md, kname string) bool {
	for _, m := range guest.Members(c, md) {
		if m.Name == kname {
			return true
		}
	}
	return false
}
