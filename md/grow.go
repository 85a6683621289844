package md

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/go-mdraid/mdraid/superblock"
	"github.com/go-mdraid/mdraid/sysfs"
)

// Using the space every member has, as mdadm --grow --size=max|N does
// (Grow.c Grow_reshape, "set size", read in md-raid-utilities/mdadm at
// d1447022; md.c rdev_size_store, super_1_rdev_size_change,
// super_90_rdev_size_change, update_size and size_store; the raid1,
// raid5 and raid10 resize functions). docs/kernels.md §15 records the
// facts.

// The checks of a size change.
const (
	// CheckGrowArray: the array runs read-write at a level whose
	// personality md can resize (raid1, 4, 5, 6, 10 without the far
	// layout), with native 0.90 or 1.x metadata, in sync, no member
	// failed, and nothing runs (resync, recovery, reshape, check).
	CheckGrowArray Check = "array can be resized"
	// CheckGrowSize: every member can hold the size asked for by md's own
	// rule for its metadata, the size is no smaller than what the array
	// uses now, and (striped levels) a multiple of the chunk.
	CheckGrowSize Check = "size fits every member"
)

// ErrShrink is matched by the refusal of a size smaller than the array's:
// md would cut off the end of the data, and whatever a file system keeps
// there. It is not done here.
var ErrShrink = errors.New("md: the size asked for is smaller than the array's")

// GrowRequest asks for the space an array takes on each member to change,
// as mdadm --grow --size.
type GrowRequest struct {
	// Array is named as in the package documentation ("Naming arrays").
	Array string
	// SizeKiB is the space each member gives the array, in KiB; zero
	// asks for the most that every member can give (--size=max), the
	// last step after each member was replaced by a bigger disk.
	SizeKiB uint64
}

// GrowPlan is what a size change would do.
type GrowPlan struct {
	// Array is the array's kernel name; Level and Metadata as sysfs
	// shows them.
	Array    string `json:"array"`
	Level    string `json:"level"`
	Metadata string `json:"metadata"`
	// FromKiB is the space each member gives the array now
	// (component_size); ArrayKiB the array's size now.
	FromKiB  uint64 `json:"from_kib"`
	ArrayKiB uint64 `json:"array_kib"`
	// MaxKiB is the most every member can give by md's rule for the
	// metadata (see GrowMember.MaxKiB), rounded down to the chunk on
	// striped levels. On raid10 md may give a little less (it rounds
	// to whole stripes).
	MaxKiB uint64 `json:"max_kib"`
	// ToKiB is the size asked for: MaxKiB for max.
	ToKiB uint64 `json:"to_kib"`
	// Unchanged: ToKiB is FromKiB; nothing is written.
	Unchanged bool `json:"unchanged"`
	// Bitmap is bitmap/location ("none", "+8"): md resizes an internal
	// bitmap with the array (doubling its chunk when its room needs it).
	Bitmap string `json:"bitmap"`
	// Members are the array's active members.
	Members []GrowMember `json:"members"`
	// Resize lists the members whose space md is asked to raise
	// (md/dev-N/size) before the array's: those that give less than
	// ToKiB now.
	Resize []string `json:"resize"`
}

// GrowMember is what one member can give.
type GrowMember struct {
	Device string       `json:"device"`
	DevNum sysfs.DevNum `json:"devnum"`
	Slot   int          `json:"slot"`
	// DeviceSectors is the size of the member's block device;
	// DataOffset where the array's data starts on it (sectors).
	DeviceSectors uint64 `json:"device_sectors"`
	DataOffset    uint64 `json:"data_offset"`
	// NowKiB is what md lets the member give now (md/dev-N/size).
	NowKiB uint64 `json:"now_kib"`
	// MaxKiB is the most it can give: the device less the data offset
	// (1.1, 1.2); for 1.0 up to a superblock at the device's end less
	// 8 KiB, rounded down to 4 KiB, less room md keeps for a bitmap
	// (4, 64 or 128 KiB by the device's size) and 4 KiB for the
	// bad-block log; for 0.90 up to a superblock 64 KiB before the end,
	// rounded down to 64 KiB, and at most 4 TiB.
	MaxKiB uint64 `json:"max_kib"`
	// SuperblockSector is where its superblock is (0 for a 1.0 or 0.90
	// member whose superblock is no longer at the end of its device: the
	// device grew); NewSuperblockSector where md writes it when it raises
	// the member's size (1.0 and 0.90 keep it at the device's end: it
	// moves when the device grew).
	SuperblockSector    uint64 `json:"superblock_sector"`
	NewSuperblockSector uint64 `json:"new_superblock_sector"`
}

