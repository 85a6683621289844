//go:build linux

package watch

import (
	"context"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	qt "github.com/frankban/quicktest"
	"golang.org/x/sys/unix"

	"github.com/go-mdraid/mdraid/md"
	capture "github.com/go-mdraid/mdraid/md/mdtest"
	"github.com/go-mdraid/mdraid/sysfs"
)

// twoMirrors rebuilds a captured healthy raid1 (md0, on vda and vdb) and
// adds md1, a copy of md0's sysfs directory (the same members, which
// Discover does not mind). It returns a Manager on it, dated by clock,
// and the sysfs directory of each array's md/ (and "sys": the root).
func twoMirrors(t *testing.T, clock func() time.Time) (*md.Manager, map[string]string) {
	t.Helper()
	rebuilt := capture.Capture(t, "raid1-v1.2")
	sys, dev := rebuilt.SysRoot(), rebuilt.DevRoot()
	virt := filepath.Join(sys, "devices", "virtual", "block")
	if err := copyTree(filepath.Join(virt, "md0"), filepath.Join(virt, "md1")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../devices/virtual/block/md1", filepath.Join(sys, "block", "md1")); err != nil {
		t.Fatal(err)
	}
	m, err := md.Open(&md.Config{SysRoot: sys, DevRoot: dev, Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	return m, map[string]string{"md0": filepath.Join(virt, "md0", "md"), "md1": filepath.Join(virt, "md1", "md"), "sys": sys}
}

// copyTree copies the directory src to dst, symbolic links as links.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		to := filepath.Join(dst, rel)
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			l, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(l, to)
		case d.IsDir():
			return os.MkdirAll(to, 0o755)
		}
		// A write-only attribute (mode 0200, bitmap_set_bits) is read
		// by root alone: make it readable for its owner first.
		if fi, err := d.Info(); err == nil && fi.Mode().Perm()&0o400 == 0 {
			if err := os.Chmod(p, fi.Mode().Perm()|0o400); err != nil {
				return err
			}
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(to, b, 0o644)
	})
}

// steppedWatch runs a watcher whose waits the test answers one by one:
// step returns the timeout of the next wait, once the scan before it has
// sent all its events, which it returns as well.
type steppedWatch struct {
	t        *testing.T
	clockMu  sync.Mutex
	now      time.Time // the loop's clock: it moves only by advance (and by the waits' timeouts)
	ch       chan Event
	timeouts chan time.Duration
	answers  chan wakeup
	cancel   context.CancelFunc
	mu       sync.Mutex
	reports  []*md.Report // every snapshot handed to Options.Snapshot
	queued   []int        // for each of them, the events sent and not yet read when it was handed over
}

func startStepped(t *testing.T, m *md.Manager) *steppedWatch {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s := &steppedWatch{t: t, ch: make(chan Event, 64), timeouts: make(chan time.Duration), answers: make(chan wakeup), cancel: cancel}
	o := (&Options{Rescan: time.Hour, Mdstat: filepath.Join(t.TempDir(), "no-mdstat"),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Snapshot: func(r *md.Report, err error) {
			if err != nil {
				t.Errorf("snapshot: %v", err)
				return
			}
			s.mu.Lock()
			defer s.mu.Unlock()
			s.reports = append(s.reports, r)
			s.queued = append(s.queued, len(s.ch))
		}}).withDefaults()
	s.now = t0
	w := &watcher{m: m, o: o, refused: map[string]string{}, clock: func() time.Time {
		s.clockMu.Lock()
		defer s.clockMu.Unlock()
		return s.now
	}}
	if err := w.open(); err != nil {
		t.Fatal(err)
	}
	w.wait = func(timeout time.Duration) (wakeup, bool) {
		select {
		case s.timeouts <- timeout:
		case <-ctx.Done():
			return wakeup{}, false
		}
		select {
		case u := <-s.answers:
			if !u.woke() {
				// The timeout passed.
				s.advance(timeout)
			}
			return u, true
		case <-ctx.Done():
			return wakeup{}, false
		}
	}
	go w.run(ctx, s.ch)
	t.Cleanup(func() {
		cancel()
		for range s.ch {
		}
	})
	return s
}

