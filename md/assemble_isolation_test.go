package md

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	qt "github.com/frankban/quicktest"
	"github.com/google/uuid"
	"golang.org/x/sys/unix"

	"github.com/go-mdraid/mdraid/md/mapfile"
	"github.com/go-mdraid/mdraid/superblock"
)

// devices is the rig's nodes for knames, in that order, then every other
// member in the order of their names.
func (r *assembleRig) devices(first ...string) []string {
	var out []string
	for _, k := range first {
		out = append(out, r.nodes[k])
	}
	var rest []string
	for k := range r.nodes {
		if !slices.Contains(first, k) {
			rest = append(rest, k)
		}
	}
	slices.Sort(rest)
	for _, k := range rest {
		out = append(out, r.nodes[k])
	}
	return out
}

// byDevice is the result of each device of an Assemble call by kernel
// name: "added PATH STARTED", "skipped: REASON" or "failed: ERROR".
func byDevice(res *AssembleResult) map[string]string {
	out := map[string]string{}
	for _, r := range res.Added {
		out[r.Device] = fmt.Sprintf("added %s %s", r.Path, r.Started)
	}
	for _, s := range res.Skipped {
		out[filepath.Base(s.Device)] = "skipped: " + s.Reason.Error()
	}
	for _, f := range res.Failed {
		out[filepath.Base(f.Device)] = "failed: " + f.Err.Error()
	}
	return out
}

// running lists the arrays of the rig whose array_state says they run.
func (r *assembleRig) running(t *testing.T) []string {
	t.Helper()
	var out []string
	for n := range 512 {
		b, err := os.ReadFile(r.m.fs.Path("block", fmt.Sprintf("md%d", n), "md", "array_state"))
		if err == nil && (string(b) == "active\n" || string(b) == "read-auto\n") {
			out = append(out, fmt.Sprintf("md%d", n))
		}
	}
	return out
}

// TestAssembleGoesOnAfterAKernelRefusal: the kernel refuses the first
// device at ADD_NEW_DISK (as it refuses a superblock that claims more
// than the device holds). That device's creation is undone and reported,
// and every other array is assembled; the array the refused device
// claimed to be part of (renamed a0, like the real a0) does not keep the
// name: the real a0 gets /dev/md/a0.
func TestAssembleGoesOnAfterAKernelRefusal(t *testing.T) {
	c := qt.New(t)
	rig := newAssembleRig(t, nil)
	kernel := rig.f.hook
	bad := devOf(t, rig.m, "vdk").String()
	rig.f.hook = func(call string) error {
		if f := strings.Fields(call); f[0] == "AddDisk" && f[2] == bad {
			return unix.EINVAL
		}
		return kernel(call)
	}
	res, err := rig.m.Assemble(context.Background(), AssembleRequest{Devices: rig.devices("vdk")})
	c.Assert(err, qt.IsNil)
	got := byDevice(res)
	c.Assert(res.Failed, qt.HasLen, 1)
	c.Check(res.Failed[0].Err, qt.ErrorIs, unix.EINVAL)
	a := res.Failed[0].Result.Array
	c.Check(res.Failed[0].Result.Writes, qt.DeepEquals, []string{"new_array " + a, "SET_ARRAY_INFO 1.0", "STOP_ARRAY " + a})
	c.Check(got["vda"], qt.Equals, "added /dev/md/a0 unsafe")
	c.Check(got["vdb"], qt.Equals, "added /dev/md/a0 yes")
	c.Check(got["vdl"], qt.Equals, "added /dev/md/a0_0 unsafe")
	c.Check(res.Added, qt.HasLen, 14) // all but vdk (refused) and vdc (held)
	c.Check(rig.running(t), qt.HasLen, 6)
	link, err := os.Readlink(filepath.Join(rig.m.devRoot, "md", "a0"))
	c.Assert(err, qt.IsNil)
	c.Check(link, qt.Equals, "/dev/"+resultOf(res, "vda").Array)
}

