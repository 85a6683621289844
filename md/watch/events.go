package watch

// This file holds the events Start reports and the one function that
// derives them from two successive snapshots (diff). Every decision about
// what counts as an event lives in diff and its helpers.

import (
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/go-mdraid/mdraid/internal/escape"
	"github.com/go-mdraid/mdraid/md"
	"github.com/go-mdraid/mdraid/sysfs"
)

// EventType names an event. Where mdadm --monitor has an event for the same
// thing, the name is mdadm's (mdmonitor.c events_map).
type EventType string

// Event types. mdadm's names first, then go-mdraid's own.
const (
	// NewArray: an array appeared after the watch started.
	NewArray EventType = "NewArray"
	// DegradedArray: an array is degraded and was not before (or is
	// degraded when first seen).
	DegradedArray EventType = "DegradedArray"
	// Fail: a member that was in sync is not any more (faulty, or gone).
	Fail EventType = "Fail"
	// FailSpare: a spare, or a member being rebuilt, became faulty.
	FailSpare EventType = "FailSpare"
	// SpareActive: a member that was not in sync now is (a rebuild into
	// it finished).
	SpareActive EventType = "SpareActive"
	// RebuildStarted: a resync, recovery, check, repair or reshape started
	// (Event.Action says which).
	RebuildStarted EventType = "RebuildStarted"
	// Rebuild20, Rebuild40, Rebuild60 and Rebuild80: the sync passed that
	// percentage (only the highest step passed since the last event is
	// reported, as mdadm does).
	Rebuild20 EventType = "Rebuild20"
	Rebuild40 EventType = "Rebuild40"
	Rebuild60 EventType = "Rebuild60"
	Rebuild80 EventType = "Rebuild80"
	// RebuildFinished: the sync ended (finished or interrupted).
	RebuildFinished EventType = "RebuildFinished"
	// CheckStarted: a check or repair started (Event.Action says which,
	// Event.Percent where it started: a resumed check starts part-way).
	// It follows the RebuildStarted that mdadm, and this watcher, report
	// for every kind of sync, so that a check can be told from a rebuild
	// by type alone.
	CheckStarted EventType = "CheckStarted"
	// CheckFinished: a check or repair ended, finished or interrupted
	// (mdctl check --duration stops one at its deadline), after its
	// RebuildFinished. Event.MismatchSectors is the kernel's
	// mismatch_cnt at the end, as mdadm --monitor adds "mismatches
	// found: N" to RebuildFinished: sectors the check found inconsistent,
	// or the repair rewrote, since it (or, for a resumed check, this part
	// of it) started.
	CheckFinished EventType = "CheckFinished"
	// TestMessage: a test of the path events take, one per array, made
	// by TestEvents (mdctl watch --test, as mdadm --monitor --test);
	// nothing changed.
	TestMessage EventType = "TestMessage"
	// DeviceDisappeared: an array went away (stopped).
	DeviceDisappeared EventType = "DeviceDisappeared"
	// SparesMissing: an array has fewer spares than Options.Spares
	// expects for it.
	SparesMissing EventType = "SparesMissing"

	// MemberAdded: a device was bound to an array.
	MemberAdded EventType = "MemberAdded"
	// MemberRemoved: a device was unbound from an array.
	MemberRemoved EventType = "MemberRemoved"
	// SlotRecorded: the record of a healthy array was written to the store
	// because it is new or its disks or ports changed.
	SlotRecorded EventType = "SlotRecorded"
	// HealStarted: heal added a blank disk to a missing slot (Event.Member
	// is the disk); recovery follows.
	HealStarted EventType = "HealStarted"
	// HealRefused: heal found a reason not to fill a missing slot
	// (Event.Reason). It is reported once per slot and reason; waiting
	// for a running rebuild to end is not a refusal.
	HealRefused EventType = "HealRefused"
	// HealFailed: heal tried to fill a slot and the kernel or the disk
	// refused (Event.Reason).
	HealFailed EventType = "HealFailed"
	// HealDeferred: heal waits before filling a slot (Event.Reason): a
	// sync runs or is pending, recovery is frozen (the reason says by
	// whom and what undoes it), a spare is there to rebuild onto, or
	// another slot of the array is healed first. It is reported once per
	// slot and reason.
	HealDeferred EventType = "HealDeferred"
	// Unfrozen: heal unfroze recovery that an interrupted replace had
	// left frozen (Event.Reason says what it did).
	Unfrozen EventType = "Unfrozen"
	// LastResortStarted: an array inactive for Options.LastResort was
	// started with the members it has (Event.Reason says so and what
	// was written).
	LastResortStarted EventType = "LastResortStarted"
	// LastResortRefused: an array inactive for Options.LastResort was
	// not started (Event.Reason: its members cannot serve its data, or
	// the kernel refused); reported once per array and reason.
	LastResortRefused EventType = "LastResortRefused"
)

