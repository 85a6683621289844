package md

import (
	"errors"
	"strings"
	"time"

	"github.com/go-mdraid/mdraid/sysfs"
)

// Report is the status of every array found, as [Manager.Discover]
// returns it. Its JSON form is the schema documented in STATUS-JSON.md.
type Report struct {
	// Version is the schema version of the JSON form; it changes only
	// when a field changes meaning or goes away.
	Version int `json:"version"`
	// Time is when the report was taken.
	Time time.Time `json:"time"`
	// Arrays are sorted by device name.
	Arrays []Array `json:"arrays"`
	// Error is set when the list of arrays itself could not be read, or
	// (mdctl status NAME...) when a named array was not found (one line
	// per name; the arrays that were found are in Arrays).
	Error string `json:"error,omitempty"`
	// Err is Error as an error value (errors.Is matches ErrNoArray,
	// ErrAmbiguous, fs.ErrPermission, …), nil when Error is empty; not in
	// the JSON form.
	Err error `json:"-"`
}

// SchemaVersion is the current value of Report.Version.
const SchemaVersion = 1

// Array is the status of one md array.
type Array struct {
	// Device is the kernel name of the array, such as "md127".
	Device string `json:"device"`
	// Path is its device node, such as "/dev/md127".
	Path string `json:"path"`
	// DevNum is its device number, "major:minor" in JSON; zero (and left
	// out of JSON) when it could not be read.
	DevNum sysfs.DevNum `json:"devnum,omitzero"`
	// UUID is the array UUID in the canonical form, the same digits
	// mdadm prints.
	UUID string `json:"uuid,omitempty"`
	// Name and Homehost are split from the 1.x superblock's set name
	// ("talos:boot"); empty for 0.90. They are raw bytes from the disk,
	// chosen by whoever wrote it: not necessarily UTF-8, possibly with
	// control characters, and not unique. Escape them before showing
	// them, and use SafeName to make a path element or udev value.
	Name     string `json:"name,omitempty"`
	Homehost string `json:"homehost,omitempty"`
	// Metadata is the metadata version: "0.90", "1.0", "1.1", "1.2",
	// "none", or "external:…".
	Metadata string `json:"metadata,omitempty"`
	// Level is the RAID level as the kernel names it: "raid1", "raid5",
	// "raid10", "raid0", "linear", …
	Level string `json:"level,omitempty"`
	// Layout is the kernel's layout number (for an array that is not
	// running, the newest superblock's: md/layout reads 0 until the
	// start), and LayoutName mdadm's name for it ("left-symmetric",
	// "near=2").
	Layout     int64  `json:"layout"`
	LayoutName string `json:"layout_name,omitempty"`
	// ChunkBytes is the chunk size in bytes (0 where the level has none).
	ChunkBytes uint64 `json:"chunk_bytes,omitempty"`
	// RaidDisks is the number of slots.
	RaidDisks int `json:"raid_disks"`
	// SizeBytes is the array's usable size; ComponentBytes the size used
	// on each member.
	SizeBytes      uint64 `json:"size_bytes"`
	ComponentBytes uint64 `json:"component_bytes,omitempty"`
	// State is the kernel's array_state word, as read.
	State string `json:"state"`
	// Availability, Redundancy and Activity are the three health fields.
	Availability Availability `json:"availability"`
	Redundancy   Redundancy   `json:"redundancy"`
	Activity     Activity     `json:"activity"`
	// MismatchSectors is the kernel's mismatch_cnt: 512-byte sectors in
	// the regions where the last check, repair or resync found copies
	// (raid1/10) or parity (raid4/5/6) disagreeing, counted in whole
	// resync blocks or stripes, so a coarse figure. The kernel resets it
	// when a check, repair or resync starts (also a resumed one) and when
	// the array stops, so it covers the current or last such pass only;
	// a recovery or reshape leaves it as it was. While a check runs it
	// counts what that check found so far. Nil (left out of JSON) when
	// the array has no mismatch_cnt: not redundant (raid0, linear) or
	// not running. MismatchMeaning says what a non-zero count means.
	MismatchSectors *uint64 `json:"mismatch_sectors,omitempty"`
	// LastSyncAction is the kernel's last_sync_action: the kind of the
	// sync thread that ran last (or runs now) since the array started,
	// not persisted across a stop. "idle" means none has run. Linux 6.1
	// spells two of its words differently ("recovery", and "none" before
	// the first sync); they are reported in today's words ("recover",
	// "idle") so that one value means one thing on every kernel. An
	// unknown future word is passed through as read. Empty (left out of
	// JSON) when the array has no such attribute.
	LastSyncAction sysfs.SyncAction `json:"last_sync_action,omitempty"`
	// Bitmap is the array's internal write-intent bitmap, as its freshest
	// superblock places it; nil (left out of JSON) when it has none or no
	// member's superblock could be read.
	Bitmap *ArrayBitmap `json:"bitmap,omitempty"`
	// LastCheck is, from the check records of a Store (Report.AddChecks;
	// mdctl status --store), the last completed check or repair and any
	// unfinished pass; nil (left out of JSON) without a store or record.
	LastCheck *LastCheck `json:"last_check,omitempty"`
	// Freeze is set while recovery is frozen: who froze it, as far as
	// mdctl knows, and what undoes it (see freeze.go).
	Freeze *Freeze `json:"freeze,omitempty"`
	// Run is, for an inactive array, what starting it with the members
	// it has (Manager.Run, mdctl run, mdadm --run) would give; nil for
	// any other array.
	Run *RunOutlook `json:"run,omitempty"`
	// Degraded is the kernel's count of slots without an in-sync member
	// (the sysfs "degraded" attribute where it exists, else counted).
	Degraded int `json:"degraded"`
	// Counts are mdadm --detail's device counts.
	Counts Counts `json:"counts"`
	// Slots has one entry per slot, 0 to RaidDisks-1, including empty ones.
	Slots []Slot `json:"slots"`
	// Spares are members that hold no slot and are not faulty.
	Spares []Member `json:"spares"`
	// Faulty are faulty members that hold no slot any more.
	Faulty []Member `json:"faulty"`
	// Errors lists what could not be read for this array; the rest of
	// the entry is still filled in as far as possible.
	Errors []string `json:"errors,omitempty"`
	// Errs are Errors as error values, one for one (Errs[i].Error() is
	// Errors[i]), for errors.Is and errors.As: an attribute that could not
	// be read matches its cause (fs.ErrNotExist, fs.ErrPermission,
	// unix.ENODEV, …), one that did not parse sysfs.ErrFormat, a word
	// this package does not know ErrUnknownValue. Not in the JSON form: a
	// decoded Report has Errors only.
	Errs []error `json:"-"`
}