// GrowResult is what Grow did.
type GrowResult struct {
	Plan *GrowPlan `json:"plan"`
	// Resized are the members whose md/dev-N/size was written.
	Resized []string `json:"resized"`
	// ComponentKiB and ArrayKiB are read back after the change.
	ComponentKiB uint64 `json:"component_kib"`
	ArrayKiB     uint64 `json:"array_kib"`
	// SyncAction is sync_action read back: md resyncs the new space of
	// an array that was in sync ("resync"), unless a bitmap says it
	// need not.
	SyncAction string `json:"sync_action"`
}

const growOp = "resize"

// refuseGrow is a refusal of the size change of array at check.
func refuseGrow(array string, check Check, cause error, format string, a ...any) error {
	return &RefusedError{Op: growOp, Array: array, Check: check, Reason: fmt.Sprintf(format, a...), Err: cause}
}

// PlanGrow is the dry run of Grow: what would change, or the refusal. It
// writes nothing.
func (m *Manager) PlanGrow(ctx context.Context, req GrowRequest) (*GrowPlan, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	name, err := m.resolve(req.Array)
	if err != nil {
		return nil, refuseLookup(growOp, req.Array, "", err)
	}
	return m.planGrow(name, req)
}

func (m *Manager) planGrow(name string, req GrowRequest) (*GrowPlan, error) {
	s := m.read(name)
	if len(s.errs) > 0 {
		return nil, refuseGrow(name, CheckFactsReadable, errUnknownFact, "cannot read %v", problems(s.errs))
	}
	a, err := m.fs.Array(name)
	if err != nil {
		return nil, err
	}
	d := derive(s)
	refuse := func(check Check, cause error, format string, args ...any) (*GrowPlan, error) {
		return nil, refuseGrow(name, check, cause, format, args...)
	}
	meta := s.metadata
	switch {
	case !d.running:
		return refuse(CheckArrayRunning, errArrayNotRunning, "it is not running (%s)", s.state)
	case meta.Kind != sysfs.MetadataNative || !(meta.Major == 1 || meta.Is090()):
		return refuse(CheckMetadata, ErrUnsupported, "its metadata is %q: only 0.90 and 1.x metadata of its own are handled", meta.Raw)
	}
	switch s.level {
	case sysfs.LevelRAID1, sysfs.LevelRAID4, sysfs.LevelRAID5, sysfs.LevelRAID6:
	case sysfs.LevelRAID10:
		if far, offset := (s.layout>>8)&255, s.layout&(1<<16) != 0; far > 1 && !offset {
			return refuse(CheckLayout, ErrUnsupported, "raid10 with the far layout (%d copies): md cannot resize it", far)
		}
	default:
		return refuse(CheckLevel, ErrUnsupported, "level %s: md resizes only raid1, 4, 5, 6 and 10 (raid0 and linear always use every member whole)", s.level)
	}
	switch s.state {
	case sysfs.StateClean, sysfs.StateActive, sysfs.StateActiveIdle:
	case sysfs.StateReadAuto, sysfs.StateReadonly:
		return refuse(CheckReadWrite, ErrUnsupported, "it is %s: md resizes only a read-write array", s.state)
	default:
		return refuse(CheckReadWrite, ErrUnsupported, "array_state is %s", s.state)
	}
	if rp, err := a.ReshapePosition(); err != nil {
		return refuse(CheckFactsReadable, errUnknownFact, "cannot read reshape_position: %v", err)
	} else if rp.Valid {
		return refuse(CheckSyncIdle, ErrCheckBusy, "a reshape is under way (reshape_position %d)", rp.Value)
	}
	if s.action != sysfs.ActionIdle {
		return refuse(CheckSyncIdle, ErrCheckBusy, "sync_action is %s: md refuses a size change while a resync, recovery, reshape or check runs (or recovery is frozen)", s.action)
	}
	if s.degraded == nil || *s.degraded != 0 {
		return refuse(CheckNotDegraded, ErrUnsupported, "it is degraded: the new space would have no redundancy; recover it first")
	}
	loc, err := a.BitmapLocation()
	if err != nil {
		return refuse(CheckFactsReadable, errUnknownFact, "cannot read bitmap/location: %v", err)
	}
	switch {
	case loc.Kind == "none":
	case loc.Kind != "offset":
		return refuse(CheckBitmap, ErrUnsupported, "its bitmap is %s, not internal", loc)
	}
	// md cannot raise what a 0.90 or 1.0 member gives while the array has
	// an internal bitmap (it sits next to the superblock at the device's
	// end and md will not move them: rdev_size_change answers EBUSY).
	// Such an array can grow only as far as every member gives already.
	stuck := loc.Kind == "offset" && (meta.Is090() || meta.Minor == 0)
	stuckWhy := func() string {
		return fmt.Sprintf("metadata %s keeps its internal bitmap next to the superblock at the end of each member, and md will not move them to let a member give more (it answers EBUSY); remove the bitmap (mdctl bitmap %s none), resize, wait for the resync of the new space (mdctl wait %s), and add it back (mdctl bitmap %s internal)",
			meta.Raw, name, name, name)
	}
	chunkSectors := uint64(0)
	if s.level != sysfs.LevelRAID1 {
		if s.chunk <= 0 || s.chunk%512 != 0 {
			return refuse(CheckFactsReadable, errUnknownFact, "chunk_size %d is not a whole number of sectors", s.chunk)
		}
		chunkSectors = uint64(s.chunk) / 512
	}
	p := &GrowPlan{Array: name, Level: string(s.level), Metadata: meta.Raw, FromKiB: s.component, ArrayKiB: s.size / 2,
		Bitmap: loc.String(), Members: []GrowMember{}, Resize: []string{}}
	if s.component == 0 {
		return refuse(CheckFactsReadable, errUnknownFact, "its component size reads 0")
	}
	used := s.component * 2
	// maxSectors is the most every member can give now, roomSectors the
	// most their devices could give (they differ only when stuck).
	maxSectors, roomSectors := uint64(0), uint64(0)
	// spares are the spares and what each gives now (md/dev-N/size).
	type spare struct {
		device string
		kib    uint64
	}
	var spares []spare
	var smallest string
	for _, ms := range s.members {
		sm, err := a.Member(ms.Device)
		if err != nil {
			return refuse(CheckFactsReadable, errUnknownFact, "%s: %v", ms.Device, err)
		}
		now, err := sm.Size()
		if err != nil {
			return refuse(CheckFactsReadable, errUnknownFact, "cannot read the size of member %s: %v", ms.Device, err)
		}
		switch {
		case ms.state.Failed():
			return refuse(CheckGrowArray, ErrUnsupported, "member %s is faulty and still listed: md counts it; remove it first (mdctl remove %s %s)", ms.Device, name, ms.Device)
		case ms.Slot < 0:
			// md counts spares too (update_size): one that gives less than
			// the new size makes md answer ENOSPC. Checked below.
			if now*2 < used {
				return refuse(CheckGrowSize, ErrUnsupported, "spare %s gives %d KiB, less than the array uses", ms.Device, now)
			}
			spares = append(spares, spare{ms.Device, now})
			continue
		case !ms.state.Has(sysfs.FlagInSync):
			return refuse(CheckSyncIdle, ErrCheckBusy, "member %s is not in sync", ms.Device)
		}
		if ms.DevNum.IsZero() || ms.SizeBytes == 0 {
			return refuse(CheckFactsReadable, errUnknownFact, "the device number or size of %s cannot be read: %s", ms.Device, ms.Error)
		}
		sb := ms.sb
		if sb == nil && (meta.Is090() || meta.Minor == 0) {
			// A 0.90 or 1.0 superblock is found from the device's end:
			// once the device grew in place it is no longer there (md
			// writes it there when it raises the member). What md's rule
			// needs, md says: the metadata and the member's data offset.
			off, err := sm.Offset()
			if err != nil {
				return refuse(CheckFactsReadable, errUnknownFact, "the superblock of %s cannot be read (%s), nor its offset: %v", ms.Device, ms.Error, err)
			}
			sb = &superblock.Superblock{Version: superblock.Version10, DataOffset: off}
			if meta.Is090() {
				sb.Version = superblock.Version090
			}
		}
		if sb == nil {
			return refuse(CheckFactsReadable, errUnknownFact, "the superblock of %s cannot be read: %s", ms.Device, ms.Error)
		}
		gm := GrowMember{Device: ms.Device, DevNum: ms.DevNum, Slot: ms.Slot, DeviceSectors: ms.SizeBytes / 512, NowKiB: now}
		if err := memberRoom(&gm, sb, s.level); err != nil {
			return refuse(CheckGrowSize, ErrUnsupported, "%s: %v", ms.Device, err)
		}
		if gm.MaxKiB*2 < used {
			// md would record the smaller size in the superblock before it
			// noticed (rdev_size_store checks after rdev_size_change).
			return refuse(CheckGrowSize, ErrUnsupported, "by md's rule for metadata %s, %s can give only %d KiB, less than the %d the array uses now (device %d sectors, data at %d)",
				meta.Raw, ms.Device, gm.MaxKiB, s.component, gm.DeviceSectors, gm.DataOffset)
		}
		reach := gm.MaxKiB * 2
		if stuck {
			reach = min(reach, now*2)
		}
		if smallest == "" || reach < maxSectors {
			maxSectors, smallest = reach, ms.Device
		}
		if smallest == "" || gm.MaxKiB*2 < roomSectors || roomSectors == 0 {
			roomSectors = gm.MaxKiB * 2
		}
		p.Members = append(p.Members, gm)
	}
	if len(p.Members) == 0 {
		return refuse(CheckFactsReadable, errUnknownFact, "it lists no active member")
	}
	if chunkSectors > 0 {
		maxSectors -= maxSectors % chunkSectors
	}
	p.MaxKiB = maxSectors / 2
	if chunkSectors > 0 {
		roomSectors -= roomSectors % chunkSectors
	}
	switch {
	case req.SizeKiB == 0 && stuck && p.MaxKiB <= p.FromKiB && roomSectors/2 > p.FromKiB:
		return refuse(CheckBitmap, ErrUnsupported, "the members could give %d KiB, but %s", roomSectors/2, stuckWhy())
	case req.SizeKiB == 0:
		p.ToKiB = max(p.MaxKiB, p.FromKiB)
	case req.SizeKiB < p.FromKiB:
		return refuse(CheckGrowSize, ErrShrink, "%d KiB is less than the %d KiB each member gives now: md would cut off the end of the array", req.SizeKiB, p.FromKiB)
	case stuck && req.SizeKiB > p.MaxKiB && req.SizeKiB <= roomSectors/2:
		return refuse(CheckBitmap, ErrUnsupported, "%s gives %d KiB now, and %s", smallest, p.MaxKiB, stuckWhy())
	case req.SizeKiB > p.MaxKiB:
		return refuse(CheckGrowSize, ErrUnsupported, "%d KiB does not fit: %s can give at most %d KiB", req.SizeKiB, smallest, p.MaxKiB)
	case chunkSectors > 0 && (req.SizeKiB*2)%chunkSectors != 0:
		return refuse(CheckGrowSize, ErrUnsupported, "%d KiB is not a multiple of the %d KiB chunk", req.SizeKiB, chunkSectors/2)
	default:
		p.ToKiB = req.SizeKiB
	}
	p.Unchanged = p.ToKiB == p.FromKiB
	// Spares must be able to give the new size too.
	for _, sp := range spares {
		if !p.Unchanged && sp.kib < p.ToKiB {
			return refuse(CheckGrowSize, ErrUnsupported, "spare %s gives %d KiB and md counts spares: remove it first (mdctl remove %s %s)", sp.device, sp.kib, name, sp.device)
		}
	}
	for _, gm := range p.Members {
		if !p.Unchanged && gm.NowKiB < p.ToKiB {
			p.Resize = append(p.Resize, gm.Device)
		}
	}
	return p, nil
}

