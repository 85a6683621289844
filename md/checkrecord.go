package md

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/go-mdraid/mdraid/sysfs"
)

// CheckRecord is what a Store keeps about the checks of one array (by
// UUID): the cursor of an unfinished, time-boxed pass and the result of
// the last finished one. The kernel keeps neither across a stop or a
// reboot (docs/scrub.md §3, §5).
type CheckRecord struct {
	// UUID is the array UUID in the canonical form (Array.UUID).
	UUID string `json:"uuid"`
	// Action is the action of the unfinished pass ("check" or "repair");
	// empty when no pass is unfinished.
	Action sysfs.SyncAction `json:"action,omitempty"`
	// Cursor is where the unfinished pass resumes, in 512-byte sectors of
	// the component address space (sync_min), aligned down to the chunk
	// size and to 8 sectors; 0 when no pass is unfinished.
	Cursor uint64 `json:"cursor,omitempty"`
	// Mismatches is the unfinished pass's mismatch_cnt so far, in
	// sectors: the sum over its segments, since the kernel resets the
	// count at every start.
	Mismatches uint64 `json:"mismatches,omitempty"`
	// PassStarted is when the unfinished pass started; zero when none.
	PassStarted time.Time `json:"pass_started,omitzero"`
	// LastFinished is when the last pass finished; zero if none ever did.
	LastFinished time.Time `json:"last_finished,omitzero"`
	// LastAction is the last finished pass's action ("check", "repair").
	LastAction sysfs.SyncAction `json:"last_action,omitempty"`
	// LastMismatches is the last finished pass's mismatch count, in
	// sectors (for a repair: what it found and rewrote).
	LastMismatches uint64 `json:"last_mismatches,omitempty"`
}

// Pending reports whether the record holds an unfinished pass.
func (r CheckRecord) Pending() bool { return r.Action != "" }

// validate checks a check record read from a store.
func (r CheckRecord) validate() error {
	u, err := uuid.Parse(r.UUID)
	switch {
	case err != nil:
		return fmt.Errorf("check record: uuid %q: %w", r.UUID, err)
	case u.String() != r.UUID:
		return fmt.Errorf("check record: uuid %q is not in canonical form", r.UUID)
	case r.Action != "" && r.Action != sysfs.ActionCheck && r.Action != sysfs.ActionRepair:
		return fmt.Errorf("check record %s: action %q is not check or repair", r.UUID, r.Action)
	case r.Action == "" && (r.Cursor != 0 || r.Mismatches != 0 || !r.PassStarted.IsZero()):
		return fmt.Errorf("check record %s: a cursor without an action", r.UUID)
	case r.Action != "" && r.PassStarted.IsZero():
		return fmt.Errorf("check record %s: an unfinished pass without a start time", r.UUID)
	case r.Cursor%8 != 0:
		return fmt.Errorf("check record %s: cursor %d is not a multiple of 8 sectors", r.UUID, r.Cursor)
	case r.LastAction != "" && r.LastAction != sysfs.ActionCheck && r.LastAction != sysfs.ActionRepair:
		return fmt.Errorf("check record %s: last_action %q is not check or repair", r.UUID, r.LastAction)
	case (r.LastAction == "") != r.LastFinished.IsZero():
		return fmt.Errorf("check record %s: last_action and last_finished go together", r.UUID)
	case r.LastAction == "" && r.LastMismatches != 0:
		return fmt.Errorf("check record %s: last_mismatches without a finished pass", r.UUID)
	}
	return nil
}

// validateChecks checks the check records: each valid, one per UUID.
func validateChecks(cs []CheckRecord) error {
	seen := map[string]bool{}
	for _, c := range cs {
		if err := c.validate(); err != nil {
			return err
		}
		if seen[c.UUID] {
			return fmt.Errorf("check record %s is there twice", c.UUID)
		}
		seen[c.UUID] = true
	}
	return nil
}

// Check returns the check record of the array with the given UUID.
func (rs *Records) Check(uuid string) (CheckRecord, bool) {
	if rs == nil {
		return CheckRecord{}, false
	}
	for _, c := range rs.Checks {
		if c.UUID == uuid {
			return c, true
		}
	}
	return CheckRecord{}, false
}

// PutCheck adds c, replacing any check record of the same array, and
// keeps the list sorted by UUID.
func (rs *Records) PutCheck(c CheckRecord) {
	for i, old := range rs.Checks {
		if old.UUID == c.UUID {
			rs.Checks[i] = c
			return
		}
	}
	rs.Checks = append(rs.Checks, c)
	slices.SortFunc(rs.Checks, func(a, b CheckRecord) int { return strings.Compare(a.UUID, b.UUID) })
}

// LastCheck is what a Store remembers about an array's checks, as the
// status shows it.
type LastCheck struct {
	// Finished is when the last pass finished (zero, left out of JSON,
	// if none did); Action is its action, MismatchSectors its total.
	Finished        time.Time        `json:"finished,omitzero"`
	Action          sysfs.SyncAction `json:"action,omitempty"`
	MismatchSectors uint64           `json:"mismatch_sectors"`
	// PendingAction and CursorSectors describe an unfinished, time-boxed
	// pass: its action and where it resumes (component sectors).
	PendingAction sysfs.SyncAction `json:"pending_action,omitempty"`
	CursorSectors uint64           `json:"cursor_sectors,omitempty"`
}

// AddChecks sets each array's LastCheck from the check records in rs,
// matched by UUID; arrays without a record are left alone.
func (r *Report) AddChecks(rs *Records) {
	r.AddRecords(rs)
	for i := range r.Arrays {
		a := &r.Arrays[i]
		rec, ok := rs.Check(a.UUID)
		if !ok || a.UUID == "" {
			continue
		}
		a.LastCheck = &LastCheck{Finished: rec.LastFinished, Action: rec.LastAction, MismatchSectors: rec.LastMismatches,
			PendingAction: rec.Action, CursorSectors: rec.Cursor}
	}
}

// AddRecords sets Slot.Recorded, from the slot records in rs, on every
// missing or faulty slot of an array rs has a record of: which port and
// disk belong in it (what heal would look for). AddChecks calls it.
func (r *Report) AddRecords(rs *Records) {
	for i := range r.Arrays {
		a := &r.Arrays[i]
		rec, ok := rs.find(a.UUID)
		if !ok || a.UUID == "" {
			continue
		}
		for j := range a.Slots {
			sl := &a.Slots[j]
			if sl.State != SlotMissing && sl.State != SlotFaulty {
				continue
			}
			for _, sr := range rec.Slots {
				if sr.Slot == sl.Slot {
					sr := sr
					sl.Recorded = &sr
				}
			}
		}
	}
}
