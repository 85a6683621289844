package md

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
)

// ErrReAddBlocked matches a heal decision not to re-add a former member
// again: it went missing again after heal re-added it, or the kernel
// failed it with read errors or bad blocks (see ReAddMark).
var ErrReAddBlocked = errors.New("md: not re-added again")

// ReAddMark is what a Store remembers of a former member that heal
// re-added into a slot (Blocked false), or will not re-add again
// (Blocked true, with why). Marks are per array, slot and disk (its
// device UUID); an operator's re-add (mdctl re-add --store) clears the
// slot's marks.
type ReAddMark struct {
	UUID       string    `json:"uuid"`
	Slot       int       `json:"slot"`
	DeviceUUID string    `json:"device_uuid"`
	Device     string    `json:"device,omitempty"` // kernel name then; informational
	Time       time.Time `json:"time"`
	Blocked    bool      `json:"blocked,omitempty"`
	Reason     string    `json:"reason"`
}

func (k ReAddMark) validate() error {
	if _, err := uuid.Parse(k.UUID); err != nil {
		return fmt.Errorf("re-add mark: array UUID %q: %w", k.UUID, err)
	}
	if _, err := uuid.Parse(k.DeviceUUID); err != nil {
		return fmt.Errorf("re-add mark of %s slot %d: device UUID %q: %w", k.UUID, k.Slot, k.DeviceUUID, err)
	}
	switch {
	case k.Slot < 0 || k.Slot >= 1<<16:
		return fmt.Errorf("re-add mark of %s: slot %d", k.UUID, k.Slot)
	case k.Time.IsZero():
		return fmt.Errorf("re-add mark of %s slot %d: no time", k.UUID, k.Slot)
	case !utf8.ValidString(k.Reason) || !utf8.ValidString(k.Device):
		return fmt.Errorf("re-add mark of %s slot %d: not UTF-8", k.UUID, k.Slot)
	}
	return nil
}

func validateReAdds(ks []ReAddMark) error {
	seen := map[string]bool{}
	for _, k := range ks {
		if err := k.validate(); err != nil {
			return err
		}
		key := fmt.Sprintf("%s %d %s", k.UUID, k.Slot, k.DeviceUUID)
		if seen[key] {
			return fmt.Errorf("re-add mark %s is there twice", key)
		}
		seen[key] = true
	}
	return nil
}

// reAddMark returns the mark of the disk devUUID in slot of array u.
func (rs *Records) reAddMark(u string, slot int, devUUID string) (ReAddMark, bool) {
	if rs == nil {
		return ReAddMark{}, false
	}
	for _, k := range rs.ReAdds {
		if k.UUID == u && k.Slot == slot && k.DeviceUUID == devUUID {
			return k, true
		}
	}
	return ReAddMark{}, false
}

// putReAddMark adds k, replacing the mark of the same array, slot and
// disk.
func (rs *Records) putReAddMark(k ReAddMark) {
	for i, o := range rs.ReAdds {
		if o.UUID == k.UUID && o.Slot == k.Slot && o.DeviceUUID == k.DeviceUUID {
			rs.ReAdds[i] = k
			return
		}
	}
	rs.ReAdds = append(rs.ReAdds, k)
}

// ForgetReAdds removes the re-add marks of slot of the array with UUID u,
// as an operator's re-add does, and reports whether there were any.
func (rs *Records) ForgetReAdds(u string, slot int) bool {
	n := len(rs.ReAdds)
	rs.ReAdds = slices.DeleteFunc(rs.ReAdds, func(k ReAddMark) bool { return k.UUID == u && k.Slot == slot })
	return len(rs.ReAdds) != n
}

// remember saves the records with a new mark, unless the pass is a dry
// run; it returns what to add to the decision's reason when the store
// could not be saved.
func (cfg healConfig) remember(ctx context.Context, k ReAddMark) string {
	if cfg.dryRun || cfg.records == nil {
		return ""
	}
	cfg.records.putReAddMark(k)
	if cfg.store == nil {
		return "; not remembered: no store"
	}
	if err := cfg.store.Save(ctx, cfg.records); err != nil {
		return "; not remembered: saving the store failed: " + err.Error()
	}
	return ""
}

func (cfg healConfig) clock() time.Time {
	if cfg.now != nil {
		return cfg.now()
	}
	return time.Now()
}

