package watch

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-mdraid/mdraid/md"
)

// lastResort is what Options.LastResort remembers between scans: when
// each inactive array was first seen so, and the refusal last reported
// for it. Arrays are keyed by kernel name and UUID, so that another
// array assembled under the same name starts its own wait.
type lastResort struct {
	since   map[string]time.Time
	refused map[string]string
}

func lastResortKey(a *md.Array) string { return a.Device + " " + a.UUID }

// now is the watcher's clock (see watcher.clock).
func (w *watcher) now() time.Time {
	if w.clock != nil {
		return w.clock()
	}
	return time.Now()
}

// lastResortPass starts, with md.Manager.Run (the decision and the
// write of mdctl run: array_state=read-auto, refused for an array whose
// members cannot serve its data), every array of r that has been
// inactive for Options.LastResort since the watcher first saw it so. A
// start is LastResortStarted; a refusal or failure is LastResortRefused,
// reported once per array and reason, and tried again at each later scan
// (a member may arrive), never on a timer of its own.
func (w *watcher) lastResortPass(ctx context.Context, r *md.Report) []Event {
	if w.o.LastResort <= 0 || r == nil || r.Error != "" {
		return nil
	}
	if w.lr.since == nil {
		w.lr = lastResort{since: map[string]time.Time{}, refused: map[string]string{}}
	}
	now := w.now()
	seen := map[string]bool{}
	var out []Event
	for i := range r.Arrays {
		a := &r.Arrays[i]
		if a.Availability != md.Inactive || !present(a) {
			continue
		}
		key := lastResortKey(a)
		seen[key] = true
		since, ok := w.lr.since[key]
		if !ok {
			w.lr.since[key] = now
			w.o.Logger.Info("inactive; last resort start due", "array", a.Device, "uuid", a.UUID, "at", now.Add(w.o.LastResort))
			continue
		}
		if now.Sub(since) < w.o.LastResort {
			continue
		}
		var ch md.Change
		err := w.m.Run(ctx, a.Device, &ch)
		if ctx.Err() != nil {
			return out
		}
		e := arrayEvent(LastResortStarted, a, w.m.Now())
		if err == nil {
			e.Reason = fmt.Sprintf("inactive for %s: started with the members it has (%s)", w.o.LastResort, ch.Write)
			w.o.Logger.Info("last resort start", "array", a.Device, "uuid", a.UUID, "write", ch.Write)
			delete(w.lr.since, key)
			delete(w.lr.refused, key)
			out = append(out, e)
			continue
		}
		e.Type, e.Reason = LastResortRefused, err.Error()
		if !errors.Is(err, md.ErrRefused) {
			e.Reason = "failed: " + e.Reason
		}
		if w.lr.refused[key] == e.Reason {
			continue
		}
		w.lr.refused[key] = e.Reason
		w.o.Logger.Warn("last resort start refused", "array", a.Device, "uuid", a.UUID, "err", err)
		out = append(out, e)
	}
	for k := range w.lr.since {
		if !seen[k] {
			delete(w.lr.since, k)
			delete(w.lr.refused, k)
		}
	}
	return out
}

// lastResortDue is when the next last-resort start is due: the earliest
// of the inactive arrays not yet refused. A refused array waits for the
// next scan something else brings.
func (w *watcher) lastResortDue() (time.Time, bool) {
	var at time.Time
	ok := false
	for k, since := range w.lr.since {
		if _, refused := w.lr.refused[k]; refused {
			continue
		}
		if due := since.Add(w.o.LastResort); !ok || due.Before(at) {
			at, ok = due, true
		}
	}
	return at, ok
}
