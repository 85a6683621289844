package md

import "github.com/go-mdraid/mdraid/sysfs"

// MismatchMeaning says, in a short phrase for people, what a mismatch
// count (mismatch_cnt, Array.MismatchSectors) of sectors left by a sync
// of kind action means on an array of the given level. It returns ""
// when sectors is 0 or the level has no redundancy to disagree.
//
// The rule, from the kernel's accounting (docs/scrub.md §5): a check or
// resync on raid1 or raid10 compares copies, and copies can differ
// harmlessly where a page changed while it was being written (swap,
// O_DIRECT, writes in flight), so a count there is not by itself damage;
// on raid4, raid5 and raid6 the parity disagrees with the data, which is
// a real inconsistency. A repair counts what it found and rewrote. A
// recovery or reshape does not reset the count, so after one the count is
// an earlier pass's.
func MismatchMeaning(level string, action sysfs.SyncAction, sectors uint64) string {
	if sectors == 0 {
		return ""
	}
	var mirror bool
	switch level {
	case "raid1", "raid10":
		mirror = true
	case "raid4", "raid5", "raid6":
	default:
		return ""
	}
	switch action {
	case sysfs.ActionRepair:
		if mirror {
			return "found and rewritten by the repair: the copies agree again"
		}
		return "found and rewritten by the repair: the parity was recomputed"
	case sysfs.ActionRecover, sysfs.ActionReshape:
		return "counted by an earlier check, repair or resync (a " + string(action) + " compares nothing)"
	}
	if mirror {
		return "on " + level + " this can be harmless (swap, writes in flight, O_DIRECT rewrites); investigate if it recurs on data at rest"
	}
	return "on " + level + " the parity disagrees with the data: a real inconsistency to investigate"
}