// TestAssembleStopsAnArrayThatDidNotStart: the array the first two
// devices make (named a0, like the real a0) fails to start. It is
// stopped again, its link and map entry are removed, both its devices
// are failures, and the real a0, which was linked a0_0 while the other
// held the name, takes /dev/md/a0 back; every other array is assembled.
func TestAssembleStopsAnArrayThatDidNotStart(t *testing.T) {
	c := qt.New(t)
	rig := newAssembleRig(t, nil)
	ranOnce(t, rig.m, "vda", "vdb")
	kernel := rig.f.hook
	failed := false
	rig.f.hook = func(call string) error {
		// Only the first array made (md127) fails: a later one may be
		// given md127 once it is stopped.
		if call == "Start md127 false" && !failed {
			failed = true
			return unix.EINVAL
		}
		return kernel(call)
	}
	res, err := rig.m.Assemble(context.Background(), AssembleRequest{Devices: rig.devices("vdk", "vdl")})
	c.Assert(err, qt.IsNil)
	got := byDevice(res)
	c.Check(got["vdk"], qt.Matches, `failed: md: md127 is assembled with 2 of 2 members but did not start: invalid argument`)
	c.Check(got["vdl"], qt.Equals, got["vdk"])
	var undone []string
	for _, f := range res.Failed {
		if f.Result.Device == "vdl" {
			undone = f.Result.Writes
		}
	}
	c.Check(undone[len(undone)-3:], qt.DeepEquals, []string{"STOP_ARRAY md127", "unlink " + filepath.Join(rig.m.devRoot, "md", "a0"), "unmap md127"})
	c.Check(got["vda"], qt.Equals, "added /dev/md/a0 unsafe")
	c.Check(got["vdb"], qt.Equals, "added /dev/md/a0 yes")
	c.Check(res.Added, qt.HasLen, 13)
	c.Check(rig.running(t), qt.HasLen, 6)
	real := resultOf(res, "vda").Array
	link, err := os.Readlink(filepath.Join(rig.m.devRoot, "md", "a0"))
	c.Assert(err, qt.IsNil)
	c.Check(link, qt.Equals, "/dev/"+real)
	_, err = os.Lstat(filepath.Join(rig.m.devRoot, "md", "a0_0"))
	c.Check(errors.Is(err, os.ErrNotExist), qt.IsTrue)
	entries, err := mapfile.Map{Dir: rig.m.mapDir}.Read()
	c.Assert(err, qt.IsNil)
	e, ok := mapfile.Find(entries, real)
	c.Check(ok, qt.IsTrue)
	c.Check(e.Path, qt.Equals, "/dev/md/a0")
	// Nothing holds the failed array's devices, and no map entry is its.
	sb, err := rig.m.probe("vdk")
	c.Assert(err, qt.IsNil)
	for _, e := range entries {
		c.Check(e.UUID, qt.Not(qt.Equals), mapfile.UUIDText(sb))
	}
	for _, k := range []string{"vdk", "vdl"} {
		c.Check(rig.m.held(k), qt.IsFalse, qt.Commentf("%s was left in an array", k))
	}
}

// resultOf is the Added result of kname.
func resultOf(res *AssembleResult, kname string) *IncrementalResult {
	for _, r := range res.Added {
		if r.Device == kname {
			return r
		}
	}
	return &IncrementalResult{}
}