// step waits for the watcher's next wait and returns its timeout and the
// events sent since the last step, compactly (brief).
func (s *steppedWatch) step() (time.Duration, []string) {
	s.t.Helper()
	var timeout time.Duration
	select {
	case timeout = <-s.timeouts:
	case <-time.After(10 * time.Second):
		s.t.Fatal("the watcher did not wait again within 10s")
	}
	// The scan sent its events before it waited; nobody else reads ch.
	var evs []Event
	for len(s.ch) > 0 {
		evs = append(evs, <-s.ch)
	}
	return timeout, brief(evs)
}

// wake answers the pending wait.
func (s *steppedWatch) wake(u wakeup) { s.answers <- u }

// advance moves the loop's clock on.
func (s *steppedWatch) advance(d time.Duration) {
	s.clockMu.Lock()
	defer s.clockMu.Unlock()
	s.now = s.now.Add(d)
}

func arraysWoken(names ...string) wakeup {
	var u wakeup
	for _, n := range names {
		u.add(n)
	}
	return u
}

// fail marks vdb faulty in the array whose md/ directory is dir, as the
// kernel shows it at once after md_error.
func fail(t *testing.T, dir string) {
	t.Helper()
	for f, v := range map[string]string{"dev-vdb/state": "faulty\n", "degraded": "1\n"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func mentions(evs []string, array string) bool {
	return slices.ContainsFunc(evs, func(e string) bool { return strings.Contains(e, " "+array) })
}

// TestWakeReadsOnlyTheWokenArray: a notification on one array's files
// reads that array again and no other (a change to md0 that nothing
// announced stays unseen), reports its Fail, and dates the snapshot by
// the Manager's clock with the other array as before and in its place;
// the look again after settleGap reads that array alone too. A
// notification of /proc/mdstat alone, which names no array, reads every
// array and finds md0's Fail.
func TestWakeReadsOnlyTheWokenArray(t *testing.T) {
	c := qt.New(t)
	var clockMu sync.Mutex
	tick := t0
	clock := func() time.Time {
		clockMu.Lock()
		defer clockMu.Unlock()
		tick = tick.Add(time.Second)
		return tick
	}
	m, dirs := twoMirrors(t, clock)
	s := startStepped(t, m)

	timeout, evs := s.step()
	c.Assert(evs, qt.HasLen, 0, qt.Commentf("two healthy mirrors: %v", evs))
	c.Assert(timeout, qt.Equals, time.Hour)

	fail(t, dirs["md0"])
	fail(t, dirs["md1"])
	s.wake(arraysWoken("md1"))
	timeout, evs = s.step()
	c.Assert(evs, qt.Contains, "Fail md1 vdb slot=1")
	c.Assert(mentions(evs, "md0"), qt.IsFalse, qt.Commentf("md0 was read: %v", evs))
	c.Assert(timeout, qt.Equals, settleGap)

	s.mu.Lock()
	first, partial := s.reports[0], s.reports[len(s.reports)-1]
	s.mu.Unlock()
	c.Assert(partial.Arrays, qt.HasLen, 2)
	c.Assert(partial.Arrays[0].Device, qt.Equals, "md0")
	c.Assert(partial.Arrays[1].Device, qt.Equals, "md1")
	c.Assert(partial.Arrays[0], qt.DeepEquals, first.Arrays[0])
	c.Assert(partial.Arrays[1].Availability, qt.Equals, md.Degraded)
	c.Assert(first.Arrays[1].Availability, qt.Equals, md.Online, qt.Commentf("the first snapshot was changed"))
	c.Assert(partial.Time.After(first.Time), qt.IsTrue, qt.Commentf("first %v, then %v", first.Time, partial.Time))
	clockMu.Lock()
	c.Assert(partial.Time, qt.Equals, tick.UTC(), qt.Commentf("not the Manager's clock"))
	clockMu.Unlock()

	s.wake(wakeup{}) // settleGap passed: md1 is looked at again, alone
	timeout, evs = s.step()
	c.Assert(evs, qt.HasLen, 0)
	c.Assert(timeout > settleGap, qt.IsTrue, qt.Commentf("%v", timeout))

	s.wake(wakeup{mdstat: true})
	_, evs = s.step()
	c.Assert(evs, qt.Contains, "Fail md0 vdb slot=1")
	c.Assert(mentions(evs, "md1"), qt.IsFalse, qt.Commentf("%v", evs))
}

// TestDueLookReadAfterTheWokenArray: when a wake-up comes as a look
// again is due, the arrays that woke it are read first, and the look
// right after, without waiting: the look's cost does not add to the
// latency of the change that woke the watcher.
func TestDueLookReadAfterTheWokenArray(t *testing.T) {
	c := qt.New(t)
	m, dirs := twoMirrors(t, nil)
	s := startStepped(t, m)
	s.step()

	s.wake(wakeup{all: true}) // a uevent, say: every array is looked at again later
	timeout, evs := s.step()
	c.Assert(evs, qt.HasLen, 0)
	c.Assert(timeout, qt.Equals, settleGap)

	fail(t, dirs["md0"]) // not announced: the look again finds it
	fail(t, dirs["md1"])
	s.advance(settleGap) // the look is due when md1 wakes the watcher
	s.wake(arraysWoken("md1"))
	_, evs = s.step()
	i0, i1 := slices.Index(evs, "Fail md0 vdb slot=1"), slices.Index(evs, "Fail md1 vdb slot=1")
	c.Assert(i1 >= 0 && i0 > i1, qt.IsTrue, qt.Commentf("md1's Fail, then md0's, before the next wait: %v", evs))
}

// TestSettleLookSurvivesAnotherWake: a notification on md0 during the
// settle gap of md1 reads md0 alone and does not cancel md1's look
// again: a change the kernel finishes on md1 afterwards, with no
// notification (the member's directory goes), is still reported when
// that look is due.
func TestSettleLookSurvivesAnotherWake(t *testing.T) {
	c := qt.New(t)
	m, dirs := twoMirrors(t, nil)
	s := startStepped(t, m)
	s.step()

	fail(t, dirs["md1"])
	s.wake(arraysWoken("md1"))
	timeout, evs := s.step()
	c.Assert(evs, qt.Contains, "Fail md1 vdb slot=1")
	c.Assert(timeout, qt.Equals, settleGap)

	// Within the gap, a member of md0 fails.
	fail(t, dirs["md0"])
	s.wake(arraysWoken("md0"))
	timeout, evs = s.step()
	c.Assert(evs, qt.Contains, "Fail md0 vdb slot=1")
	c.Assert(mentions(evs, "md1"), qt.IsFalse, qt.Commentf("%v", evs))
	c.Assert(timeout <= settleGap, qt.IsTrue, qt.Commentf("%v", timeout))

	// md1's member goes, with no notification of its own.
	c.Assert(os.RemoveAll(filepath.Join(dirs["md1"], "dev-vdb")), qt.IsNil)
	s.wake(wakeup{}) // md1's look is due first
	_, evs = s.step()
	c.Assert(evs, qt.Contains, "MemberRemoved md1 vdb slot=1")
}

// TestWakeFallsBackToEveryArray: what a wake-up names cannot always be
// read alone; then every array is read, as before: an array that is not
// there any more (it stopped), an array that appeared since, and a
// wake-up that names no array (a uevent, a file that went away).
func TestWakeFallsBackToEveryArray(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, dirs map[string]string) // besides md0's Fail
		wake   wakeup
		want   string // besides md0's Fail
	}{{
		name: "woken array gone",
		change: func(t *testing.T, dirs map[string]string) {
			if err := os.Remove(filepath.Join(dirs["sys"], "block", "md1")); err != nil {
				t.Fatal(err)
			}
		},
		wake: arraysWoken("md1"),
		want: "DeviceDisappeared md1",
	}, {
		name: "another array appeared",
		change: func(t *testing.T, dirs map[string]string) {
			virt := filepath.Dir(filepath.Dir(dirs["md0"]))
			if err := copyTree(filepath.Join(virt, "md0"), filepath.Join(virt, "md2")); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink("../devices/virtual/block/md2", filepath.Join(dirs["sys"], "block", "md2")); err != nil {
				t.Fatal(err)
			}
		},
		wake: arraysWoken("md1"),
		want: "NewArray md2",
	}, {
		name:   "not an array",
		change: func(*testing.T, map[string]string) {},
		wake:   arraysWoken("md9"),
	}, {
		name:   "uevent or a file gone",
		change: func(*testing.T, map[string]string) {},
		wake:   wakeup{all: true},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			c := qt.New(t)
			m, dirs := twoMirrors(t, nil)
			s := startStepped(t, m)
			s.step()
			fail(t, dirs["md0"])
			tc.change(t, dirs)
			s.wake(tc.wake)
			_, evs := s.step()
			c.Assert(evs, qt.Contains, "Fail md0 vdb slot=1")
			if tc.want != "" {
				c.Assert(evs, qt.Contains, tc.want)
			}
		})
	}
}

