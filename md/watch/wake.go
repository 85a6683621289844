package watch

import (
	"path"
	"slices"
	"strings"
	"time"

	"github.com/go-mdraid/mdraid/sysfs"
)

// wakeup is what woke the watcher: which files the kernel notified.
type wakeup struct {
	// all: something that names no one array woke it (a uevent, a
	// file that went away or that the watcher did not open), and every
	// array is read again.
	all bool
	// mdstat: /proc/mdstat was notified. The kernel notifies it for a
	// change to any array (md_new_event: an array started or stopped, a
	// member failed, was added or removed, a sync started or ended;
	// md_error notifies it together with the member's state), so it
	// names no array itself: the arrays whose lines in it changed since
	// it was last read are in arrays, and when none did, all is set.
	mdstat bool
	// arrays are the kernel names of the arrays whose own files were
	// notified.
	arrays map[string]bool
	// states are the flags of the member state files that notified, as
	// the read that re-armed them found them: array kernel name ->
	// member name as its dev-* directory spells it -> flags (see
	// watcher.early). A state that did
	// not read cleanly is not here; its array is in arrays all the same.
	states map[string]map[string]sysfs.MemberState
}

// addState notes what the state file of member of array read when it
// notified.
func (u *wakeup) addState(array, member string, st sysfs.MemberState) {
	if u.states == nil {
		u.states = map[string]map[string]sysfs.MemberState{}
	}
	if u.states[array] == nil {
		u.states[array] = map[string]sysfs.MemberState{}
	}
	u.states[array][member] = st
}

// woke reports whether anything was notified.
func (u wakeup) woke() bool { return u.all || u.mdstat || len(u.arrays) > 0 }

// add notes that a file of the array name was notified.
func (u *wakeup) add(name string) {
	if u.arrays == nil {
		u.arrays = map[string]bool{}
	}
	u.arrays[name] = true
}

// scan returns what a scan after u reads: a copy of u, that asks for
// every array when it names none.
func (u wakeup) scan() wakeup {
	out := wakeup{all: u.all || len(u.arrays) == 0, mdstat: u.mdstat}
	for n := range u.arrays {
		out.add(n)
	}
	return out
}

// names returns the arrays the wake-up asks to read, sorted, or nil
// when it asks for every array.
func (u wakeup) names() []string {
	if u.all || len(u.arrays) == 0 {
		return nil
	}
	out := make([]string, 0, len(u.arrays))
	for n := range u.arrays {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// lookAgain is what the watcher must look at again, and when: after a
// scan that a notification woke, the arrays it woke for are read again
// settleGap later, because the kernel notifies before it has finished
// some changes (see settleGap). Each entry is due settleGap after the
// last woken scan that asked for it.
type lookAgain struct {
	all    time.Time            // every array, due then; zero when not asked
	arrays map[string]time.Time // one array, due then
}

// add asks for a look at the arrays of u (every array when u names
// none) at 'at'.
func (l *lookAgain) add(u wakeup, at time.Time) {
	if u.all || len(u.arrays) == 0 {
		l.all = at
		return
	}
	if l.arrays == nil {
		l.arrays = map[string]time.Time{}
	}
	for n := range u.arrays {
		l.arrays[n] = at
	}
}

// next returns when the earliest look is due, and false when none is
// asked for.
func (l *lookAgain) next() (time.Time, bool) {
	var first time.Time
	if !l.all.IsZero() {
		first = l.all
	}
	for _, at := range l.arrays {
		if first.IsZero() || at.Before(first) {
			first = at
		}
	}
	return first, !first.IsZero()
}

// due removes the looks due at now and adds them to u.
func (l *lookAgain) due(now time.Time, u *wakeup) {
	if !l.all.IsZero() && !now.Before(l.all) {
		u.all = true
		l.all = time.Time{}
	}
	for n, at := range l.arrays {
		if !now.Before(at) {
			u.add(n)
			delete(l.arrays, n)
		}
	}
}

// memberStatePath returns the name of the member whose state file is at
// p (.../md/dev-NAME/state): NAME as sysfs spells it, with '!' for '/'.
func memberStatePath(p string) (string, bool) {
	dir, file := path.Split(p)
	if file != "state" {
		return "", false
	}
	d := path.Base(dir)
	if !strings.HasPrefix(d, "dev-") || len(d) == len("dev-") {
		return "", false
	}
	return strings.TrimPrefix(d, "dev-"), true
}

// parseNotifiedState parses what a member's state file read: a short
// list of the flags the kernel writes, and nothing else; and not the
// transient "faulty" of a member with unacknowledged bad blocks. Anything else
// (a read that filled the buffer, bytes that are not a flag list, a flag
// this package does not know, an empty list) is false, and is left to
// the scan that follows, which reports it as Discover does.
func parseNotifiedState(b []byte, bufLen int) (sysfs.MemberState, bool) {
	if len(b) == 0 || len(b) >= bufLen || len(b) > 256 {
		return nil, false
	}
	for _, c := range b {
		if !(c >= 'a' && c <= 'z' || c == '_' || c == ',' || c == '\n') {
			return nil, false
		}
	}
	st := sysfs.ParseMemberState(string(b))
	if len(st) == 0 || len(st.Unknown()) > 0 {
		return nil, false
	}
	if st.BadBlocksPending() {
		// "faulty" beside in_sync or spare: unacknowledged bad blocks
		// on a member that has not failed (see sysfs.MemberState.Failed), which the
		// kernel notifies when it records them and not when md writes
		// them out a moment later.
		return nil, false
	}
	return st, true
}
