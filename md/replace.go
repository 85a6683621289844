package md

// A replace request takes one route, the same for mdctl replace and for
// heal (replaceFiller), in three stages:
//
//  1. Facts, in one pass: Manager.gatherReplace reads everything the
//     decision needs into a replaceFacts, writing nothing: the array
//     (arrayFacts: the snapshot Discover reads, the clone source's
//     bitmap, the descriptor numbers the kernel holds, the array's
//     logical block size), the freeze record an interrupted run left
//     (staleFreeze), and the candidate disk (candidateFacts: stat, the
//     block device's size and block size, sysfs identity, holders,
//     partitions, array roles, the stack around it (stackFacts), mounts,
//     an O_EXCL probe, and the blank scan (Candidate.scan, candidateArea)).
//  2. A pure plan: planReplace (plan.go) turns those facts and the
//     request into a Plan or a *RefusedError. It reads nothing, keeps no
//     clock and changes none of its facts: planning twice from one
//     replaceFacts gives the same plan, whatever happened to the disks
//     meanwhile.
//  3. One executor: Manager.ExecuteReplace (execute.go) takes the
//     locks, gathers the facts again with gatherReplace and plans again
//     with planReplace, refusing with ErrPlanChanged when planDiff finds
//     a difference, and only then carries out the plan's steps through
//     the kernel interface. The final blank check runs on the exclusive
//     descriptor that writes (kernel.go, ClaimDevice).
//
// PlanReplace is stages 1 and 2; Replace is all three.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/uuid"
	"golang.org/x/sys/unix"

	"github.com/go-mdraid/mdraid/blockdev"
	"github.com/go-mdraid/mdraid/internal/escape"
	"github.com/go-mdraid/mdraid/ioctl"
	"github.com/go-mdraid/mdraid/superblock"
	"github.com/go-mdraid/mdraid/sysfs"
)

// ReplaceRequest asks for a disk to take a slot of an array.
//
// A replace puts the new disk into exactly one slot: an empty one, or the
// slot of a faulty member (which is removed first), or, with Hot, the slot
// of a live member that is then copied while it stays in service. It never
// grows the array and never writes a disk that holds anything.
type ReplaceRequest struct {
	// Array is the array, named as in the package documentation ("Naming arrays").
	Array string
	// With is the new disk: a path (such as /dev/sdc or a
	// /dev/disk/by-id link) or a kernel name ("sdc"), by the rule of
	// Manager.DevicePath.
	With string
	// Slot is the slot to fill; nil lets the planner choose the only
	// empty (or faulty) slot.
	Slot *int
	// Member is the old member: for a replace, a faulty member to remove
	// first; for a hot replace, the live member to replace. A kernel name
	// ("sdb") or a device path.
	Member string
	// Hot replaces a live member: the new disk is rebuilt as its
	// replacement while it stays in service, and the old member is
	// marked faulty by the kernel when the copy completes.
	Hot bool
	// ByPath, when set, is the by-path identity (blockdev.PathID) the
	// disk must have: heal names the port it found the disk in, and a
	// disk that is elsewhere by the time of the plan, or of the
	// executor's final plan under the lock, is refused.
	ByPath string
	// AllowImageFile accepts a regular file as the candidate. It exists
	// for tests; mdctl never sets it.
	AllowImageFile bool
}

// PlanReplace reads the array and the candidate disk and decides what a
// replace would do, writing nothing. It returns the plan with every check
// made; when a check fails, the plan is returned together with a
// *RefusedError (matching ErrRefused and the reason, such as
// ErrNoEmptySlot or ErrNotBlank). Other errors mean the system could not
// be read.
func (m *Manager) PlanReplace(ctx context.Context, req ReplaceRequest) (*Plan, error) {
	return m.planRequest(ctx, req, uuid.New())
}

// planRequest is PlanReplace with the device UUID given: the facts in
// one pass, then the pure plan.
func (m *Manager) planRequest(ctx context.Context, req ReplaceRequest, devUUID uuid.UUID) (*Plan, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if req.With == "" {
		return nil, fmt.Errorf("md: replace needs the new disk")
	}
	name, err := m.resolve(req.Array)
	if err != nil {
		return nil, refuseLookup("replace", req.Array, req.Member, err)
	}
	req.With = m.DevicePath(req.With)
	rf := m.gatherReplace(name, req, "")
	return planReplace(rf.array, rf.cand, req, devUUID)
}

