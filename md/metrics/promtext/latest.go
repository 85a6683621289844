package promtext

import (
	"context"
	"errors"
	"sync"

	"github.com/go-mdraid/mdraid/md"
)

// ErrNoSnapshot is the error of Latest.Discover before the first Set.
var ErrNoSnapshot = errors.New("md/metrics/promtext: no snapshot taken yet")

// Latest is a Source that serves the report most recently given to Set,
// for a daemon that takes snapshots anyway (watch.Options.Snapshot): a
// scrape then reads nothing from sysfs, and every scrape between two
// snapshots sees the same one. Before the first Set, and after a Set with
// an error, Discover fails, and a scrape of it (Collect, Write, Handler
// or md/metrics.Collector) reports mdraid_scrape_error 1 and no array
// series, as mdctl status does when it cannot read the array list.
//
// The zero value is ready to use; Latest is safe for concurrent use. The
// reports given to Set must not be changed afterwards.
type Latest struct {
	mu  sync.Mutex
	r   *md.Report
	err error
	set bool
}

// Set records the latest snapshot: r, or err when it could not be taken.
// Its signature is that of watch.Options.Snapshot.
func (l *Latest) Set(r *md.Report, err error) {
	if r == nil && err == nil {
		err = errors.New("md/metrics/promtext: snapshot without a report")
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.r, l.err, l.set = r, err, true
	if err != nil {
		l.r = nil
	}
}

// Discover returns the latest report given to Set, the error given with
// it, or ErrNoSnapshot when Set has not been called.
func (l *Latest) Discover(context.Context) (*md.Report, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.set {
		return nil, ErrNoSnapshot
	}
	return l.r, l.err
}
