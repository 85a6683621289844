package md

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	qt "github.com/frankban/quicktest"
	"golang.org/x/sys/unix"
)

// growRig is a replace rig on a capture whose sync is done, with the
// component size and the members' sizes set to kib (0 leaves them).
func growRig(t *testing.T, capture string, kib uint64, members ...string) *replaceRig {
	r := newReplaceRig(t, capture)
	set := func(v string, elem ...string) {
		if err := r.k.set(r.k.attr(r.name, elem...), v); err != nil {
			t.Fatal(err)
		}
	}
	set("idle", "sync_action")
	set("none", "sync_completed")
	set("none", "resync_start")
	if kib != 0 {
		set(fmt.Sprint(kib), "component_size")
		for _, mem := range members {
			set(fmt.Sprint(kib), "dev-"+mem, "size")
		}
	}
	return r
}

// TestPlanGrow: what Grow would ask of md on real captures (the 1.0
// member's room by md's rule: a 64 MiB disk gives 65520 KiB, mdadm's
// Avail Dev Size), and each refusal, with no kernel call.
func TestPlanGrow(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name, capture string
		kib           uint64   // component and member sizes to set first
		members       []string // whose size kib sets (vda, vdb)
		set           map[string]string
		req           GrowRequest
		to            uint64
		unchanged     bool
		resize        []string
		check         Check
		cause         error
	}{
		{name: "1.2 max, nothing to give", capture: "raid1-v1.2", to: 64512, unchanged: true},
		{name: "1.2 max", capture: "raid1-v1.2", kib: 32768, to: 64512, resize: []string{"vda", "vdb"}},
		{name: "1.2 to 40000", capture: "raid1-v1.2", kib: 32768, req: GrowRequest{SizeKiB: 40000}, to: 40000, resize: []string{"vda", "vdb"}},
		{name: "1.2 too big", capture: "raid1-v1.2", kib: 32768, req: GrowRequest{SizeKiB: 64513}, check: CheckGrowSize, cause: ErrUnsupported},
		{name: "1.2 shrink", capture: "raid1-v1.2", kib: 32768, req: GrowRequest{SizeKiB: 1024}, check: CheckGrowSize, cause: ErrShrink},
		// md loaded the 1.0 members' data size (mdadm's Avail Dev Size,
		// 131040 sectors): they give more than the array uses already.
		{name: "1.0 max", capture: "raid1-v1.0", to: 65520, resize: []string{}},
		{name: "1.0 max, members give less", capture: "raid1-v1.0", set: map[string]string{"dev-vda/size": "65472", "dev-vdb/size": "65472"}, to: 65520, resize: []string{"vda", "vdb"}},
		{name: "1.1 max", capture: "raid1-v1.1", kib: 32768, to: 64512, resize: []string{"vda", "vdb"}},
		{name: "0.90 max", capture: "raid1-v0.90", kib: 32768, to: 65472, resize: []string{"vda", "vdb"}},
		{name: "1.0 bitmap, members give no more", capture: "raid1-v1.0", set: map[string]string{"bitmap/location": "-16", "dev-vda/size": "65472", "dev-vdb/size": "65472"}, check: CheckBitmap, cause: ErrUnsupported},
		{name: "1.0 bitmap, asked more than members give", capture: "raid1-v1.0", set: map[string]string{"bitmap/location": "-16", "dev-vda/size": "65480", "dev-vdb/size": "65480"}, req: GrowRequest{SizeKiB: 65500}, check: CheckBitmap},
		{name: "1.0 bitmap, members give more", capture: "raid1-v1.0", set: map[string]string{"bitmap/location": "-16"}, to: 65520, resize: []string{}},
		{name: "0.90 bitmap, members give no more", capture: "raid1-v0.90", kib: 32768, set: map[string]string{"bitmap/location": "+4"}, check: CheckBitmap},
		{name: "raid5 max", capture: "raid5", kib: 32768, members: []string{"vda", "vdb", "vdc", "vdd"}, to: 63488, resize: []string{"vda", "vdb", "vdc", "vdd"}},
		{name: "raid5 not a multiple of the chunk", capture: "raid5", kib: 32768, members: []string{"vda", "vdb", "vdc", "vdd"}, req: GrowRequest{SizeKiB: 40000}, check: CheckGrowSize},
		// md would record a data size below what the array uses in the
		// superblocks before noticing (rdev_size_store).
		{name: "1.0 member md would size below the array", capture: "raid1-v1.0", set: map[string]string{"component_size": "65530"}, check: CheckGrowSize},
		{name: "raid10 far", capture: "raid10", set: map[string]string{"layout": "513"}, check: CheckLayout, cause: ErrUnsupported},
		{name: "raid0", capture: "raid0", check: CheckLevel, cause: ErrUnsupported},
		{name: "read-only", capture: "raid1-readonly", check: CheckReadWrite},
		{name: "inactive", capture: "raid5-inactive", check: CheckArrayRunning},
		{name: "degraded", capture: "raid5-degraded", check: CheckNotDegraded},
		{name: "frozen", capture: "raid1-v1.2", kib: 32768, set: map[string]string{"sync_action": "frozen"}, check: CheckSyncIdle, cause: ErrCheckBusy},
		{name: "reshape", capture: "raid1-v1.2", kib: 32768, set: map[string]string{"reshape_position": "1024"}, check: CheckSyncIdle},
		{name: "member size unreadable", capture: "raid1-v1.2", kib: 32768, set: map[string]string{"dev-vdb/size": "many"}, check: CheckFactsReadable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := qt.New(t)
			members := tt.members
			if members == nil {
				members = []string{"vda", "vdb"}
			}
			r := growRig(t, tt.capture, tt.kib, members...)
			for k, v := range tt.set {
				c.Assert(r.k.set(r.k.attr(r.name, k), v), qt.IsNil)
			}
			req := tt.req
			req.Array = r.name
			p, err := r.m.PlanGrow(ctx, req)
			c.Check(r.k.Calls(), qt.HasLen, 0)
			if tt.check != "" {
				c.Assert(err, qt.ErrorIs, ErrRefused)
				var re *RefusedError
				c.Assert(errors.As(err, &re), qt.IsTrue)
				c.Check(re.Check, qt.Equals, tt.check, qt.Commentf("%v", err))
				if tt.cause != nil {
					c.Check(err, qt.ErrorIs, tt.cause)
				}
				c.Logf("%v", err)
				// Grow refuses the same way, calling nothing.
				_, gerr := r.m.Grow(ctx, req)
				c.Check(gerr, qt.ErrorIs, ErrRefused)
				c.Check(r.k.Calls(), qt.HasLen, 0)
				return
			}
			c.Assert(err, qt.IsNil)
			c.Check(p.ToKiB, qt.Equals, tt.to)
			c.Check(p.Unchanged, qt.Equals, tt.unchanged)
			if !tt.unchanged {
				c.Check(p.Resize, qt.DeepEquals, tt.resize)
			}
		})
	}
}

