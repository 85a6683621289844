package md

// This file holds slot records: what go-mdraid remembers about a healthy
// array so that a missing member can later be replaced by a blank disk in
// the same physical port, even after a reboot (see heal.go). The one
// decision made here is NewRecord's: which arrays are healthy enough to be
// recorded.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/go-mdraid/mdraid/internal/escape"
	"github.com/go-mdraid/mdraid/sysfs"
)

// Record is what is remembered about one array while it was fully
// healthy: its identity, and for each slot the port (by-path identity)
// and the disk that filled it.
//
// mdadm's POLICY action=spare-same-slot keeps the port of a failed member
// in /run/mdadm/failed-slots, which is lost at reboot and filled in by
// udev. A Record is written while the array is healthy, so it is there
// before anything fails, and it lives wherever its Store keeps it.
type Record struct {
	// UUID is the array UUID in the canonical form (Array.UUID).
	UUID string `json:"uuid"`
	// Name is the array name from the superblock ("boot"); informational.
	Name string `json:"name,omitempty"`
	// Homehost is the host the array belonged to when recorded (the
	// homehost of the 1.x set name, "talos" in "talos:boot"; empty for
	// 0.90 and for names without one). Heal refuses to act on the record
	// once the array names another homehost: it was moved to, or taken
	// over from, another machine.
	Homehost string `json:"homehost,omitempty"`
	// Metadata is the metadata version ("1.0", "1.2", "0.90").
	Metadata string `json:"metadata"`
	// Level is the RAID level as the kernel names it ("raid1").
	Level string `json:"level"`
	// RaidDisks is the number of slots; len(Slots) equals it.
	RaidDisks int `json:"raid_disks"`
	// ComponentBytes is the size used on each member.
	ComponentBytes uint64 `json:"component_bytes,omitempty"`
	// Slots has one entry per slot, in slot order.
	Slots []SlotRecord `json:"slots"`
}

// SlotRecord is what filled one slot while the array was healthy.
type SlotRecord struct {
	// Slot is the slot number, 0 to RaidDisks-1.
	Slot int `json:"slot"`
	// ByPath is the by-path identity of the port the member sat in
	// (blockdev.PathID, as Member.ByPath): heal looks for a blank disk
	// there. NewRecord refuses arrays with a member that has none.
	ByPath string `json:"by_path"`
	// Device is the member's kernel name when recorded ("vdb");
	// informational, kernel names are not stable.
	Device string `json:"device,omitempty"`
	// Serial and WWN identify the disk where it exposes them.
	Serial string `json:"serial,omitempty"`
	WWN    string `json:"wwn,omitempty"`
	// DeviceUUID is the device UUID from the member's 1.x superblock
	// (empty for 0.90).
	DeviceUUID string `json:"device_uuid,omitempty"`
	// SizeBytes is the size of the member's block device.
	SizeBytes uint64 `json:"size_bytes,omitempty"`
	// LastHealthy is when the member was last seen in sync in this slot
	// of the fully healthy array.
	LastHealthy time.Time `json:"last_healthy"`
}

// errNotRecordable is matched by the error NewRecord returns for an array
// that is not fully healthy.
var errNotRecordable = errors.New("md: array is not healthy enough to record")

// notRecordableError says why an array was not recorded.
type notRecordableError struct {
	Array  string // kernel name, "md127"
	Reason string
}

// Error returns the array and the reason.
func (e *notRecordableError) Error() string {
	return fmt.Sprintf("md: not recording %s: %s", e.Array, e.Reason)
}

// Is reports whether target is errNotRecordable.
func (e *notRecordableError) Is(target error) bool { return target == errNotRecordable }

// recordableLevels are the levels heal can act on: those with redundancy.
var recordableLevels = []string{"raid1", "raid4", "raid5", "raid6", "raid10"}