// replaceFacts is everything the replace decision reads about a request:
// the array and the candidate disk. gatherReplace fills it in one pass;
// planReplace decides from it alone.
type replaceFacts struct {
	array arrayFacts
	cand  *Candidate
}

// gatherReplace reads, in one pass and writing nothing, every fact the
// replace decision needs about req into the array name (a kernel name):
// the array's (arrayFacts), the record of a freeze an interrupted
// replace left (staleFreeze), and the candidate's (candidateFacts).
//
// held is the key of the array's lock when the caller holds it (the
// executor): the freeze record under that key is then stale whoever
// wrote it. With held empty (planning), the record is the one of the
// array's UUID, and counts only when no replace holds the lock.
func (m *Manager) gatherReplace(name string, req ReplaceRequest, held string) replaceFacts {
	f := m.arrayFacts(name, req.Member)
	if held != "" {
		f.freeze = m.staleFreeze(held, true)
	} else {
		f.freeze = m.staleFreeze(snapshotUUID(f.s), false)
	}
	return replaceFacts{array: f, cand: m.candidateFacts(req.With, req.AllowImageFile)}
}

// Replace plans a replace and carries it out (PlanReplace, then
// ExecuteReplace). See ExecuteReplace for the errors.
func (m *Manager) Replace(ctx context.Context, req ReplaceRequest) (*ReplaceResult, error) {
	p, err := m.PlanReplace(ctx, req)
	if err != nil {
		return nil, err
	}
	return m.ExecuteReplace(ctx, p)
}

// arrayFacts reads what the planner needs about the array: the snapshot
// Discover uses, the clone source's bitmap, and the array's logical block
// size.
func (m *Manager) arrayFacts(name, member string) arrayFacts {
	f := arrayFacts{s: m.read(name), member: m.memberName(member)}
	// The planner's clone source: it decides from the members as built.
	src := cloneSource(f.s.asBuilt())
	if src != nil && m.ops.diskNumbers != nil {
		// Which descriptor numbers the kernel holds (devnumbers.go). When
		// it cannot be asked, the superblocks and the 0.90 rule decide.
		upTo := numbersToAsk(f.s, src.sb.Version)
		if held, err := m.ops.diskNumbers(name, upTo); err == nil {
			f.s.kernelNums = &kernelNumbers{held: held, upTo: uint32(upTo)}
		}
	}
	if src != nil && src.sb.HasBitmap() {
		val, err := m.reads.do(path.Join(m.devRoot, src.Device)+" bitmap", func() (any, error) {
			dev, err := m.open(src.Device)
			if err != nil {
				return nil, err
			}
			defer dev.Close()
			return superblock.ReadBitmap(dev, src.sb)
		})
		f.bitmap, _ = val.(*superblock.Bitmap)
		f.bitmapErr = err
	}
	f.lbs, f.lbsErr = blockdev.LogicalBlockSize(m.fs, name)
	return f
}

// DevicePath is the path of the device arg names, by the one rule for
// device arguments ([blockdev.ArgPath]): a name without a slash is a
// kernel name under the Manager's dev root ("vda" is /dev/vda), anything
// with a slash a path as given ("/dev/disk/by-id/…", "./disk.img").
// PlanReplace (With), Incremental and Assemble apply it to the devices
// they are given; Fail, Remove and the replaced member take a kernel
// name or a path by the same rule.
func (m *Manager) DevicePath(arg string) string {
	return blockdev.ArgPath(m.devRoot, arg)
}

// memberName turns a member named by path into its kernel name. A path
// that no longer exists (a pulled disk) keeps its base name. A name
// without a slash is a kernel name already (the rule of DevicePath).
func (m *Manager) memberName(s string) string {
	if s == "" || !strings.Contains(s, "/") {
		return s
	}
	if p, err := filepath.EvalSymlinks(s); err == nil {
		s = p
	}
	if rel, err := filepath.Rel(m.devRoot, s); err == nil && !strings.HasPrefix(rel, "..") {
		return filepath.ToSlash(rel)
	}
	return filepath.Base(s)
}