// Counts are the device counts that mdadm --detail prints.
type Counts struct {
	// Active members are in sync in a slot.
	Active int `json:"active"`
	// Working members are all members that are not faulty.
	Working int `json:"working"`
	// Failed members are faulty.
	Failed int `json:"failed"`
	// Spare members are working but not in sync: idle spares and members
	// being rebuilt.
	Spare int `json:"spare"`
}

// SlotState says what fills a slot.
type SlotState string

// Slot states, in the JSON form.
const (
	// SlotActive: an in-sync member holds the slot.
	SlotActive SlotState = "active"
	// SlotRebuilding: a member is being recovered into the slot.
	SlotRebuilding SlotState = "rebuilding"
	// SlotFaulty: the member in the slot has failed but is still bound.
	SlotFaulty SlotState = "faulty"
	// SlotMissing: no member holds the slot.
	SlotMissing SlotState = "missing"
	// SlotUnknown: the member in the slot could not be read (its state
	// attribute), so whether it is in sync is not known.
	SlotUnknown SlotState = "unknown"
	// SlotAssembled: the array is not running (assembled, waiting to
	// start) and a member whose own superblock names this slot is bound
	// to it; the kernel gives it the slot when the array starts.
	SlotAssembled SlotState = "assembled"
)

// Slot is one slot of an array.
type Slot struct {
	Slot  int       `json:"slot"`
	State SlotState `json:"state"`
	// Member holds the slot; nil when the slot is missing.
	Member *Member `json:"member,omitempty"`
	// Replacement is a member being rebuilt as the replacement of Member
	// (mdadm --replace); nil when there is none.
	Replacement *Member `json:"replacement,omitempty"`
	// Recorded is the slot's record from a store (Report.AddRecords),
	// for a slot that is missing or faulty: the port and disk that
	// belong there. Nil otherwise.
	Recorded *SlotRecord `json:"recorded,omitempty"`
}