// NewRecord makes the record of a fully healthy array, stamping every slot
// as healthy at now. It is the one place that decides what may be
// recorded: a running array of a level with redundancy and native
// metadata, not reshaping, with every slot held by an in-sync member that
// has a by-path identity, and nothing missing. Otherwise it returns an
// error that says why ("md: not recording md127: REASON"; NewRecord
// returns no other error).
func NewRecord(a Array, now time.Time) (Record, error) {
	refuse := func(format string, args ...any) (Record, error) {
		return Record{}, &notRecordableError{Array: a.Device, Reason: fmt.Sprintf(format, args...)}
	}
	switch {
	case a.UUID == "":
		return refuse("its UUID is unknown")
	case !slices.Contains(recordableLevels, a.Level):
		return refuse("level %q has no redundancy to heal", a.Level)
	case a.Metadata == "" || a.Metadata == "none" || strings.HasPrefix(a.Metadata, "external:"):
		return refuse("metadata %q is not native md metadata", a.Metadata)
	case a.Availability != Online && a.Availability != ReadOnly:
		return refuse("it is %s", a.Availability)
	case a.Degraded > 0:
		return refuse("the kernel counts %d degraded slot(s)", a.Degraded)
	case a.Activity.Kind == sysfs.ActionReshape:
		return refuse("it is reshaping")
	case a.RaidDisks <= 0 || len(a.Slots) != a.RaidDisks:
		return refuse("it reports %d slots for raid_disks %d", len(a.Slots), a.RaidDisks)
	case len(a.Errors) > 0:
		return refuse("its status is incomplete: %s", strings.Join(a.Errors, "; "))
	}
	now = now.UTC()
	r := Record{
		UUID:           a.UUID,
		Name:           storable(a.Name),
		Homehost:       storable(a.Homehost),
		Metadata:       storable(a.Metadata),
		Level:          a.Level,
		RaidDisks:      a.RaidDisks,
		ComponentBytes: a.ComponentBytes,
		Slots:          make([]SlotRecord, 0, a.RaidDisks),
	}
	for i, s := range a.Slots {
		if s.Slot != i || s.State != SlotActive || s.Member == nil {
			return refuse("slot %d is %s", i, s.State)
		}
		m := s.Member
		switch {
		case m.Error != "":
			return refuse("member %s of slot %d: %s", m.Device, i, m.Error)
		case m.ByPath == "":
			// A pulled disk loses its sysfs device (and so its port)
			// before md notices; recording then would erase the port
			// heal needs. A disk on a bus without by-path names (loop,
			// other virtual devices) cannot be healed anyway.
			return refuse("member %s of slot %d has no by-path identity (gone, or on a bus without one)", m.Device, i)
		case !validByPath(m.ByPath):
			return refuse("member %s of slot %d has an invalid by-path identity %q", m.Device, i, escape.Text(m.ByPath))
		}
		r.Slots = append(r.Slots, SlotRecord{
			Slot:        i,
			ByPath:      m.ByPath,
			Device:      storable(m.Device),
			Serial:      storable(m.Serial),
			WWN:         storable(m.WWN),
			DeviceUUID:  m.DeviceUUID,
			SizeBytes:   m.SizeBytes,
			LastHealthy: now,
		})
	}
	return r, nil
}

// validByPath reports whether p can be recorded as a by-path identity: a
// non-empty single path element of valid UTF-8 without spaces.
func validByPath(p string) bool {
	return p != "" && utf8.ValidString(p) && !strings.ContainsAny(p, "/\x00 \n")
}

// storable returns s as a record keeps it: unchanged when it is valid
// UTF-8, else escaped (escape.Text). Names and serials come from disks and
// firmware and may hold any bytes; JSON would turn those into U+FFFD and
// the stored records would then never match their checksum. The escaped
// form is what text output shows, and it is only informational: heal
// matches by by-path identity and UUIDs, which are checked, not by these.
func storable(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return escape.Text(s)
}

// sameSlots reports whether r and o record the same array with the same
// disks in the same ports, ignoring the LastHealthy times.
func (r Record) sameSlots(o Record) bool {
	if r.UUID != o.UUID || r.Name != o.Name || r.Homehost != o.Homehost || r.Metadata != o.Metadata || r.Level != o.Level ||
		r.RaidDisks != o.RaidDisks || r.ComponentBytes != o.ComponentBytes || len(r.Slots) != len(o.Slots) {
		return false
	}
	for i := range r.Slots {
		a, b := r.Slots[i], o.Slots[i]
		a.LastHealthy, b.LastHealthy = time.Time{}, time.Time{}
		if a != b {
			return false
		}
	}
	return true
}