// candidateFacts learns everything the planner asks about the disk at
// path. It opens the disk read-only (and once with O_EXCL, closed at
// once) and writes nothing. A fact it cannot establish is recorded in
// Unknown, and it carries on with the others, so that the planner refuses
// with every reason and the blank scan runs whenever the disk can be read.
func (m *Manager) candidateFacts(path string, allowImage bool) *Candidate {
	c := &Candidate{Path: path}
	defer func() { c.Error = strings.Join(c.Unknown, "; ") }()
	fi, err := os.Stat(path)
	if err != nil {
		c.unknown(&c.statErr, "stat", err)
		return c
	}
	switch {
	case fi.Mode()&os.ModeDevice != 0 && fi.Mode()&os.ModeCharDevice == 0:
		bd, err := ioctl.StatBlockDevice(path)
		if err != nil {
			c.unknown(&c.statErr, "block device", err)
			return c
		}
		c.BlockDevice = true
		c.dev = sysfs.DevNum{Major: bd.Major, Minor: bd.Minor}
		c.DevNum = c.dev.String()
		c.SizeBytes = int64(bd.Size)
		c.LogicalBlockSize = bd.LogicalBlockSize
		devs := []sysfs.DevNum{c.dev}
		if d, err := blockdev.LookupDev(m.fs, m.devRoot, c.dev); err != nil {
			// Without sysfs there is no telling holders, partitions or
			// array membership: the planner refuses.
			c.unknown(&c.sysfsErr, "not in sysfs", err)
		} else {
			c.Device = d.Name
			c.Serial = d.Serial
			c.Holders = d.Holders
			c.ReadOnly = d.ReadOnly
			if d.LogicalBlockSize != 0 && int64(d.LogicalBlockSize) != c.LogicalBlockSize {
				c.unknown(&c.lbsErr, "logical block size", fmt.Errorf("sysfs says %d bytes, BLKSSZGET %d", d.LogicalBlockSize, c.LogicalBlockSize))
			}
			if c.Partitions, err = m.partitions(d.Name); err != nil {
				c.unknown(&c.sysfsErr, "partitions", err)
			}
			if c.IsArray, c.MemberOf, err = m.arrayRoles(d.Name, c.dev); err != nil {
				c.unknown(&c.sysfsErr, "array membership", err)
			}
			m.stackFacts(c, d.Name)
			if id, err := blockdev.PathID(m.fs, d.Name); err == nil {
				c.ByPath = id
			}
			for _, p := range c.Partitions {
				pd, err := blockdev.Lookup(m.fs, m.devRoot, p)
				switch {
				case err == nil:
					devs = append(devs, pd.Dev)
				case !errors.Is(err, fs.ErrNotExist): // gone since listed: nothing to mount
					c.unknown(&c.sysfsErr, "partition "+p, err)
				}
			}
		}
		if c.Mounts, err = blockdev.Mounts(m.ops.mountInfo, devs); err != nil {
			c.unknown(&c.busyErr, "mounts", err)
		}
		if xf, err := os.OpenFile(path, os.O_RDONLY|unix.O_EXCL, 0); err == nil {
			xf.Close()
		} else if errors.Is(err, unix.EBUSY) {
			c.ExclusiveBusy = true
		} else {
			c.unknown(&c.busyErr, "exclusive open", err)
		}
	case fi.Mode().IsRegular() && allowImage:
		c.Image = true
		c.Device = filepath.Base(path)
		c.SizeBytes = fi.Size()
		c.LogicalBlockSize = 512 // an image is addressed in 512-byte sectors
		// An image named like a disk of the sysfs root (md/mdtest's
		// disks) stands for that disk: its port, for heal's check.
		if id, err := blockdev.PathID(m.fs, c.Device); err == nil {
			c.ByPath = id
		}
	default:
		return c
	}

	// O_DIRECT: md and other kernel users write metadata with bios that
	// bypass the page cache, so a cached page can hide what is on the
	// disk now (an image file on a file system without O_DIRECT is read
	// through its page cache, which is never stale for a file).
	f, err := blockdev.OpenDirect(path)
	if err != nil {
		c.unknown(&c.scanErr, "blank scan", err)
		return c
	}
	defer f.Close()
	if err := c.scan(f); err != nil {
		c.unknown(&c.scanErr, "blank scan", err)
	}
	return c
}

// unknown records a fact that could not be established.
func (c *Candidate) unknown(slot *error, what string, err error) {
	if *slot == nil {
		*slot = err
	}
	c.Unknown = append(c.Unknown, what+": "+err.Error())
}

