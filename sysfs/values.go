package sysfs

import (
	"fmt"
	"strconv"
	"strings"
)

// Optional is a value the kernel may leave out: it shows "none" (or
// "max", "default", or nothing at all, depending on the attribute) instead
// of a value. Valid is false then, and Value is the zero value.
type Optional[T any] struct {
	Value T
	Valid bool
}

// Some returns a valid Optional holding v.
func Some[T any](v T) Optional[T] { return Optional[T]{Value: v, Valid: true} }

// String returns the value, or "none" when it is not valid.
func (o Optional[T]) String() string {
	if !o.Valid {
		return "none"
	}
	return fmt.Sprint(o.Value)
}

// DevNum is a device number as sysfs shows it in "dev" files, "MAJ:MIN".
type DevNum struct {
	Major, Minor uint32
}

// String returns "MAJ:MIN".
func (d DevNum) String() string { return fmt.Sprintf("%d:%d", d.Major, d.Minor) }

// IsZero reports whether d is 0:0, a number no block device has: a model
// holding one means the number could not be read (encoding/json's
// omitzero leaves it out).
func (d DevNum) IsZero() bool { return d == DevNum{} }

// MarshalText returns "MAJ:MIN", so that JSON shows the number as sysfs
// does.
func (d DevNum) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText parses "MAJ:MIN" as ParseDevNum does.
func (d *DevNum) UnmarshalText(b []byte) error {
	v, err := ParseDevNum(string(b))
	if err != nil {
		return err
	}
	*d = v
	return nil
}

// ParseDevNum parses "MAJ:MIN".
func ParseDevNum(s string) (DevNum, error) {
	maj, min, ok := strings.Cut(strings.TrimSpace(s), ":")
	if !ok {
		return DevNum{}, fmt.Errorf("%w: device number %s", ErrFormat, quoteShort(s))
	}
	a, err1 := strconv.ParseUint(maj, 10, 32)
	b, err2 := strconv.ParseUint(min, 10, 32)
	if err1 != nil || err2 != nil {
		return DevNum{}, fmt.Errorf("%w: device number %s", ErrFormat, quoteShort(s))
	}
	return DevNum{Major: uint32(a), Minor: uint32(b)}, nil
}

// Level is the RAID level as level shows it: the personality name
// ("raid1", "linear", ...), "container" for an external-metadata
// container, a bare number for an assembled array whose personality is
// not running (such as "1"), or empty when the level is not set yet.
// Unknown values are kept as read.
type Level string

// Levels that the kernel shows.
const (
	LevelNone      Level = "" // the level file is empty: not set yet
	LevelLinear    Level = "linear"
	LevelRAID0     Level = "raid0"
	LevelRAID1     Level = "raid1"
	LevelRAID4     Level = "raid4"
	LevelRAID5     Level = "raid5"
	LevelRAID6     Level = "raid6"
	LevelRAID10    Level = "raid10"
	LevelMultipath Level = "multipath"
	LevelFaulty    Level = "faulty"
	LevelContainer Level = "container"
)

// Known reports whether l is one of the named levels (LevelNone
// included). A bare number is not known; see [Level.Number].
func (l Level) Known() bool {
	switch l {
	case LevelNone, LevelLinear, LevelRAID0, LevelRAID1, LevelRAID4, LevelRAID5,
		LevelRAID6, LevelRAID10, LevelMultipath, LevelFaulty, LevelContainer:
		return true
	}
	return false
}

// Number returns the md level number (-1 linear, 0, 1, 4, 5, 6, 10, -4
// multipath, -5 faulty) for a personality name or a bare number, and
// false for the empty level, a container or anything unknown.
func (l Level) Number() (int, bool) {
	switch l {
	case LevelLinear:
		return -1, true
	case LevelMultipath:
		return -4, true
	case LevelFaulty:
		return -5, true
	}
	s := strings.TrimPrefix(string(l), "raid")
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, false
	}
	return n, true
}

// Redundant reports whether arrays of this level have the redundancy
// attributes (sync_action, degraded, ...) while they run: raid1, raid4,
// raid5, raid6 and raid10.
func (l Level) Redundant() bool {
	n, ok := l.Number()
	return ok && (n == 1 || n == 4 || n == 5 || n == 6 || n == 10)
}