// TestAssembleRefusesACopiedMember: vdk is made a copy of vda's member
// (same array, device UUID and slot). No device of that array is added
// (both named), and every other array is assembled; with PickDuplicates,
// as mdadm, the first of the two is used and the copy is left out.
func TestAssembleRefusesACopiedMember(t *testing.T) {
	c := qt.New(t)
	copyOf := func(rig *assembleRig) {
		src, err := rig.m.probe("vda")
		c.Assert(err, qt.IsNil)
		rewriteImage(t, rig.m, "vdk", func(sb *superblock.Superblock, _ *superblock.Bitmap) {
			sb.SetUUID, sb.DeviceUUID, sb.DevNumber, sb.Events = src.SetUUID, src.DeviceUUID, src.DevNumber, src.Events
			sb.DevRoles = slices.Clone(src.DevRoles)
		})
		rig.m.forgetProbes()
	}
	rig := newAssembleRig(t, nil)
	copyOf(rig)
	res, err := rig.m.Assemble(context.Background(), AssembleRequest{Devices: rig.devices("vdk")})
	c.Assert(err, qt.IsNil)
	got := byDevice(res)
	for _, k := range []string{"vda", "vdb", "vdk"} {
		c.Check(got[k], qt.Matches, `skipped: .*two devices claim one place in the array: array 5e4efc8f:be332a6b:d306232d:63da314e: vdk and vda carry the same device UUID.*`, qt.Commentf(k))
	}
	c.Check(rig.running(t), qt.HasLen, 5)
	c.Check(res.Failed, qt.HasLen, 0)
	for _, call := range rig.f.calls {
		for _, k := range []string{"vda", "vdb", "vdk"} {
			c.Check(call, qt.Not(qt.Contains), devOf(t, rig.m, k).String(), qt.Commentf("a device of the conflict was touched"))
		}
	}

	lax := newAssembleRig(t, nil)
	copyOf(lax)
	res, err = lax.m.Assemble(context.Background(), AssembleRequest{Devices: lax.devices("vdk"), PickDuplicates: true})
	c.Assert(err, qt.IsNil)
	got = byDevice(res)
	c.Check(got["vda"], qt.Matches, `skipped: .*another device is current for this slot: vda: vdk and vda carry the same device UUID.*; vdk \(events \d+\) is used`)
}

// TestAssembleAnyYieldsItsName: an array of homehost "any" (trusted
// everywhere, as under mdadm) never takes the name of an array of this
// host among the devices: the real a0 gets /dev/md/a0 although the
// "any:a0" array's devices come first.
func TestAssembleAnyYieldsItsName(t *testing.T) {
	c := qt.New(t)
	rig := newAssembleRig(t, nil)
	for _, k := range []string{"vdk", "vdl"} {
		rewriteImage(t, rig.m, k, func(sb *superblock.Superblock, _ *superblock.Bitmap) {
			c.Assert(sb.SetFullName("any:a0"), qt.IsNil)
		})
	}
	res, err := rig.m.Assemble(context.Background(), AssembleRequest{Devices: rig.devices("vdk", "vdl")})
	c.Assert(err, qt.IsNil)
	got := byDevice(res)
	c.Check(got["vdl"], qt.Equals, "added /dev/md/a0_0 yes")
	c.Check(got["vdb"], qt.Equals, "added /dev/md/a0 yes")

	// Without an array of this host of that name, "any" keeps mdadm's
	// name.
	alone := newAssembleRig(t, nil)
	for _, k := range []string{"vdk", "vdl"} {
		rewriteImage(t, alone.m, k, func(sb *superblock.Superblock, _ *superblock.Bitmap) {
			c.Assert(sb.SetFullName("any:a9"), qt.IsNil)
		})
	}
	res, err = alone.m.Assemble(context.Background(), AssembleRequest{Devices: alone.devices("vdk", "vdl")})
	c.Assert(err, qt.IsNil)
	c.Check(byDevice(res)["vdl"], qt.Equals, "added /dev/md/a9 yes")
}

