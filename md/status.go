package md

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/go-mdraid/mdraid/superblock"
	"github.com/go-mdraid/mdraid/sysfs"
)

func (m *Manager) status(fsys sysfs.FS, name string) Array { return m.statusPolled(fsys, name, nil) }

// statusPolled is status reading the superblocks and bitmap as a
// Poller's memory pm of the array decides (all of them when pm is nil).
func (m *Manager) statusPolled(fsys sysfs.FS, name string, pm *pollMemory) Array {
	s := m.readPolled(fsys, name, pm)
	if pm == nil {
		s.bitmap = m.bitmapOf(s, s.newest())
	} else {
		s.bitmap = pm.bitmapOf(m, s)
	}
	a := build(s, m.devRoot)
	m.describeFreeze(&a)
	return a
}

// newest is the freshest superblock among the members' (the first with
// the highest events), as derive takes it.
func (s *snapshot) newest() *superblock.Superblock {
	var n *superblock.Superblock
	for _, mem := range s.members {
		if mem.sb != nil && (n == nil || mem.sb.Events > n.Events) {
			n = mem.sb
		}
	}
	return n
}

// build turns a snapshot into the reported model. All health decisions
// are made here and in health.go. It does not change s: what it derives
// about the members (derive) goes into the Array alone.
func build(s *snapshot, devRoot string) Array {
	d := derive(s)
	a := Array{
		Device:    s.name,
		Path:      strings.TrimSuffix(devRoot, "/") + "/" + s.name,
		DevNum:    s.dev,
		Metadata:  s.metadata.Raw,
		Level:     string(s.level),
		Layout:    d.layout,
		RaidDisks: d.raidDisks,
		State:     string(s.state),
		Slots:     []Slot{},
		Spares:    []Member{},
		Faulty:    []Member{},
		Errs:      append(slices.Clone(s.errs), d.errs...),
	}
	a.Errors = errorTexts(a.Errs)
	if s.chunk > 0 {
		a.ChunkBytes = uint64(s.chunk)
	}
	a.SizeBytes = s.size * 512
	a.ComponentBytes = s.component * 1024
	running := d.running

	if s.bitmap != nil {
		b := *s.bitmap
		a.Bitmap = &b
	}

	// Identity from the freshest superblock, else the UUID from sysfs.
	a.UUID = s.sysUUID
	if newest := d.newest; newest != nil {
		a.UUID = newest.SetUUID.String()
		a.Name, a.Homehost = newest.Name(), newest.Homehost()
		a.LayoutName = newest.LayoutName()
		if _, err := strconv.Atoi(a.Level); a.Level == "" || err == nil {
			// An assembled, not running array shows a bare number (or
			// nothing): name the level from the superblock. A word the
			// kernel shows is kept, even one we do not know.
			a.Level = newest.Level.String()
		}
	}

	// Slots, spares and faulty members, and mdadm's counts.
	a.Slots = make([]Slot, a.RaidDisks)
	inSync := make([]bool, a.RaidDisks)
	// unknown: a member's state, or the slot of a member of a running
	// array, could not be read (and no rdN link gives it): the health
	// cannot be told. unknownSlot marks the slots whose member's state
	// is unknown: they are not counted missing.
	unknown := false
	unknownSlot := make([]bool, a.RaidDisks)
	for i := range a.Slots {
		a.Slots[i] = Slot{Slot: i, State: SlotMissing}
	}
	for i := range d.members {
		mem := &d.members[i]
		faulty := mem.state.Failed()
		sync := mem.state.Has(sysfs.FlagInSync)
		stateUnread := slices.Contains(mem.unread, "state")
		if stateUnread || (running && mem.Slot < 0 && slices.Contains(mem.unread, "slot")) {
			unknown = true
		}
		switch {
		case stateUnread:
			// Neither working nor failed as far as anyone can tell.
		case faulty:
			a.Counts.Failed++
		case mem.state.Has(sysfs.FlagJournal):
			a.Counts.Working++
		case sync:
			a.Counts.Working++
			a.Counts.Active++
		default:
			a.Counts.Working++
			a.Counts.Spare++
		}
		m := mem.Member
		if mem.Slot < 0 || mem.Slot >= a.RaidDisks {
			if faulty {
				a.Faulty = append(a.Faulty, m)
			} else {
				a.Spares = append(a.Spares, m)
			}
			continue
		}
		sl := &a.Slots[mem.Slot]
		if mem.state.Has(sysfs.FlagReplacement) {
			sl.Replacement = &m
			continue
		}
		sl.Member = &m
		switch {
		case stateUnread:
			sl.State = SlotUnknown
			unknownSlot[mem.Slot] = true
		case faulty:
			sl.State = SlotFaulty
		case sync:
			sl.State = SlotActive
			inSync[mem.Slot] = true
		case !running && mem.sb != nil && mem.sb.Role().IsSlot():
			sl.State = SlotAssembled
			inSync[mem.Slot] = true
		default:
			sl.State = SlotRebuilding
		}
	}
	missing := 0
	for i, ok := range inSync {
		if !ok && !unknownSlot[i] {
			missing++
		}
	}
	a.Degraded = missing
	if s.degraded != nil {
		a.Degraded = int(*s.degraded)
	}

	a.Activity = activity(s)
	a.Availability, a.Redundancy = classify(s, running, a.Level, inSync, max(missing, a.Degraded))
	if unknown && a.Availability != Inactive {
		// A fact that decides the health could not be read: no guess.
		a.Availability, a.Redundancy = Unknown, NoRedundancy
	}
	if a.Redundancy == Full && a.Activity.ResyncStartSectors != nil {
		// The members do not agree beyond resync_start until the
		// resync has run: a copy there is not a copy yet.
		a.Redundancy = Reduced
	}
	if a.Availability == Inactive {
		a.Run = runOutlook(&a)
		sbs := make([]*superblock.Superblock, len(d.members))
		for i := range d.members {
			sbs[i] = d.members[i].sb
		}
		if why := unfinishedCreate(sbs); a.Run != nil && why != "" {
			a.Run.CanRun, a.Run.Redundancy, a.Run.Unfinished = false, NoRedundancy, why
		}
	}
	if s.mismatch != nil {
		n := *s.mismatch
		a.MismatchSectors = &n
	}
	a.LastSyncAction = s.lastAction
	return a
}