// memberRoom fills in gm's data offset, superblock places and the most it
// can give by md's rule for the metadata (GrowMember.MaxKiB).
func memberRoom(gm *GrowMember, sb *superblock.Superblock, level sysfs.Level) error {
	dev := gm.DeviceSectors
	var most uint64
	switch sb.Version {
	case superblock.Version11, superblock.Version12:
		if sb.DataOffset >= dev {
			return fmt.Errorf("data offset %d is past the device's %d sectors", sb.DataOffset, dev)
		}
		gm.DataOffset, gm.SuperblockSector, gm.NewSuperblockSector = sb.DataOffset, sb.SuperOffset, sb.SuperOffset
		most = dev - sb.DataOffset
	case superblock.Version10:
		if dev < 64*2 {
			return fmt.Errorf("device of %d sectors", dev)
		}
		start := (dev - 8*2) &^ (4*2 - 1)
		bm := bitmapSpace1(dev)
		if start < bm+4*2 {
			return fmt.Errorf("device of %d sectors", dev)
		}
		gm.DataOffset, gm.SuperblockSector, gm.NewSuperblockSector = sb.DataOffset, sb.SuperOffset, start
		most = start - bm - 4*2
		if most <= sb.DataOffset {
			return fmt.Errorf("device of %d sectors, data at %d", dev, sb.DataOffset)
		}
		// The kernel's data_size for 1.0 counts from sector 0; data
		// offset is 0 for every 1.0 array (mdadm and md write it so).
		if sb.DataOffset != 0 {
			return fmt.Errorf("metadata 1.0 with data offset %d: md sizes 1.0 members from sector 0", sb.DataOffset)
		}
	case superblock.Version090:
		if dev < 2*128 {
			return fmt.Errorf("device of %d sectors", dev)
		}
		start := dev&^(128-1) - 128
		gm.SuperblockSector, gm.NewSuperblockSector = uint64(sb.SuperOffset), start
		most = start
		if most >= 2<<32 && level != sysfs.LevelRAID0 {
			most = 2<<32 - 2
		}
	default:
		return fmt.Errorf("metadata %v", sb.Version)
	}
	gm.MaxKiB = most / 2
	return nil
}

