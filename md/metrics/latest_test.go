package metrics

import (
	"context"
	"errors"
	"strings"
	"testing"

	qt "github.com/frankban/quicktest"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/go-mdraid/mdraid/md"
)

// gatherLatest gathers a Collector on l and returns the value of
// mdraid_scrape_error and the devices of node_md_state.
func gatherLatest(t *testing.T, l *Latest) (scrapeErr float64, devices []string) {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	qt.Assert(t, reg.Register(NewCollector(context.Background(), l)), qt.IsNil)
	mfs, err := reg.Gather()
	qt.Assert(t, err, qt.IsNil)
	scrapeErr = -1
	for _, mf := range mfs {
		switch mf.GetName() {
		case "mdraid_scrape_error":
			scrapeErr = mf.GetMetric()[0].GetGauge().GetValue()
		case "node_md_state":
			seen := map[string]bool{}
			for _, m := range mf.GetMetric() {
				for _, lp := range m.GetLabel() {
					if d := lp.GetValue(); lp.GetName() == "device" && !seen[d] {
						seen[d] = true
						devices = append(devices, d)
					}
				}
			}
		}
	}
	return scrapeErr, devices
}

// TestLatest: no snapshot yet is no scrape error (Discover waits for it
// until its context ends, then ErrNoSnapshot); a failed one gives a
// scrape error and no arrays; a good one gives its arrays, and the next
// failure hides them again rather than serving a stale report.
func TestLatest(t *testing.T) {
	c := qt.New(t)
	var l Latest
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := l.Discover(ctx)
	c.Assert(err, qt.ErrorIs, ErrNoSnapshot)

	good := &md.Report{Arrays: []md.Array{{Device: "md0", Availability: md.Online, Redundancy: md.Full}}}
	l.Set(good, nil)
	r, err := l.Discover(context.Background())
	c.Assert(err, qt.IsNil)
	c.Assert(r, qt.Equals, good)
	se, devs := gatherLatest(t, &l)
	c.Check(se, qt.Equals, 0.0)
	c.Check(devs, qt.DeepEquals, []string{"md0"})

	boom := errors.New("reading /sys/block: permission denied")
	l.Set(nil, boom)
	_, err = l.Discover(context.Background())
	c.Assert(err, qt.ErrorIs, boom)
	se, devs = gatherLatest(t, &l)
	c.Check(se, qt.Equals, 1.0)
	c.Check(devs, qt.HasLen, 0)

	// A report given with an error is not served; nor is a nil report.
	l.Set(good, boom)
	se, _ = gatherLatest(t, &l)
	c.Check(se, qt.Equals, 1.0)
	l.Set(nil, nil)
	_, err = l.Discover(context.Background())
	c.Check(err, qt.ErrorMatches, ".*without a report")
	c.Check(strings.Contains(err.Error(), "md/metrics"), qt.IsTrue)
}

// TestCollectorBeforeTheFirstSnapshot: a scrape before the first
// snapshot waits for it and then serves it; one whose wait ends first
// has no md series at all, and no scrape error (none happened).
func TestCollectorBeforeTheFirstSnapshot(t *testing.T) {
	c := qt.New(t)
	var l Latest
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	reg := prometheus.NewPedanticRegistry()
	c.Assert(reg.Register(NewCollector(ended, &l)), qt.IsNil)
	mfs, err := reg.Gather()
	c.Assert(err, qt.IsNil)
	c.Check(mfs, qt.HasLen, 0)

	done := make(chan struct{})
	var se float64
	var devs []string
	go func() {
		defer close(done)
		se, devs = gatherLatest(t, &l)
	}()
	l.Set(&md.Report{Arrays: []md.Array{{Device: "md0", Availability: md.Online, Redundancy: md.Full}}}, nil)
	<-done
	c.Check(se, qt.Equals, 0.0)
	c.Check(devs, qt.DeepEquals, []string{"md0"})
}
