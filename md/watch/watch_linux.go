package watch

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/go-mdraid/mdraid/sysfs"
)

// pollSet is the set of files a watcher polls, in one epoll instance.
//
// sysfs attributes and /proc/mdstat are always readable, so readiness
// means nothing; the kernel signals a change with POLLPRI|POLLERR once
// the file's event counter differs from the one seen at the last read
// (kernfs_generic_poll, mdstat_poll). Each file is therefore read at
// offset 0 when opened and again after every notification, which re-arms
// it. Go's netpoller only waits for readability, so the files are raw
// descriptors in an epoll set waiting for EPOLLPRI.
type pollSet struct {
	epfd   int
	stopMu sync.Mutex // stop runs on another goroutine, racing close
	stopfd int        // eventfd written when the watch's context ends
	uevent int        // kernel uevent socket, or -1
	mdstat int        // /proc/mdstat, or -1
	// mdstatText is /proc/mdstat as last read, split by array
	// (mdstatArrays); nil when it could not be read.
	mdstatText map[string]string
	files      map[string]int // sysfs path -> fd
	paths      map[int]string // fd -> sysfs path
	owner      map[int]string // fd -> kernel name of the array the file belongs to
	buf        []byte
}

// open creates the poll set: epoll, the stop eventfd, /proc/mdstat and,
// for heal, the uevent socket. Arrays' files are added by reconcile.
func (w *watcher) open() (err error) {
	p := &pollSet{epfd: -1, stopfd: -1, uevent: -1, mdstat: -1,
		files: map[string]int{}, paths: map[int]string{}, owner: map[int]string{}, buf: make([]byte, 4096)}
	defer func() {
		if err != nil {
			p.close()
		}
	}()
	if p.epfd, err = unix.EpollCreate1(unix.EPOLL_CLOEXEC); err != nil {
		return &opError{"epoll_create1", err}
	}
	if p.stopfd, err = unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK); err != nil {
		return &opError{"eventfd", err}
	}
	if err := p.add(p.stopfd, unix.EPOLLIN); err != nil {
		return err
	}
	if fd, err := p.openMdstat(w.o.Mdstat); err == nil {
		p.mdstat = fd
	} else {
		w.o.Logger.Warn("not polling mdstat; new arrays are seen at the next rescan", "path", w.o.Mdstat, "err", err)
	}
	if w.o.Heal {
		if fd, err := openUevents(); err == nil {
			p.uevent = fd
			if err := p.add(fd, unix.EPOLLIN); err != nil {
				return err
			}
		} else {
			w.o.Logger.Warn("not listening for uevents; new disks are seen at the next rescan", "err", err)
		}
	}
	w.sys = p
	return nil
}

// openMdstat opens, arms and polls /proc/mdstat.
func (p *pollSet) openMdstat(path string) (int, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, &opError{"open", err}
	}
	if p.mdstatText, err = p.readMdstat(fd); err != nil {
		unix.Close(fd)
		return -1, &opError{"read", err}
	}
	if err := p.add(fd, unix.EPOLLPRI); err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// opError names the system call that failed.
type opError struct {
	op  string
	err error
}

func (e *opError) Error() string { return e.op + ": " + e.err.Error() }
func (e *opError) Unwrap() error { return e.err }

// openUevents opens a socket on the kernel's uevent multicast group
// (NETLINK_KOBJECT_UEVENT, group 1: the kernel's own messages, not
// udev's), so that a hot-plugged disk wakes the watcher.
func openUevents() (int, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, unix.NETLINK_KOBJECT_UEVENT)
	if err != nil {
		return -1, &opError{"socket(NETLINK_KOBJECT_UEVENT)", err}
	}
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK, Groups: 1}); err != nil {
		unix.Close(fd)
		return -1, &opError{"bind(uevent group)", err}
	}
	return fd, nil
}

func (p *pollSet) add(fd int, events uint32) error {
	ev := unix.EpollEvent{Events: events, Fd: int32(fd)}
	if err := unix.EpollCtl(p.epfd, unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
		return &opError{"epoll_ctl", err}
	}
	return nil
}

// arm reads fd from offset 0, which records the file's event counter so
// that the next change notifies. A deleted sysfs node fails (ENODEV).
func (p *pollSet) arm(fd int) error {
	_, err := p.armRead(fd)
	return err
}

// armRead is arm, and returns what it read (in p.buf, until the next
// read).
func (p *pollSet) armRead(fd int) ([]byte, error) {
	n, err := unix.Pread(fd, p.buf, 0)
	if err != nil {
		return nil, err
	}
	return p.buf[:n], nil
}

// maxMdstat bounds what readMdstat reads: some 5000 arrays' worth.
const maxMdstat = 1 << 20