// TestNoteNamesTheArray: a notified file of an array names that array; a
// file the set does not know, one that cannot be read any more (it is
// closed and forgotten) and a uevent name every array; /proc/mdstat is
// noted as such.
func TestNoteNamesTheArray(t *testing.T) {
	c := qt.New(t)
	o := (&Options{Mdstat: filepath.Join(t.TempDir(), "no-mdstat")}).withDefaults()
	w := &watcher{o: o}
	c.Assert(w.open(), qt.IsNil)
	p := w.sys
	defer p.close()
	dir := t.TempDir()
	open := func(path string) int {
		t.Helper()
		fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		return fd
	}
	file := filepath.Join(dir, "state")
	c.Assert(os.WriteFile(file, []byte("in_sync\n"), 0o644), qt.IsNil)
	known := open(file)
	p.files[file], p.paths[known], p.owner[known] = known, file, "md3"
	gone := open(dir) // reading a directory fails, as a deleted sysfs node does
	p.files[dir], p.paths[gone], p.owner[gone] = gone, dir, "md4"
	stranger := open(file)
	defer unix.Close(stranger)
	mdstat := open(file)
	defer unix.Close(mdstat)
	p.mdstat = mdstat
	defer func() { p.mdstat = -1 }()

	var u wakeup
	c.Assert(p.note(known, &u, o.Logger), qt.IsTrue)
	c.Assert(u.all || u.mdstat, qt.IsFalse)
	c.Assert(u.names(), qt.DeepEquals, []string{"md3"})

	// /proc/mdstat names the arrays whose lines changed since it was
	// last read; when none did, it names every array.
	c.Assert(os.WriteFile(file, []byte(mdstatTwo), 0o644), qt.IsNil)
	p.mdstatText = mdstatArrays([]byte(mdstatTwo))
	c.Assert(os.WriteFile(file, []byte(strings.Replace(mdstatTwo, "vdd[1]", "vdd[1](F)", 1)), 0o644), qt.IsNil)
	u = wakeup{}
	c.Assert(p.note(mdstat, &u, o.Logger), qt.IsTrue)
	c.Assert(u.mdstat && !u.all, qt.IsTrue)
	c.Assert(u.names(), qt.DeepEquals, []string{"md1"})
	u = wakeup{}
	c.Assert(p.note(mdstat, &u, o.Logger), qt.IsTrue)
	c.Assert(u.mdstat && u.all, qt.IsTrue, qt.Commentf("mdstat unchanged must read every array"))
	c.Assert(u.scan().names(), qt.IsNil)

	u = wakeup{}
	c.Assert(p.note(stranger, &u, o.Logger), qt.IsTrue)
	c.Assert(u.all, qt.IsTrue)

	u = wakeup{}
	c.Assert(p.note(gone, &u, o.Logger), qt.IsTrue)
	c.Assert(u.all, qt.IsTrue)
	_, still := p.owner[gone]
	c.Assert(still, qt.IsFalse, qt.Commentf("a file that cannot be read is dropped"))
	_, still = p.files[dir]
	c.Assert(still, qt.IsFalse)

	c.Assert(p.note(p.stopfd, &u, o.Logger), qt.IsFalse)
}