// scan runs the blank scan over the candidate. When the disk carries
// exactly one md superblock that decodes, it also scans everything but
// the area a replace would have written with that superblock (see
// candidateArea), so that the planner can tell a half-done run of its own from
// a disk reused since.
func (c *Candidate) scan(r io.ReaderAt) error {
	fds, err := blankFindings(r, c.SizeBytes)
	if err != nil {
		return err
	}
	c.Findings = fds
	if pr, err := superblock.Probe(r, c.SizeBytes); err == nil {
		for _, cand := range pr.Candidates {
			if cand.Err == nil && cand.Superblock != nil {
				c.mdsb = append(c.mdsb, cand.Superblock)
			}
		}
	}
	c.scanned = true
	if len(c.mdsb) != 1 {
		return nil
	}
	if c.area, c.bitmapMissing = candidateArea(r, c.mdsb[0]); c.area == nil {
		return nil
	}
	c.residue, err = blankFindingsMasked(r, c.SizeBytes, c.area)
	if err != nil {
		return err
	}
	c.residueKnown = true
	return nil
}

// candidateArea is the superblock area a replace would have written with
// the superblock sb found on the candidate: its superblock and, when it
// has a bitmap, the bitmap region, each widened to whole 4 KiB blocks,
// which md reserves for them. It is computed, never allocated: the disk
// is attacker-controlled, and its bitmap superblock is only read for its
// 256 bytes and bounded as memberWrites bounds the array's (bitmapBytes).
// The planner accepts the area only when it is exactly the one its own
// writes cover (see planSuperblock).
//
// When sb has a bitmap but no bitmap superblock is found where it points
// (a run killed between the superblock and the bitmap write), the area
// is the superblock's alone and bitmapMissing is set: the blank scan
// then covers the bitmap region too. It returns nil when sb cannot be
// encoded again, or its bitmap is unusable.
func candidateArea(r io.ReaderAt, sb *superblock.Superblock) (area []span, bitmapMissing bool) {
	b, err := sb.MarshalBinary()
	if err != nil {
		return nil, false
	}
	area = regionArea([]region{{Off: sb.DiskOffset, Data: b}})
	if !sb.HasBitmap() {
		return area, false
	}
	loc, err := superblock.BitmapLocation(sb)
	if err != nil {
		return nil, false
	}
	bm, err := superblock.ReadBitmap(r, sb)
	switch {
	case errors.Is(err, superblock.ErrNoBitmap):
		return area, true
	case err != nil:
		return nil, false
	}
	n, err := bitmapBytes(sb, bm, loc)
	if err != nil {
		return nil, false
	}
	return append(area, spanArea(loc, int64(n))), false
}

// regionArea widens regions to whole 4 KiB blocks.
func regionArea(regions []region) []span {
	out := make([]span, 0, len(regions))
	for _, r := range regions {
		out = append(out, spanArea(r.Off, int64(len(r.Data))))
	}
	return out
}

// spanArea widens n bytes at off to whole 4 KiB blocks.
func spanArea(off, n int64) span {
	start := off &^ 4095
	end := (off + n + 4095) &^ 4095
	return span{start, end - start}
}

// partitions lists the kernel's partitions of disk name; an error when
// they cannot be listed (a fact the planner then refuses on).
func (m *Manager) partitions(name string) ([]string, error) {
	return blockdev.Partitions(m.fs, name)
}

// arrayRoles reports whether the device is an md array, and which arrays
// it is bound to as a member; an error when that cannot be told.
func (m *Manager) arrayRoles(name string, dev sysfs.DevNum) (isArray bool, memberOf []string, err error) {
	return m.fs.ArrayRoles(name, dev)
}

// errRebuildFailed means the new member failed or left the array while
// it was being rebuilt.
var errRebuildFailed = errors.New("md: rebuild failed")

// WaitRequest says which rebuild WaitReplace follows.
type WaitRequest struct {
	// Array is the array, Member the new member (kernel names, as in a
	// ReplaceResult).
	Array, Member string
	// Replaced is, for a hot replace, the member being replaced: once the
	// kernel has marked it faulty it is removed.
	Replaced string
	// Interval between reads; default one second.
	Interval time.Duration
	// Progress, if set, is called after every read with the array's
	// status.
	Progress func(Array)
}

