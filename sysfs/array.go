package sysfs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"strings"
)

// errNoMatch is the cause in a ParseError when a value has the wrong shape.
var errNoMatch = errors.New("unrecognised format")

// Array is one md array in a sysfs tree, such as md127. It reads
// attributes when asked and caches nothing. Get one from [FS.Array].
//
// Every getter returns the *fs.PathError from open for an attribute that
// does not exist, which matches fs.ErrNotExist: the redundancy attributes
// (sync_*, degraded, mismatch_cnt, last_sync_action, ...) exist only while
// a raid1/4/5/6/10 personality runs, so raid0, linear, containers and
// inactive arrays have none of them. A value that cannot be parsed gives
// an error matching [ErrFormat]; unknown words in enumerated attributes
// are kept, not rejected.
type Array struct {
	fs   FS
	name string
	// block is the array's block device directory with the block/NAME
	// link resolved: an open through that link costs the kernel more
	// than the read it is for (385 against 169 µs under TCG emulation,
	// bench/statusvm -costs), and a report opens twenty files an array.
	// Empty: not resolved, use block/NAME.
	block string
}

// Name returns the array's kernel name, such as "md127".
func (a Array) Name() string { return a.name }

// FS returns the tree the array belongs to.
func (a Array) FS() FS { return a.fs }

// Path returns the path of an attribute below the array's md/ directory
// (elem such as "sync_action" or "bitmap", "location").
func (a Array) Path(elem ...string) string {
	base := a.block
	if base == "" {
		base = join(a.fs.root, "block", a.name)
	}
	switch len(elem) {
	case 0:
		return join(base, "md")
	case 1:
		return join(base, "md", elem[0])
	case 2:
		return join(base, "md", elem[0], elem[1])
	}
	return join(base, append([]string{"md"}, elem...)...)
}

// blockPath returns the path of an attribute of the array's own block
// device directory (block/mdX/size).
func (a Array) blockPath(attr string) string {
	if a.block != "" {
		return join(a.block, attr)
	}
	return a.fs.Path("block", a.name, attr)
}

// parseAt reads the attribute at p and parses it.
func parseAt[T any](p string, parse func(string) (T, error)) (T, error) {
	s, err := readAttr(p)
	if err != nil {
		var zero T
		return zero, err
	}
	v, err := parse(s)
	if err != nil {
		var zero T
		return zero, &ParseError{Path: p, Value: s, Err: err}
	}
	return v, nil
}

func parseUint(s string) (uint64, error) { return strconv.ParseUint(s, 10, 64) }

func parseString(s string) (string, error) { return s, nil }

// optionalUint returns a parser for a number that may read as word
// ("none", "max", "default") instead.
func optionalUint(word string) func(string) (Optional[uint64], error) {
	return func(s string) (Optional[uint64], error) {
		if s == word {
			return Optional[uint64]{}, nil
		}
		v, err := parseUint(s)
		if err != nil {
			return Optional[uint64]{}, err
		}
		return Some(v), nil
	}
}

// Level returns level. It is [LevelNone] (an empty file) before the level
// is set, a bare number such as "1" for an array assembled but not
// running, and "container" for an external-metadata container.
func (a Array) Level() (Level, error) {
	return parseAt(a.Path("level"), func(s string) (Level, error) { return Level(s), nil })
}

// RaidDisks returns raid_disks, the number of slots. During a reshape
// that changes it the kernel shows "new (old)", such as "4 (3)". A
// container shows an empty file, which gives a result that is not Valid.
func (a Array) RaidDisks() (Optional[Reshaped], error) {
	return parseAt(a.Path("raid_disks"), func(s string) (Optional[Reshaped], error) {
		if s == "" {
			return Optional[Reshaped]{}, nil
		}
		r, err := parseReshaped(s)
		if err != nil {
			return Optional[Reshaped]{}, err
		}
		return Some(r), nil
	})
}

// Layout returns layout, shown as "new (old)" while a reshape changes it.
// It is signed: a raid0 array shows -1 while its superblock says 1.
func (a Array) Layout() (Reshaped, error) { return parseAt(a.Path("layout"), parseReshaped) }

// ChunkSize returns chunk_size in bytes, shown as "new (old)" while a
// reshape changes it.
func (a Array) ChunkSize() (Reshaped, error) { return parseAt(a.Path("chunk_size"), parseReshaped) }

// ComponentSize returns component_size: the size used on each member, in
// KiB (md.rst says sectors, but the kernel prints sectors/2).
func (a Array) ComponentSize() (uint64, error) { return parseAt(a.Path("component_size"), parseUint) }

// ArraySize returns array_size in KiB when user space set it, and a
// result that is not Valid when it reads "default" (the personality's
// own size applies; see [Array.Size]).
func (a Array) ArraySize() (Optional[uint64], error) {
	return parseAt(a.Path("array_size"), optionalUint("default"))
}