// Member is one device bound to an array.
type Member struct {
	// Device is the kernel name ("vdb", "sda1"); Path its device node.
	Device string `json:"device"`
	Path   string `json:"path"`
	// DevNum is the device number of the member's block device, as
	// Array.DevNum.
	DevNum sysfs.DevNum `json:"devnum,omitzero"`
	// ByPath is the /dev/disk/by-path name, computed from sysfs the way
	// udev's path_id does ("pci-0000:00:10.0").
	ByPath string `json:"by_path,omitempty"`
	// Serial, WWN and Model are as the device reports them (SCSI serials
	// come raw from VPD page 0x80, chosen by the firmware): untrusted,
	// like Array.Name.
	Serial string `json:"serial,omitempty"`
	WWN    string `json:"wwn,omitempty"`
	Model  string `json:"model,omitempty"`
	// SizeBytes is the size of the member's block device.
	SizeBytes uint64 `json:"size_bytes,omitempty"`
	// Slot is the slot the kernel gives the member, or -1 for none.
	Slot int `json:"slot"`
	// Flags are the kernel's dev-*/state flags, as read and in its order
	// ("in_sync", "faulty", "spare", "write_mostly", "blocked",
	// "write_error", "want_replacement", "replacement", "failfast",
	// "journal", …); unknown flags are kept. Never nil in a report.
	Flags sysfs.MemberState `json:"flags"`
	// ReadErrors is the kernel's count of corrected read errors.
	ReadErrors uint64 `json:"read_errors"`
	// RecoveredSectors is how far recovery into this member has got, for
	// a member being rebuilt; nil otherwise.
	RecoveredSectors *uint64 `json:"recovered_sectors,omitempty"`
	// BadBlocks is the number of recorded bad-block ranges.
	BadBlocks int `json:"bad_blocks"`
	// Superblock facts, when the member's superblock could be read.
	DeviceUUID string  `json:"device_uuid,omitempty"`
	DevNumber  *uint32 `json:"dev_number,omitempty"`
	Events     *uint64 `json:"events,omitempty"`
	// Stale is true when the member's superblock events lag the newest
	// member's by more than one (the kernel accepts a lag of one).
	Stale bool `json:"stale,omitempty"`
	// Error says what could not be read for this member.
	Error string `json:"error,omitempty"`
	// Err is Error as an error value, nil when Error is empty: several
	// problems are one error whose Unwrap lists them; each matches its
	// cause (fs.ErrNotExist, fs.ErrPermission, ErrNoAnswer for a disk that
	// did not answer in time, superblock.ErrChecksum, …). Not in the
	// JSON form.
	Err error `json:"-"`
}