// validate checks a record read from a store: every field heal relies on
// must be present and consistent.
func (r Record) validate() error {
	u, err := uuid.Parse(r.UUID)
	switch {
	case err != nil:
		return fmt.Errorf("uuid %q: %w", r.UUID, err)
	case u.String() != r.UUID:
		return fmt.Errorf("uuid %q is not in canonical form", r.UUID)
	case !slices.Contains(recordableLevels, r.Level):
		return fmt.Errorf("array %s: level %q cannot be recorded", r.UUID, r.Level)
	case r.Metadata == "":
		return fmt.Errorf("array %s: no metadata version", r.UUID)
	case r.RaidDisks <= 0 || r.RaidDisks > maxRecordSlots:
		return fmt.Errorf("array %s: raid_disks %d out of range", r.UUID, r.RaidDisks)
	case len(r.Slots) != r.RaidDisks:
		return fmt.Errorf("array %s: %d slot records for raid_disks %d", r.UUID, len(r.Slots), r.RaidDisks)
	}
	// Only valid UTF-8 survives JSON unchanged, so only it is stored.
	for _, f := range []struct{ name, v string }{{"name", r.Name}, {"homehost", r.Homehost}, {"metadata", r.Metadata}} {
		if !utf8.ValidString(f.v) {
			return fmt.Errorf("array %s: %s %q is not valid UTF-8", r.UUID, f.name, escape.Text(f.v))
		}
	}
	for i, s := range r.Slots {
		switch {
		case s.Slot != i:
			return fmt.Errorf("array %s: slot record %d says slot %d", r.UUID, i, s.Slot)
		case s.LastHealthy.IsZero():
			return fmt.Errorf("array %s: slot %d has no last_healthy time", r.UUID, i)
		case !validByPath(s.ByPath):
			return fmt.Errorf("array %s: slot %d: invalid by_path %q", r.UUID, i, s.ByPath)
		}
		for _, f := range []struct{ name, v string }{{"device", s.Device}, {"serial", s.Serial}, {"wwn", s.WWN}} {
			if !utf8.ValidString(f.v) {
				return fmt.Errorf("array %s: slot %d: %s %q is not valid UTF-8", r.UUID, i, f.name, escape.Text(f.v))
			}
		}
		if s.DeviceUUID != "" {
			if _, err := uuid.Parse(s.DeviceUUID); err != nil {
				return fmt.Errorf("array %s: slot %d: device_uuid %q: %w", r.UUID, i, s.DeviceUUID, err)
			}
		}
	}
	return nil
}

// maxRecordSlots bounds raid_disks in a record: the kernel's limit for
// 1.x metadata (max_disks in md.c).
const maxRecordSlots = 1920

// Store keeps slot records. An embedding OS can keep them wherever it likes
// (a file, a config partition, an EFI variable); package md/store has one
// that keeps them in a file (store.File) and one in memory (store.Memory),
// with the file format.
//
// Load returns an error matching fs.ErrNotExist when nothing was ever
// saved, and an error when the records cannot be trusted (md/store's
// match store.ErrCorrupt or store.ErrVersion): callers must then act on
// nothing. Save must refuse records that Records.Validate refuses.
type Store interface {
	Load(ctx context.Context) (*Records, error)
	Save(ctx context.Context, rs *Records) error
}

// Records is the content of a Store: one Record per array, sorted by
// UUID, and the check cursors and results (one CheckRecord per array
// UUID, sorted by UUID; see Manager.Check). Whoever saves one part keeps
// the other: Manager.Record keeps Checks, Manager.Check keeps Arrays.
type Records struct {
	Arrays []Record      `json:"arrays"`
	Checks []CheckRecord `json:"checks,omitempty"`
	// ReAdds are the former members heal re-added, and those it will not
	// re-add again (ReAddMark); kept by whoever saves the other parts.
	ReAdds []ReAddMark `json:"re_adds,omitempty"`
}

// find returns the record of the array with the given UUID.
func (rs *Records) find(uuid string) (Record, bool) {
	if rs == nil {
		return Record{}, false
	}
	for _, r := range rs.Arrays {
		if r.UUID == uuid {
			return r, true
		}
	}
	return Record{}, false
}

// Put adds r, replacing any record of the same array, and keeps the list
// sorted. It reports whether the ports or disks changed (a new array, or
// sameSlots false); a refresh of the LastHealthy times alone is not a
// change.
func (rs *Records) Put(r Record) (changed bool) {
	for i, old := range rs.Arrays {
		if old.UUID == r.UUID {
			rs.Arrays[i] = r
			return !old.sameSlots(r)
		}
	}
	rs.Arrays = append(rs.Arrays, r)
	slices.SortFunc(rs.Arrays, func(a, b Record) int { return strings.Compare(a.UUID, b.UUID) })
	return true
}

// Validate checks the records as a Store must before saving them and
// after loading them: every field heal relies on is present and
// consistent (a canonical UUID, a level with redundancy, one slot record
// per slot, each with a valid by-path identity and a last_healthy time,
// names in valid UTF-8) and no array is recorded twice; and every check
// record is valid (CheckRecord), one per array UUID.
func (rs *Records) Validate() error {
	seen := map[string]bool{}
	for _, r := range rs.Arrays {
		if err := r.validate(); err != nil {
			return err
		}
		if seen[r.UUID] {
			return fmt.Errorf("array %s is recorded twice", r.UUID)
		}
		seen[r.UUID] = true
	}
	if err := validateChecks(rs.Checks); err != nil {
		return err
	}
	return validateReAdds(rs.ReAdds)
}
