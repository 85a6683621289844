package md

import (
	"context"
	"io"
	"sync/atomic"
	"testing"
	"time"

	qt "github.com/frankban/quicktest"
	"github.com/go-mdraid/mdraid/internal/fixture"
)

// stalledDevice is a member whose reads block until release is closed,
// as a disk that stopped answering does.
type stalledDevice struct {
	release <-chan struct{}
	reads   *atomic.Int32
}

func (d stalledDevice) ReadAt(p []byte, off int64) (int, error) {
	d.reads.Add(1)
	<-d.release
	return 0, io.ErrUnexpectedEOF
}
func (d stalledDevice) Close() error         { return nil }
func (d stalledDevice) Size() (int64, error) { return 64 << 20, nil }

// TestDiscoverStalledMember (issue 15 item 9): one member whose reads
// block must not stall the report. Discover returns while the read is
// still blocked, having waited out the read deadline once per pass (the
// gate counts the waits that expired: a count, not a clock, so a loaded
// host cannot make it flake), the stalled member is reported as not
// answering, the other members and arrays are complete, and a second
// pass does not pile another blocked read onto the stalled disk.
func TestDiscoverStalledMember(t *testing.T) {
	c := qt.New(t)
	m := fixtureManager(t, fixture.Named(t, "raid5"))
	const timeout = 200 * time.Millisecond
	m.reads = newReadGate(timeout)
	release := make(chan struct{})
	defer close(release)
	var stalledReads atomic.Int32
	open := m.open
	m.open = func(name string) (device, error) {
		if name == "vdb" {
			return stalledDevice{release: release, reads: &stalledReads}, nil
		}
		return open(name)
	}

	for pass := 0; pass < 2; pass++ {
		before := m.reads.expired.Load()
		r, err := m.Discover(context.Background())
		c.Assert(err, qt.IsNil)
		c.Assert(m.reads.expired.Load()-before, qt.Equals, int64(1), qt.Commentf("waits that ran to the deadline in pass %d", pass))
		c.Assert(r.Arrays, qt.HasLen, 1)
		a := r.Arrays[0]
		var stalled, complete int
		for _, s := range a.Slots {
			mem := s.Member
			c.Assert(mem, qt.Not(qt.IsNil))
			if mem.Device == "vdb" {
				stalled++
				c.Check(mem.Error, qt.Matches, `superblock: md: the device did not answer: .*vdb superblock 1.2: no answer to a read started .* ago`)
				c.Check(mem.Events, qt.IsNil)
				continue
			}
			c.Check(mem.Error, qt.Equals, "")
			c.Check(mem.Events, qt.Not(qt.IsNil))
			complete++
		}
		c.Check(stalled, qt.Equals, 1)
		c.Check(complete, qt.Equals, a.RaidDisks-1)
		c.Check(a.UUID, qt.Not(qt.Equals), "")
	}
	c.Check(stalledReads.Load(), qt.Equals, int32(1))
}

// TestReadGateLateAnswer: a read that answers after the deadline
// fails that caller with ErrNoAnswer; once the disk answers, the next
// caller gets the answer.
func TestReadGateLateAnswer(t *testing.T) {
	c := qt.New(t)
	g := newReadGate(50 * time.Millisecond)
	release := make(chan struct{})
	read := func() (any, error) { <-release; return "sb", nil }
	_, err := g.do("vdb", read)
	c.Assert(err, qt.ErrorIs, ErrNoAnswer)
	close(release)
	v, err := g.do("vdb", read)
	c.Assert(err, qt.IsNil)
	c.Check(v, qt.Equals, "sb")
}