// bitmapSpace1 is the room md keeps for a bitmap between the data and a
// 1.0 superblock when it sizes a member (md-bitmap.h / md.c
// super_1_choose_bm_space): 4 KiB, 64 KiB above 8 GiB, 128 KiB from
// 200 GiB.
func bitmapSpace1(dev uint64) uint64 {
	switch {
	case dev < 64*2:
		return 0
	case dev-64*2 >= 200*1024*1024*2:
		return 128 * 2
	case dev-4*2 > 8*1024*1024*2:
		return 64 * 2
	default:
		return 4 * 2
	}
}

// Grow changes the space the array takes on each member, as mdadm
// --grow --size: first each active member's md/dev-N/size is raised
// where it gives less than the new size (md records the member's new
// data size in its superblock and, for 0.90 and 1.0, writes the
// superblock at the device's end if the device grew), then
// md/component_size; md resizes the array and an internal bitmap, and
// resyncs the new space. The number of members never changes. Before
// each write the array is read again: the member must still be the
// array's in-sync member of the planned device number and size, and no
// sync may run; otherwise nothing more is written.
func (m *Manager) Grow(ctx context.Context, req GrowRequest) (*GrowResult, error) {
	p, err := m.PlanGrow(ctx, req)
	if err != nil {
		return nil, err
	}
	res := &GrowResult{Plan: p, Resized: []string{}}
	if p.Unchanged {
		res.ComponentKiB, res.ArrayKiB = p.FromKiB, p.ArrayKiB
		res.SyncAction = string(sysfs.ActionIdle)
		return res, nil
	}
	for _, gm := range p.Members {
		if !slices.Contains(p.Resize, gm.Device) {
			continue
		}
		if err := ctx.Err(); err != nil {
			return res, growFailed(res, err)
		}
		if err := m.growRecheck(p, gm); err != nil {
			if len(res.Resized) == 0 {
				return res, refuseGrow(p.Array, CheckGrowSize, err, "%v; nothing written", err)
			}
			return res, growFailed(res, err)
		}
		if err := m.ops.k.SetMemberSize(p.Array, gm.Device, p.ToKiB); err != nil {
			return res, growFailed(res, fmt.Errorf("writing %d to md/dev-%s/size of %s: %w", p.ToKiB, gm.Device, p.Array, err))
		}
		res.Resized = append(res.Resized, gm.Device)
	}
	if err := m.growRecheck(p, GrowMember{}); err != nil {
		return res, growFailed(res, err)
	}
	if err := m.ops.k.SetComponentSize(p.Array, p.ToKiB); err != nil {
		return res, growFailed(res, fmt.Errorf("writing %d to md/component_size of %s: %w", p.ToKiB, p.Array, err))
	}
	s := m.read(p.Array)
	res.ComponentKiB, res.ArrayKiB, res.SyncAction = s.component, s.size/2, string(s.action)
	if s.component != p.ToKiB && p.Level != string(sysfs.LevelRAID10) {
		return res, fmt.Errorf("md: resize of %s: wrote component_size %d, it reads %d KiB", p.Array, p.ToKiB, s.component)
	}
	return res, nil
}

