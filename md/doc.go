// Package md is the high-level API of go-mdraid: it discovers Linux MD
// arrays from sysfs and their members' superblocks, with no configuration,
// no mdadm and no udev, reports their health, and replaces, heals and
// changes them through one planner and one executor.
//
// # Opening
//
// [Open] returns a [Manager] for a system: a nil [*Config] is the running
// one; Config's roots (SysRoot, DevRoot, RunDir, MountInfo) put it on a
// sysfs tree and device directory elsewhere, as tests do. A Manager keeps
// no state between calls: every call reads the system afresh.
//
// # Discovery and status
//
// [Manager.Discover] finds every array, active or inactive, and returns a
// [Report] with one [Array] per array: its identity (UUID, name, homehost,
// metadata version, level, sizes), three separate health fields
// ([Availability], [Redundancy] and [Activity]), member [Counts], one
// [Slot] per slot including empty ones, spares, and faulty members that
// hold no slot. [Manager.DiscoverNames] reports the named arrays only, and
// [Manager.Status] one array.
//
// A problem with one array or member is recorded inside its entry
// (Array.Errors, Member.Error); the rest of the report is still filled in.
// When an array's state could not be read at all, [Array.Readable] says
// so. The JSON form of [Report] is a stable schema ([SchemaVersion]),
// documented in STATUS-JSON.md at the module root.
//
// # Naming arrays
//
// Every call that takes an array accepts it as a user would type it: the
// kernel name ("md127"), a device node or link ("/dev/md127",
// "/dev/md/boot", "md/boot"), the superblock name ("boot" or
// "homehost:boot") or the array UUID (canonical or as mdadm prints it).
// Kernel names and device nodes are tried first. A superblock name or
// UUID is chosen by whoever wrote the disk, so one that more than one
// array carries is refused (ErrAmbiguous) rather than guessed; a name
// that matches nothing gives ErrNoArray.
//
// # Decisions
//
// Everything that decides something lives here and nowhere else: whether
// an array can still serve its data (the kernel's rules per level,
// including raid10's near/far copies), how much redundancy is left, which
// member is stale, whether a disk is blank ([CheckBlank]), and what a
// superblock name may become as a device name ([SafeName]).
//
// # Replace
//
// [Manager.PlanReplace] gathers the facts about the array and the
// candidate disk of a [ReplaceRequest] in one pass and decides from them
// alone: a [Plan] (every [PlanCheck], [Step] and [Write], and the
// [Candidate] as found) or a [*RefusedError], alongside the plan with the
// failed check. [Manager.ExecuteReplace] is the one executor: it locks the
// array, plans again, and writes the new member's superblock, adds it and
// pins it to the planned slot, so that an array never grows and a disk
// that holds anything is never written; it returns a [ReplaceResult].
// [Manager.Replace] is the two in one call. [Manager.WaitReplace] follows
// the rebuild that follows ([WaitRequest]).
//
// [Manager.Fail], [Manager.Remove] and [Manager.Run] are the primitives:
// one kernel change each, refused when it would lose data.
//
// # Slot records and heal
//
// [NewRecord] remembers, for a healthy array, which port (by-path) held
// each slot; a [Store] keeps the [Records] (package md/store has the file
// format and a store that writes it atomically and refuses a corrupt
// file). [Manager.Record] is one recording pass over the arrays
// ([RecordOptions], [RecordResult]). [Manager.Heal] fills a missing slot
// with a blank disk found at the recorded port, through the same planner
// and executor, also after a disk was swapped while the machine was off;
// it returns one [Decision] per slot it considered, with its [Outcome].
//
// # Check (scrub)
//
// [Manager.Check] checks or repairs arrays ([CheckRequest]): it refuses,
// writing nothing, arrays that are not redundant, not running, read-only
// or read-auto, degraded, frozen, resyncing, recovering, reshaping or
// already checking, then re-reads the facts right before writing sync_min
// and sync_action. With a Duration it stops the check at the deadline and
// keeps the cursor and the mismatches so far in the Store
// ([Records].Checks, one [CheckRecord] per array UUID); the next call
// resumes there. A finished pass records its time, action and total.
// [MismatchMeaning] says what mismatches mean per level. The kernel facts
// are in docs/scrub.md.
//
// # Watch
//
// Package md/watch reports events (mdadm's names where mdadm has them) as
// the kernel changes arrays, woken by poll on sysfs attributes
// ([Manager.FS]) and /proc/mdstat, with a periodic rescan as a safety net;
// it can keep the records current and heal as it goes. It is built on
// this package's exported API ([Manager.Discover], [Manager.Record],
// [Manager.Heal], [NewRecord]). Package md/metrics is a Prometheus
// collector over [Manager.Discover].
//
// # Errors
//
// An operation either goes ahead or is refused. A refusal wrote nothing
// and changed nothing: it matches [ErrRefused], and is a [*RefusedError]
// whose fields say which operation (Op: replace, fail, remove, run,
// heal), on which array and member, which planner check failed, and why,
// and which unwraps to the specific cause, so that errors.Is(err,
// ErrNoEmptySlot), errors.Is(err, ErrNoArray), errors.Is(err, unix.EBUSY)
// or errors.As(err, &notBlank) (a [*NotBlankError], matching ErrNotBlank)
// still work. Refusals are: a check this package makes before writing
// (the planner's, the primitives', heal's), a name that matches no array
// or several, another replace holding the array's lock, an unsafe run
// directory, a plan that changed before the executor wrote anything
// ([ErrPlanChanged]), and a kernel that answers EBUSY to a single change
// (fail, remove), which therefore did not happen. Each message says what
// was refused and why.
//
// Everything else is a failure: the system could not be read, or a change
// went wrong after it started. [*ExecError] is the executor's failure;
// its NothingChanged field says whether anything stays changed, and it
// never matches ErrRefused. A heal [Decision] that did not act matches
// [ErrHealDeferred] (the array is busy; a later pass tries again) or
// [ErrHealNotRetried] (an attempt that failed before in the same way is
// not repeated until the disk or the array changes); [ErrUnsafeName] is
// SafeName's answer for a name it refuses.
//
// Kernel documentation: https://docs.kernel.org/admin-guide/md.html.
package md