// ArrayState is the value of array_state. Unknown future values are kept
// as read.
type ArrayState string

// Array states the kernel shows. Only clear, inactive, readonly,
// read-auto, clean and active can be written.
const (
	StateClear        ArrayState = "clear"
	StateInactive     ArrayState = "inactive"
	StateSuspended    ArrayState = "suspended"
	StateReadonly     ArrayState = "readonly"
	StateReadAuto     ArrayState = "read-auto"
	StateClean        ArrayState = "clean"
	StateActive       ArrayState = "active"
	StateWritePending ArrayState = "write-pending"
	StateActiveIdle   ArrayState = "active-idle"
	// StateBroken replaces clean (and active) when a raid0/linear member
	// is missing or the last in-sync raid1/10 member failed (MD_BROKEN).
	StateBroken ArrayState = "broken"
)

// Known reports whether s is one of the states listed above.
func (s ArrayState) Known() bool {
	switch s {
	case StateClear, StateInactive, StateSuspended, StateReadonly, StateReadAuto,
		StateClean, StateActive, StateWritePending, StateActiveIdle, StateBroken:
		return true
	}
	return false
}

// SyncAction is the value of sync_action or last_sync_action. Unknown
// values are kept as read (older kernels show "none" in
// last_sync_action before the first sync).
type SyncAction string

// Sync actions (the kernel's action_name table). While a sync runs, only
// frozen and idle can be written; the others fail with EBUSY.
const (
	ActionResync  SyncAction = "resync"
	ActionRecover SyncAction = "recover"
	ActionCheck   SyncAction = "check"
	ActionRepair  SyncAction = "repair"
	ActionReshape SyncAction = "reshape"
	ActionFrozen  SyncAction = "frozen"
	ActionIdle    SyncAction = "idle"
)

// Known reports whether a is one of the actions listed above.
func (a SyncAction) Known() bool {
	switch a {
	case ActionResync, ActionRecover, ActionCheck, ActionRepair, ActionReshape, ActionFrozen, ActionIdle:
		return true
	}
	return false
}

// ProgressState says what sync_completed showed.
type ProgressState string

// Progress states.
const (
	ProgressNone    ProgressState = "none"    // no sync is running
	ProgressDelayed ProgressState = "delayed" // a sync is pending, waiting for another array on the same disks
	ProgressRunning ProgressState = "running" // "done / total"
)

// Progress is the value of sync_completed: Done and Total are in
// sectors and only set when State is ProgressRunning. Done is the last
// checkpoint, which lags the position /proc/mdstat shows.
type Progress struct {
	Done, Total uint64
	State       ProgressState
}

func parseProgress(s string) (Progress, error) {
	switch s {
	case "none":
		return Progress{State: ProgressNone}, nil
	case "delayed":
		return Progress{State: ProgressDelayed}, nil
	}
	d, t, ok := strings.Cut(s, "/")
	if !ok {
		return Progress{}, errNoMatch
	}
	done, err := strconv.ParseUint(strings.TrimSpace(d), 10, 64)
	if err != nil {
		return Progress{}, err
	}
	total, err := strconv.ParseUint(strings.TrimSpace(t), 10, 64)
	if err != nil {
		return Progress{}, err
	}
	return Progress{Done: done, Total: total, State: ProgressRunning}, nil
}

// Speed is the value of sync_speed_min or sync_speed_max: "N (system)"
// when the system-wide default (/proc/sys/dev/raid/speed_limit_*) applies,
// "N (local)" when set for this array.
type Speed struct {
	KiBs   uint64 // KiB/s
	Source string // "system" or "local"; unknown values kept
}

func parseSpeed(s string) (Speed, error) {
	n, src, _ := strings.Cut(s, " ")
	v, err := strconv.ParseUint(n, 10, 64)
	if err != nil {
		return Speed{}, err
	}
	src = strings.TrimSpace(src)
	if src != "" {
		if !strings.HasPrefix(src, "(") || !strings.HasSuffix(src, ")") {
			return Speed{}, errNoMatch
		}
		src = src[1 : len(src)-1]
	}
	return Speed{KiBs: v, Source: src}, nil
}

