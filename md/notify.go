package md

import (
	"context"
	"strings"
	"time"
)

// attrWatch is one sysfs attribute held open to be read and polled. The
// kernel signals a change of the attributes wait and wait --clean follow
// (sync_action at the start and the end of every sync, array_state when
// the array turns clean or active: md.c sysfs_notify_dirent_safe, Linux
// 6.1 to 7.2) with POLLPRI|POLLERR once the file was read; each Read
// reads it from offset 0, which re-arms it (kernfs_generic_poll).
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
