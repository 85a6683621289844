//go:build !linux

package watch

import (
	"context"
	"log/slog"

	"github.com/go-mdraid/mdraid/sysfs"
)

// pollSet has no implementation outside Linux.
type pollSet struct{}

func (w *watcher) open() error { return ErrUnsupported }

func (p *pollSet) reconcile(sysfs.FS, *slog.Logger, []string) bool { return false }

func (w *watcher) run(context.Context, chan<- Event) {}