// mdstatTwo is /proc/mdstat with two arrays, md1 being rebuilt.
const mdstatTwo = `Personalities : [raid1] [linear] [raid0] [raid6] [raid5] [raid4] [raid10] 
md1 : active raid1 vdd[1] vdc[0]
      64512 blocks super 1.2 [2/1] [U_]
      [===>.................]  recovery = 18.7% (12160/64512) finish=0.0min speed=12160K/sec
      bitmap: 1/1 pages [4KB], 65536KB chunk

md0 : active raid1 vdb[1] vda[0]
      64512 blocks super 1.2 [2/2] [UU]
      
unused devices: <none>
`

// TestMdstatChanged: the arrays whose lines in /proc/mdstat differ,
// those that came and went included; nothing else in the text (the
// personalities, the spacing) names an array.
func TestMdstatChanged(t *testing.T) {
	c := qt.New(t)
	two := mdstatArrays([]byte(mdstatTwo))
	c.Assert(two, qt.HasLen, 2)
	c.Assert(two["md0"], qt.Equals, "md0 : active raid1 vdb[1] vda[0]\n64512 blocks super 1.2 [2/2] [UU]\n")
	c.Assert(two["md1"], qt.Equals, "md1 : active raid1 vdd[1] vdc[0]\n64512 blocks super 1.2 [2/1] [U_]\nsync recovery")
	sorted := func(s []string) []string { slices.Sort(s); return s }
	for _, tc := range []struct {
		name, text string
		want       []string
	}{
		{"same", mdstatTwo, nil},
		{"personalities", strings.Replace(mdstatTwo, "[raid10] ", "[raid10] [multipath] ", 1), nil},
		{"progress", strings.Replace(strings.Replace(mdstatTwo, "18.7%", "25.0%", 1), "speed=12160K", "speed=13000K", 1), nil},
		{"bitmap pages", strings.Replace(mdstatTwo, "1/1 pages [4KB]", "0/1 pages [0KB]", 1), nil},
		{"sync ended", strings.Replace(mdstatTwo, "      [===>.................]  recovery = 18.7% (12160/64512) finish=0.0min speed=12160K/sec\n", "", 1), []string{"md1"}},
		{"sync pending", strings.Replace(mdstatTwo, "[UU]\n", "[UU]\n        resync=PENDING\n", 1), []string{"md0"}},
		{"check instead", strings.Replace(mdstatTwo, "recovery = ", "check = ", 1), []string{"md1"}},
		{"member failed", strings.Replace(mdstatTwo, "vdb[1] vda[0]", "vdb[1](F) vda[0]", 1), []string{"md0"}},
		{"array stopped", strings.Replace(mdstatTwo, "md0 : active raid1 vdb[1] vda[0]\n      64512 blocks super 1.2 [2/2] [UU]\n      \n", "", 1), []string{"md0"}},
		{"array started", strings.Replace(mdstatTwo, "unused", "md2 : active raid1 vdf[1] vde[0]\n      64512 blocks super 1.2 [2/2] [UU]\n\nunused", 1), []string{"md2"}},
		{"both", strings.Replace(strings.Replace(mdstatTwo, "[2/1] [U_]", "[2/2] [UU]", 1), "[2/2] [UU]\n      \n", "[2/1] [U_]\n      \n", 1), []string{"md0", "md1"}},
		{"empty", "", []string{"md0", "md1"}},
	} {
		c.Run(tc.name, func(c *qt.C) {
			c.Assert(sorted(mdstatChanged(two, mdstatArrays([]byte(tc.text)))), qt.DeepEquals, tc.want)
		})
	}
}