// readMdstat reads all of /proc/mdstat from offset 0, which arms it (as
// arm does), and splits it by array (mdstatArrays).
func (p *pollSet) readMdstat(fd int) (map[string]string, error) {
	var text []byte
	for {
		n, err := unix.Pread(fd, p.buf, int64(len(text)))
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if n == 0 {
			return mdstatArrays(text), nil
		}
		if len(text)+n > maxMdstat {
			return nil, fmt.Errorf("longer than %d bytes", maxMdstat)
		}
		text = append(text, p.buf[:n]...)
	}
}

// reconcile opens and arms the attributes of every array now in sysfs,
// and closes those of arrays and members that went away; with only, it
// does so for those arrays (kernel names) alone and leaves the others'
// files as they are. It reports whether it opened anything.
func (p *pollSet) reconcile(fs sysfs.FS, log *slog.Logger, only []string) bool {
	want := map[string]string{} // path -> array
	names := only
	if names == nil {
		var err error
		if names, err = fs.Arrays(); err != nil {
			log.Warn("listing arrays to poll", "err", err)
			return false
		}
	}
	for _, name := range names {
		a, err := fs.Array(name)
		if err != nil {
			continue
		}
		for _, attr := range []string{"array_state", "sync_action", "sync_completed", "degraded"} {
			want[a.Path(attr)] = name
		}
		mems, _ := a.Members()
		for _, mem := range mems {
			want[mem.Path("state")] = name
		}
	}
	for path, fd := range p.files {
		if _, ok := want[path]; !ok && (only == nil || slices.Contains(only, p.owner[fd])) {
			p.drop(fd)
		}
	}
	opened := false
	for path, name := range want {
		if _, ok := p.files[path]; ok {
			continue
		}
		fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			// Redundancy attributes do not exist on every level, and
			// an array can go between the listing and the open.
			continue
		}
		if err := p.arm(fd); err != nil {
			unix.Close(fd)
			continue
		}
		if err := p.add(fd, unix.EPOLLPRI); err != nil {
			// Only kernfs files can be polled; a sysfs tree in a
			// test directory relies on the rescan.
			log.Debug("polling", "path", path, "err", err)
			unix.Close(fd)
			continue
		}
		p.files[path], p.paths[fd], p.owner[fd] = fd, path, name
		opened = true
	}
	return opened
}

// drop closes a polled attribute; closing removes it from epoll.
func (p *pollSet) drop(fd int) {
	path := p.paths[fd]
	delete(p.paths, fd)
	delete(p.owner, fd)
	delete(p.files, path)
	unix.Close(fd)
}

// wait blocks until the kernel notifies a change, the timeout passes,
// or stop is signalled; it re-arms every notified file. It reports what
// was notified (see wakeup; nothing when the timeout passed), and ok
// false when the watch must stop.
func (p *pollSet) wait(timeout time.Duration, log *slog.Logger) (u wakeup, ok bool) {
	evs := make([]unix.EpollEvent, 64)
	// Rounded up: woken early, the loop would find nothing due.
	ms := int((timeout + time.Millisecond - 1) / time.Millisecond)
	for {
		n, err := unix.EpollWait(p.epfd, evs, ms)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			log.Error("epoll_wait", "err", err)
			return wakeup{}, false
		}
		for _, ev := range evs[:n] {
			if !p.note(int(ev.Fd), &u, log) {
				return wakeup{}, false
			}
		}
		return u, true
	}
}

// note re-arms the notified file fd and adds what it says to u: the
// array it belongs to; for /proc/mdstat, the arrays whose lines in it
// changed since it was last read, or every array when none did or it
// cannot be read; for a uevent, a file that went away or one the set
// does not know, every array. It returns false for the stop eventfd.
func (p *pollSet) note(fd int, u *wakeup, log *slog.Logger) bool {
	switch fd {
	case p.stopfd:
		return false
	case p.uevent:
		p.drainUevents()
		u.all = true
	case p.mdstat:
		u.mdstat = true
		text, err := p.readMdstat(fd)
		if err != nil {
			log.Warn("reading mdstat", "err", err)
			p.arm(fd)
			u.all = true
			return true
		}
		changed := mdstatChanged(p.mdstatText, text)
		p.mdstatText = text
		if len(changed) == 0 {
			// Notified for something its text does not show: the
			// change is somewhere else.
			u.all = true
		}
		for _, n := range changed {
			u.add(n)
		}
	default:
		name, known := p.owner[fd]
		text, err := p.armRead(fd)
		if err != nil {
			// The node is gone (ENODEV): a member or array left.
			// reconcile opens it again if it comes back.
			p.drop(fd)
			u.all = true
			return true
		}
		if !known {
			u.all = true
			return true
		}
		u.add(name)
		if member, ok := memberStatePath(p.paths[fd]); ok {
			if st, ok := parseNotifiedState(text, len(p.buf)); ok {
				u.addState(name, member, st)
			}
		}
	}
	return true
}

