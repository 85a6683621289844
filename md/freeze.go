package md

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/go-mdraid/mdraid/sysfs"
)

// Freezes we set
//
// A replace freezes recovery (sync_action "frozen") while it adds the new
// disk, so that md cannot start rebuilding into another slot. If the
// process dies before it unfreezes, md never rebuilds, and nothing on the
// array says who froze it. So before freezing, the executor writes a
// freeze record, RUNDIR/frozen-UUID.json, naming the process, the time and
// the candidate; it removes the record once it has unfrozen. A record
// whose array lock (lock.go) nobody holds is stale: its replace died.
//
// A stale record is recognised everywhere:
//   - a rerun of the replace adopts the freeze (it keeps the array frozen,
//     carries on, and unfreezes at the end), unless the interrupted run
//     already wrote its superblock on another disk: then only a rerun with
//     that disk is accepted;
//   - heal (and watch --heal) unfreezes the array first (thawStale),
//     pinning the interrupted run's disk to its slot if it is already an
//     unslotted spare, and then decides as usual;
//   - status shows the freeze with a hint (Array.Freeze), and watch
//     reports heal's deferral of a frozen array with that reason.

// freezeRecord is what a replace writes to the run directory before it
// freezes recovery.
type freezeRecord struct {
	Array string    `json:"array"`
	UUID  string    `json:"uuid"`
	PID   int       `json:"pid"`
	Time  time.Time `json:"time"`
	// Candidate is the path of the new disk, CandDev its device number and
	// Device its kernel name; Slot is the slot it is to fill.
	Candidate string `json:"candidate"`
	CandDev   string `json:"candidate_dev,omitempty"`
	Device    string `json:"device,omitempty"`
	Slot      int    `json:"slot"`
	// Written is set before the superblock write starts: the candidate
	// may carry the interrupted run's superblock.
	Written bool `json:"written"`
	// Removed is set before the faulty member's removal starts: the
	// member the interrupted run removed (or was removing), so that the
	// same replace run again, naming that member, finds it gone.
	Removed string `json:"removed,omitempty"`
}

// runKey turns an array key (its UUID) into a file name part, as
// lockArray does.
func runKey(key string) string {
	return strings.Map(func(r rune) rune {
		if r == '/' || r == 0 {
			return '_'
		}
		return r
	}, key)
}

func freezePath(dir, key string) string {
	return filepath.Join(dir, "frozen-"+runKey(key)+".json")
}

// maxFreezeRecord bounds the record read back.
const maxFreezeRecord = 4096

// writeFreeze stores rec atomically: a new file (O_EXCL, no symlink
// followed) renamed over the old record.
func writeFreeze(dir, key string, rec freezeRecord) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("md: freeze record: %w", err)
	}
	b, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("md: freeze record: %w", err)
	}
	path := freezePath(dir, key)
	tmp := fmt.Sprintf("%s.%d.tmp", path, os.Getpid())
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|unix.O_NOFOLLOW, 0o644)
	if err != nil {
		return fmt.Errorf("md: freeze record: %w", err)
	}
	_, err = f.Write(append(b, '\n'))
	if serr := f.Sync(); err == nil {
		err = serr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("md: freeze record: %w", err)
	}
	return nil
}

// readFreeze returns the freeze record for key, or nil when there is none.
func readFreeze(dir, key string) (*freezeRecord, error) {
	f, err := os.OpenFile(freezePath(dir, key), os.O_RDONLY|unix.O_NOFOLLOW, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("md: freeze record: %w", err)
	}
	defer f.Close()
	b := make([]byte, maxFreezeRecord+1)
	n, _ := f.Read(b)
	if n > maxFreezeRecord {
		return nil, fmt.Errorf("md: freeze record %s: larger than %d bytes", f.Name(), maxFreezeRecord)
	}
	var rec freezeRecord
	if err := json.Unmarshal(b[:n], &rec); err != nil {
		return nil, fmt.Errorf("md: freeze record %s: %w", f.Name(), err)
	}
	return &rec, nil
}

// removeFreeze deletes the record; a missing one is not an error.
func removeFreeze(dir, key string) error {
	err := os.Remove(freezePath(dir, key))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("md: freeze record: %w", err)
	}
	return nil
}

// lockHeld reports whether a live process holds the array lock of key,
// without taking it and without creating anything: it asks for a shared
// lock on the lock file, which fails only while someone holds the
// exclusive one (in this process too, through another descriptor). A
// lock file that does not exist is not held; any other failure (no
// permission, a symbolic link planted in its place) is an error: it
// cannot be told.
func lockHeld(dir, key string) (bool, error) {
	f, err := os.OpenFile(filepath.Join(dir, "replace-"+runKey(key)+".lock"), os.O_RDONLY|unix.O_NOFOLLOW, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil // never locked, or gone: nobody holds it
	}
	if err != nil {
		return false, fmt.Errorf("md: array lock: %w", err)
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_SH|unix.LOCK_NB); err != nil {
		if errors.Is(err, unix.EWOULDBLOCK) {
			return true, nil
		}
		return false, fmt.Errorf("md: array lock %s: %w", f.Name(), err)
	}
	unix.Flock(int(f.Fd()), unix.LOCK_UN)
	return false, nil
}