// Reshaped is a geometry value (raid_disks, layout, chunk_size) that
// shows "new (old)" while a reshape changes it. Outside a reshape, or when
// the reshape leaves it alone, Previous equals Current.
type Reshaped struct {
	Current, Previous int64
}

// Changing reports whether a reshape is changing the value.
func (r Reshaped) Changing() bool { return r.Current != r.Previous }

// String returns the value as the kernel shows it.
func (r Reshaped) String() string {
	if r.Changing() {
		return fmt.Sprintf("%d (%d)", r.Current, r.Previous)
	}
	return strconv.FormatInt(r.Current, 10)
}

func parseReshaped(s string) (Reshaped, error) {
	cur, prev, paren := strings.Cut(s, " ")
	c, err := strconv.ParseInt(cur, 10, 64)
	if err != nil {
		return Reshaped{}, err
	}
	if !paren {
		return Reshaped{Current: c, Previous: c}, nil
	}
	prev = strings.TrimSpace(prev)
	if !strings.HasPrefix(prev, "(") || !strings.HasSuffix(prev, ")") {
		return Reshaped{}, errNoMatch
	}
	p, err := strconv.ParseInt(prev[1:len(prev)-1], 10, 64)
	if err != nil {
		return Reshaped{}, err
	}
	return Reshaped{Current: c, Previous: p}, nil
}

// MetadataKind says how an array keeps its metadata.
type MetadataKind string

// Metadata kinds.
const (
	// MetadataNative is metadata the kernel reads and writes itself
	// (0.90, 1.0, 1.1, 1.2; the kernel shows "1.2" for all 1.x).
	MetadataNative MetadataKind = "native"
	// MetadataExternal is metadata managed in user space (imsm, ddf, or
	// a member array of a container).
	MetadataExternal MetadataKind = "external"
	// MetadataNone is an array without persistent metadata (legacy
	// build mode), or one not set up yet.
	MetadataNone MetadataKind = "none"
)

// MetadataVersion is the parsed value of metadata_version.
type MetadataVersion struct {
	Raw          string // as read
	Kind         MetadataKind
	Major, Minor int    // for MetadataNative
	External     string // for MetadataExternal: the text after "external:"
}

// String returns the raw value.
func (m MetadataVersion) String() string { return m.Raw }

// Is090 reports whether the array uses 0.90 metadata.
func (m MetadataVersion) Is090() bool {
	return m.Kind == MetadataNative && m.Major == 0 && m.Minor == 90
}

// Container returns, for a member array of an external-metadata
// container ("external:/md127/0"), the container's device name ("md127")
// and the subarray ("0"). mdadm marks a subarray it is changing by
// replacing the leading '/' with '-' ("external:-md127/0"), which is
// understood too.
func (m MetadataVersion) Container() (container, subarray string, ok bool) {
	if m.Kind != MetadataExternal || len(m.External) < 2 {
		return "", "", false
	}
	if m.External[0] != '/' && m.External[0] != '-' {
		return "", "", false
	}
	container, subarray, ok = strings.Cut(m.External[1:], "/")
	if !ok || container == "" {
		return "", "", false
	}
	return container, subarray, true
}

// ParseMetadataVersion parses a metadata_version value. Unknown forms are
// kept in Raw with an empty Kind rather than rejected.
func ParseMetadataVersion(s string) MetadataVersion {
	m := MetadataVersion{Raw: s}
	switch {
	case s == "none":
		m.Kind = MetadataNone
	case strings.HasPrefix(s, "external:"):
		m.Kind = MetadataExternal
		m.External = strings.TrimPrefix(s, "external:")
	default:
		a, b, ok := strings.Cut(s, ".")
		maj, err1 := strconv.Atoi(a)
		min, err2 := strconv.Atoi(b)
		if ok && err1 == nil && err2 == nil {
			m.Kind = MetadataNative
			m.Major, m.Minor = maj, min
		}
	}
	return m
}

// ConsistencyPolicy is the value of consistency_policy. Unknown values
// are kept as read.
type ConsistencyPolicy string

