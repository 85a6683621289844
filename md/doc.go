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
// # Replace
//
// [Manager.PlanReplace] turns a snapshot of the array and facts about a
// candidate disk into a [Plan] (every check, step and write) or a
// [RefusedError]; [CheckBlank] is the one decision whether a disk holds
// anything. [Manager.ExecuteReplace] is the one executor: it locks the
// array, re-plans, and writes the new member's superblock, adds it and
// pins it to the planned slot, so that an array never grows and a disk that
// holds anything is never written. [Manager.Fail], [Manager.Remove] and
// [Manager.Run] are the primitives; [Manager.WaitReplace] follows a rebuild.
//
// # Slot records and heal
//
// [NewRecord] remembers, for a healthy array, which port (by-path) held each
// slot; a [Store] keeps the records (package md/store has the file format
// and a store that writes it atomically and refuses a corrupt file). [Manager.Heal] fills a missing slot with a blank
// disk found at the recorded port, through the same planner and executor,
// also after a disk was swapped while the machine was off.
//
// # Watch
//
// Package md/watch reports events (mdadm's names where mdadm has them) as
// the kernel changes arrays, woken by poll on sysfs attributes and
// /proc/mdstat, with a periodic rescan as a safety net; it can keep the
// records current and heal as it goes. It is built on this package's
// exported API ([Manager.Discover], [Manager.Heal], [NewRecord]).
//
// # Errors
//
// An operation either goes ahead or is refused. A refusal wrote nothing
// and changed nothing: it matches [ErrRefused], and is a [*RefusedError]
// whose fields say which operation (Op: replace, fail, remove, run, heal),
// on which array and member, and why, and which unwraps to the specific
// cause, so that errors.Is(err, ErrNoEmptySlot), errors.Is(err,
// unix.EBUSY) or errors.As(err, &notBlank) still work. Refusals are: a
// check this package makes before writing (the planner's, the
// primitives', heal's), a name that matches no array or several, a held
// lock or an unsafe run directory ([lockedError] matches ErrRefused by
// itself), a plan that changed before the executor wrote anything
// ([ErrPlanChanged]), and a kernel that answers EBUSY to a single change
// (fail, remove), which therefore did not happen. Everything else is a
// failure: the system could not be read, or a change went wrong after
// it started. [*ExecError] is the executor's failure; its NothingChanged
// field says whether anything stays changed, and it never matches
// ErrRefused.
//
// Kernel documentation: https://docs.kernel.org/admin-guide/md.html.
package md