// staleFreeze returns the freeze record of the array with key when its
// replace is no longer running, nil otherwise. lockedByUs says the caller
// holds the array lock itself, so any record is stale.
func (m *Manager) staleFreeze(key string, lockedByUs bool) *freezeRecord {
	if key == "" {
		return nil
	}
	rec, err := readFreeze(m.ops.runDir, key)
	if err != nil || rec == nil {
		return nil
	}
	if held, err := lockHeld(m.ops.runDir, key); !lockedByUs && (held || err != nil) {
		return nil // a live replace, or no telling: not stale
	}
	return rec
}

// Freeze says who froze recovery of an array, as far as mdctl knows.
type Freeze struct {
	// ByReplace is set when an mdctl replace on this host recorded the
	// freeze; false means someone else froze it (mdadm, an operator).
	ByReplace bool `json:"by_replace"`
	// PID and Since are the recording process and when it froze.
	PID   int        `json:"pid,omitempty"`
	Since *time.Time `json:"since,omitempty"`
	// Stale is set when that replace is no longer running.
	Stale bool `json:"stale"`
	// Hint says what will undo the freeze.
	Hint string `json:"hint"`
}

// describeFreeze fills a.Freeze for an array whose recovery is frozen.
func (m *Manager) describeFreeze(a *Array) {
	if a.Activity.Kind != sysfs.ActionFrozen {
		return
	}
	fz := &Freeze{}
	a.Freeze = fz
	var rec *freezeRecord
	if a.UUID != "" {
		rec, _ = readFreeze(m.ops.runDir, a.UUID)
	}
	if rec == nil {
		fz.Hint = fmt.Sprintf("recovery is frozen, not by an mdctl replace: md rebuilds nothing until idle is written to /sys/block/%s/md/sync_action", a.Device)
		return
	}
	fz.ByReplace, fz.PID = true, rec.PID
	t := rec.Time
	fz.Since = &t
	held, err := lockHeld(m.ops.runDir, a.UUID)
	if err != nil {
		fz.Hint = fmt.Sprintf("recovery was frozen by a replace (process %d); whether it still runs cannot be told (%v)", rec.PID, err)
		return
	}
	if held {
		fz.Hint = fmt.Sprintf("a replace (process %d) is running; it unfreezes recovery when done", rec.PID)
		return
	}
	fz.Stale = true
	fz.Hint = fmt.Sprintf("recovery was left frozen by an interrupted replace (process %d) with %s; run that replace again, or mdctl heal, to finish and unfreeze it", rec.PID, rec.Candidate)
}

// thawStale undoes a freeze whose replace died: under the array lock, if
// the record is still there and recovery still frozen, it pins the
// interrupted run's disk to its slot when that disk is an unslotted
// spare of the array, then writes idle to sync_action, and removes the
// record. It returns what it did ("" for nothing); a live replace holding
// the lock is left alone (nothing done, no error).
func (m *Manager) thawStale(array, key string) (string, error) {
	if rec, _ := readFreeze(m.ops.runDir, key); rec == nil {
		return "", nil
	}
	if held, err := lockHeld(m.ops.runDir, key); held || err != nil {
		return "", nil // a live replace, or no telling: left alone
	}
	unlock, err := lockArray(m.ops.runDir, key)
	if errors.Is(err, errLocked) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	defer unlock()
	rec, err := readFreeze(m.ops.runDir, key)
	if err != nil || rec == nil {
		return "", err
	}
	a, err := m.fs.Array(array)
	if err != nil {
		return "", err
	}
	act, err := a.SyncAction()
	if err != nil {
		return "", err
	}
	if act != sysfs.ActionFrozen {
		return "", removeFreeze(m.ops.runDir, key)
	}
	var did []string
	if rec.Device != "" && rec.Slot >= 0 {
		if mem, err := a.Member(rec.Device); err == nil {
			st, serr := mem.State()
			slot, lerr := mem.Slot()
			if serr == nil && lerr == nil && slot < 0 && !st.Failed() {
				if err := m.ops.k.SetSlot(array, rec.Device, rec.Slot); err == nil {
					did = append(did, fmt.Sprintf("pinned %s to slot %d", rec.Device, rec.Slot))
				} else {
					did = append(did, fmt.Sprintf("could not pin %s to slot %d (%v)", rec.Device, rec.Slot, err))
				}
			}
		}
	}
	if err := m.ops.k.SetSyncAction(array, sysfs.ActionIdle); err != nil {
		return strings.Join(did, "; "), fmt.Errorf("md: unfreezing %s: %w", array, err)
	}
	did = append(did, fmt.Sprintf("unfroze recovery left frozen by an interrupted replace (process %d, %s)", rec.PID, rec.Time.Format(time.RFC3339)))
	return strings.Join(did, "; "), removeFreeze(m.ops.runDir, key)
}

// snapshotUUID is the array UUID of a snapshot, as the status model
// reports it: the key of its lock and freeze record.
func snapshotUUID(s *snapshot) string { return build(s, "/dev").UUID }

// recordFreeze writes the freeze record of this execution.
func (x *execution) recordFreeze() error {
	p := x.p
	return writeFreeze(x.m.ops.runDir, x.key, freezeRecord{
		Array: p.Array, UUID: p.UUID, PID: os.Getpid(), Time: time.Now().UTC(),
		Candidate: p.Candidate.Path, CandDev: p.Candidate.DevNum, Device: p.Candidate.Device,
		Slot: p.Slot, Written: x.written, Removed: x.removed,
	})
}