// growRecheck reads the array again before a write of the plan: still
// running, idle, not degraded, the same component size, and gm (when
// named) still its in-sync member of the planned device number and size.
// Its errors match ErrPlanChanged.
func (m *Manager) growRecheck(p *GrowPlan, gm GrowMember) error {
	s := m.read(p.Array)
	switch {
	case len(s.errs) > 0:
		return fmt.Errorf("%w: cannot read %v", ErrPlanChanged, problems(s.errs))
	case s.action != sysfs.ActionIdle:
		return fmt.Errorf("%w: sync_action of %s is %s now", ErrPlanChanged, p.Array, s.action)
	case s.degraded == nil || *s.degraded != 0:
		return fmt.Errorf("%w: %s is degraded now", ErrPlanChanged, p.Array)
	case s.component != p.FromKiB:
		return fmt.Errorf("%w: the component size of %s is %d KiB now", ErrPlanChanged, p.Array, s.component)
	}
	if gm.Device == "" {
		return nil
	}
	ms := memberOf(s, gm.Device)
	if ms == nil || ms.DevNum != gm.DevNum || ms.Slot != gm.Slot || !ms.state.Has(sysfs.FlagInSync) || ms.state.Failed() || ms.SizeBytes/512 != gm.DeviceSectors {
		return fmt.Errorf("%w: %s is no longer the in-sync member of %s in slot %d, device %s of %d sectors", ErrPlanChanged, gm.Device, p.Array, gm.Slot, gm.DevNum, gm.DeviceSectors)
	}
	return nil
}

// growFailed is the failure of a size change after the plan, saying what
// was written.
func growFailed(res *GrowResult, err error) error {
	what := "nothing was written"
	if len(res.Resized) > 0 {
		what = fmt.Sprintf("md was asked to let %v give %d KiB and recorded it in their superblocks; the array still uses %d KiB of each (run the command again to finish)",
			res.Resized, res.Plan.ToKiB, res.Plan.FromKiB)
	}
	return fmt.Errorf("md: resize of %s failed: %w; %s", res.Plan.Array, err, what)
}
