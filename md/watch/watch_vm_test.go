//go:build vmtest

package watch

import (
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	qt "github.com/frankban/quicktest"
	"golang.org/x/sys/unix"

	"github.com/go-mdraid/mdraid/internal/vmtest/guest"
	"github.com/go-mdraid/mdraid/md"
)

// expectEvent waits for an event of type want about array, skipping
// others (returned too), and returns it with the time it arrived.
func expectEvent(t testing.TB, ch <-chan Event, array string, want EventType, timeout time.Duration) (Event, time.Time, []Event) {
	t.Helper()
	var skipped []Event
	deadline := time.After(timeout)
	for {
		select {
		case e, ok := <-ch:
			if !ok {
				t.Fatalf("watch closed while waiting for %s", want)
			}
			at := time.Now()
			t.Logf("event %s", e)
			if e.Type == want && e.Array == array {
				return e, at, skipped
			}
			skipped = append(skipped, e)
		case <-deadline:
			t.Fatalf("no %s for %s within %v (saw %v)", want, array, timeout, skipped)
		}
	}
}

// drain logs and drops events until none came for quiet.
func drain(t testing.TB, ch <-chan Event, quiet time.Duration) {
	for {
		select {
		case e := <-ch:
			t.Logf("event %s", e)
		case <-time.After(quiet):
			return
		}
	}
}

func fdCount(t testing.TB) int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// latencyArrays is how many arrays TestVMWatchLatency runs: the one it
// fails a member of, and others that stay as they are.
const latencyArrays = 8

// halves partitions each disk in two (MBR, partitions 1 and 2 of about
// half the disk each) and returns the partitions' device paths, [i][0]
// and [i][1] on disks[i]. The partitions are gone again when the test
// ends (after its arrays are stopped).
func halves(t *testing.T, c *qt.C, disks []guest.Disk) [][2]string {
	var out [][2]string
	for _, d := range disks {
		sectors := uint32(d.Size / 512)
		half := sectors / 2
		mbr := make([]byte, 512)
		for i, p := range [][2]uint32{{2048, half - 2048}, {half, sectors - half - 2048}} {
			e := mbr[446+16*i:]
			e[4] = 0x83
			binary.LittleEndian.PutUint32(e[8:], p[0])
			binary.LittleEndian.PutUint32(e[12:], p[1])
		}
		mbr[510], mbr[511] = 0x55, 0xaa
		writeMBR(c, d.Path, mbr)
		t.Cleanup(func() {
			// After the arrays are stopped (cleanups run last first),
			// before the disks are reset.
			guest.StopAll()
			writeMBR(c, d.Path, make([]byte, 512))
		})
		out = append(out, [2]string{d.Path + "1", d.Path + "2"})
	}
	for _, p := range out {
		for _, part := range p {
			waitNode(c, part)
		}
	}
	return out
}

// writeMBR writes sector 0 of dev and has the kernel read the partition
// table again.
func writeMBR(c *qt.C, dev string, mbr []byte) {
	f, err := os.OpenFile(dev, os.O_RDWR, 0)
	c.Assert(err, qt.IsNil)
	defer f.Close()
	_, err = f.WriteAt(mbr, 0)
	c.Assert(err, qt.IsNil)
	c.Assert(unix.IoctlSetInt(int(f.Fd()), unix.BLKRRPART, 0), qt.IsNil)
}