// rebuildSteps are the Rebuild events by step of 20%.
var rebuildSteps = map[int]EventType{20: Rebuild20, 40: Rebuild40, 60: Rebuild60, 80: Rebuild80}

// Event is one change Start reports. Its JSON form, one object per line
// from mdctl watch --json, is:
//
//	{
//	  "event":       EventType, always
//	  "time":        RFC 3339 time the change was seen, always
//	  "array":       kernel name ("md127"), always
//	  "array_path":  device node ("/dev/md127"), always
//	  "uuid":        array UUID, when known
//	  "name":        array name from the superblock ("boot"), when set
//	  "member":      kernel name of the member ("vdb"), for member events
//	  "member_path": its device node ("/dev/vdb")
//	  "slot":        slot number, when the event concerns a slot
//	  "by_path":     by-path identity of the member or recorded port
//	  "action":      sync action, for Rebuild* events ("recover")
//	  "percent":     progress, for Rebuild20..80 (the step) and
//	                 RebuildStarted and CheckStarted (where it started)
//	  "spares":      spares present, for SparesMissing
//	  "expected":    spares expected, for SparesMissing
//	  "reason":      why, for HealRefused, HealFailed, HealDeferred,
//	                 Unfrozen, LastResortStarted and LastResortRefused
//	  "mismatch_sectors": mismatch_cnt at the end, for CheckFinished
//	                 (512-byte sectors; 0 included)
//	}
//
// Fields that do not apply are left out. New fields may be added; the
// meaning of existing ones does not change.
type Event struct {
	Type       EventType `json:"event"`
	Time       time.Time `json:"time"`
	Array      string    `json:"array"`
	ArrayPath  string    `json:"array_path"`
	UUID       string    `json:"uuid,omitempty"`
	Name       string    `json:"name,omitempty"`
	Member     string    `json:"member,omitempty"`
	MemberPath string    `json:"member_path,omitempty"`
	Slot       *int      `json:"slot,omitempty"`
	ByPath     string    `json:"by_path,omitempty"`
	Action     string    `json:"action,omitempty"`
	Percent    *int      `json:"percent,omitempty"`
	Spares     *int      `json:"spares,omitempty"`
	Expected   *int      `json:"expected,omitempty"`
	Reason     string    `json:"reason,omitempty"`
	// MismatchSectors is set on CheckFinished (see there).
	MismatchSectors *uint64 `json:"mismatch_sectors,omitempty"`
}

// String returns a one-line description, as mdctl watch prints it.
func (e Event) String() string {
	s := fmt.Sprintf("%s %s", e.Type, e.ArrayPath)
	if e.MemberPath != "" {
		s += " " + e.MemberPath
	}
	if e.Slot != nil {
		s += " slot " + strconv.Itoa(*e.Slot)
	}
	if e.ByPath != "" {
		s += " (" + e.ByPath + ")"
	}
	if e.Action != "" {
		s += " " + e.Action
	}
	if e.Percent != nil && (e.Type == RebuildStarted || e.Type == CheckStarted) {
		s += fmt.Sprintf(" at %d%%", *e.Percent)
	}
	if e.MismatchSectors != nil {
		s += fmt.Sprintf(", mismatches found: %d sectors", *e.MismatchSectors)
	}
	if e.Expected != nil && e.Spares != nil {
		s += fmt.Sprintf(" %d of %d spares", *e.Spares, *e.Expected)
	}
	if e.Reason != "" {
		s += ": " + e.Reason
	}
	// The reason can quote a name from a disk.
	return escape.Text(s)
}