// TestGrow: the executor's calls, in order: each member that gives too
// little, then the array; the result read back. Unchanged calls nothing.
func TestGrow(t *testing.T) {
	c := qt.New(t)
	ctx := context.Background()
	r := growRig(t, "raid1-v1.2", 32768, "vda", "vdb")
	res, err := r.m.Grow(ctx, GrowRequest{Array: r.name})
	c.Assert(err, qt.IsNil)
	c.Check(r.k.Calls(), qt.DeepEquals, []string{
		"SetMemberSize(md0, vda, 64512)", "SetMemberSize(md0, vdb, 64512)", "SetComponentSize(md0, 64512)"})
	c.Check(res.Resized, qt.DeepEquals, []string{"vda", "vdb"})
	c.Check(res.ComponentKiB, qt.Equals, uint64(64512))
	c.Check(res.ArrayKiB, qt.Equals, uint64(64512))

	again, err := r.m.Grow(ctx, GrowRequest{Array: r.name})
	c.Assert(err, qt.IsNil)
	c.Check(again.Plan.Unchanged, qt.IsTrue)
	c.Check(r.k.Calls(), qt.HasLen, 3)
}

// TestGrowGuards: the array is read again before each write. A sync that
// starts after the first member's size was raised stops the change
// there, and the message says what md was asked; the kernel's answer to
// the array's size is passed on, wrapped, with what was done.
func TestGrowGuards(t *testing.T) {
	c := qt.New(t)
	ctx := context.Background()
	r := growRig(t, "raid1-v1.2", 32768, "vda", "vdb")
	r.k.onCall = func(name string) {
		if name == "SetMemberSize" {
			r.k.onCall = nil
			c.Check(r.k.set(r.k.attr(r.name, "sync_action"), "resync"), qt.IsNil)
		}
	}
	res, err := r.m.Grow(ctx, GrowRequest{Array: r.name})
	c.Assert(err, qt.ErrorIs, ErrPlanChanged)
	c.Check(err, qt.Not(qt.ErrorIs), ErrRefused)
	c.Check(err, qt.ErrorMatches, `md: resize of md0 failed: .*sync_action of md0 is resync now; md was asked to let \[vda\] give 64512 KiB .* the array still uses 32768 KiB .*`)
	c.Check(res.Resized, qt.DeepEquals, []string{"vda"})
	c.Check(r.k.Calls(), qt.DeepEquals, []string{"SetMemberSize(md0, vda, 64512)"})

	// A member gone before anything was written: a refusal.
	r = growRig(t, "raid1-v1.2", 32768, "vda", "vdb")
	r.k.fail = map[string]error{"SetComponentSize": unix.ENOSPC}
	_, err = r.m.Grow(ctx, GrowRequest{Array: r.name})
	c.Assert(err, qt.ErrorIs, unix.ENOSPC)
	c.Check(err, qt.ErrorMatches, `md: resize of md0 failed: writing 64512 to md/component_size of md0: .*; md was asked to let \[vda vdb\] give 64512 KiB .*`)
}

// TestPlanGrowDeviceGrewInPlace: the disks under a 1.0 mirror grew (a
// cloud volume resized): the superblocks are no longer at the devices'
// ends, where they are looked for. md's rule needs only the metadata and
// the data offset, which md/dev-N/offset gives: each member is raised to
// what the bigger device holds, its superblock written at the new end.
func TestPlanGrowDeviceGrewInPlace(t *testing.T) {
	c := qt.New(t)
	r := growRig(t, "raid1-v1.0", 0)
	for _, d := range []string{"vda", "vdb"} {
		c.Assert(r.k.set(r.m.fs.Path("class", "block", d, "size"), "262144"), qt.IsNil)
		c.Assert(os.Truncate(filepath.Join(r.dev, d), 128<<20), qt.IsNil)
	}
	p, err := r.m.PlanGrow(context.Background(), GrowRequest{Array: r.name})
	c.Assert(err, qt.IsNil)
	c.Check(p.ToKiB, qt.Equals, uint64(262112/2))
	c.Check(p.Resize, qt.DeepEquals, []string{"vda", "vdb"})
	for _, gm := range p.Members {
		c.Check(gm.SuperblockSector, qt.Equals, uint64(0))
		c.Check(gm.NewSuperblockSector, qt.Equals, uint64(262128))
	}
	c.Check(r.k.Calls(), qt.HasLen, 0)
}
