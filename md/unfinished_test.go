package md

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	qt "github.com/frankban/quicktest"

	"github.com/go-mdraid/mdraid/superblock"
)

// plannedSuperblocks plans req on blank 64 MiB devices and decodes, per
// device of the request, the superblock the plan writes there (nil for
// "missing").
func plannedSuperblocks(t *testing.T, req CreateRequest) []*superblock.Superblock {
	t.Helper()
	p, err := PlanCreate(req, createFacts(req.Devices, 64<<20))
	if err != nil {
		t.Fatal(err)
	}
	out := make([]*superblock.Superblock, len(req.Devices))
	for _, m := range p.Members {
		for i, d := range req.Devices {
			if d != m.Path {
				continue
			}
			for _, w := range m.Writes {
				if w.What == "superblock" {
					sb, err := superblock.Decode(w.Data)
					if err != nil {
						t.Fatal(err)
					}
					out[i] = sb
				}
			}
		}
	}
	return out
}

// TestUnfinishedCreate: the superblocks a create writes, with some of
// them never written (a create killed between two members), are held
// back while a member they name is missing; a complete set, a create
// with "missing" (which names only what it wrote), and an array that has
// run once are not. The superblocks are the planned bytes, decoded.
func TestUnfinishedCreate(t *testing.T) {
	devs2 := []string{"/dev/vda", "/dev/vdb"}
	devs4 := []string{"/dev/vda", "/dev/vdb", "/dev/vdc", "/dev/vdd"}
	mirror := CreateRequest{Array: "/dev/md0", Level: 1, RaidDevices: 2, Metadata: superblock.Version12, Devices: devs2}
	mirror10 := mirror
	mirror10.Metadata = superblock.Version10
	mirror090 := mirror
	mirror090.Metadata = superblock.Version090
	half := CreateRequest{Array: "/dev/md0", Level: 1, RaidDevices: 2, Devices: []string{"/dev/vda", Missing}}
	raid5 := CreateRequest{Array: "/dev/md0", Level: 5, RaidDevices: 4, Devices: devs4}
	raid6 := CreateRequest{Array: "/dev/md0", Level: 6, RaidDevices: 4, Devices: devs4}
	for _, tt := range []struct {
		name   string
		req    CreateRequest
		have   []int // devices whose superblock is at hand
		events uint64
		held   string // "" for not held
	}{
		{name: "mirror-one", req: mirror, have: []int{0}, held: `updated its superblocks \(events 0\), and they name 2 members, 1 of them here \(slot 1 missing\)`},
		{name: "mirror-other", req: mirror, have: []int{1}, held: `slot 0 missing`},
		{name: "mirror-both", req: mirror, have: []int{0, 1}},
		{name: "mirror-1.0-one", req: mirror10, have: []int{0}, held: `slot 1 missing`},
		{name: "mirror-0.90-one", req: mirror090, have: []int{1}, held: `updated its superblocks \(events 1\).*slot 0 missing`},
		{name: "mirror-0.90-both", req: mirror090, have: []int{0, 1}},
		{name: "mirror-ran", req: mirror, have: []int{0}, events: 1},
		{name: "mirror-0.90-ran", req: mirror090, have: []int{0}, events: 2},
		{name: "missing-by-request", req: half, have: []int{0}},
		{name: "raid5-spare-only", req: raid5, have: []int{3}, held: `name 3 members, 0 of them here \(slot 0, 1, 2 missing\)`},
		{name: "raid5-spare-and-two", req: raid5, have: []int{3, 0, 1}, held: `slot 2 missing`},
		{name: "raid5-all", req: raid5, have: []int{0, 1, 2, 3}},
		{name: "raid6-three", req: raid6, have: []int{0, 1, 2}, held: `slot 3 missing`},
		{name: "nothing", req: mirror, have: nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := qt.New(t)
			all := plannedSuperblocks(t, tt.req)
			var sbs []*superblock.Superblock
			for _, i := range tt.have {
				sb := all[i]
				if tt.events != 0 {
					sb.Events = tt.events
				}
				sbs = append(sbs, sb, nil) // nil entries are skipped
			}
			got := unfinishedCreate(sbs)
			if tt.held == "" {
				c.Check(got, qt.Equals, "")
				return
			}
			c.Check(got, qt.Matches, ".*"+tt.held+".*")
			c.Check(strings.Contains(got, "did not finish"), qt.IsTrue)
		})
	}
}