// waitNode waits for the device node devtmpfs makes a moment after
// BLKRRPART added the partition.
func waitNode(c *qt.C, path string) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := os.Stat(path)
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			c.Fatalf("%s not made within 10s: %v", path, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// percentile returns the p-th percentile (nearest rank) of sorted.
func percentile(sorted []time.Duration, p int) time.Duration {
	i := (p*len(sorted)+99)/100 - 1
	return sorted[max(i, 0)]
}

// TestVMWatchLatency measures how long the watcher takes to report a
// member failure written to dev-*/state, with latencyArrays RAID1 arrays
// (each on partitions of two scratch disks, with internal bitmaps) of
// which one changes: the kernel notifies the member's state file (and
// /proc/mdstat) and the event follows. The goal is 50 ms, whatever the
// number of arrays that did not change. The numbers are logged, not
// asserted: this is a benchmark, under TCG emulation. The member is put
// back with re-add (the bitmap makes it instant) and failed again, for
// several samples.
func TestVMWatchLatency(t *testing.T) {
	c := qt.New(t)
	disks := guest.ScratchDisks(t, latencyArrays)
	parts := halves(t, c, disks)
	var devs []string
	for i := range latencyArrays {
		dev := fmt.Sprintf("/dev/md/lat%d", i)
		guest.Mdadm(c, "--create", dev, "--run", "--assume-clean", "--level=1", "--raid-devices=2",
			"--bitmap=internal", parts[i][0], parts[(i+1)%latencyArrays][1])
		devs = append(devs, dev)
	}
	t.Cleanup(func() {
		for _, dev := range devs {
			guest.RunMdadm("--stop", dev)
		}
	})
	// The array that fails is the one in the middle of the list, on
	// disks[3] and disks[4].
	const failing = 3
	dev, array := devs[failing], guest.ArrayName(c, devs[failing])
	member := parts[failing][0]
	memberName := filepath.Base(member)

	m, err := md.Open(nil)
	c.Assert(err, qt.IsNil)
	before := fdCount(t)
	ctx, cancel := context.WithCancel(context.Background())
	var logs logBuffer
	ready := make(chan struct{})
	ch, err := Start(ctx, m, &Options{Rescan: time.Hour, Ready: func() { close(ready) },
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	c.Assert(err, qt.IsNil)
	defer func() { t.Logf("watch log:\n%s", logs.String()) }()
	<-ready // the first snapshot is taken and its files are armed

	var lat []time.Duration
	state := guest.SysPath(array, "dev-"+memberName, "state")
	for i := range 10 {
		start := time.Now()
		c.Assert(guest.WriteFile(state, "faulty"), qt.IsNil)
		t.Logf("faulty written at %s in %v", start.Format("15:04:05.000000"), time.Since(start))
		e, at, _ := expectEvent(t, ch, array, Fail, 5*time.Second)
		lat = append(lat, at.Sub(start))
		c.Check(e.Member, qt.Equals, memberName)
		c.Check(*e.Slot, qt.Equals, 0)
		if i == 0 {
			expectEvent(t, ch, array, DegradedArray, 5*time.Second)
		}
		guest.Mdadm(c, dev, "--remove", member)
		expectEvent(t, ch, array, MemberRemoved, 5*time.Second)
		// With the bitmap the re-added member is in sync at once.
		guest.Mdadm(c, dev, "--re-add", member)
		expectEvent(t, ch, array, MemberAdded, 5*time.Second)
		guest.WaitSync(c, array)
		// Quiet for longer than settleGap, so that the watcher's look
		// again is over: what is measured is a wake-up of a watcher
		// that waits, not one that finishes a scan first.
		drain(t, ch, 3*settleGap)
	}
	// What a snapshot costs here, for the record: every array, and the
	// one that changed.
	var snaps, ones []time.Duration
	for range 5 {
		start := time.Now()
		_, err := m.Discover(ctx)
		c.Assert(err, qt.IsNil)
		snaps = append(snaps, time.Since(start))
		start = time.Now()
		_, err = m.DiscoverNames(ctx, array)
		c.Assert(err, qt.IsNil)
		ones = append(ones, time.Since(start))
	}
	t.Logf("LATENCY one snapshot of this system (%d arrays): Discover %v; DiscoverNames(%s) %v", latencyArrays, snaps, array, ones)
	sorted := slices.Clone(lat)
	slices.Sort(sorted)
	t.Logf("LATENCY faulty->Fail event, %d RAID1 arrays, %d samples: min %v median %v p90 %v max %v; samples %v",
		latencyArrays, len(lat), sorted[0], percentile(sorted, 50), percentile(sorted, 90), sorted[len(sorted)-1], lat)

	cancel()
	for range ch {
	}
	c.Assert(fdCount(t), qt.Equals, before, qt.Commentf("watch left descriptors open"))
}

// TestVMWatchSequence follows an array's life: it appears (NewArray, seen
// through /proc/mdstat's notification), a member fails and is replaced by
// a blank disk, the rebuild runs, and the array is stopped: NewArray, then
// Fail and DegradedArray, MemberAdded, RebuildStarted, progress steps,
// SpareActive and RebuildFinished, in that order, then DeviceDisappeared.
func TestVMWatchSequence(t *testing.T) {
	c := qt.New(t)
	disks := guest.ScratchDisks(t, 3)
	dev := "/dev/md/seq"

	m, err := md.Open(nil)
	c.Assert(err, qt.IsNil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var logs logBuffer
	ready := make(chan struct{})
	ch, err := Start(ctx, m, &Options{Rescan: time.Hour, Ready: func() { close(ready) }, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	c.Assert(err, qt.IsNil)
	<-ready

	guest.Mdadm(c, "--create", dev, "--run", "--assume-clean", "--level=1", "--raid-devices=2",
		disks[0].Path, disks[1].Path)
	array := guest.ArrayName(c, dev)
	expectEvent(t, ch, array, NewArray, 5*time.Second)
	drain(t, ch, 300*time.Millisecond)

	var seq []string
	add := func(e Event) { seq = append(seq, string(e.Type)) }
	guest.Mdadm(c, dev, "--fail", disks[1].Path)
	e, _, skipped := expectEvent(t, ch, array, Fail, 5*time.Second)
	c.Assert(skipped, qt.HasLen, 0)
	add(e)
	e, _, _ = expectEvent(t, ch, array, DegradedArray, 5*time.Second)
	add(e)
	guest.Mdadm(c, dev, "--remove", disks[1].Path)
	expectEvent(t, ch, array, MemberRemoved, 5*time.Second)

	// The replacement, rebuilt slowly enough to see progress: 64 MiB at
	// 16 MB/s takes about 4 s, and the kernel moves sync_completed every
	// 1/16 of the way.
	guest.WriteAttr(c, array, "sync_speed_max", "16000")
	guest.Mdadm(c, dev, "--add", disks[2].Path)
	deadline := time.After(60 * time.Second)
	for !slices.Contains(seq, string(SpareActive)) || !slices.Contains(seq, string(RebuildFinished)) {
		select {
		case e := <-ch:
			t.Logf("event %s", e)
			if e.Array == array {
				add(e)
			}
		case <-deadline:
			t.Fatalf("rebuild not followed to the end; saw %v", seq)
		}
	}
	t.Logf("SEQUENCE %v", seq)
	guest.WriteAttr(c, array, "sync_speed_max", "system")

	// The order: Fail, DegradedArray, MemberAdded, RebuildStarted, then
	// increasing Rebuild steps, then SpareActive and RebuildFinished.
	c.Assert(seq[:4], qt.DeepEquals, []string{"Fail", "DegradedArray", "MemberAdded", "RebuildStarted"})
	steps := seq[4 : len(seq)-2]
	c.Assert(len(steps) >= 2, qt.IsTrue, qt.Commentf("progress steps %v", steps))
	c.Assert(slices.IsSorted(steps), qt.IsTrue, qt.Commentf("progress steps %v", steps))
	for _, s := range steps {
		c.Assert(s, qt.Matches, "Rebuild[2468]0")
	}
	c.Assert(seq[len(seq)-2:], qt.DeepEquals, []string{"SpareActive", "RebuildFinished"})
	guest.Mdadm(c, "--stop", dev)
	_, _, skipped = expectEvent(t, ch, array, DeviceDisappeared, 5*time.Second)
	c.Assert(skipped, qt.HasLen, 0, qt.Commentf("a stop is no failure"))
	cancel()
	for range ch {
	}
	if s := logs.String(); s != "" {
		t.Logf("watch log:\n%s", s)
	}
}

// logBuffer collects the watcher's log; it is written from the watch
// goroutine.
type logBuffer struct {
	mu sync.Mutex
	b  []byte
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b = append(l.b, p...)
	return len(p), nil
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return string(l.b)
}
