package md

import (
	"os"
	"reflect"
	"testing"

	qt "github.com/frankban/quicktest"
	"github.com/google/uuid"
)

// TestPlanReplaceReadsNothing checks the replace route's middle stage:
// planReplace decides from the facts gatherReplace read once, and from
// nothing else. Once the facts are gathered, the sysfs tree, the member
// images and the candidate are deleted; planning again from the same facts
// gives the same plan, and leaves the facts as they were. Gathering
// afterwards sees the deletion (the route's I/O is all in the gathering).
func TestPlanReplaceReadsNothing(t *testing.T) {
	tests := []struct {
		name    string
		fixture string
		req     ReplaceRequest
		bitmap  bool // the facts hold the clone source's bitmap
	}{
		{name: "empty slot", fixture: "raid1-degraded-missing"},
		{name: "hot, with bitmap", fixture: "raid1-bitmap-k7.2", req: ReplaceRequest{Hot: true, Member: "vdb"}, bitmap: true},
		{name: "faulty member", fixture: "raid1-failed", req: ReplaceRequest{Member: "vdb"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := qt.New(t)
			r := newReplaceRig(t, tt.fixture)
			path := r.candidate(t, "vdz", 64<<20)
			req := tt.req
			req.Array, req.With, req.AllowImageFile = r.name, path, true
			devUUID := uuid.MustParse("00000000-1111-2222-3333-444444444444")

			rf, again := r.m.gatherReplace(r.name, req, ""), r.m.gatherReplace(r.name, req, "")
			c.Assert(reflect.DeepEqual(rf, again), qt.IsTrue, qt.Commentf("two gatherings of one system differ"))
			c.Assert(rf.array.bitmap != nil, qt.Equals, tt.bitmap)
			want, err := planReplace(rf.array, rf.cand, req, devUUID)
			c.Assert(err, qt.IsNil)
			c.Assert(want.Writes, qt.Not(qt.HasLen), 0)

			c.Assert(os.RemoveAll(r.m.fs.Path()), qt.IsNil)
			c.Assert(os.RemoveAll(r.dev), qt.IsNil)

			got, err := planReplace(rf.array, rf.cand, req, devUUID)
			c.Assert(err, qt.IsNil)
			c.Check(reflect.DeepEqual(got, want), qt.IsTrue, qt.Commentf("planned again from the same facts:\n got %+v\nwant %+v", got, want))
			c.Check(reflect.DeepEqual(rf, again), qt.IsTrue, qt.Commentf("planning changed its facts"))

			// The system is gone indeed: facts gathered now refuse.
			gone := r.m.gatherReplace(r.name, req, "")
			_, err = planReplace(gone.array, gone.cand, req, devUUID)
			c.Check(err, qt.ErrorIs, ErrRefused)
		})
	}
}