// Consistency policies.
const (
	PolicyNone    ConsistencyPolicy = "none"
	PolicyResync  ConsistencyPolicy = "resync"
	PolicyBitmap  ConsistencyPolicy = "bitmap"
	PolicyJournal ConsistencyPolicy = "journal"
	PolicyPPL     ConsistencyPolicy = "ppl"
	PolicyUnknown ConsistencyPolicy = "unknown" // what the kernel shows before the array runs
)

// BitmapLocation is the value of bitmap/location.
type BitmapLocation struct {
	// Kind is "none", "file" or "offset"; unknown values are kept.
	Kind string
	// Offset is the signed distance in sectors from the superblock, for
	// Kind "offset" (shown as "+8" or "-16").
	Offset int64
}

// String returns the location as the kernel shows it.
func (b BitmapLocation) String() string {
	if b.Kind == "offset" {
		return fmt.Sprintf("%+d", b.Offset)
	}
	return b.Kind
}

func parseBitmapLocation(s string) (BitmapLocation, error) {
	if s != "" && (s[0] == '+' || s[0] == '-') {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return BitmapLocation{}, err
		}
		return BitmapLocation{Kind: "offset", Offset: n}, nil
	}
	return BitmapLocation{Kind: s}, nil
}

// BadBlock is one entry of bad_blocks or unacknowledged_bad_blocks: a
// range of Length sectors starting at Sector, relative to the member's
// data offset.
type BadBlock struct {
	Sector uint64
	Length uint64
}

func parseBadBlocks(s string) ([]BadBlock, error) {
	var out []BadBlock
	for line := range strings.Lines(s) {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if len(f) != 2 {
			return nil, errNoMatch
		}
		sec, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil {
			return nil, err
		}
		n, err := strconv.ParseUint(f[1], 10, 64)
		if err != nil {
			return nil, err
		}
		out = append(out, BadBlock{Sector: sec, Length: n})
	}
	return out, nil
}

// MemberFlag is one word of a member's state list. Unknown flags are kept
// as read.
type MemberFlag string

// Flags that dev-*/state shows. Note that some write tokens differ (see
// [MemberCommand]): the state reads "in_sync" and "write_mostly".
const (
	FlagFaulty          MemberFlag = "faulty" // also shown while unacknowledged bad blocks exist: see [MemberState.Failed]
	FlagInSync          MemberFlag = "in_sync"
	FlagJournal         MemberFlag = "journal"
	FlagWriteMostly     MemberFlag = "write_mostly"
	FlagBlocked         MemberFlag = "blocked"
	FlagSpare           MemberFlag = "spare" // not faulty, not journal, not in_sync: includes a member being rebuilt
	FlagWriteError      MemberFlag = "write_error"
	FlagWantReplacement MemberFlag = "want_replacement"
	FlagReplacement     MemberFlag = "replacement"
	FlagExternalBBL     MemberFlag = "external_bbl"
	FlagFailFast        MemberFlag = "failfast"
)

// Known reports whether f is one of the flags listed above.
func (f MemberFlag) Known() bool {
	switch f {
	case FlagFaulty, FlagInSync, FlagJournal, FlagWriteMostly, FlagBlocked, FlagSpare,
		FlagWriteError, FlagWantReplacement, FlagReplacement, FlagExternalBBL, FlagFailFast:
		return true
	}
	return false
}

// MemberState is the comma-separated list in dev-*/state, in the order
// the kernel shows it.
type MemberState []MemberFlag

// ParseMemberState parses a state list; an empty list gives nil.
func ParseMemberState(s string) MemberState {
	var out MemberState
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, MemberFlag(f))
		}
	}
	return out
}

// Has reports whether the list holds f.
func (s MemberState) Has(f MemberFlag) bool {
	for _, g := range s {
		if g == f {
			return true
		}
	}
	return false
}

