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
// (Array.Errors, Member.Error), as text and as an error value beside it
// (Array.Errs, Member.Err) that errors.Is matches against its cause
// (fs.ErrNotExist, fs.ErrPermission, sysfs.ErrFormat, [ErrUnknownValue],
// [ErrNoAnswer], a superblock sentinel); the rest of the report is still
// filled in.
// When an array's state could not be read at all, [Array.Readable] says
// so. The JSON form of [Report] is a stable schema ([SchemaVersion]),
// documented in STATUS-JSON.md at the module root.
//
// Discover reads every member's superblock with O_DIRECT on every call,
// as fresh as the disk. A program that asks every few seconds (an
// exporter, a reconcile loop) should ask a [Poller] ([Manager.NewPoller])
// instead: it reads the superblocks again only for an array whose sysfs
// facts changed, so that in steady state it reads no member disk.
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
// that matches nothing gives ErrNoArray. To be sure of that, a lookup by
// name reads the identity of every array: of a started array the
// superblock of the member in its lowest slot (the kernel writes every
// member that holds a slot at each update, so they carry the array's
// newest events), of any other every member's superblock, as a status
// report takes it (the freshest). A lookup by UUID takes a started
// array's UUID from the kernel (md/uuid) and reads no superblock. Neither
// reads any other member fact (BenchmarkStatusLookup compares them with
// a lookup by kernel name).
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
// # Waiting, and clean for shutdown
//
// [Manager.Wait] blocks until no resync, recovery, reshape, check or
// repair runs on the arrays named (mdadm -W), polling sync_action;
// [Manager.WaitClean] makes active arrays clean now (lowers
// safe_mode_delay, waits for array_state clean and clean superblocks,
// writes the delay back), through the executor, reporting every write.
//
// # Assembly
//
// [Manager.Incremental] adds one device to its array as udev's mdadm
// --incremental does, and [Manager.Assemble] does that for every block
// device (in the kernel's order of names, round after round for stacked
// arrays), which is the state udev leaves at boot. The rules are
// mdadm's without mdadm.conf (Incremental.c, mdopen.c, util.c at mdadm
// d1447022; facts in docs/assembly.md), checked against mdadm on the
// real kernel by md/assemblevm:
//   - Trust: an array is local when its 1.x name is "HOMEHOST:..." or its
//     0.90 UUID carries SHA-1(HOMEHOST) (Config.HomeHost, default the
//     host name; "any" matches too); otherwise foreign.
//   - Names and numbers: a local array uses its name without the host
//     part; a local 0.90 array (named by its preferred minor) or a local
//     name that is a number gets that md number if free; all others take
//     md127 downwards. The link is /dev/md/NAME ('/' as '-', blanks as
//     '_', names SafeName refuses get no link); a foreign name without
//     a ':' is always suffixed (_0, _1, ...), others only on a clash
//     with a live map entry. Without udev (or with Config.NoUdev) the
//     node /dev/mdN (0600) and the link (absolute, as mdadm makes it)
//     are created here.
//   - Creating: new_array "mdN", SET_ARRAY_INFO with only the version,
//     ADD_NEW_DISK with the member's device number (the kernel reads and
//     checks its superblock), after deleting the member's kernel
//     partitions through an O_EXCL descriptor (which also refuses a
//     device in use). The map file (Config.MapDir) gets the entry mdadm
//     would write.
//   - Counting: mdadm's count_active over the attached members in the
//     kernel's order: members naming a slot count when their events are
//     the highest or one less (the kernel's allowance); mdadm's unsigned
//     arithmetic is kept, so a first member with events 0 makes the
//     others count as far behind. The freshest member says how many are
//     expected. Start needs mdadm's enough() (raid4/5/6 dirty and
//     degraded do not start).
//   - Starting: when all expected members are present (or with Run, as
//     soon as enough are); RUN_ARRAY for a complete local array,
//     array_state=read-auto for a foreign one or an incomplete start.
//     An array that lost a member at shutdown expects one fewer and
//     starts without it; one that lost it since waits for Run
//     ([Manager.Run] is mdadm --run: read-auto). Members the freshest
//     says failed are detached first; out-of-date members are reported
//     and never forced in (the kernel drops them at the start).
//   - Refusals, nothing changed: no usable superblock, a device in use,
//     a superblock that disagrees with the array's members (UUID, level,
//     raid_disks, layout, chunk, size, ctime), an out-of-date member of a
//     running array (without Run), a reshape in progress, clustered and
//     lockless-bitmap arrays (use mdadm), external metadata (no native
//     superblock).
//   - At the same time: Assemble builds different arrays concurrently,
//     each array's devices one after the other in their order (since
//     Linux 6.7 every SET_ARRAY_INFO and ADD_NEW_DISK waits for its array
//     to be suspended, and only waits on different arrays overlap). A
//     creation waits until every device before it has been decided on,
//     so that numbers and links are those of one device after the other
//     (docs/assembly.md §9).
//
// # Trust rules of assembly
//
// What a disk says is attacker-controlled: anyone can plug one in. These
// rules, in one place, say what assembly believes (docs/assembly.md §10):
//   - Local: an array whose homehost is this host's is local (started
//     read-write, named without its host part). An array of homehost
//     "any" is trusted as mdadm trusts it, but never takes a /dev/md name
//     that an array of this host among the same devices wants: a stick
//     named "any:boot" gets boot_0 when the real boot array is there.
//     Every other array is foreign: started read-auto, its name kept
//     whole or suffixed.
//   - Auto-started: an array starts when every member its freshest
//     superblock expects is present (or, with Run, as soon as enough
//     are). Before anything is added, Assemble sorts the devices of each
//     array: of two devices claiming one slot, the one the other slots'
//     members name there (by descriptor number) with events not behind
//     theirs is used and the other left out (ErrLeftOut); when they
//     cannot be told apart (no other member, or an impostor as fresh as
//     the real member), and when two devices carry one device UUID (a
//     copy), nothing of that array is assembled (ErrConflict), so one
//     disk with more events cannot take an array over.
//     AssembleRequest.PickDuplicates is mdadm's way: the most events win.
//   - Spares: a device that names a slot of a running array is
//     out-of-date and waits for Run; a spare (or a device naming no slot)
//     is not hot-added to a running array, nor attached by Assemble to an
//     array that would start degraded (ErrSpareNotAdded), because the
//     kernel would rebuild onto it at once and the disk would carry away
//     a copy. A spare offered with the members of an array they start
//     whole joins it as a hot spare. Spares join degraded arrays through
//     [Manager.Replace] or [Manager.Heal], where the slot records and
//     ports decide; AddSpares is mdadm's way.
//   - Isolation: one device or one array never stops the others. A
//     device the kernel refuses, or an array that does not start, is its
//     array's outcome (AssembleResult.Failed); an array Assemble created
//     that failed is stopped again and gives back its link and map entry,
//     so the real array of that name gets it. Only what makes every later
//     step unsafe (the map file cannot be written) stops the call.
//
// # Errors
//
// An operation either goes ahead or is refused. A refusal wrote nothing
// and changed nothing: it matches [ErrRefused], and is a [*RefusedError]
// whose fields say which operation (Op: replace, fail, remove, run,
// heal, check, create, …), on which array and member, which check failed
// (a [Check], one of the constants listed with that type, for replace,
// check and create), and why,
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
