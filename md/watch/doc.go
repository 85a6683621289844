// Package watch reports changes to md arrays as they happen, as mdadm
// --monitor does, built on package md's exported API: Start takes a
// snapshot with md.Manager.Discover whenever the kernel signals a change,
// and reports the difference to the previous one as Events (mdadm's names
// where mdadm has them: NewArray, Fail, DegradedArray, RebuildStarted,
// ...). A check or repair is also reported as CheckStarted and
// CheckFinished (with the mismatch count), after its RebuildStarted and
// RebuildFinished. TestEvents makes one TestMessage per array of a
// report, to test where events go (mdctl watch --test, as mdadm --monitor
// --test).
//
// # Wake-ups
//
// The watcher polls (POLLPRI) each array's array_state, sync_action,
// sync_completed and degraded, each member's dev-*/state, and
// /proc/mdstat; a full rescan every Options.Rescan is the safety net. A
// notification on one array's files reads that array alone again, so a
// wake-up costs the same with one array or many; /proc/mdstat, which
// names no array, and anything unsure read every array. It runs on
// Linux only (ErrUnsupported elsewhere).
//
// A notified file is read at once to re-arm it. When a member's state
// file reads a failure (Fail, FailSpare), that event is sent from this
// read, before the array is read again; the re-read then reports the
// rest (DegradedArray, a sync that starts) and not the failure again.
// The event is derived by the same comparison as every other, from the
// previous snapshot with that member's flags as read, and dated by the
// Manager's clock; Options.Snapshot sees only whole snapshots. So within
// one wake-up these failures come before the other arrays' events, and
// before the snapshot that shows them.
//
// # Records and heal
//
// With Options.Store, the record of every fully healthy array
// (md.NewRecord) is kept current (SlotRecorded); with Options.Heal,
// degraded arrays are healed from those records by md.Manager.Heal, and
// its decisions are reported once per slot and reason (HealStarted,
// HealRefused, HealFailed, HealDeferred, Unfrozen).
//
// # Last resort
//
// With Options.LastResort, an array that stays inactive that long since
// the watcher first saw it so is started by md.Manager.Run, the decision
// of mdctl run (LastResortStarted); one whose members cannot serve its
// data is reported once (LastResortRefused) and never started. The
// watcher wakes when a start is due; a refused array is tried again only
// at a scan something else brings.
//
// # Snapshots
//
// Options.Snapshot hands each snapshot the watcher takes (or the error
// when it could not take one) to the caller, so that a daemon can serve
// metrics from them (md/metrics.Latest) without reading sysfs again.
//
// # JSON
//
// An Event's JSON form is what mdctl watch --json prints, one object per
// line; see Event.
package watch