// Env returns the event as environment variables for a program run per
// event (mdctl watch --exec): MDRAID_EVENT, MDRAID_ARRAY (the device
// node), MDRAID_ARRAY_NAME, MDRAID_UUID, MDRAID_MEMBER (the member's device
// node), MDRAID_SLOT, MDRAID_BY_PATH, MDRAID_ACTION, MDRAID_PERCENT,
// MDRAID_MISMATCH_SECTORS, MDRAID_SPARES, MDRAID_EXPECTED, MDRAID_REASON
// and MDRAID_TIME. Variables
// that do not apply are left out.
//
// The values are untrusted: the array name comes from a superblock and the
// reason may quote one, so whoever wrote a disk chooses them. Every value
// is escaped as mdctl's text output escapes it (control characters,
// newlines and bytes that are not UTF-8 become \xHH, a backslash \\), so
// no value spans lines or carries terminal sequences; a program must still
// never hand one to a shell or use it as a path.
func (e Event) Env() []string {
	env := []string{
		"MDRAID_EVENT=" + escape.Text(string(e.Type)),
		"MDRAID_ARRAY=" + escape.Text(e.ArrayPath),
		"MDRAID_TIME=" + e.Time.Format(time.RFC3339Nano),
	}
	add := func(k, v string) {
		if v != "" {
			env = append(env, k+"="+escape.Text(v))
		}
	}
	itoa := func(p *int) string {
		if p == nil {
			return ""
		}
		return strconv.Itoa(*p)
	}
	add("MDRAID_ARRAY_NAME", e.Name)
	add("MDRAID_UUID", e.UUID)
	add("MDRAID_MEMBER", e.MemberPath)
	add("MDRAID_SLOT", itoa(e.Slot))
	add("MDRAID_BY_PATH", e.ByPath)
	add("MDRAID_ACTION", e.Action)
	add("MDRAID_PERCENT", itoa(e.Percent))
	if e.MismatchSectors != nil {
		add("MDRAID_MISMATCH_SECTORS", strconv.FormatUint(*e.MismatchSectors, 10))
	}
	add("MDRAID_SPARES", itoa(e.Spares))
	add("MDRAID_EXPECTED", itoa(e.Expected))
	add("MDRAID_REASON", e.Reason)
	return env
}

// Args returns the arguments mdadm --monitor --program passes: the event
// name, the array's device node and, for member events, the member's.
// They are escaped as Env's values are.
func (e Event) Args() []string {
	args := []string{escape.Text(string(e.Type)), escape.Text(e.ArrayPath)}
	if e.MemberPath != "" {
		args = append(args, escape.Text(e.MemberPath))
	}
	return args
}

func intp(v int) *int { return &v }

// arrayEvent starts an event about a.
func arrayEvent(t EventType, a *md.Array, now time.Time) Event {
	return Event{Type: t, Time: now, Array: a.Device, ArrayPath: a.Path, UUID: a.UUID, Name: a.Name}
}

// TestEvents returns one TestMessage event per array of r, in the
// report's order, as mdadm --monitor --test reports one for every array
// at start: for testing that events reach every output.
func TestEvents(r *md.Report, now time.Time) []Event {
	var evs []Event
	if r == nil {
		return nil
	}
	for i := range r.Arrays {
		if a := &r.Arrays[i]; present(a) {
			evs = append(evs, arrayEvent(TestMessage, a, now))
		}
	}
	return evs
}

// memberEvent starts an event about member m of a.
func memberEvent(t EventType, a *md.Array, m *md.Member, now time.Time) Event {
	e := arrayEvent(t, a, now)
	e.Member, e.MemberPath, e.ByPath = m.Device, m.Path, m.ByPath
	if m.Slot >= 0 {
		e.Slot = intp(m.Slot)
	}
	return e
}

