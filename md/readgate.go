package md

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// ErrNoAnswer is matched by the error (Member.Err in a Report) for a
// member device that did not answer a read within the Manager's read
// timeout (Config.ReadTimeout).
// The read is left running; a later pass waits for the same read rather
// than starting another one on the stalled device.
var ErrNoAnswer = errors.New("md: the device did not answer")

// defaultReadTimeout bounds one superblock or bitmap read of a member.
const defaultReadTimeout = 5 * time.Second

// readGate runs member reads with a deadline. A read that does not answer
// in time cannot be cancelled (a read of a stalled disk blocks in the
// kernel), so its goroutine is left to finish; while it runs, reads of
// the same device wait for it instead of piling up more blocked reads.
type readGate struct {
	timeout time.Duration
	mu      sync.Mutex
	pending map[string]*pendingRead
	// expired counts the waits that ended at the deadline: each cost a
	// caller the whole timeout (tests count them instead of timing).
	expired atomic.Int64
}

type pendingRead struct {
	start time.Time
	done  chan struct{} // closed when the read returned
	val   any
	err   error
}

func newReadGate(timeout time.Duration) *readGate {
	if timeout <= 0 {
		timeout = defaultReadTimeout
	}
	return &readGate{timeout: timeout, pending: map[string]*pendingRead{}}
}

// do runs read for the device key, or joins the read of key already
// running, and waits at most the gate's timeout for it. The error matches
// ErrNoAnswer when the read did not return in time.
func (g *readGate) do(key string, read func() (any, error)) (any, error) {
	g.mu.Lock()
	p := g.pending[key]
	if p == nil {
		p = &pendingRead{start: time.Now(), done: make(chan struct{})}
		g.pending[key] = p
		go func() {
			p.val, p.err = read()
			g.mu.Lock()
			delete(g.pending, key)
			g.mu.Unlock()
			close(p.done)
		}()
	}
	g.mu.Unlock()
	t := time.NewTimer(g.timeout)
	defer t.Stop()
	select {
	case <-p.done:
		return p.val, p.err
	case <-t.C:
		g.expired.Add(1)
		return nil, fmt.Errorf("%w: %s: no answer to a read started %v ago", ErrNoAnswer, key, time.Since(p.start).Round(time.Millisecond))
	}
}