// TestCreateWriteOrder: the spare that raid4/5/6 recovery fills, which
// the other superblocks do not name, is written first, so that no
// prefix of the writes is a set assembly would start degraded.
func TestCreateWriteOrder(t *testing.T) {
	c := qt.New(t)
	devs4 := []string{"/dev/vda", "/dev/vdb", "/dev/vdc", "/dev/vdd"}
	for _, tt := range []struct {
		req  CreateRequest
		want []int
	}{
		{CreateRequest{Array: "/dev/md0", Level: 5, RaidDevices: 4, Devices: devs4}, []int{3, 0, 1, 2}},
		{CreateRequest{Array: "/dev/md0", Level: 1, RaidDevices: 4, Devices: devs4}, []int{0, 1, 2, 3}},
		{CreateRequest{Array: "/dev/md0", Level: 6, RaidDevices: 4, Devices: []string{"/dev/vda", "/dev/vdb", "/dev/vdc", Missing}}, []int{2, 0, 1}},
	} {
		p, err := PlanCreate(tt.req, createFacts(tt.req.Devices, 64<<20))
		c.Assert(err, qt.IsNil)
		order := writeOrder(p.Members)
		c.Check(order, qt.DeepEquals, tt.want, qt.Commentf("level %d", tt.req.Level))
		// Every prefix of the writes, short of all, is held back.
		sbs := make([]*superblock.Superblock, 0, len(order))
		for k, i := range order {
			sbs = append(sbs, p.Members[i].Superblock)
			if k < len(order)-1 {
				c.Check(unfinishedCreate(sbs), qt.Not(qt.Equals), "", qt.Commentf("level %d, first %d", tt.req.Level, k+1))
			}
		}
		c.Check(unfinishedCreate(sbs), qt.Equals, "")
	}
}

// TestIncrementalHoldsUnfinishedCreate: one member of a mirror whose
// superblocks no running array has updated (events 0) is not started
// even with Run, and the result says why; the same member with the
// events of an array that has run starts read-auto, as before.
func TestIncrementalHoldsUnfinishedCreate(t *testing.T) {
	for _, tt := range []struct {
		events uint64
		held   bool
	}{{0, true}, {7, false}} {
		t.Run(fmt.Sprint("events ", tt.events), func(t *testing.T) {
			c := qt.New(t)
			m, f, node := incrementalRig(t, "boot-mirror", "vda")
			unassemble(t, m)
			rewriteImage(t, m, "vda", func(sb *superblock.Superblock, _ *superblock.Bitmap) { sb.Events = tt.events })
			m.forgetProbes()
			f.hook = kernelAssembly(t, m, "vda", "none\n")
			res, err := m.Incremental(context.Background(), IncrementalRequest{Device: node, Run: true})
			c.Assert(err, qt.IsNil)
			c.Check(res.Present, qt.Equals, 1)
			c.Check(res.Expected, qt.Equals, 2)
			started := slices.ContainsFunc(f.calls, func(s string) bool { return strings.HasPrefix(s, "Start ") })
			if tt.held {
				c.Check(res.Started, qt.Equals, StartNo)
				c.Check(res.Held, qt.Matches, `no running array has updated its superblocks \(events 0\).*slot 1 missing.*`)
				c.Check(started, qt.IsFalse, qt.Commentf("%q", f.calls))
				return
			}
			c.Check(res.Held, qt.Equals, "")
			c.Check(res.Started, qt.Equals, StartYes)
			c.Check(res.ReadAuto, qt.IsTrue)
			c.Check(started, qt.IsTrue, qt.Commentf("%q", f.calls))
		})
	}
}

// TestAssembleHoldsUnfinishedCreate: assemble --run with one member of a
// mirror whose superblocks no running array has updated (the captured
// a0: mdadm --create --assume-clean, never written) leaves it assembled
// and not started, saying why; once its superblocks say it has run, the
// same call starts it read-auto.
func TestAssembleHoldsUnfinishedCreate(t *testing.T) {
	for _, ran := range []bool{false, true} {
		t.Run(fmt.Sprint("ran ", ran), func(t *testing.T) {
			c := qt.New(t)
			rig := newAssembleRig(t, nil)
			if ran {
				ranOnce(t, rig.m, "vda", "vdb")
			}
			res, err := rig.m.Assemble(context.Background(), AssembleRequest{Devices: []string{rig.nodes["vda"]}, Run: true})
			c.Assert(err, qt.IsNil)
			c.Assert(res.Added, qt.HasLen, 1)
			r := res.Added[0]
			started := slices.ContainsFunc(rig.f.calls, func(s string) bool { return strings.HasPrefix(s, "Start ") })
			if !ran {
				c.Check(r.Started, qt.Equals, StartNo)
				c.Check(r.Held, qt.Matches, `no running array has updated its superblocks \(events 0\), and they name 2 members, 1 of them here \(slot 1 missing\).*`)
				c.Check(started, qt.IsFalse, qt.Commentf("%q", rig.f.calls))
				return
			}
			c.Check(r.Held, qt.Equals, "")
			c.Check(r.Started, qt.Equals, StartYes)
			c.Check(started, qt.IsTrue, qt.Commentf("%q", rig.f.calls))
		})
	}
}