// drainUevents empties the uevent socket; the messages only wake the
// watcher, whose snapshot then finds the new disk. An overflowed socket
// (ENOBUFS) just means more happened.
func (p *pollSet) drainUevents() {
	for {
		if _, _, err := unix.Recvfrom(p.uevent, p.buf, 0); err != nil {
			return
		}
	}
}

// stop wakes wait from another goroutine. After close it does nothing
// (the descriptor number may belong to someone else by then).
func (p *pollSet) stop() {
	p.stopMu.Lock()
	defer p.stopMu.Unlock()
	if p.stopfd < 0 {
		return
	}
	var one [8]byte
	binary.NativeEndian.PutUint64(one[:], 1)
	unix.Write(p.stopfd, one[:])
}

// close closes every descriptor.
func (p *pollSet) close() {
	for fd := range p.paths {
		unix.Close(fd)
	}
	p.files, p.paths, p.owner = map[string]int{}, map[int]string{}, map[int]string{}
	p.stopMu.Lock()
	defer p.stopMu.Unlock()
	for _, fd := range []*int{&p.uevent, &p.mdstat, &p.stopfd, &p.epfd} {
		if *fd >= 0 {
			unix.Close(*fd)
			*fd = -1
		}
	}
}

// settleGap is how soon the watcher looks again after a scan that a
// notification woke. The kernel notifies before it has finished some
// changes: removing a member (mdadm --remove, HOT_REMOVE_DISK) signals
// /proc/mdstat while the member's dev-* directory is still there, and it
// goes only when the array's lock is released, with no notification of
// its own; without a second look the removal would wait for the periodic
// rescan (seen on 6.12 in the VM suite).
const settleGap = 250 * time.Millisecond

// minScanGap keeps a storm of notifications (array_state flips between
// clean and active on every burst of writes) from turning into a busy
// loop of snapshots.
const minScanGap = 5 * time.Millisecond

// run is the watch loop: snapshot, then wait for the kernel, until ctx
// ends. A notification on an array's own files reads that array again
// (see watcher.snapshot); anything else, and the rescan every
// Options.Rescan since the last full one, reads every array.
func (w *watcher) run(ctx context.Context, ch chan<- Event) {
	defer close(ch)
	defer w.sys.close()
	stop := context.AfterFunc(ctx, w.sys.stop)
	defer stop()
	var last, lastFull time.Time
	var again lookAgain // the looks after settleGap still due
	todo := wakeup{all: true}
	var woken wakeup    // what woke the wait before the scan of todo
	var followUp wakeup // due when the wait returned: read right after todo
	clock := w.clock
	if clock == nil {
		clock = time.Now
	}
	ready := w.o.Ready
	for {
		if d := time.Since(last); d < minScanGap {
			time.Sleep(minScanGap - d)
		}
		last = time.Now()
		names := todo.names()
		full, ok := w.scan(ctx, ch, names)
		if !ok || ctx.Err() != nil {
			return
		}
		w.o.Logger.Debug("scan", "arrays", names, "full", full, "took", time.Since(last))
		now := clock()
		if full {
			lastFull = now
		}
		if woken.woke() {
			if full && !todo.all {
				// Unsure what changed (see watcher.snapshot): look
				// at everything again.
				woken.all = true
			}
			again.add(woken, now.Add(settleGap))
		}
		if ready != nil {
			ready()
			ready = nil
		}
		if full {
			followUp = wakeup{} // read already
		}
		if followUp.all || len(followUp.arrays) > 0 {
			// What woke the wait was read first (that is the
			// latency that counts); now the looks that were due.
			todo, woken, followUp = followUp, wakeup{}, wakeup{}
			continue
		}
		for {
			timeout := lastFull.Add(w.o.Rescan).Sub(now)
			if at, ok := again.next(); ok {
				timeout = min(timeout, at.Sub(now))
			}
			if at, ok := w.lastResortDue(); ok {
				timeout = min(timeout, at.Sub(now))
			}
			timeout = max(timeout, 0)
			var u wakeup
			if w.wait != nil {
				u, ok = w.wait(timeout)
			} else {
				u, ok = w.sys.wait(timeout, w.o.Logger)
			}
			if !ok || ctx.Err() != nil {
				return
			}
			if t := clock(); u.woke() {
				now = t
				if !w.early(ctx, ch, u.states, w.m.Now()) {
					return
				}
			} else if now = now.Add(timeout); t.After(now) {
				// The timeout passed, even if the clock has not
				// quite got there.
				now = t
			}
			var due wakeup
			again.due(now, &due)
			if !now.Before(lastFull.Add(w.o.Rescan)) {
				due.all = true
			}
			if at, ok := w.lastResortDue(); ok && !now.Before(at) {
				due.all = true
			}
			woken = u
			switch {
			case u.woke():
				todo, followUp = u.scan(), due
			default:
				todo = due
			}
			if todo.all || len(todo.arrays) > 0 {
				break
			}
		}
	}
}
