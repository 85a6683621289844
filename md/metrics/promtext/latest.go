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
// snapshots sees the same one. After a Set with an error, Discover fails,
// and a scrape of it (Collect, Write, Handler or md/metrics.Collector)
// reports mdraid_scrape_error 1 and no array series, as mdctl status does
// when it cannot read the array list. Before the first Set, Discover
// waits for it until its context ends and then fails with ErrNoSnapshot,
// which is not a scrape error: Handler answers it 503 (not ready).
//
// The zero value is ready to use; Latest is safe for concurrent use. The
// reports given to Set must not be changed afterwards.
type Latest struct {
	mu    sync.Mutex
	r     *md.Report
	err   error
	set   bool
	ready chan struct{} // closed by the first Set
}

// readyLocked returns the channel the first Set closes; l.mu is held.
func (l *Latest) readyLocked() chan struct{} {
	if l.ready == nil {
		l.ready = make(chan struct{})
	}
	return l.ready
}

// Set records the latest snapshot: r, or err when it could not be taken.
// Its signature is that of watch.Options.Snapshot.
func (l *Latest) Set(r *md.Report, err error) {
	if r == nil && err == nil {
		err = errors.New("md/metrics/promtext: snapshot without a report")
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.set {
		close(l.readyLocked())
	}
	l.r, l.err, l.set = r, err, true
	if err != nil {
		l.r = nil
	}
}

// Discover returns the latest report given to Set, or the error given
// with it. Before the first Set it waits for it until ctx ends, and then
// returns ErrNoSnapshot.
func (l *Latest) Discover(ctx context.Context) (*md.Report, error) {
	l.mu.Lock()
	if !l.set {
		ready := l.readyLocked()
		l.mu.Unlock()
		select {
		case <-ready:
		case <-ctx.Done():
			return nil, ErrNoSnapshot
		}
		l.mu.Lock()
	}
	defer l.mu.Unlock()
	return l.r, l.err
}
