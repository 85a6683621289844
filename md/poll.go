package md

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/go-mdraid/mdraid/sysfs"
)

// Poller is Discover for a caller that asks again and again: an exporter
// with its own Prometheus registry (md/metrics.NewCollector accepts a
// Poller), a controller's reconcile loop. Manager.Discover reads every
// member's superblock on every call, which keeps idle disks from spinning
// down and adds I/O to busy arrays when it runs every few seconds. A
// Poller reads an array's superblocks on its first report and then again
// only when sysfs shows that the array changed: its device, level,
// metadata, raid_disks, degraded count, layout, chunk or component size,
// sync action or array state (other than the moves between clean, active,
// active-idle and write-pending that every write makes), or one of its
// members' list, states, slots, bad-block counts or disks (serial, WWN,
// size, by-path port). Everything else in the
// report is read from sysfs on every call, as Discover reads it, so a
// failed member, a sync that starts or ends, a member added or removed
// shows in the next report.
//
// The trade-off: between those changes the superblock facts in a report
// are as of their last read. They are the array's identity (UUID, name,
// homehost, level and layout names), which no kernel changes while the
// array is assembled, each member's events, role and device UUID, and
// the bitmap's dirty count (Array.Bitmap), read with them. A
// member's Events therefore lag the disk by the clean and dirty marks
// the kernel writes (all members alike, so Stale is unaffected), and a
// superblock rewritten on the disk by something other than the array's
// kernel (a dd, a tool that writes a bound member) is not seen until
// sysfs changes or Reset is called; so is a member replaced between two
// calls, sync finished, by a disk with the same kernel name, device
// number, serial, WWN, size and port (a disk without a serial). A superblock that could not be read
// is read again on every call until it can be. For a report as fresh as
// the disk, as mdctl status gives, call Manager.Discover.
//
// A Poller is safe for concurrent use. Its memory holds only the arrays
// of the last report.
type Poller struct {
	m      *Manager
	mu     sync.Mutex
	arrays map[string]*pollMemory // by kernel name
	reads  atomic.Uint64
}

// NewPoller returns a Poller that reads the system through m.
func (m *Manager) NewPoller() *Poller {
	return &Poller{m: m, arrays: map[string]*pollMemory{}}
}

// Discover reports every md array as Manager.Discover does, reading the
// members' superblocks only as the Poller's documentation says.
func (p *Poller) Discover(ctx context.Context) (*Report, error) {
	return p.m.discover(ctx, p)
}

// SuperblockReads returns how many member superblocks p has read (or
// tried to) since it was made: a poller in steady state adds none.
func (p *Poller) SuperblockReads() uint64 { return p.reads.Load() }

// Reset forgets every superblock read: the next report reads them all.
func (p *Poller) Reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	clear(p.arrays)
}

// memory returns the memory of the array name, made on first use.
func (p *Poller) memory(name string) *pollMemory {
	p.mu.Lock()
	defer p.mu.Unlock()
	pm := p.arrays[name]
	if pm == nil {
		pm = &pollMemory{p: p}
		p.arrays[name] = pm
	}
	return pm
}

// forget drops the memory of arrays not among names (gone since).
func (p *Poller) forget(names []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for n := range p.arrays {
		if !slices.Contains(names, n) {
			delete(p.arrays, n)
		}
	}
}

// pollMemory is what a Poller keeps of one array: the sysfs facts its
// superblocks were read under (key), the members' names and the results.
type pollMemory struct {
	p       *Poller
	mu      sync.Mutex
	key     string
	names   []string
	results []sbResult
	// hit: the last superblocks call served remembered results.
	hit bool
	// bitmap is the bitmap read with the remembered superblocks.
	bitmap *ArrayBitmap
}

// bitmapOf is Manager.bitmapOf for s, whose superblocks pm served: the
// bitmap read with them when they were remembered, else read now (and
// remembered when it could be read).
func (pm *pollMemory) bitmapOf(m *Manager, s *snapshot) *ArrayBitmap {
	pm.mu.Lock()
	defer pm.mu.Unlock()
	if pm.hit && pm.bitmap != nil {
		return pm.bitmap
	}
	b := m.bitmapOf(s, s.newest())
	pm.bitmap = nil
	if pm.key != "" && (b == nil || b.Err == nil) {
		pm.bitmap = b
	}
	return b
}

// superblocks returns the superblocks of the members named (in order) of
// the snapshot s, whose sysfs facts are read: those remembered when s's
// facts are the ones they were read under, else read now. A result with
// an error is not remembered.
func (pm *pollMemory) superblocks(m *Manager, s *snapshot, names []string) func() []sbResult {
	key := pollKey(s)
	pm.mu.Lock()
	defer pm.mu.Unlock()
	pm.hit = pm.key == key && slices.Equal(pm.names, names)
	if pm.hit {
		res := slices.Clone(pm.results)
		return func() []sbResult { return res }
	}
	pm.p.reads.Add(uint64(len(names)))
	res := m.startSuperblocks(names, s.metadata)()
	pm.key, pm.names, pm.results = "", nil, nil
	if !slices.ContainsFunc(res, func(r sbResult) bool { return r.err != nil }) {
		pm.key, pm.names, pm.results = key, slices.Clone(names), res
	}
	return func() []sbResult { return res }
}

// pollKey is the sysfs facts of s under which its members' superblocks
// stay as read (see Poller).
func pollKey(s *snapshot) string {
	var b strings.Builder
	state := s.state
	switch state {
	case sysfs.StateClean, sysfs.StateActive, sysfs.StateActiveIdle, sysfs.StateWritePending:
		state = "running"
	}
	deg := "-"
	if s.degraded != nil {
		deg = fmt.Sprint(*s.degraded)
	}
	fmt.Fprintf(&b, "%v %s %s %q %d %s %d %d %d %q\n", s.dev, state, s.level, s.metadata.Raw,
		s.raidDisks, deg, s.layout, s.chunk, s.component, s.action)
	for _, ms := range s.members {
		// The disk's identity (serial, WWN, size, port), read from
		// sysfs on every call, tells a disk swapped in under the same
		// kernel name and device number between two calls.
		fmt.Fprintf(&b, "%s %v %d %q %d %t %q %q %d %q\n", ms.Device, ms.DevNum, ms.Slot, ms.state, ms.BadBlocks, ms.left,
			ms.Serial, ms.WWN, ms.SizeBytes, ms.ByPath)
	}
	return b.String()
}