// present reports whether a counts as an existing array: a device whose
// array was stopped lingers with array_state "clear" for a moment.
func present(a *md.Array) bool { return a.State != "clear" }

// inSync and faulty read a member's kernel flags; faulty is the kernel's
// rule for a failed member (see [sysfs.MemberState.Failed]), not the bare
// "faulty" that a member with unacknowledged bad blocks also shows.
func inSync(m *md.Member) bool { return slices.Contains(m.Flags, "in_sync") }
func faulty(m *md.Member) bool { return m.Flags.Failed() }

// syncing reports whether a sync thread works on a, and its percentage.
// Like mdadm, which looks for a percentage in /proc/mdstat, it counts a
// sync only once it reports progress: right after a member fails,
// sync_action reads "recover" while the kernel looks for a spare
// (MD_RECOVERY_NEEDED) even when there is none, and sync_completed stays
// "none".
//
// A recovery also needs a member to rebuild: on a real kernel (6.1), a
// member failing in a raid1 without spares makes the sync thread run a
// "recover" pass that reports progress over nothing. mdadm, reading
// /proc/mdstat, does not see it either.
func syncing(a *md.Array) (bool, int) {
	switch a.Activity.Kind {
	case sysfs.ActionRecover:
		if !rebuilding(a) {
			return false, 0
		}
		fallthrough
	case sysfs.ActionResync, sysfs.ActionCheck, sysfs.ActionRepair, sysfs.ActionReshape:
		if a.Activity.TotalSectors > 0 {
			return true, int(a.Activity.Percent)
		}
	}
	return false, 0
}

// rebuilding reports whether a member is being rebuilt into a slot: a
// slot being recovered, or a replacement.
func rebuilding(a *md.Array) bool {
	for _, s := range a.Slots {
		if s.State == md.SlotRebuilding || s.Replacement != nil {
			return true
		}
	}
	return false
}

// idleSpares counts spares that wait for a slot.
func idleSpares(a *md.Array) int { return len(a.Spares) }

// diff derives the events between two snapshots. prev is nil for the
// first snapshot of a watch: then only the state worth reporting at
// start-up is reported (degraded arrays, missing spares), as mdadm
// --monitor does. spares maps an array UUID to the number of spares it
// should have (mdadm.conf's spares=); arrays not in it are not checked.
// Events come out in array order, and for each array in this order:
// NewArray, member events (Fail, FailSpare, SpareActive, MemberAdded,
// MemberRemoved), DegradedArray, Rebuild*, SparesMissing; then
// DeviceDisappeared for arrays gone.
func diff(prev, cur *md.Report, spares map[string]int) []Event {
	now := cur.Time
	var out []Event
	old := map[string]*md.Array{}
	if prev != nil {
		for i := range prev.Arrays {
			if a := &prev.Arrays[i]; present(a) {
				old[a.Device] = a
			}
		}
	}
	seen := map[string]bool{}
	for i := range cur.Arrays {
		a := &cur.Arrays[i]
		if !present(a) {
			continue
		}
		seen[a.Device] = true
		p := old[a.Device]
		if prev != nil && p == nil {
			out = append(out, arrayEvent(NewArray, a, now))
		}
		if p != nil && p.Availability != md.Inactive && a.Availability != md.Inactive {
			// An array that is not running has no live membership:
			// mdadm --stop unbinds every member of an array already
			// stopped, and assembly binds them before it runs.
			out = append(out, memberEvents(p, a, now)...)
		}
		if a.Availability == md.Degraded && (p == nil || p.Availability != md.Degraded) {
			out = append(out, arrayEvent(DegradedArray, a, now))
		}
		if p != nil {
			out = append(out, syncEvents(p, a, now)...)
		}
		if want, ok := spares[a.UUID]; ok && a.Availability != md.Inactive {
			have := idleSpares(a)
			if have < want && (p == nil || idleSpares(p) >= want) {
				e := arrayEvent(SparesMissing, a, now)
				e.Spares, e.Expected = intp(have), intp(want)
				out = append(out, e)
			}
		}
	}
	if prev != nil {
		for i := range prev.Arrays {
			a := &prev.Arrays[i]
			if present(a) && !seen[a.Device] {
				out = append(out, arrayEvent(DeviceDisappeared, a, now))
			}
		}
	}
	return out
}

