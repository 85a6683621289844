package md

// Check names one check a decision makes before it writes: the Name of a
// PlanCheck in a replace plan, and RefusedError.Check in a refusal of
// replace, check (scrub) or create, so that a controller maps a refusal
// to a condition with a comparison, not by reading its message. The
// values are the words the JSON form of a plan shows; they do not change
// once published. Refusals of the other operations (fail, remove, run,
// stop, re-add, assemble) carry no Check: their sentinels (ErrInUse,
// ErrSlotTaken, ErrNoEmptySlot, …) say the condition.
type Check string

// The checks of a replace plan (Manager.PlanReplace), in the order a plan
// lists them.
const (
	// CheckArrayKind: the array is one this package can replace a
	// member of (redundant level, known metadata, readable state).
	CheckArrayKind Check = "array kind"
	// CheckArrayRunning: the array runs read-write (or read-auto).
	CheckArrayRunning Check = "array running"
	// CheckOneChange: no resync, recovery, reshape or other replace runs.
	CheckOneChange Check = "one change at a time"
	// CheckOldMember: the member named to be replaced is faulty or gone.
	CheckOldMember Check = "old member"
	// CheckTargetSlot: the slot to fill is empty or held by a faulty
	// member.
	CheckTargetSlot Check = "target slot"
	// CheckBlockDevice: the new disk is a block device.
	CheckBlockDevice Check = "candidate is a block device"
	// CheckNotMember: the new disk is no member of an array, no array,
	// and not built on one.
	CheckNotMember Check = "candidate is no array member"
	// CheckNotInUse: nothing holds, mounts or opens the new disk (create:
	// any of its devices).
	CheckNotInUse Check = "candidate is not in use"
	// CheckBlankDevice: the new disk (create: each device) is blank by
	// CheckBlank's rule.
	CheckBlankDevice Check = "candidate is blank"
	// CheckSize: the new disk (create: each device) is big enough.
	CheckSize Check = "candidate is big enough"
	// CheckSource: an in-sync member's superblock can be read to clone.
	CheckSource Check = "superblock to clone"
	// CheckBlockSize: the new disk's logical block size is no larger
	// than the array's (create: the devices' sizes agree, or are
	// stated).
	CheckBlockSize Check = "candidate's logical block size"
	// CheckResume: what an interrupted run wrote is this replace's own.
	CheckResume Check = "interrupted run's writes"
	// CheckPort: the new disk is in the port recorded for the slot.
	CheckPort Check = "candidate is in the expected port"
	// CheckNewSuperblock: the superblock built for the new disk is valid.
	CheckNewSuperblock Check = "new superblock"
)

// The checks of a check or repair (Manager.Check).
const (
	// CheckRedundant: the array has redundancy to compare.
	CheckRedundant Check = "array has redundancy"
	// CheckFactsReadable: everything the decision reads could be read.
	CheckFactsReadable Check = "facts readable"
	// CheckReadWrite: the array runs read-write.
	CheckReadWrite Check = "array is read-write"
	// CheckNotDegraded: no slot lacks an in-sync member.
	CheckNotDegraded Check = "array is not degraded"
	// CheckSyncIdle: the sync thread is idle.
	CheckSyncIdle Check = "sync thread is idle"
	// CheckNotFrozen: recovery is not frozen.
	CheckNotFrozen Check = "recovery is not frozen"
	// CheckSyncActionKnown: sync_action holds a word this package knows.
	CheckSyncActionKnown Check = "sync_action is known"
	// CheckSyncMaxIsMax: sync_max is "max" (no other program limits the
	// pass).
	CheckSyncMaxIsMax Check = "sync_max is max"
	// CheckUUIDKnown: the array's UUID is known (check records are kept
	// by it).
	CheckUUIDKnown Check = "array UUID known"
	// CheckScrubRunning: a check or repair runs (the refusal of a second
	// one, and what a cancel needs).
	CheckScrubRunning Check = "a check or repair runs"
)

// The checks of a create (Manager.PlanCreate) beyond the devices' checks
// above it shares with replace (CheckNotInUse, CheckBlankDevice,
// CheckSize, CheckBlockSize); most name the flag that was wrong.
const (
	// CheckMetadata: the metadata version can be created.
	CheckMetadata Check = "metadata"
	// CheckLevel: the level can be created (and --size fits it).
	CheckLevel Check = "level"
	// CheckRaidDevices: the device count fits the level and the format.
	CheckRaidDevices Check = "raid-devices"
	// CheckChunk: the chunk size fits the level.
	CheckChunk Check = "chunk"
	// CheckLayout: the layout fits the level and the device count.
	CheckLayout Check = "layout"
	// CheckBitmap: the bitmap request fits the level.
	CheckBitmap Check = "bitmap"
	// CheckName: the array's name fits the superblock.
	CheckName Check = "name"
	// CheckArrayDevice: the md device asked for can be made.
	CheckArrayDevice Check = "array"
	// CheckDevices: the devices are distinct, and not all missing.
	CheckDevices Check = "devices"
	// CheckMissing: the array can start with the devices given as
	// missing.
	CheckMissing Check = "missing"
	// CheckFacts: every fact the decision needs could be established.
	CheckFacts Check = "facts"
)