// FuzzMdstatArrays: any text splits without a panic, and a text compared
// with itself names no array.
func FuzzMdstatArrays(f *testing.F) {
	f.Add([]byte(mdstatTwo))
	f.Add([]byte("md0 : x\n = 5%\n\t= %\nmd0 : again\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		a := mdstatArrays(b)
		if ch := mdstatChanged(a, mdstatArrays(b)); len(ch) != 0 {
			t.Fatalf("the same text changed %v", ch)
		}
	})
}

// TestEarlyFailBeforeTheScan: a member's state file that notified reads
// "faulty", and the Fail is sent from that read, before the scan of its
// array takes its snapshot; the scan then reports the rest (the array
// degraded) and not the Fail again. A wake-up that brings no state (md0)
// is reported by the scan alone, and a state that changes nothing sends
// nothing. The earlier snapshot is not changed.
func TestEarlyFailBeforeTheScan(t *testing.T) {
	c := qt.New(t)
	m, dirs := twoMirrors(t, nil)
	s := startStepped(t, m)
	s.step()

	fail(t, dirs["md1"])
	u := arraysWoken("md1")
	u.addState("md1", "vdb", sysfs.MemberState{sysfs.FlagFaulty})
	s.wake(u)
	_, evs := s.step()
	c.Assert(evs, qt.DeepEquals, []string{"Fail md1 vdb slot=1", "DegradedArray md1"})
	s.mu.Lock()
	c.Assert(s.queued[len(s.queued)-1], qt.Equals, 1, qt.Commentf("the Fail was not sent before the scan's snapshot"))
	first := s.reports[0]
	s.mu.Unlock()
	c.Assert(first.Arrays[1].Members()[1].Flags, qt.DeepEquals, sysfs.MemberState{sysfs.FlagInSync}, qt.Commentf("the first snapshot was changed"))

	fail(t, dirs["md0"])
	s.wake(arraysWoken("md0"))
	_, evs = s.step()
	c.Assert(evs, qt.DeepEquals, []string{"Fail md0 vdb slot=1", "DegradedArray md0"})
	s.mu.Lock()
	c.Assert(s.queued[len(s.queued)-1], qt.Equals, 0)
	s.mu.Unlock()

	u = arraysWoken("md1")
	u.addState("md1", "vdb", sysfs.MemberState{sysfs.FlagFaulty})
	s.wake(u)
	_, evs = s.step()
	c.Assert(evs, qt.HasLen, 0)
}

