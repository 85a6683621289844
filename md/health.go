package md

// This file holds the decisions about health: whether an array can still
// serve its data, how much redundancy it has left, and how it is reported.
// Each rule lives in exactly one function here.

// Availability says whether an array can serve its data.
type Availability string

// Availability values, in the JSON form. When several apply, the first in
// this order is reported: unknown, inactive, failed, degraded, read-only,
// online.
const (
	// Online is a running array with every slot in sync.
	Online Availability = "online"
	// Degraded is a running array that still serves all its data but has
	// at least one slot without an in-sync member.
	Degraded Availability = "degraded"
	// Failed is an array that has lost data: too few members are in sync
	// for its level, or the kernel marked it broken.
	Failed Availability = "failed"
	// Inactive is an array that is assembled but not running (or stopped
	// and cleared), so it serves nothing.
	Inactive Availability = "inactive"
	// ReadOnly is a running, complete array that is read-only or
	// auto-read-only.
	ReadOnly Availability = "read-only"
	// Unknown is an array whose health cannot be told: its array_state
	// holds a value this package does not know, a running array's
	// raid_disks could not be read, or a member's state (or the slot of
	// a member of a running array, when no rdN link gives it) could not
	// be read. Array.Readable is false for it.
	Unknown Availability = "unknown"
)

// Redundancy says how many more member failures an array can take.
type Redundancy string

// Redundancy values, in the JSON form.
const (
	// Full: every slot is in sync, and the level has redundancy.
	Full Redundancy = "full"
	// Reduced: some slots are missing, but losing any one more in-sync
	// member still leaves every block readable; or every slot is in sync
	// but a resync has not finished (pending, delayed or running:
	// Activity.ResyncStartSectors is set), so beyond that point the
	// members do not yet agree and redundancy is not full.
	Reduced Redundancy = "reduced"
	// NoRedundancy: losing some single in-sync member would lose data
	// (always the case for raid0 and linear), or the array is not running.
	NoRedundancy Redundancy = "none"
)

// raid10Copies returns the near and far copy counts of a raid10 layout:
// the low byte is the number of near copies, the next byte the number of
// far copies (md-format.md; mdadm's "near=2", "far=2", "offset=2").
func raid10Copies(layout int64) (near, far int) {
	return int(layout & 0xff), int((layout >> 8) & 0xff)
}

// survives reports whether an array of the given level and layout can
// still return every block when only the slots with inSync[slot] == true
// hold in-sync data.
func survives(level string, layout int64, inSync []bool) bool {
	n := len(inSync)
	missing := 0
	for _, ok := range inSync {
		if !ok {
			missing++
		}
	}
	switch level {
	case "raid1", "multipath":
		return missing < n
	case "raid4", "raid5":
		return missing <= 1
	case "raid6":
		return missing <= 2
	case "raid10":
		near, far := raid10Copies(layout)
		copies := near * far
		if n == 0 || near == 0 || copies == 0 {
			return missing == 0
		}
		// Every run of `copies` consecutive slots, starting at each
		// multiple of `near`, holds the copies of some chunks: at least
		// one slot in each run must be in sync.
		first := 0
		for {
			found := false
			for i := 0; i < copies; i++ {
				if inSync[(first+i)%n] {
					found = true
					break
				}
			}
			if !found {
				return false
			}
			first = (first + near) % n
			if first == 0 {
				return true
			}
		}
	default: // raid0, linear, and anything without redundancy
		return missing == 0
	}
}

// redundancy classifies what is left after the slots with inSync false are
// lost, assuming the array survives.
func redundancy(level string, layout int64, inSync []bool) Redundancy {
	if len(inSync) == 0 {
		return NoRedundancy
	}
	try := append([]bool(nil), inSync...)
	missing := 0
	for i, ok := range inSync {
		if !ok {
			missing++
			continue
		}
		try[i] = false
		lives := survives(level, layout, try)
		try[i] = true
		if !lives {
			return NoRedundancy
		}
	}
	if missing == 0 {
		return Full
	}
	return Reduced
}