// Failed reports whether the list says the member failed. The kernel's
// state_show (md.c, unchanged 6.1 to 7.2) prints "faulty" for a failed
// member, whose personality has cleared In_sync and for which "spare" is
// never printed, and also while a member that has not failed has bad
// blocks it has not yet recorded in its bad-block log: then "faulty"
// stands beside "in_sync" (an active member, "faulty,in_sync,blocked") or
// "spare" (one being rebuilt, "faulty,blocked,spare"). So a member failed
// when the list holds "faulty" and neither of the other two.
func (s MemberState) Failed() bool {
	return s.Has(FlagFaulty) && !s.Has(FlagInSync) && !s.Has(FlagSpare)
}

// BadBlocksPending reports whether the list shows "faulty" for a member
// that has not failed (see [MemberState.Failed]): it has bad blocks not
// yet recorded in its bad-block log, and the kernel shows "faulty" until
// they are.
func (s MemberState) BadBlocksPending() bool {
	return s.Has(FlagFaulty) && !s.Failed()
}

// Unknown returns the flags that are not [MemberFlag.Known].
func (s MemberState) Unknown() []MemberFlag {
	var out []MemberFlag
	for _, f := range s {
		if !f.Known() {
			out = append(out, f)
		}
	}
	return out
}

// String returns the list as the kernel shows it.
func (s MemberState) String() string {
	parts := make([]string, len(s))
	for i, f := range s {
		parts[i] = string(f)
	}
	return strings.Join(parts, ",")
}

// MemberCommand is a word written to dev-*/state. The write tokens are
// not all the read tokens: write "writemostly" and "insync", read
// "write_mostly" and "in_sync".
type MemberCommand string

// Commands accepted by dev-*/state (md.c state_store).
const (
	// CmdFaulty marks the member failed (md_error). Failing the last
	// in-sync member of raid1/raid10 fails with EBUSY.
	CmdFaulty MemberCommand = "faulty"
	// CmdRemove unbinds a member that is faulty or spare and has no
	// slot; otherwise EBUSY.
	CmdRemove MemberCommand = "remove"
	// CmdWriteMostly and CmdClearWriteMostly set and clear write_mostly.
	CmdWriteMostly      MemberCommand = "writemostly"
	CmdClearWriteMostly MemberCommand = "-writemostly"
	// CmdBlocked and CmdClearBlocked set and clear blocked.
	CmdBlocked      MemberCommand = "blocked"
	CmdClearBlocked MemberCommand = "-blocked"
	// CmdInSync marks a member in sync; only while its slot is none.
	CmdInSync      MemberCommand = "insync"
	CmdClearInSync MemberCommand = "-insync"
	// CmdWantReplacement asks for the member to be replaced by a spare.
	// It succeeds silently without effect on a spare, journal or
	// replacement member.
	CmdWantReplacement      MemberCommand = "want_replacement"
	CmdClearWantReplacement MemberCommand = "-want_replacement"
	CmdFailFast             MemberCommand = "failfast"
	CmdClearFailFast        MemberCommand = "-failfast"
	CmdWriteError           MemberCommand = "write_error"
	CmdClearWriteError      MemberCommand = "-write_error"
	// CmdReAdd puts a faulty member whose slot is none back into the
	// slot it had.
	CmdReAdd MemberCommand = "re-add"
)

// Slot is the value of dev-*/slot: the role number of an active member,
// or one of SlotNone and SlotJournal.
type Slot int

// Slots that are not role numbers.
const (
	SlotNone    Slot = -1 // "none": spare, faulty, or not yet placed
	SlotJournal Slot = -2 // "journal": a raid4/5/6 write journal
)

// String returns the slot as the kernel shows it.
func (s Slot) String() string {
	switch s {
	case SlotNone:
		return "none"
	case SlotJournal:
		return "journal"
	}
	return strconv.Itoa(int(s))
}

func parseSlot(s string) (Slot, error) {
	switch s {
	case "none":
		return SlotNone, nil
	case "journal":
		return SlotJournal, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, err
	}
	if n < 0 {
		return 0, errNoMatch
	}
	return Slot(n), nil
}

// quoteShort quotes s, or its first 64 bytes and its length when it is
// longer: a value read from sysfs that is not what the kernel writes
// may be of any length.
func quoteShort(s string) string {
	if len(s) > 64 {
		return fmt.Sprintf("%q… (%d bytes)", s[:64], len(s))
	}
	return fmt.Sprintf("%q", s)
}