// TestNotifiedState: what a notified state file read is used for, and
// what is left to the scan.
func TestNotifiedState(t *testing.T) {
	c := qt.New(t)
	for _, tt := range []struct {
		in   string
		want sysfs.MemberState
	}{
		{"faulty\n", sysfs.MemberState{sysfs.FlagFaulty}},
		{"in_sync,write_mostly\n", sysfs.MemberState{sysfs.FlagInSync, sysfs.FlagWriteMostly}},
		{"", nil},
		{"\n", nil},
		{"bananas\n", nil},
		{"faulty\x1b[2J\n", nil},
		{"FAULTY\n", nil},
		{"faulty,blocked,spare\n", nil},
		{"faulty,in_sync,blocked\n", nil},
		{"faulty,blocked\n", sysfs.MemberState{sysfs.FlagFaulty, sysfs.FlagBlocked}},
		{strings.Repeat("faulty,", 40), nil},
	} {
		got, ok := parseNotifiedState([]byte(tt.in), 4096)
		c.Check(ok, qt.Equals, tt.want != nil, qt.Commentf("%q", tt.in))
		c.Check(got, qt.DeepEquals, tt.want, qt.Commentf("%q", tt.in))
	}
	_, ok := parseNotifiedState([]byte("faulty\n"), 7)
	c.Check(ok, qt.IsFalse, qt.Commentf("a read that fills the buffer may be cut"))

	for in, want := range map[string]string{
		"/sys/devices/virtual/block/md1/md/dev-vdb/state":        "vdb",
		"/sys/devices/virtual/block/md1/md/dev-cciss!c0d0/state": "cciss!c0d0",
		"/sys/devices/virtual/block/md1/md/array_state":          "",
		"/sys/devices/virtual/block/md1/md/dev-vdb/slot":         "",
		"/sys/devices/virtual/block/md1/md/dev-/state":           "",
	} {
		got, ok := memberStatePath(in)
		c.Check(got, qt.Equals, want, qt.Commentf("%s", in))
		c.Check(ok, qt.Equals, want != "", qt.Commentf("%s", in))
	}
}