// Activity is the sync thread's work and progress.
type Activity struct {
	// Kind is the kernel's sync_action word (sysfs.ActionIdle when the
	// array has none); an unknown future word is passed through as read.
	Kind sysfs.SyncAction `json:"kind"`
	// Pending is "delayed" when the kernel holds a sync back behind
	// another array on the same disks (sync_completed reads delayed;
	// /proc/mdstat and mdadm --detail say DELAYED), and "pending" when a
	// resync is to be done and none runs (resync_start is not none and
	// sync_completed is none; mdstat resync=PENDING, mdadm
	// "resyncing (PENDING)"): typically an array created or assembled
	// read-only or read-auto, which resyncs at its first write, or one
	// whose sync_action is frozen.
	Pending string `json:"pending,omitempty"`
	// ResyncStartSectors is resync_start: the members are known to agree
	// up to this sector only (a resync is pending, delayed or running).
	// Nil when they agree everywhere (resync_start none).
	ResyncStartSectors *uint64 `json:"resync_start_sectors,omitempty"`
	// DoneSectors and TotalSectors are the kernel's last checkpoint
	// (sync_completed), in 512-byte sectors.
	DoneSectors  uint64 `json:"done_sectors,omitempty"`
	TotalSectors uint64 `json:"total_sectors,omitempty"`
	// Percent is DoneSectors/TotalSectors×100.
	Percent float64 `json:"percent,omitempty"`
	// SpeedKiBs is the kernel's current speed in KiB/s.
	SpeedKiBs uint64 `json:"speed_kib_s,omitempty"`
	// ETASeconds is the remaining work at the current speed.
	ETASeconds uint64 `json:"eta_seconds,omitempty"`
}

// Find returns the member whose kernel name is device ("vdb"; a leading
// "/dev/" is ignored) and where the report lists it: "slot",
// "replacement", "spare" or "faulty". It returns nil and "" when the array
// has no such member.
func (a *Array) Find(device string) (*Member, string) {
	name := strings.TrimPrefix(device, "/dev/")
	for _, s := range a.Slots {
		if s.Member != nil && s.Member.Device == name {
			return s.Member, "slot"
		}
		if s.Replacement != nil && s.Replacement.Device == name {
			return s.Replacement, "replacement"
		}
	}
	for i := range a.Spares {
		if a.Spares[i].Device == name {
			return &a.Spares[i], "spare"
		}
	}
	for i := range a.Faulty {
		if a.Faulty[i].Device == name {
			return &a.Faulty[i], "faulty"
		}
	}
	return nil, ""
}

// Members lists every device bound to a, as pointers into a: slot
// holders, then replacements (slot by slot), then spares, then faulty
// members.
func (a *Array) Members() []*Member {
	var ms []*Member
	for i := range a.Slots {
		if m := a.Slots[i].Member; m != nil {
			ms = append(ms, m)
		}
		if m := a.Slots[i].Replacement; m != nil {
			ms = append(ms, m)
		}
	}
	for i := range a.Spares {
		ms = append(ms, &a.Spares[i])
	}
	for i := range a.Faulty {
		ms = append(ms, &a.Faulty[i])
	}
	return ms
}

// devNumText is d as "major:minor", or "" when it could not be read
// (zero), as the plan shows it.
func devNumText(d sysfs.DevNum) string {
	if d.IsZero() {
		return ""
	}
	return d.String()
}

// errNoDevNum: a member's device number could not be read (its block
// device is gone, or sysfs did not say).
var errNoDevNum = errors.New("not known (its block device could not be read)")

// RunOutlook is what starting an inactive array with the members it has
// would give (see Manager.Run, which refuses when CanRun is false).
type RunOutlook struct {
	// CanRun: the members it has hold every block (the level survives
	// the slots without one).
	CanRun bool `json:"can_run"`
	// Slots is the number of slots a member would hold; RaidDisks is
	// Array.RaidDisks.
	Slots int `json:"slots"`
	// Redundancy is the array's redundancy once started; none when it
	// cannot run.
	Redundancy Redundancy `json:"redundancy"`
	// Unfinished, when set, says why the array must not run although its
	// members could serve it: the create that wrote its superblocks did
	// not finish (they have never run, and a member they name is
	// missing). CanRun is false then.
	Unfinished string `json:"unfinished_create,omitempty"`
}
