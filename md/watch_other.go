//go:build !linux

package md

import (
	"context"
	"log/slog"
)

// pollSet has no implementation outside Linux.
type pollSet struct{}

func (w *watcher) open() error { return ErrWatchUnsupported }

func (p *pollSet) reconcile(*Manager, *slog.Logger) bool { return false }

func (w *watcher) run(context.Context, chan<- Event) {}
