// Package md is the high-level API of go-mdraid: it discovers Linux MD
// arrays from sysfs and their members' superblocks, with no configuration,
// no mdadm and no udev, and reports their health.
//
// # Discovery and status
//
// [Open] returns a [Manager] for a system (the running one, or a sysfs
// tree and device directory under other roots, as tests use).
// [Manager.Discover] finds every array, active or inactive, and returns a
// [Report] with one [Array] per array: its identity (UUID, name, homehost,
// metadata version, level, sizes), three separate health fields
// ([Availability], [Redundancy] and [Activity]), one [Slot] per slot
// including empty ones, spares, and faulty members that hold no slot.
//
// A problem with one array or member is recorded inside its entry
// (Array.Errors, Member.Error); the rest of the report is still filled in.
//
// # Decisions
//
// Everything that decides something lives here and nowhere else: whether
// an array can still serve its data (the kernel's rules per level,
// including raid10's near/far copies), how much redundancy is left, and
// which member is stale. The JSON form of [Report] is a stable schema,
// documented in STATUS-JSON.md at the module root.
//
// Kernel documentation: https://docs.kernel.org/admin-guide/md.html.
package md