// Size returns the size of the array's block device in 512-byte sectors
// (block/mdX/size). It is 0 for inactive arrays and containers.
func (a Array) Size() (uint64, error) { return parseAt(a.blockPath("size"), parseUint) }

// Dev returns the array's device number (block/mdX/dev).
func (a Array) Dev() (DevNum, error) { return parseAt(a.blockPath("dev"), ParseDevNum) }

// State returns array_state.
func (a Array) State() (ArrayState, error) {
	return parseAt(a.Path("array_state"), func(s string) (ArrayState, error) { return ArrayState(s), nil })
}

// MetadataVersion returns metadata_version.
func (a Array) MetadataVersion() (MetadataVersion, error) {
	return parseAt(a.Path("metadata_version"), func(s string) (MetadataVersion, error) {
		return ParseMetadataVersion(s), nil
	})
}

// Degraded returns degraded, the number of slots without an in-sync
// member. It changes when a failed member leaves its slot, not when it
// fails. Not present on raid0, linear and inactive arrays.
func (a Array) Degraded() (uint64, error) { return parseAt(a.Path("degraded"), parseUint) }

// SyncAction returns sync_action. Not present on raid0, linear and
// inactive arrays.
func (a Array) SyncAction() (SyncAction, error) {
	return parseAt(a.Path("sync_action"), func(s string) (SyncAction, error) { return SyncAction(s), nil })
}

// SafeModeDelay returns safe_mode_delay as the kernel writes it: seconds
// with three decimals ("0.204"; "0.000" when safe mode is off). The
// kernel keeps it in jiffies and prints it rounded up to a millisecond,
// so writing back what was read restores the same delay.
func (a Array) SafeModeDelay() (string, error) {
	return parseAt(a.Path("safe_mode_delay"), parseString)
}

// LastSyncAction returns last_sync_action, the action of the last sync
// that ran. Not present on raid0, linear and inactive arrays.
func (a Array) LastSyncAction() (SyncAction, error) {
	return parseAt(a.Path("last_sync_action"), func(s string) (SyncAction, error) { return SyncAction(s), nil })
}

// SyncCompleted returns sync_completed: "none" when idle, "delayed" when
// a sync waits for another array sharing the disks, or "done / total" in
// sectors. Not present on raid0, linear and inactive arrays.
func (a Array) SyncCompleted() (Progress, error) {
	return parseAt(a.Path("sync_completed"), parseProgress)
}

// SyncSpeed returns sync_speed, the current speed in KiB/s, which is not
// Valid ("none") when no sync runs.
func (a Array) SyncSpeed() (Optional[uint64], error) {
	return parseAt(a.Path("sync_speed"), optionalUint("none"))
}

// SyncSpeedMin returns sync_speed_min, such as "1000 (system)".
func (a Array) SyncSpeedMin() (Speed, error) { return parseAt(a.Path("sync_speed_min"), parseSpeed) }

// SyncSpeedMax returns sync_speed_max, such as "200000 (system)".
func (a Array) SyncSpeedMax() (Speed, error) { return parseAt(a.Path("sync_speed_max"), parseSpeed) }

// SyncMin returns sync_min in sectors.
func (a Array) SyncMin() (uint64, error) { return parseAt(a.Path("sync_min"), parseUint) }

// SyncMax returns sync_max in sectors, which is not Valid when it reads
// "max" (no limit).
func (a Array) SyncMax() (Optional[uint64], error) {
	return parseAt(a.Path("sync_max"), optionalUint("max"))
}

// MismatchCount returns mismatch_cnt, in sectors, from the last check or
// repair.
func (a Array) MismatchCount() (uint64, error) { return parseAt(a.Path("mismatch_cnt"), parseUint) }

// ReshapePosition returns reshape_position in sectors, which is not
// Valid ("none") when no reshape is in progress.
func (a Array) ReshapePosition() (Optional[uint64], error) {
	return parseAt(a.Path("reshape_position"), optionalUint("none"))
}

// ReshapeDirection returns reshape_direction: "forwards" or "backwards".
func (a Array) ReshapeDirection() (string, error) {
	return parseAt(a.Path("reshape_direction"), parseString)
}

// ResyncStart returns resync_start in sectors, which is not Valid
// ("none") when the array is in sync.
func (a Array) ResyncStart() (Optional[uint64], error) {
	return parseAt(a.Path("resync_start"), optionalUint("none"))
}

// ConsistencyPolicy returns consistency_policy.
func (a Array) ConsistencyPolicy() (ConsistencyPolicy, error) {
	return parseAt(a.Path("consistency_policy"), func(s string) (ConsistencyPolicy, error) {
		return ConsistencyPolicy(s), nil
	})
}

// BitmapLocation returns bitmap/location. The bitmap directory exists
// even when there is no bitmap; location then reads "none".
func (a Array) BitmapLocation() (BitmapLocation, error) {
	return parseAt(a.Path("bitmap", "location"), parseBitmapLocation)
}