// runOutlook decides what starting the inactive array a with the members
// it has would give: the slots a member holds (active or assembled) are
// the ones it would start with. nil when a has no slots.
func runOutlook(a *Array) *RunOutlook {
	if a.RaidDisks == 0 {
		return nil
	}
	inSync := make([]bool, a.RaidDisks)
	for _, sl := range a.Slots {
		inSync[sl.Slot] = sl.State == SlotActive || sl.State == SlotAssembled
	}
	o := &RunOutlook{Slots: countTrue(inSync), Redundancy: NoRedundancy}
	if survives(a.Level, a.Layout, inSync) {
		o.CanRun = true
		o.Redundancy = redundancy(a.Level, a.Layout, inSync)
	}
	return o
}

// derived is what build works out from a snapshot beyond what was read.
type derived struct {
	// running: a personality is bound and the state says the array runs.
	running bool
	// newest is the superblock with the most events, or nil.
	newest *superblock.Superblock
	// raidDisks is the number of slots the model shows: sysfs's, or for
	// an array that is not running, the newest superblock's, each bounded.
	raidDisks int
	// layout is sysfs's layout, or for an array that is not running the
	// newest superblock's: the kernel sets md/layout only when it starts
	// the array (it reads 0 before), and the start decision of a raid10
	// depends on it.
	layout int64
	// errs are the array's errors found here, after those read (s.errs).
	errs []error
	// members are copies of the snapshot's members with what the model
	// adds: Stale, the slot a not-running array's member has by its
	// superblock role, and an out-of-bounds raid_disks in the Error of the
	// member whose superblock claims it.
	members []memberSnap
}

// derive works out, from s alone and without changing it, what build
// reports beyond the snapshot. It is a pure function: two calls on one
// snapshot give equal values.
func derive(s *snapshot) derived {
	d := derived{raidDisks: s.raidDisks}
	if s.raidDisks > superblock.MaxDev1 {
		// No kernel shows more slots than 1.x metadata holds.
		d.errs = append(d.errs, &problem{fmt.Sprintf("raid_disks: %d exceeds the limit of %d slots: ignored", s.raidDisks, superblock.MaxDev1), ErrUnknownValue})
		d.raidDisks = 0
	}

	unknown := func(attr, v string) {
		if len(v) > 64 {
			v = fmt.Sprintf("%s… (%d bytes)", v[:64], len(v))
		}
		d.errs = append(d.errs, &problem{attr + ": unknown value: " + v, ErrUnknownValue})
	}
	if s.state != "" && !s.state.Known() {
		unknown("array_state", string(s.state))
	}
	if _, err := strconv.Atoi(string(s.level)); s.level != "" && err != nil && !s.level.Known() {
		unknown("level", string(s.level))
	}
	if s.metadata.Raw != "" && s.metadata.Kind == "" {
		unknown("metadata_version", s.metadata.Raw)
	}
	if s.action != "" && !s.action.Known() {
		unknown("sync_action", string(s.action))
	}
	if s.lastAction != "" && !s.lastAction.Known() {
		unknown("last_sync_action", string(s.lastAction))
	}
	for _, mem := range s.members {
		if u := mem.state.Unknown(); len(u) > 0 {
			unknown("dev-"+mem.Device+"/state", fmt.Sprint(u))
		}
	}

	// An array runs when a personality is bound: the level is a name (a
	// bare number means assembled but not started), and the state says so.
	// A level word we do not know yet still counts as a personality.
	_, bare := strconv.Atoi(string(s.level))
	d.running = bare != nil && s.level != sysfs.LevelContainer && s.level != sysfs.LevelNone &&
		s.state != sysfs.StateInactive && s.state != sysfs.StateClear && s.state != ""

	d.newest = s.newest()
	d.layout = s.layout
	if !d.running && d.newest != nil {
		d.layout = int64(d.newest.Layout)
	}
	var maxEvents uint64
	var tooMany string // the newest superblock's raid_disks, out of bounds
	if newest := d.newest; newest != nil {
		maxEvents = newest.Events
		if d.raidDisks == 0 {
			// Not running: sysfs shows no raid_disks, and the
			// superblock's count sizes the slot table. It comes
			// from the disk: bound it by what the format can hold.
			if lim := slotLimit(newest.Version); newest.RaidDisks > uint32(lim) {
				tooMany = fmt.Sprintf("superblock raid_disks %d exceeds the %s limit of %d slots: ignored", newest.RaidDisks, newest.Version, lim)
				d.errs = append(d.errs, &problem{"raid_disks: " + tooMany, superblock.ErrOutOfRange})
			} else {
				d.raidDisks = int(newest.RaidDisks)
			}
		}
	}

	d.members = slices.Clone(s.members)
	for i := range d.members {
		mem := &d.members[i]
		if tooMany != "" && mem.sb == d.newest {
			mem.errs = append(slices.Clone(mem.errs), &problem{tooMany, superblock.ErrOutOfRange})
			mem.setErr()
		}
		if mem.sb != nil && maxEvents > 1 && mem.sb.Events+1 < maxEvents {
			mem.Stale = true
		}
		if !d.running && mem.Slot < 0 && mem.sb != nil {
			// Members of an array that is not running have no slot in
			// sysfs yet; their superblock role says where they belong.
			if r := mem.sb.Role(); r.IsSlot() && int(r) < d.raidDisks {
				mem.Slot = int(r)
			}
		}
	}
	return d
}