// TestSortMembers: the decision on slots claimed twice, in a table.
func TestSortMembers(t *testing.T) {
	// member makes a 1.2 superblock of a 3-slot array whose own role is
	// slot, with dev number dev, events ev, and roles naming each dev
	// number's slot (-1: spare).
	member := func(dev uint32, slot int, ev uint64, devUUID byte, roles ...int) *superblock.Superblock {
		sb := &superblock.Superblock{Version: superblock.Version12, RaidDisks: 3, DevNumber: dev, Events: ev}
		sb.SetUUID = uuid.UUID{1}
		sb.DeviceUUID = uuid.UUID{devUUID}
		sb.DevRoles = make([]superblock.Role, 8)
		for i := range sb.DevRoles {
			sb.DevRoles[i] = superblock.RoleSpare
		}
		for d, s := range roles {
			if s >= 0 {
				sb.DevRoles[d] = superblock.Role(s)
			}
		}
		sb.DevRoles[dev] = superblock.Role(slot)
		return sb
	}
	for _, tt := range []struct {
		name    string
		sbs     []*superblock.Superblock
		lax     bool
		leftOut []int  // devices left out
		want    string // the conflict, or ""
	}{{
		name: "no duplicates",
		sbs:  []*superblock.Superblock{member(0, 0, 10, 1, 0, 1, 2), member(1, 1, 10, 2, 0, 1, 2), member(2, 2, 10, 3, 0, 1, 2)},
	}, {
		// Slot 1's member was replaced by dev 3; the old one comes back.
		name:    "a replaced member comes back",
		sbs:     []*superblock.Superblock{member(0, 0, 20, 1, 0, -1, 2, 1), member(1, 1, 9, 2, 0, 1, 2), member(2, 2, 20, 3, 0, -1, 2, 1), member(3, 1, 20, 4, 0, -1, 2, 1)},
		leftOut: []int{1},
	}, {
		// The same dev number reused for the new member: events decide.
		name:    "a stale member with a reused dev number",
		sbs:     []*superblock.Superblock{member(0, 0, 20, 1, 0, 1, 2), member(1, 1, 20, 9, 0, 1, 2), member(2, 2, 20, 3, 0, 1, 2), member(1, 1, 9, 2, 0, 1, 2)},
		leftOut: []int{3},
	}, {
		// An impostor of slot 1 with the real member's dev number and
		// more events: the others name both.
		name: "an impostor as fresh as the real member",
		sbs:  []*superblock.Superblock{member(1, 1, 99, 7, 0, 1), member(0, 0, 20, 1, 0, 1, 2), member(1, 1, 20, 2, 0, 1, 2), member(2, 2, 20, 3, 0, 1, 2)},
		want: "slot 1 is claimed by d0 (events 99) and d2 (events 20); the other members' superblocks do not tell them apart",
	}, {
		name:    "an impostor, mdadm's way",
		sbs:     []*superblock.Superblock{member(1, 1, 99, 7, 0, 1), member(0, 0, 20, 1, 0, 1, 2), member(1, 1, 20, 2, 0, 1, 2), member(2, 2, 20, 3, 0, 1, 2)},
		lax:     true,
		leftOut: []int{2},
	}, {
		name: "no other member to judge",
		sbs:  []*superblock.Superblock{member(0, 0, 20, 1, 0), member(4, 0, 30, 5, 0)},
		want: "slot 0 is claimed by d0 (events 20) and d1 (events 30); no other member's superblock shows which is current",
	}, {
		name: "a copy",
		sbs:  []*superblock.Superblock{member(0, 0, 20, 1, 0, 1), member(1, 1, 20, 2, 0, 1), member(0, 0, 20, 1, 0, 1)},
		want: "d0 and d2 carry the same device UUID: one is a copy of the other",
	}} {
		t.Run(tt.name, func(t *testing.T) {
			c := qt.New(t)
			var names []string
			for i := range tt.sbs {
				names = append(names, fmt.Sprintf("d%d", i))
			}
			v := sortMembers(names, tt.sbs, tt.lax)
			var left []int
			for i, x := range v {
				c.Check(x.conflict, qt.Equals, tt.want)
				if x.leftOut != "" {
					left = append(left, i)
				}
			}
			if tt.want == "" {
				c.Check(left, qt.DeepEquals, tt.leftOut)
			}
		})
	}
}

// TestAssembleOnlyTheNamedArrays: Arrays narrows assembly to the arrays
// named by UUID (either form) or name, as rd.md.uuid does, and lists
// the ones no device belongs to.
func TestAssembleOnlyTheNamedArrays(t *testing.T) {
	c := qt.New(t)
	rig := newAssembleRig(t, nil)
	res, err := rig.m.Assemble(context.Background(), AssembleRequest{Devices: rig.devices(), Arrays: []string{"5fe640e0-eaa4-7937-773d-efefccd4a3ca", "a2", "nosuch"}})
	c.Assert(err, qt.IsNil)
	var got []string
	for _, r := range res.Added {
		got = append(got, r.Device+" "+r.Path)
	}
	c.Check(got, qt.DeepEquals, []string{"vde /dev/md/a2", "vdf /dev/md/a2", "vdo /dev/md/a7", "vdp /dev/md/a7"})
	c.Check(res.NotFound, qt.DeepEquals, []string{"nosuch"})
}