// WaitReplace follows the rebuild of a replaced member until it is in
// sync and the array's sync thread is idle; for a hot replace it then
// waits for the kernel to mark the old member faulty and removes it.
// It returns the array's status at the end, whose health the caller
// should check. Cancelling ctx stops the waiting, not the rebuild.
// A new member that turns faulty or disappears is an error saying so
// ("md: rebuild failed: ...").
func (m *Manager) WaitReplace(ctx context.Context, w WaitRequest) (Array, error) {
	interval := w.Interval
	if interval <= 0 {
		interval = time.Second
	}
	removed := w.Replaced == ""
	settle := 0
	for {
		a, err := m.Status(ctx, w.Array)
		if err != nil {
			return a, err
		}
		if w.Progress != nil {
			w.Progress(a)
		}
		done, err := rebuildDone(a, w.Member)
		if err != nil {
			return a, err
		}
		if done && a.Degraded != slotsNotActive(a) && settle < maxSettle {
			// md marks the rebuilt member in sync a moment before it
			// lowers md/degraded (raid1_spare_active and the like): seen
			// between the two, the report would say degraded. Poll again,
			// a bounded number of times.
			settle++
			done = false
		}
		if done && !removed {
			old, _ := a.Find(w.Replaced)
			switch {
			case old == nil:
				removed = true
			case old.Flags.Failed():
				if err := m.Remove(ctx, w.Array, w.Replaced); err != nil {
					return a, fmt.Errorf("md: removing the replaced %s: %w", w.Replaced, err)
				}
				removed = true
				continue
			}
		}
		if done && removed {
			return a, nil
		}
		select {
		case <-ctx.Done():
			return a, ctx.Err()
		case <-time.After(interval):
		}
	}
}

// maxSettle bounds the polls WaitReplace spends waiting for md/degraded
// to agree with the members once the rebuilt member is in sync.
const maxSettle = 25

// slotsNotActive counts the slots that have no active (in-sync) member.
func slotsNotActive(a Array) int {
	n := 0
	for _, s := range a.Slots {
		if s.State != SlotActive {
			n++
		}
	}
	return n
}

// rebuildDone decides whether the rebuild of member is over: it holds a
// slot, is in sync, and nothing runs.
func rebuildDone(a Array, member string) (bool, error) {
	mem, where := a.Find(member)
	switch {
	case mem == nil:
		return false, fmt.Errorf("%w: %s is no longer a member of %s", errRebuildFailed, member, a.Device)
	case mem.Flags.Failed():
		return false, fmt.Errorf("%w: %s is faulty", errRebuildFailed, member)
	}
	inSync := mem.Flags.Has(sysfs.FlagInSync)
	idle := a.Activity.Kind == sysfs.ActionIdle
	return where == "slot" && inSync && idle, nil
}

// memberships lists, one phrase each, the arrays c belongs to or is: "a
// member of md0", "an md array", "built on …" (a loop device over a
// member, a file on an array). Replace, re-add and create refuse such a
// device with these words.
func (c *Candidate) memberships() []string {
	var out []string
	if len(c.MemberOf) > 0 {
		out = append(out, "a member of "+strings.Join(c.MemberOf, ", "))
	}
	if c.IsArray {
		out = append(out, "an md array")
	}
	if len(c.StackedOn) > 0 {
		out = append(out, "built on "+strings.Join(c.StackedOn, "; "))
	}
	return out
}

// uses lists, one phrase each, what uses c now as the kernel tells it:
// holders, mount points, loop devices over it, another program's
// exclusive open, and read-only. resumedBy is the array an interrupted
// replace added c to ("" for none): that array alone holding c, and
// holding it open exclusively, is not a use. Replace, re-add and create
// refuse a device with these words.
func (c *Candidate) uses(resumedBy string) []string {
	var out []string
	if len(c.Holders) > 0 && (resumedBy == "" || len(c.Holders) != 1 || c.Holders[0] != resumedBy) {
		out = append(out, "held by "+strings.Join(c.Holders, ", "))
	}
	if len(c.Mounts) > 0 {
		out = append(out, "mounted on "+escape.Text(strings.Join(c.Mounts, ", ")))
	}
	if len(c.UsedBy) > 0 {
		out = append(out, "in use through a loop device ("+strings.Join(c.UsedBy, "; ")+")")
	}
	if c.ExclusiveBusy && resumedBy == "" {
		out = append(out, "opened exclusively by another program")
	}
	if c.ReadOnly {
		out = append(out, "read-only")
	}
	return out
}
