package controller_test

import (
	"context"
	"testing"
	"time"

	"github.com/go-mdraid/mdraid/examples/controller"
	"github.com/go-mdraid/mdraid/md"
	"github.com/go-mdraid/mdraid/md/mdtest"
	"github.com/go-mdraid/mdraid/md/store"
)

// TestController runs the controller on a boot mirror captured on a real
// kernel: it publishes the healthy array, then, once a member fails, the
// degraded array with heal's dry-run decision for the failed slot. Every
// wait is for a published state, never for a time.
func TestController(t *testing.T) {
	sys := mdtest.Capture(t, "boot-mirror-k7.2")
	m, err := md.Open(sys.Config())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	published := make(chan []controller.Resource, 16)
	done := make(chan error, 1)
	go func() {
		done <- controller.Run(ctx, controller.Config{
			Manager: m, Store: &store.Memory{}, Mdstat: sys.Mdstat(),
			Rescan:  20 * time.Millisecond,
			Publish: func(rs []controller.Resource) { published <- rs },
		})
	}()
	// waitFor returns the first published state that ok accepts.
	waitFor := func(what string, ok func(controller.Resource) bool) controller.Resource {
		t.Helper()
		for {
			select {
			case rs := <-published:
				if len(rs) != 1 {
					t.Fatalf("%d resources, want 1", len(rs))
				}
				if ok(rs[0]) {
					return rs[0]
				}
			case err := <-done:
				t.Fatalf("Run ended before %s: %v", what, err)
			}
		}
	}

	r := waitFor("the healthy array", func(r controller.Resource) bool { return r.Availability == md.Online })
	if r.Device != "md127" || r.Name != "boot" || len(r.Slots) != 2 || r.Slots[1] != "active vdb" || len(r.Heal) != 0 {
		t.Errorf("healthy resource: %+v", r)
	}

	sys.Fail("vdb")
	r = waitFor("the degraded array", func(r controller.Resource) bool { return r.Availability == md.Degraded })
	if r.Slots[1] != "missing" || r.Redundancy != md.NoRedundancy {
		t.Errorf("degraded resource: %+v", r)
	}
	// The record was made while the array was healthy (the watcher
	// records it), so heal looks in vdb's port, finds vdb, which still
	// is the failed member, and refuses it: nothing is written.
	if len(r.Heal) != 1 || r.Heal[0].Slot != 1 || r.Heal[0].Port != "pci-0000:00:11.0" ||
		r.Heal[0].Outcome != md.OutcomeRefused || !r.Heal[0].Refused {
		t.Errorf("heal decisions: %+v (errors %q)", r.Heal, r.Errors)
	}

	cancel()
	if err := <-done; err != context.Canceled {
		t.Errorf("Run: %v, want context.Canceled", err)
	}
}

// TestReconcileUnreadable: an attribute md cannot read makes the array's
// resource carry the error instead of hiding the array.
func TestReconcileUnreadable(t *testing.T) {
	sys := mdtest.Capture(t, "raid1-v1.2")
	sys.Unreadable("md/sync_action")
	m, err := md.Open(sys.Config())
	if err != nil {
		t.Fatal(err)
	}
	rs, err := controller.Reconcile(context.Background(), m, &store.Memory{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 1 || len(rs[0].Errors) == 0 {
		t.Fatalf("resources: %+v", rs)
	}
}
