package md

import (
	"context"
	"errors"
	"testing"

	qt "github.com/frankban/quicktest"

	"github.com/go-mdraid/mdraid/sysfs"
)

// TestSetMemberFlag: on the raid1-bitmap capture, write-mostly and
// failfast are set and cleared through the member's state, a dry run
// writes nothing, a flag that is so already writes nothing, and the
// refusals (another level, not a member, faulty) call nothing.
func TestSetMemberFlag(t *testing.T) {
	ctx := context.Background()
	t.Run("set and clear", func(t *testing.T) {
		c := qt.New(t)
		r := newReplaceRig(t, "raid1-bitmap")
		r.k.show = true
		var ch Change
		c.Assert(r.m.SetMemberFlag(ctx, "md0", "vdb", sysfs.FlagWriteMostly, true, &Change{DryRun: true}), qt.IsNil)
		c.Check(r.k.Calls(), qt.HasLen, 0)
		c.Assert(r.m.SetMemberFlag(ctx, "md0", "vdb", sysfs.FlagWriteMostly, true, &ch), qt.IsNil)
		c.Check(ch.Write, qt.Equals, "dev-vdb/state=writemostly")
		c.Check(r.k.Calls(), qt.DeepEquals, []string{"WriteState(md0, vdb, writemostly)"})
		ch = Change{}
		c.Assert(r.m.SetMemberFlag(ctx, "md0", "vdb", sysfs.FlagWriteMostly, true, &ch), qt.IsNil)
		c.Check(ch.Write, qt.Equals, "", qt.Commentf("a flag set already was written again"))
		c.Assert(r.m.SetMemberFlag(ctx, "md0", "/dev/vdb", sysfs.FlagWriteMostly, false, &ch), qt.IsNil)
		c.Check(ch.Write, qt.Equals, "dev-vdb/state=-writemostly")
		c.Assert(r.m.SetMemberFlag(ctx, "md0", "vda", sysfs.FlagFailFast, true, &ch), qt.IsNil)
		c.Check(ch.Write, qt.Equals, "dev-vda/state=failfast")
		c.Check(r.k.Calls(), qt.HasLen, 3)
	})
	t.Run("not shown", func(t *testing.T) {
		c := qt.New(t)
		r := newReplaceRig(t, "raid1-bitmap")
		err := r.m.SetMemberFlag(ctx, "md0", "vdb", sysfs.FlagFailFast, true)
		c.Check(err, qt.ErrorMatches, `md: wrote dev-vdb/state=failfast of md0, but the member's state does not show it.*`)
	})
	for _, tt := range []struct {
		name, fixture, member string
		flag                  sysfs.MemberFlag
		want                  error
	}{
		{"raid5 write-mostly", "raid5", "vda", sysfs.FlagWriteMostly, errFlagLevel},
		{"raid10 failfast ok, write-mostly not", "raid10", "vda", sysfs.FlagWriteMostly, errFlagLevel},
		{"not a member", "raid1-bitmap", "vdz", sysfs.FlagWriteMostly, errNoMember},
		{"faulty", "raid1-failed", "", sysfs.FlagWriteMostly, errNoMember},
		{"other flag", "raid1-bitmap", "vda", sysfs.FlagSpare, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := qt.New(t)
			r := newReplaceRig(t, tt.fixture)
			member := tt.member
			if member == "" {
				for _, ms := range r.m.read(r.name).members {
					if ms.state.Failed() {
						member = ms.Device
					}
				}
			}
			err := r.m.SetMemberFlag(ctx, r.name, member, tt.flag, true)
			c.Assert(err, qt.IsNotNil)
			if tt.want != nil {
				c.Check(errors.Is(err, tt.want), qt.IsTrue, qt.Commentf("%v", err))
				c.Check(err, qt.ErrorIs, ErrRefused)
			}
			c.Check(r.k.Calls(), qt.HasLen, 0)
		})
	}
}
