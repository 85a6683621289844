package md_test

import (
	"context"
	"errors"
	"testing"

	qt "github.com/frankban/quicktest"
	"github.com/go-mdraid/mdraid/md"
	"github.com/go-mdraid/mdraid/md/mdtest"
)

// TestPlanBitmap: where a bitmap added to a running array goes (mdadm's
// add_internal_bitmap1 for a grow), and the refusals, on real captures.
func TestPlanBitmap(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name, capture string
		req           md.BitmapRequest
		location      string
		chunk         uint64
		check         md.Check
		cause         error
		resyncing     bool // leave the capture's resync running
	}{
		{name: "add 1.2", capture: "raid1-v1.2", req: md.BitmapRequest{Internal: true}, location: "+8", chunk: 64 << 20},
		{name: "add 1.2 small chunk", capture: "raid1-v1.2", req: md.BitmapRequest{Internal: true, ChunkKiB: 4}, location: "+8", chunk: 4096},
		{name: "add 1.0", capture: "raid1-v1.0", req: md.BitmapRequest{Internal: true}, location: "-16", chunk: 64 << 20},
		{name: "add raid5", capture: "raid5", req: md.BitmapRequest{Internal: true}, location: "+8", chunk: 64 << 20},
		{name: "remove", capture: "raid1-bitmap", req: md.BitmapRequest{}, location: "none"},
		{name: "remove while resyncing", capture: "raid1-bitmap", req: md.BitmapRequest{}, check: md.CheckSyncIdle, cause: md.ErrCheckBusy, resyncing: true},
		{name: "add present", capture: "raid1-bitmap", req: md.BitmapRequest{Internal: true}, check: md.CheckBitmapState, cause: md.ErrBitmapPresent},
		{name: "remove absent", capture: "raid1-v1.2", req: md.BitmapRequest{}, check: md.CheckBitmapState, cause: md.ErrNoBitmapToRemove},
		{name: "raid0", capture: "raid0", req: md.BitmapRequest{Internal: true}, check: md.CheckBitmapArray, cause: md.ErrUnsupported},
		{name: "recovering", capture: "raid1-recovering", req: md.BitmapRequest{Internal: true}, check: md.CheckSyncIdle, cause: md.ErrCheckBusy},
		{name: "inactive", capture: "raid5-inactive-k7.2", req: md.BitmapRequest{Internal: true}, check: md.CheckBitmapArray},
		{name: "bad chunk", capture: "raid1-v1.2", req: md.BitmapRequest{Internal: true, ChunkKiB: 3}, check: md.CheckBitmapRoom, cause: md.ErrUnsupported},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := qt.New(t)
			sys := mdtest.Capture(t, tt.capture)
			if tt.capture == "raid1-bitmap" && !tt.resyncing {
				finishResync(sys)
			}
			m, err := md.Open(sys.Config())
			c.Assert(err, qt.IsNil)
			req := tt.req
			req.Array = sys.Array()
			p, err := m.PlanBitmap(ctx, req)
			if tt.check != "" {
				c.Assert(err, qt.ErrorIs, md.ErrRefused)
				var re *md.RefusedError
				c.Assert(errors.As(err, &re), qt.IsTrue)
				c.Check(re.Check, qt.Equals, tt.check, qt.Commentf("%v", err))
				if tt.cause != nil {
					c.Check(err, qt.ErrorIs, tt.cause)
				}
				return
			}
			c.Assert(err, qt.IsNil)
			c.Check(p.Location, qt.Equals, tt.location)
			c.Check(p.ChunkBytes, qt.Equals, tt.chunk)
			if p.Add {
				c.Check(len(p.Members) >= 2, qt.IsTrue)
				for _, w := range p.Members {
					c.Check(w.Bytes%4096, qt.Equals, int64(0))
				}
			}
		})
	}
}

// TestSetBitmapRemove: removing is one write of "none" to
// bitmap/location, read back; adding to image files (md/mdtest's disks
// are not block devices) is refused before anything is written.
func TestSetBitmapRemove(t *testing.T) {
	c := qt.New(t)
	ctx := context.Background()
	sys := mdtest.Capture(t, "raid1-bitmap")
	finishResync(sys)
	m, err := md.Open(sys.Config())
	c.Assert(err, qt.IsNil)
	res, err := m.SetBitmap(ctx, md.BitmapRequest{Array: sys.Array()})
	c.Assert(err, qt.IsNil)
	c.Check(res.Location, qt.Equals, "none")
	c.Check(sys.Get("md/bitmap/location"), qt.Equals, "none")

	sys2 := mdtest.Capture(t, "raid1-v1.2")
	m2, err := md.Open(sys2.Config())
	c.Assert(err, qt.IsNil)
	_, err = m2.SetBitmap(ctx, md.BitmapRequest{Array: sys2.Array(), Internal: true})
	c.Assert(err, qt.ErrorIs, md.ErrRefused)
	c.Check(err, qt.ErrorIs, md.ErrPlanChanged)
	c.Check(sys2.Get("md/bitmap/location"), qt.Equals, "none")
}

// finishResync makes the capture's initial resync done, as the kernel
// shows it then.
func finishResync(sys *mdtest.System) {
	sys.Set("md/sync_action", "idle")
	sys.Set("md/sync_completed", "none")
	sys.Set("md/resync_start", "none")
	sys.Set("md/last_sync_action", "resync")
}
