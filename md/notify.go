package md

import (
	"context"
	"strings"
	"time"
)

// attrWatch is one sysfs attribute held open to be read and polled. The
// kernel signals a change of an md attribute it notifies with
// POLLPRI|POLLERR once the file was read (kernfs_generic_poll; md/watch
// relies on the same); each Read reads it from offset 0, which re-arms
// it. Wait and WaitClean read again at least every waitBackstop, so that
// a change the kernel does not notify is late, never lost. What the VM
// tests saw of sync_action and array_state is in docs/kernels.md §10.
type attrWatch interface {
	// Read returns the attribute's value without the newline, re-arming
	// the watch.
	Read() (string, error)
	// Wait returns true when the kernel signalled a change since the
	// last Read, false when until passed first, or ctx's error.
	Wait(ctx context.Context, until time.Time) (bool, error)
	// Close releases the attribute.
	Close() error
}

// watchAttr opens the attribute at path as an attrWatch: the real one
// (pollAttr) unless a test set ops.watchAttr.
func (m *Manager) watchAttr(path string) (attrWatch, error) {
	if m.ops.watchAttr != nil {
		return m.ops.watchAttr(path)
	}
	return openPollAttr(path)
}

// trimAttr is an attribute's value without its trailing newline.
func trimAttr(b []byte) string { return strings.TrimSpace(string(b)) }