// BitmapChunkSize returns bitmap/chunksize in bytes.
func (a Array) BitmapChunkSize() (uint64, error) {
	return parseAt(a.Path("bitmap", "chunksize"), parseUint)
}

// BitmapTimeBase returns bitmap/time_base in seconds.
func (a Array) BitmapTimeBase() (uint64, error) {
	return parseAt(a.Path("bitmap", "time_base"), parseUint)
}

// BitmapBacklog returns bitmap/backlog, the most write-behind writes
// allowed for write-mostly members.
func (a Array) BitmapBacklog() (uint64, error) {
	return parseAt(a.Path("bitmap", "backlog"), parseUint)
}

// BitmapMetadata returns bitmap/metadata: "internal", "external" or
// "clustered".
func (a Array) BitmapMetadata() (string, error) {
	return parseAt(a.Path("bitmap", "metadata"), parseString)
}

// BitmapCanClear returns bitmap/can_clear, which is not Valid when the
// array has no bitmap (the kernel shows an empty line).
func (a Array) BitmapCanClear() (Optional[bool], error) {
	return parseAt(a.Path("bitmap", "can_clear"), func(s string) (Optional[bool], error) {
		switch s {
		case "":
			return Optional[bool]{}, nil
		case "true":
			return Some(true), nil
		case "false":
			return Some(false), nil
		}
		return Optional[bool]{}, errNoMatch
	})
}

// BitmapMaxBacklogUsed returns bitmap/max_backlog_used.
func (a Array) BitmapMaxBacklogUsed() (uint64, error) {
	return parseAt(a.Path("bitmap", "max_backlog_used"), parseUint)
}

// BitmapSpace returns bitmap/space in sectors: the room for the bitmap.
func (a Array) BitmapSpace() (uint64, error) { return parseAt(a.Path("bitmap", "space"), parseUint) }

// Members returns the array's members: the dev-* directories, sorted by
// name. Faulty members that are still bound are included.
func (a Array) Members() ([]Member, error) {
	ms, err := a.MembersInKernelOrder()
	if err != nil {
		return nil, err
	}
	slices.SortFunc(ms, func(x, y Member) int { return strings.Compare(x.dir, y.dir) })
	return ms, nil
}

// MembersInKernelOrder is Members in the order the kernel lists the
// dev-* entries (sysfs orders a directory by a hash of the names), which
// is the order mdadm, reading the directory, sees the members in; its
// decisions at assembly depend on it.
func (a Array) MembersInKernelOrder() ([]Member, error) {
	dirs, err := listDir(a.Path(), "dev-", true)
	if err != nil {
		return nil, fmt.Errorf("sysfs: %w", err)
	}
	out := make([]Member, 0, len(dirs))
	for _, d := range dirs {
		out = append(out, Member{array: a, dir: d})
	}
	return out, nil
}

// Member returns the member whose kernel device name is name (such as
// "vdb", or "cciss/c0d0" for a name with a slash), or an error matching
// fs.ErrNotExist.
func (a Array) Member(name string) (Member, error) {
	dir := "dev-" + strings.ReplaceAll(name, "/", "!")
	if !validName(dir) || name == "" {
		return Member{}, fmt.Errorf("sysfs: invalid member name %q: %w", name, fs.ErrInvalid)
	}
	if _, err := os.Stat(a.Path(dir)); err != nil {
		return Member{}, fmt.Errorf("sysfs: %s member %s: %w", a.name, name, err)
	}
	return Member{array: a, dir: dir}, nil
}

// SlotLinks returns the rdN links: slot number to member directory name
// (such as 3: "dev-vdb").
//
// Do not rely on them: a replacement member has no rdN link, and after a
// completed replace the link of its slot can vanish. The slot of a member
// is [Member.Slot].
// SlotLink returns the directory name ("dev-vdb") of the member the
// array's rdN link for slot names: the kernel makes the link when it
// gives a member of a started array its slot. An error matching
// fs.ErrNotExist means no member holds the slot (or the array has not
// started).
func (a Array) SlotLink(slot int) (string, error) {
	t, err := readLinkBase(a.Path("rd" + strconv.Itoa(slot)))
	if err != nil {
		return "", fmt.Errorf("sysfs: %w", err)
	}
	return t, nil
}

func (a Array) SlotLinks() (map[int]string, error) {
	ents, err := os.ReadDir(a.Path())
	if err != nil {
		return nil, fmt.Errorf("sysfs: %w", err)
	}
	out := map[int]string{}
	for _, e := range ents {
		n, ok := strings.CutPrefix(e.Name(), "rd")
		if !ok {
			continue
		}
		slot, err := strconv.Atoi(n)
		if err != nil {
			continue
		}
		t, err := readLinkBase(a.Path(e.Name()))
		if err != nil {
			return nil, fmt.Errorf("sysfs: %w", err)
		}
		out[slot] = t
	}
	return out, nil
}