// TestAssembleHoldsBackASpareOfADegradedArray: vdi is made a spare of a0
// (vda, vdb). With both members, a0 starts whole and the spare joins it
// as a hot spare, as under mdadm, although a0 runs by then; with vdb
// missing, a0 would start degraded and
// the kernel would rebuild onto the spare at once, so it is refused
// (ErrSpareNotAdded) unless AddSpares.
func TestAssembleHoldsBackASpareOfADegradedArray(t *testing.T) {
	c := qt.New(t)
	spare := func(rig *assembleRig) {
		ranOnce(t, rig.m, "vda", "vdb")
		a0, err := rig.m.probe("vda")
		c.Assert(err, qt.IsNil)
		rewriteImage(t, rig.m, "vdi", func(sb *superblock.Superblock, bm *superblock.Bitmap) {
			if bm != nil {
				bm.UUID = a0.SetUUID
			}
			sb.SetUUID, sb.CTime, sb.Size, sb.Events = a0.SetUUID, a0.CTime, a0.Size, a0.Events
			c.Assert(sb.SetFullName(a0.FullName()), qt.IsNil)
			sb.DevNumber = 2
			sb.DevRoles = slices.Clone(a0.DevRoles)
			sb.DevRoles[2] = superblock.RoleSpare
		})
		rig.m.forgetProbes()
	}
	for _, tt := range []struct {
		name     string
		devs     []string
		req      AssembleRequest
		want     string
		degraded bool // vda's superblock records slot 1 as failed
	}{
		{"whole", []string{"vda", "vdb", "vdi"}, AssembleRequest{}, "added /dev/md/a0 already", false},
		// Degraded since before the shutdown: the freshest superblock
		// expects one member, but the array still starts with a slot
		// empty and the kernel rebuilds onto a spare at once.
		{"degraded since", []string{"vdi", "vda"}, AssembleRequest{}, "skipped: .*vdi is a spare of array 5e4efc8f:be332a6b:d306232d:63da314e, which would start degraded.*", true},
		{"degraded", []string{"vda", "vdi"}, AssembleRequest{}, "skipped: .*not hot-adding a spare to a running array: vdi is a spare of array 5e4efc8f:be332a6b:d306232d:63da314e, which would start degraded.*", false},
		{"degraded, mdadm's way", []string{"vda", "vdi"}, AssembleRequest{AddSpares: true}, "added /dev/md/a0 unsafe", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := qt.New(t)
			rig := newAssembleRig(t, nil)
			spare(rig)
			if tt.degraded {
				rewriteImage(t, rig.m, "vda", func(sb *superblock.Superblock, _ *superblock.Bitmap) {
					sb.DevRoles[1] = superblock.RoleFaulty
				})
				rig.m.forgetProbes()
			}
			req := tt.req
			for _, k := range tt.devs {
				req.Devices = append(req.Devices, rig.nodes[k])
			}
			res, err := rig.m.Assemble(context.Background(), req)
			c.Assert(err, qt.IsNil)
			c.Check(byDevice(res)["vdi"], qt.Matches, tt.want)
		})
	}
}

// ranOnce gives the captured members knames (made by mdadm --create
// --assume-clean and never written: events 0) the events of an array
// that has run, so that a test of a degraded start is not held back as
// an unfinished create (unfinishedCreate).
func ranOnce(t *testing.T, m *Manager, knames ...string) {
	t.Helper()
	for _, k := range knames {
		rewriteImage(t, m, k, func(sb *superblock.Superblock, _ *superblock.Bitmap) { sb.Events = 1 })
	}
	m.forgetProbes()
}