// TestEarlyOnlyForRealFailures: the early path leaves to the re-read a
// "faulty" that a member being rebuilt shows while a bad block recorded
// on it is not yet written out (state_show's unacknowledged bad blocks),
// and a member that became in sync (its slot is the re-read's to
// name); neither the early path nor the re-read reports the transient
// "faulty" as a failure. An early Fail is dated by the Manager's clock,
// as the re-read's events are.
func TestEarlyOnlyForRealFailures(t *testing.T) {
	c := qt.New(t)
	rebuilt := capture.Capture(t, "raid1-recovering")
	sys, dev := rebuilt.SysRoot(), rebuilt.DevRoot()
	m, err := md.Open(&md.Config{SysRoot: sys, DevRoot: dev})
	c.Assert(err, qt.IsNil)
	s := startStepped(t, m)
	s.step()
	dir := filepath.Join(sys, "devices", "virtual", "block", "md0", "md")

	// The file reads "faulty,blocked,spare" when it notifies, and the
	// re-read finds it so too: no FailSpare, early or not. (Package md
	// reads that slot as no longer rebuilding, hence a RebuildFinished
	// here; that is md's reading of the flags, not watch's.)
	c.Assert(os.WriteFile(filepath.Join(dir, "dev-vdc", "state"), []byte("faulty,blocked,spare\n"), 0o644), qt.IsNil)
	u := arraysWoken("md0")
	u.addState("md0", "vdc", sysfs.MemberState{sysfs.FlagFaulty, sysfs.FlagBlocked, sysfs.FlagSpare})
	s.wake(u)
	_, evs := s.step()
	c.Assert(slices.ContainsFunc(evs, func(e string) bool { return strings.HasPrefix(e, "FailSpare") || strings.HasPrefix(e, "Fail ") }), qt.IsFalse, qt.Commentf("%v", evs))
	s.mu.Lock()
	c.Assert(s.queued[len(s.queued)-1], qt.Equals, 0)
	s.mu.Unlock()
	c.Assert(os.WriteFile(filepath.Join(dir, "dev-vdc", "state"), []byte("spare\n"), 0o644), qt.IsNil)
	s.wake(arraysWoken("md0"))
	s.step()

	// The rebuild ends: SpareActive comes from the re-read, not early.
	c.Assert(os.WriteFile(filepath.Join(dir, "dev-vdc", "state"), []byte("in_sync\n"), 0o644), qt.IsNil)
	u = arraysWoken("md0")
	u.addState("md0", "vdc", sysfs.MemberState{sysfs.FlagInSync})
	s.wake(u)
	_, evs = s.step()
	c.Assert(evs, qt.Contains, "SpareActive md0 vdc slot=1")
	s.mu.Lock()
	c.Assert(s.queued[len(s.queued)-1], qt.Equals, 0, qt.Commentf("SpareActive was sent early"))
	s.mu.Unlock()
}

// TestEarlyEventTime: an early event is dated by the Manager's clock in
// UTC, as report times are.
func TestEarlyEventTime(t *testing.T) {
	c := qt.New(t)
	at := time.Date(2026, 12, 1, 23, 0, 0, 0, time.FixedZone("CET", 3600))
	m, _ := twoMirrors(t, func() time.Time { return at })
	r, err := m.Discover(context.Background())
	c.Assert(err, qt.IsNil)
	w := &watcher{m: m, o: (&Options{}).withDefaults(), prev: r}
	w.o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	ch := make(chan Event, 4)
	c.Assert(w.early(context.Background(), ch, map[string]map[string]sysfs.MemberState{"md1": {"vdb": {sysfs.FlagFaulty}}}, m.Now()), qt.IsTrue)
	c.Assert(ch, qt.HasLen, 1)
	e := <-ch
	c.Check(e.Type, qt.Equals, Fail)
	c.Check(e.Time, qt.Equals, at.UTC())
}