// asBuilt returns a copy of s whose members are as build reports them
// (see derived.members); s is unchanged. Decisions that read members
// from a snapshot, such as the replace planner's, read this copy, so
// that they see the slots and errors the model shows.
func (s *snapshot) asBuilt() *snapshot {
	c := *s
	c.members = derive(s).members
	return &c
}

// classify decides availability and redundancy. Order of precedence:
// unknown, inactive, failed, degraded, read-only, online.
func classify(s *snapshot, running bool, level string, inSync []bool, degraded int) (Availability, Redundancy) {
	switch {
	case s.stateBad, s.state != "" && !s.state.Known(), running && s.raidDisksBad:
		// What the kernel says cannot be read as a health: no guess.
		return Unknown, NoRedundancy
	case !running:
		return Inactive, NoRedundancy
	case s.state == sysfs.StateBroken || !survives(level, s.layout, inSync):
		return Failed, NoRedundancy
	}
	red := redundancy(level, s.layout, inSync)
	switch {
	case degraded > 0:
		return Degraded, red
	case s.state == sysfs.StateReadonly || s.state == sysfs.StateReadAuto:
		return ReadOnly, red
	}
	return Online, red
}

// The values of Activity.Pending.
const (
	// PendingDelayed: a sync waits for another array on the same disks.
	PendingDelayed = "delayed"
	// PendingResync: a resync is to be done and none runs.
	PendingResync = "pending"
)

// activity reports what the sync thread does and how far it has got. It
// follows the kernel's /proc/mdstat (md.c status_resync, 6.1 to 7.2),
// which mdadm --detail repeats: DELAYED while a sync thread waits for
// another array sharing a disk (sync_completed reads delayed), PENDING
// while none runs and resync_start is below the end (reads a number).
func activity(s *snapshot) Activity {
	act := Activity{Kind: sysfs.ActionIdle}
	if s.action != "" {
		act.Kind = s.action
	}
	if s.resyncStart.Valid && s.progressRead {
		v := s.resyncStart.Value
		act.ResyncStartSectors = &v
	}
	switch s.progress.State {
	case sysfs.ProgressDelayed:
		act.Pending = PendingDelayed
	case sysfs.ProgressNone:
		if act.ResyncStartSectors != nil {
			act.Pending = PendingResync
		}
	case sysfs.ProgressRunning:
		act.DoneSectors, act.TotalSectors = s.progress.Done, s.progress.Total
		if act.TotalSectors > 0 {
			act.Percent = float64(act.DoneSectors) * 100 / float64(act.TotalSectors)
		}
	}
	if s.speed.Valid && s.speed.Value > 0 && act.TotalSectors > act.DoneSectors && act.Kind != sysfs.ActionIdle && act.Kind != sysfs.ActionFrozen {
		act.SpeedKiBs = s.speed.Value
		act.ETASeconds = (act.TotalSectors - act.DoneSectors) / 2 / act.SpeedKiBs
	}
	return act
}

// slotLimit is the most slots a superblock of version v can describe:
// 27 for 0.90 (MD_SB_DISKS), 1920 for 1.x (the roles that fit in 4 KiB,
// the kernel's bound on max_dev). A count above it is a crafted or
// damaged superblock and must never size an allocation.
func slotLimit(v superblock.Version) int {
	if v == superblock.Version090 {
		return superblock.Disks090
	}
	return superblock.MaxDev1
}