// memberEvents compares the members of one array in two snapshots, in
// the kernel's terms (mdadm compares GET_DISK_INFO states the same way):
// losing in_sync is Fail, becoming faulty without having been in sync is
// FailSpare, gaining in_sync is SpareActive.
func memberEvents(p, a *md.Array, now time.Time) []Event {
	var out []Event
	before := map[string]*md.Member{}
	for _, m := range p.Members() {
		before[m.Device] = m
	}
	after := map[string]bool{}
	for _, m := range a.Members() {
		after[m.Device] = true
		o := before[m.Device]
		if o == nil {
			out = append(out, memberEvent(MemberAdded, a, m, now))
			if faulty(m) {
				out = append(out, memberEvent(FailSpare, a, m, now))
			}
			continue
		}
		var t EventType
		switch {
		case inSync(o) && !inSync(m):
			t = Fail
		case !inSync(o) && !faulty(o) && faulty(m):
			t = FailSpare
		case !inSync(o) && inSync(m):
			t = SpareActive
		default:
			continue
		}
		e := memberEvent(t, a, m, now)
		if e.Slot == nil && o.Slot >= 0 {
			// A failed member may already have left the slot it had.
			e.Slot = intp(o.Slot)
		}
		out = append(out, e)
	}
	for _, o := range p.Members() {
		if after[o.Device] {
			continue
		}
		if inSync(o) && !faulty(o) {
			out = append(out, memberEvent(Fail, p, o, now))
		}
		out = append(out, memberEvent(MemberRemoved, p, o, now))
	}
	return out
}

// scrub reports whether a sync of kind k is a check or a repair, which
// read the whole array and count mismatches, rather than a rebuild.
func scrub(k sysfs.SyncAction) bool { return k == sysfs.ActionCheck || k == sysfs.ActionRepair }

// syncEvents follows the sync thread as mdadm does with /proc/mdstat's
// percentage: started, each 20% step passed since the previous snapshot
// (not in the snapshot where it started), finished. A change from one kind
// of sync to another is a finish and a start. A check or repair is also
// reported as such: CheckFinished after its RebuildFinished, with the
// mismatch count when the sync thread is idle again (a sync that follows
// at once may have reset it), and CheckStarted after its RebuildStarted.
func syncEvents(p, a *md.Array, now time.Time) []Event {
	var out []Event
	was, wasPct := syncing(p)
	is, pct := syncing(a)
	kindChanged := was && is && p.Activity.Kind != a.Activity.Kind
	if was && (!is || kindChanged) {
		e := arrayEvent(RebuildFinished, a, now)
		e.Action = string(p.Activity.Kind)
		out = append(out, e)
		if scrub(p.Activity.Kind) {
			e.Type = CheckFinished
			if !is && a.MismatchSectors != nil {
				n := *a.MismatchSectors
				e.MismatchSectors = &n
			}
			out = append(out, e)
		}
	}
	switch {
	case is && (!was || kindChanged):
		e := arrayEvent(RebuildStarted, a, now)
		e.Action = string(a.Activity.Kind)
		e.Percent = intp(pct)
		out = append(out, e)
		if scrub(a.Activity.Kind) {
			e.Type, e.Percent = CheckStarted, intp(pct)
			out = append(out, e)
		}
	case is:
		if step := pct / 20 * 20; step > wasPct/20*20 && step >= 20 && step < 100 {
			e := arrayEvent(rebuildSteps[step], a, now)
			e.Action = string(a.Activity.Kind)
			e.Percent = intp(step)
			out = append(out, e)
		}
	}
	return out
}