// fillReAdd decides d as a re-add when the disk in the port is a former
// member of the array for this slot, and reports whether it did; a blank
// disk, or one of another array, is left to the replace planner (false).
// A faulty member that still holds the slot is left to the replace path
// too, which removes it first; if the kernel failed it with read errors
// or bad blocks, it is marked first so that it is never re-added.
func (m *Manager) fillReAdd(ctx context.Context, cfg healConfig, r *Report, d *Decision) bool {
	f := cfg.filler
	if f == nil {
		f = replaceFiller{m}
	}
	if d.old != "" {
		if a := r.find(d.Array); a != nil {
			for _, s := range a.Slots {
				mem := s.Member
				if s.Slot != d.Slot || mem == nil || mem.DeviceUUID == "" || (mem.ReadErrors == 0 && mem.BadBlocks == 0) {
					continue
				}
				if k, ok := cfg.records.reAddMark(d.UUID, d.Slot, mem.DeviceUUID); ok && k.Blocked {
					continue
				}
				cfg.remember(ctx, ReAddMark{UUID: d.UUID, Slot: d.Slot, DeviceUUID: mem.DeviceUUID, Device: mem.Device, Time: cfg.clock(), Blocked: true,
					Reason: fmt.Sprintf("failed by the kernel with %d corrected read errors and %d bad-block ranges", mem.ReadErrors, mem.BadBlocks)})
			}
		}
		return false
	}
	p, err := f.planReAdd(ctx, ReAddRequest{Array: d.Array, Device: d.Disk, Records: cfg.records, AllowImageFile: cfg.allowImage})
	switch {
	case errors.Is(err, ErrNotMember) || errors.Is(err, ErrMismatch):
		return false
	case err != nil:
		d.Outcome, d.Err, d.Reason = OutcomeFailed, err, err.Error()
		if errors.Is(err, ErrRefused) {
			d.Outcome = OutcomeRefused
		}
		return true
	case p.Slot != d.Slot:
		d.Err = refuse("heal", d.Array, "", fmt.Errorf("%w: %s in slot %d's recorded port names slot %d in its superblock", errNotReAddable, d.Disk, d.Slot, p.Slot))
		d.Outcome, d.Reason = OutcomeRefused, d.Err.Error()
		return true
	}
	if k, ok := cfg.records.reAddMark(d.UUID, d.Slot, p.DeviceUUID); ok {
		why := k.Reason
		if !k.Blocked {
			why = fmt.Sprintf("heal re-added it at %s and it went missing again", k.Time.UTC().Format(time.RFC3339))
			k.Blocked, k.Reason, k.Time = true, why, cfg.clock()
			why += cfg.remember(ctx, k)
		}
		d.Err = refuse("heal", d.Array, "", fmt.Errorf("%w: %s (slot %d): %s; an operator re-adds it with mdctl re-add --store, which clears this", ErrReAddBlocked, d.Disk, d.Slot, why))
		d.Outcome, d.Reason = OutcomeRefused, d.Err.Error()
		return true
	}
	if cfg.dryRun {
		d.Outcome, d.Reason = OutcomeWouldHeal, fmt.Sprintf("dry run: %s, a former member (events %d, the array's %d), would be re-added into slot %d", d.Disk, p.Events, p.ArrayEvents, d.Slot)
		return true
	}
	res, err := f.reAdd(ctx, ReAddRequest{Array: d.Array, Device: d.Disk, Records: cfg.records, AllowImageFile: cfg.allowImage})
	if err != nil {
		d.Outcome, d.Err, d.Reason = OutcomeFailed, err, err.Error()
		if errors.Is(err, ErrRefused) {
			d.Outcome = OutcomeRefused
		}
		return true
	}
	how := "md took it back; with the bitmap only what changed is copied"
	switch {
	case res.Outcome == ReAddedFull:
		how = "md rebuilds it in full (no bitmap covers the time it was gone)"
	case !p.Bitmap:
		how = "md rebuilds it in full (no bitmap)"
	}
	d.Outcome = OutcomeHealed
	d.Reason = fmt.Sprintf("re-added %s into slot %d: %s (%s)", d.Disk, d.Slot, how, strings.Join(res.Writes, ", "))
	d.Reason += cfg.remember(ctx, ReAddMark{UUID: d.UUID, Slot: d.Slot, DeviceUUID: p.DeviceUUID, Device: p.Device, Time: cfg.clock(), Reason: "re-added by heal: " + string(res.Outcome)})
	return true
}
