package md

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	qt "github.com/frankban/quicktest"
	"golang.org/x/sys/unix"

	"github.com/go-mdraid/mdraid/internal/fixture"
	"github.com/go-mdraid/mdraid/md/mapfile"
	"github.com/go-mdraid/mdraid/superblock"
	"github.com/go-mdraid/mdraid/sysfs"
)

// assembleRig is the real eight-array capture with every array taken
// apart, a fake kernel that builds arrays in sysfs as md.c does (new_array
// makes md/ with array_state clear, and EEXIST for a number in use;
// ADD_NEW_DISK a member entry with no slot and a holder; a start the
// running state), block nodes for the sixteen members, vdc held by
// another device, so that its array is created by its second member, and
// a5 renamed a0, so that the second of the two to be created is linked
// as a0_0.
type assembleRig struct {
	m     *Manager
	f     *fakeAssembly
	nodes map[string]string // kname -> block node
}

func newAssembleRig(t *testing.T, hook func(call string)) *assembleRig {
	t.Helper()
	dir := t.TempDir()
	m := fixtureManager(t, fixture.Named(t, "eight-arrays"), func(c *Config) {
		c.MapDir = filepath.Join(dir, "mdadm")
		c.HomeHost = "vmtest"
		c.NoUdev = true
		c.MountInfo = filepath.Join(dir, "mountinfo") // none: nothing mounted
	})
	byDev := map[string]string{}
	r := &assembleRig{m: m, f: &fakeAssembly{}, nodes: map[string]string{}}
	for i := range 16 {
		kname := fmt.Sprintf("vd%c", 'a'+i)
		b, err := os.ReadFile(m.fs.Path("class", "block", kname, "dev"))
		if err != nil {
			t.Fatal(err)
		}
		dn, err := sysfs.ParseDevNum(strings.TrimSpace(string(b)))
		if err != nil {
			t.Fatal(err)
		}
		byDev[dn.String()] = kname
		node := filepath.Join(dir, kname)
		needMknod(t, mknodBlock(node, dn.Major, dn.Minor))
		r.nodes[kname] = node
		hs := m.fs.Path("class", "block", kname, "holders")
		ents, err := os.ReadDir(hs)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			if err := os.Remove(filepath.Join(hs, e.Name())); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i := range 8 {
		if err := os.Remove(m.fs.Path("block", fmt.Sprintf("md%d", i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("../../dm-0", m.fs.Path("class", "block", "vdc", "holders", "dm-0")); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"vdk", "vdl"} {
		rewriteImage(t, m, k, func(sb *superblock.Superblock, _ *superblock.Bitmap) {
			if err := sb.SetFullName("vmtest:a0"); err != nil {
				t.Fatal(err)
			}
		})
	}
	var mu sync.Mutex // the kernel's: one change to the tree at a time
	m.asm = r.f
	kernel := func(call string) error {
		f := strings.Fields(call)
		mu.Lock()
		defer mu.Unlock()
		switch f[0] {
		case "NewArray":
			dir := m.fs.Path("block", f[1], "md")
			if _, err := os.Stat(dir); err == nil {
				return unix.EEXIST
			}
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return err
			}
			return writeAttr(filepath.Join(dir, "array_state"), "clear\n")
		case "AddDisk":
			kname := byDev[f[2]]
			d := m.fs.Path("block", f[1], "md", "dev-"+kname)
			if err := os.MkdirAll(d, 0o755); err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(d, "slot"), []byte("none\n"), 0o644); err != nil {
				return err
			}
			// An array with members that does not run is inactive
			// (md.c array_state_show).
			st := m.fs.Path("block", f[1], "md", "array_state")
			if b, err := os.ReadFile(st); err == nil && string(b) == "clear\n" {
				if err := writeAttr(st, "inactive\n"); err != nil {
					return err
				}
			}
			return os.Symlink("../../"+f[1], m.fs.Path("class", "block", kname, "holders", f[1]))
		case "MakeLink":
			// As os.Symlink: an existing entry is left alone.
			if err := os.MkdirAll(filepath.Dir(f[1]), 0o700); err != nil {
				return err
			}
			return os.Symlink(f[2], f[1])
		case "StopArray":
			// The array and its members' holder links go.
			ents, _ := os.ReadDir(m.fs.Path("block", f[1], "md"))
			for _, e := range ents {
				if k, ok := strings.CutPrefix(e.Name(), "dev-"); ok {
					os.Remove(m.fs.Path("class", "block", k, "holders", f[1]))
				}
			}
			return os.RemoveAll(m.fs.Path("block", f[1]))
		case "RemoveLink":
			if to, err := os.Readlink(f[1]); err != nil || to != f[2] {
				return nil
			}
			if err := os.Remove(f[1]); err != nil {
				return err
			}
			return errLinkRemoved
		case "Start":
			st := "active\n"
			if f[2] == "true" {
				st = "read-auto\n"
			}
			return writeAttr(m.fs.Path("block", f[1], "md", "array_state"), st)
		}
		return nil
	}
	// hook sees each call after the kernel has done it.
	r.f.hook = func(call string) error {
		err := kernel(call)
		if hook != nil {
			hook(call)
		}
		return err
	}
	return r
}

// writeAttr replaces a rig attribute at once (a new file renamed over
// it), as a read of sysfs sees one value or the other: os.WriteFile
// truncates first, and an Assemble that reads the attribute meanwhile
// would read "" (an unreadable state, a refusal).
func writeAttr(path, v string) error {
	tmp := path + ".new"
	if err := os.WriteFile(tmp, []byte(v), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// order is the rig's members in a fixed interleaved order, vdc (held)
// before vdd.
func (r *assembleRig) order(seed uint64) []string {
	var ks []string
	for k := range r.nodes {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	rand.New(rand.NewPCG(seed, 1)).Shuffle(len(ks), func(i, j int) { ks[i], ks[j] = ks[j], ks[i] })
	c, d := slices.Index(ks, "vdc"), slices.Index(ks, "vdd")
	if c > d {
		ks[c], ks[d] = ks[d], ks[c]
	}
	var out []string
	for _, k := range ks {
		out = append(out, r.nodes[k])
	}
	return out
}

// summary is what a device's Incremental left, without the uevent, with
// the rig's device root as /dev.
func (rig *assembleRig) summary(r *IncrementalResult) string {
	var w []string
	for _, x := range r.Writes {
		if x != "uevent change" {
			w = append(w, strings.ReplaceAll(x, rig.m.devRoot, "/dev"))
		}
	}
	return fmt.Sprintf("%s -> %s %s started=%s %d/%d: %s", r.Device, r.Array, r.Path, r.Started, r.Present, r.Expected, strings.Join(w, ", "))
}

// TestAssembleInParallelLikeOneAfterTheOther: Assemble builds different
// arrays at the same time (the first ADD_NEW_DISK waits until another
// array's comes), and leaves what Incremental over each device in turn
// leaves: the same arrays, numbers, links, writes and refusals, in
// several interleaved orders.
func TestAssembleInParallelLikeOneAfterTheOther(t *testing.T) {
	for seed := range uint64(4) {
		t.Run(fmt.Sprint("order", seed), func(t *testing.T) {
			c := qt.New(t)
			// One after the other, with Incremental.
			serial := newAssembleRig(t, nil)
			var want, wantSkipped []string
			for _, d := range serial.order(seed) {
				r, err := serial.m.Incremental(context.Background(), IncrementalRequest{Device: d})
				if err != nil {
					c.Assert(err, qt.ErrorIs, ErrRefused)
					wantSkipped = append(wantSkipped, filepath.Base(d)+": "+err.Error())
					continue
				}
				want = append(want, serial.summary(r))
			}
			c.Assert(want, qt.HasLen, 15)
			c.Assert(strings.Join(want, "\n"), qt.Contains, "/dev/md/a0_0")

			var mu sync.Mutex
			first, other := "", make(chan struct{})
			rnd := rand.New(rand.NewPCG(seed, 2))
			// The two arrays named a0 are not the one held: a creation of
			// one name waits for an earlier creation of that name to add
			// its first member (which it would give its name back if it
			// could not).
			sameName := map[string]bool{}
			par := newAssembleRig(t, func(call string) {
				mu.Lock()
				n := rnd.IntN(4)
				f := strings.Fields(call)
				wait := false
				if f[0] == "AddDisk" && !sameName[f[2]] {
					switch {
					case first == "":
						first, wait = f[1], true
					case f[1] != first && other != nil:
						close(other)
						other = nil
					}
				}
				ch := other
				mu.Unlock()
				for range n {
					runtime.Gosched()
				}
				if wait && ch != nil {
					select {
					case <-ch:
					case <-time.After(20 * time.Second):
						t.Errorf("no other array's ADD_NEW_DISK while %s's first waited: the arrays were not assembled at the same time", first)
					}
				}
			})
			for _, k := range []string{"vda", "vdb", "vdk", "vdl"} {
				sameName[devOf(t, par.m, k).String()] = true
			}
			res, err := par.m.Assemble(context.Background(), AssembleRequest{Devices: par.order(seed)})
			c.Assert(err, qt.IsNil)
			var got, gotSkipped []string
			for _, r := range res.Added {
				got = append(got, par.summary(r))
			}
			for _, s := range res.Skipped {
				gotSkipped = append(gotSkipped, filepath.Base(s.Device)+": "+s.Reason.Error())
			}
			c.Check(got, qt.DeepEquals, want)
			c.Check(gotSkipped, qt.DeepEquals, wantSkipped)
			uevents := 0
			for _, call := range par.f.calls {
				if strings.HasPrefix(call, "Uevent ") {
					uevents++
				}
			}
			c.Check(uevents, qt.Equals, 8)
		})
	}
}

// TestAssembleReportsEveryFailedArray: when every ADD_NEW_DISK fails,
// every array is still tried (one failure stops no other array), each
// device is in Failed with its writes (created, then stopped), nothing
// is left running, and the call itself does not fail.
func TestAssembleReportsEveryFailedArray(t *testing.T) {
	c := qt.New(t)
	rig := newAssembleRig(t, nil)
	kernel := rig.f.hook
	rig.f.hook = func(call string) error {
		if strings.HasPrefix(call, "AddDisk ") {
			return unix.EIO
		}
		return kernel(call)
	}
	res, err := rig.m.Assemble(context.Background(), AssembleRequest{Devices: rig.order(0)})
	c.Assert(err, qt.IsNil)
	c.Check(res.Added, qt.HasLen, 0)
	created := map[string]int{}
	for _, call := range rig.f.calls {
		if a, ok := strings.CutPrefix(call, "NewArray "); ok {
			created[a]++
		}
	}
	stopped := map[string]int{}
	for _, f := range res.Failed {
		c.Check(f.Err, qt.ErrorIs, unix.EIO)
		r := f.Result
		c.Check(r.Writes, qt.DeepEquals, []string{"new_array " + r.Array, "SET_ARRAY_INFO " + strings.Fields(r.Writes[1])[1], "STOP_ARRAY " + r.Array})
		stopped[r.Array]++
	}
	c.Check(stopped, qt.DeepEquals, created)
	// 15 devices that are not held (vdc is), every one tried.
	c.Check(res.Failed, qt.HasLen, 15)
}

// TestCreationWaitsForEarlierDevices: a creation waits until every device
// before its own is decided on, a device of an array that exists is
// decided on with it, and a stop ends the wait with errStopped.
func TestCreationWaitsForEarlierDevices(t *testing.T) {
	c := qt.New(t)
	o := newCreationOrder(4, 0)
	o.group = []int{0, 1, 0, 1}
	done := make(chan error, 1)
	go func() { done <- (&turn{o, 3}).wait() }()
	// Device 0 creates its array: 0 and 2 are decided on; 1 is not yet.
	(&turn{o, 0}).created("a0")
	c.Check(o.low, qt.Equals, 1)
	select {
	case err := <-done:
		c.Fatalf("device 3 did not wait for device 1: %v", err)
	default:
	}
	(&turn{o, 0}).confirm("a0") // its first member was added
	c.Check((&turn{o, 3}).linkTaken("a0"), qt.IsTrue)
	c.Check((&turn{o, 3}).linkTaken("a1"), qt.IsFalse)
	o.resolve(1)
	c.Check(<-done, qt.IsNil)
	c.Check(o.low, qt.Equals, 3)

	o = newCreationOrder(2, 0)
	go func() { done <- (&turn{o, 1}).wait() }()
	o.stop()
	c.Check(<-done, qt.Equals, errStopped)
	var none *turn
	c.Check(none.wait(), qt.IsNil)
}

// TestGroupDevices: devices are grouped by UUID and by disk, each group
// in order and the groups by their first device; a disk and its
// partitions share a group even when their UUIDs differ, and a group
// joined through a later device keeps its devices in order.
func TestGroupDevices(t *testing.T) {
	c := qt.New(t)
	u := func(b byte) *superblock.Superblock {
		sb := &superblock.Superblock{}
		sb.SetUUID[0] = b
		return sb
	}
	offers := []*offered{
		{kname: "vda", disk: "vda", sb: u(1)},
		{kname: "vdb", disk: "vdb", sb: u(2)},
		nil, // no superblock
		{kname: "vdc1", disk: "vdc", sb: u(3)},
		{kname: "vdb2", disk: "vdb", sb: u(4)}, // vdb's partition: vdb's group
		{kname: "vdd", disk: "vdd", sb: u(3)},  // vdc1's array
		{kname: "vde", disk: "vde", sb: u(1)},  // vda's array
		{kname: "vdd1", disk: "vdd", sb: u(5)}, // vdd's partition
		{kname: "vdf", disk: "vdf", sb: u(4)},  // vdb2's array
	}
	array := make([]int, len(offers))
	c.Check(groupDevices(offers, array), qt.DeepEquals, [][]int{{0, 6}, {1, 4, 8}, {3, 5, 7}})
	c.Check(array, qt.DeepEquals, []int{0, 1, 0, 3, 4, 3, 0, 7, 4})
}

// assembleBoth runs Incremental over devs (knames) one after the other on
// one rig and Assemble over them on another, each rig first made ready by
// prep, and returns both summaries. hook is the Assemble rig's.
func assembleBoth(t *testing.T, knames []string, prep func(r *assembleRig), hook func(call string)) (want, got []string) {
	t.Helper()
	serial := newAssembleRig(t, nil)
	prep(serial)
	for _, k := range knames {
		r, err := serial.m.Incremental(context.Background(), IncrementalRequest{Device: serial.nodes[k]})
		if err == nil {
			want = append(want, serial.summary(r))
		}
	}
	par := newAssembleRig(t, hook)
	prep(par)
	var devs []string
	for _, k := range knames {
		devs = append(devs, par.nodes[k])
	}
	res, err := par.m.Assemble(context.Background(), AssembleRequest{Devices: devs})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range res.Failed {
		t.Errorf("%s failed: %v", f.Device, f.Err)
	}

	for _, r := range res.Added {
		got = append(got, par.summary(r))
	}
	return want, got
}

// TestAssembleStaleLinkIsNotTaken: a leftover /dev/md/a0 that is not the
// new array's makes the first a0 go without a link; the second a0 then
// gets a0 too (and goes without), not a0_0, as one device after the other.
func TestAssembleStaleLinkIsNotTaken(t *testing.T) {
	c := qt.New(t)
	want, got := assembleBoth(t, []string{"vda", "vdk", "vdb", "vdl"}, func(r *assembleRig) {
		lp := filepath.Join(r.m.devRoot, "md", "a0")
		c.Assert(os.MkdirAll(filepath.Dir(lp), 0o700), qt.IsNil)
		c.Assert(os.Symlink("/dev/md99", lp), qt.IsNil)
	}, nil)
	c.Assert(strings.Join(want, "\n"), qt.Not(qt.Contains), "a0_0")
	c.Check(got, qt.DeepEquals, want)
}

// TestAssembleStaleMapEntryIsReplaced: a stale map entry says md127 is
// a0's array at /dev/md/a0. The first creation takes md127 (a7), and its
// own entry replaces the stale one. Here a0's creation chooses its link
// while md127 has its member but not yet its map entry (md3's creation
// waits for md127's ADD_NEW_DISK, md127's link for a0's): the stale entry
// must not make a0 taken, nor make a0's devices join md127.
func TestAssembleStaleMapEntryIsReplaced(t *testing.T) {
	c := qt.New(t)
	var mu sync.Mutex
	events := map[string]chan struct{}{"AddDisk md127": make(chan struct{}), "MakeLink a0": make(chan struct{})}
	seen := func(e string) {
		mu.Lock()
		defer mu.Unlock()
		if ch := events[e]; ch != nil {
			close(ch)
			events[e] = nil
		}
	}
	waitFor := func(ch chan struct{}) {
		select {
		case <-ch:
		case <-time.After(5 * time.Second):
			// one array after the other never gets here first
		}
	}
	after := map[string]chan struct{}{"NewArray md3": events["AddDisk md127"], "MakeLink a7": events["MakeLink a0"]}
	want, got := assembleBoth(t, []string{"vdo", "vdh", "vdl", "vdp", "vdg", "vdk"}, func(r *assembleRig) {
		l, err := mapfile.Map{Dir: r.m.mapDir}.Lock()
		c.Assert(err, qt.IsNil)
		sb, err := r.m.probe("vdl")
		c.Assert(err, qt.IsNil)
		c.Assert(l.Update(mapfile.Entry{Dev: "md127", Metadata: "1.0", UUID: mapfile.UUIDText(sb), Path: "/dev/md/a0"}), qt.IsNil)
		c.Assert(l.Unlock(), qt.IsNil)
	}, func(call string) {
		f := strings.Fields(call)
		e := f[0] + " " + f[1]
		if f[0] == "MakeLink" {
			e = "MakeLink " + filepath.Base(f[1])
		}
		if ch := after[e]; ch != nil {
			waitFor(ch)
		}
		seen(e)
	})
	c.Assert(strings.Join(want, "\n"), qt.Contains, "/dev/md/a0 ")
	c.Check(got, qt.DeepEquals, want)
}

// TestLateDevice: md devices, their partitions and /dev/md/NAME links are
// taken on their own; other block devices are not (a device taken on its
// own is only slower).
func TestLateDevice(t *testing.T) {
	c := qt.New(t)
	for _, p := range []string{"/dev/md127", "/dev/md127p1", "/dev/md/boot", "/dev/md_d0"} {
		c.Check(lateDevice(p), qt.IsTrue, qt.Commentf(p))
	}
	for _, p := range []string{"/dev/vda", "/dev/sdb1", "/dev/nvme0n1p2", "/dev/dm-0", "/dev/mapper/data"} {
		c.Check(lateDevice(p), qt.IsFalse, qt.Commentf(p))
	}
}
