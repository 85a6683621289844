//go:build !linux

package md

import (
	"context"
	"os"
	"time"
)

// fileAttr is an attrWatch without poll: Wait returns at until. md
// attributes exist only on Linux; this serves captures elsewhere.
type fileAttr struct{ path string }

func openPollAttr(path string) (attrWatch, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, err
	}
	return fileAttr{path}, nil
}

func (f fileAttr) Read() (string, error) {
	b, err := os.ReadFile(f.path)
	return trimAttr(b), err
}

func (f fileAttr) Wait(ctx context.Context, until time.Time) (bool, error) {
	t := time.NewTimer(time.Until(until))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false, ctx.Err()
	case <-t.C:
		return false, nil
	}
}

func (f fileAttr) Close() error { return nil }
