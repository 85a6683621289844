package md

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/go-mdraid/mdraid/blockdev"
	"github.com/go-mdraid/mdraid/internal/escape"
	"github.com/go-mdraid/mdraid/superblock"
	"github.com/go-mdraid/mdraid/sysfs"
	"github.com/google/uuid"
	"golang.org/x/sys/unix"
)

// Discover finds every md array in sysfs, running or not, with no
// configuration, and reports its status. It reads each member's superblock
// to cross-check events and to learn the array's name.
//
// A problem with one array or member is recorded in that entry's Errors or
// Error and the rest of the report is still filled in; Discover itself
// fails only when the list of arrays cannot be read or ctx is done.
func (m *Manager) Discover(ctx context.Context) (*Report, error) {
	return m.discover(ctx, nil)
}

// discover is Discover; with a Poller's p, each array's superblocks are
// read as p decides (Poller).
func (m *Manager) discover(ctx context.Context, p *Poller) (*Report, error) {
	names, err := m.fs.Arrays()
	if err != nil {
		return nil, fmt.Errorf("md: listing arrays: %w", err)
	}
	r := &Report{Version: SchemaVersion, Time: m.now().UTC(), Arrays: make([]Array, len(names))}
	fsys := m.fs.WithCache() // one pass: links do not change under us
	// The arrays are read on as many goroutines as there are CPUs: each
	// attribute is an open, a read and a close of a sysfs file, and that
	// is kernel work that another CPU can do at the same time.
	err = forEach(ctx, len(names), runtime.GOMAXPROCS(0), func(i int) {
		var pm *pollMemory
		if p != nil {
			pm = p.memory(names[i])
		}
		r.Arrays[i] = m.statusPolled(fsys, names[i], pm)
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(r.Arrays, func(i, j int) bool { return lessDevice(r.Arrays[i].Device, r.Arrays[j].Device) })
	if p != nil {
		p.forget(names)
	}
	return r, nil
}

// forEach calls f(i) for each i below n on up to workers goroutines, and
// returns when every call has; it starts no new call once ctx is done,
// and then returns ctx's error.
func forEach(ctx context.Context, n, workers int, f func(i int)) error {
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(workers, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				f(i)
			}
		}()
	}
	var err error
	for i := range n {
		if err = ctx.Err(); err != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	return err
}

// lessDevice orders md9 before md10 and md126 before md127.
func lessDevice(a, b string) bool {
	na, ea := strconv.Atoi(strings.TrimPrefix(a, "md"))
	nb, eb := strconv.Atoi(strings.TrimPrefix(b, "md"))
	if ea == nil && eb == nil {
		return na < nb
	}
	return a < b
}

// Status reports one array, named as in the package documentation
// ("Naming arrays"): kernel name ("md127"), device path ("/dev/md127"),
// /dev/md/ name ("boot", "/dev/md/boot"), superblock name or UUID. A
// name that matches no array gives ErrNoArray, one that matches several
// ErrAmbiguous.
func (m *Manager) Status(ctx context.Context, name string) (Array, error) {
	if err := ctx.Err(); err != nil {
		return Array{}, err
	}
	// One cache for the lookup and the report: the links read to find
	// the array are not read again.
	fsys := m.fs.WithCache()
	kname, err := m.resolveFS(fsys, name)
	if err != nil {
		return Array{}, err
	}
	return m.status(fsys, kname), nil
}

// resolve turns an array name as a user would type it into the kernel
// name: "md127", "/dev/md127", "md/boot", "/dev/md/boot", "boot" or
// "talos:boot" (a name from the superblock), or the array UUID (in
// canonical form or as mdadm prints it). The error matches ErrNoArray when
// nothing matches.
//
// Kernel names and device nodes are unique and are tried first. Names and
// UUIDs come from the members' superblocks, which anyone who plugs in a
// disk controls: when more than one array matches, resolve refuses with an
// *ambiguousError (matching ErrAmbiguous) that lists them all, rather than
// pick one.
func (m *Manager) resolve(name string) (string, error) {
	return m.resolveFS(m.fs.WithCache(), name)
}

// resolveFS is resolve reading through fsys.
func (m *Manager) resolveFS(fsys sysfs.FS, name string) (string, error) {
	arrays, err := fsys.Arrays()
	if err != nil {
		return "", fmt.Errorf("md: listing arrays: %w", err)
	}
	base := strings.TrimPrefix(name, m.devRoot+"/")
	base = strings.TrimPrefix(base, "/dev/")
	for _, a := range arrays {
		if a == base {
			return a, nil
		}
	}
	// A device node, or a link to one such as /dev/md/boot: match the
	// device number.
	if strings.Contains(name, "/") {
		if dn, ok := devNumOf(name); ok {
			for _, a := range arrays {
				if arr, err := fsys.Array(a); err == nil {
					if d, err := arr.Dev(); err == nil && d == dn {
						return a, nil
					}
				}
			}
		}
	}
	// A superblock name is chosen by whoever wrote the disk: two arrays
	// can carry the same one, and then the name says nothing.
	// An array with members whose identity cannot be read (no member's
	// superblock, and for a UUID no UUID in sysfs either) may carry the
	// name too: then a match is not unique.
	short := strings.TrimPrefix(base, "md/")
	byUUID := len(uuidDigits(base)) == 32
	ids := m.identities(fsys, arrays, byUUID)
	var found, unread []string
	for i, a := range arrays {
		id := &ids[i]
		switch {
		case id.name != "" && (id.name == short || id.homehost+":"+id.name == short) || sameUUID(id.uuid, base):
			found = append(found, a)
		case id.unread(byUUID):
			unread = append(unread, a)
		}
	}
	sort.Slice(unread, func(i, j int) bool { return lessDevice(unread[i], unread[j]) })
	switch {
	case len(found) == 0 && len(unread) > 0:
		// Not "no such array": the name may be one of these (a user who
		// may not open the members reads no superblock).
		return "", &ambiguousError{Name: name, Unread: unread}
	case len(found) == 0:
		return "", fmt.Errorf("%w: %s", ErrNoArray, escape.Text(name))
	case len(found) == 1 && len(unread) == 0:
		return found[0], nil
	}
	sort.Slice(found, func(i, j int) bool { return lessDevice(found[i], found[j]) })
	return "", &ambiguousError{Name: name, Arrays: found, Unread: unread}
}

// identity is what resolve needs of an array: its name, homehost and
// UUID, taken as Status takes them (the freshest member superblock, else
// the UUID in sysfs), and enough to tell whether they could be read.
type identity struct {
	name, homehost, uuid string
	// metadata is metadata_version as read.
	metadata string
	// members is how many members sysfs lists; superblocks how many of
	// their superblocks could be read.
	members, superblocks int
}

// slotsTried is how many slots identity looks at for a member: an array
// missing its first members is read from its listing.
const slotsTried = 4

// identityReaders is how many arrays identities reads at once. Its time
// is the members' superblock reads, which wait for the disks rather than
// use a CPU; sixteen at once keep a system of 64 arrays from starting 64
// goroutines and open descriptors.
const identityReaders = 16

// identities reads the identity of each array named, up to
// identityReaders at once, and nothing else: not the members' sysfs
// attributes, ports or sizes that a status report reads. A lookup by name
// or UUID costs the members' superblocks of every array, which is what it
// must read to be sure that one array alone carries the name.
func (m *Manager) identities(fsys sysfs.FS, arrays []string, byUUID bool) []identity {
	ids := make([]identity, len(arrays))
	_ = forEach(context.Background(), len(arrays), identityReaders, func(i int) {
		ids[i] = m.identity(fsys, arrays[i], byUUID)
	})
	return ids
}

// identity reads the identity of the array name: of a started array the
// superblock of the member in its lowest slot (among the first
// slotsTried), else the freshest of its members' superblocks (as build
// takes it), else the kernel's md/uuid.
// For a lookup by UUID (byUUID), the UUID of an array the kernel has
// validated (md/uuid is not zero) is md/uuid and no superblock is read:
// the kernel took it from the members' superblocks, which all carry it,
// and a name is not looked for.
func (m *Manager) identity(fsys sysfs.FS, name string, byUUID bool) identity {
	var id identity
	a, err := fsys.Array(name)
	if err != nil {
		return id
	}
	mv, err := a.MetadataVersion()
	if err != nil {
		return id
	}
	id.metadata = mv.Raw
	if byUUID && mv.Kind == sysfs.MetadataNative {
		if u := kernelUUID(a); u != "" {
			id.uuid = u
			return id
		}
	}
	if mv.Kind == sysfs.MetadataNative {
		// A started array: the member in its lowest slot. The kernel
		// writes every member that holds a slot at each update, so
		// they all carry the array's newest events; a slot link is
		// one readlink, where the listing and a state are seven calls.
		for slot := range slotsTried {
			dir, err := a.SlotLink(slot)
			if err != nil {
				continue
			}
			if sb, err := m.readSuperblock(strings.TrimPrefix(dir, "dev-"), mv); err == nil {
				id.members, id.superblocks = 1, 1
				id.uuid = sb.SetUUID.String()
				id.name, id.homehost = sb.Name(), sb.Homehost()
				return id
			}
			break
		}
	}
	members, _ := a.Members()
	id.members = len(members)
	var newest *superblock.Superblock
	if mv.Kind == sysfs.MetadataNative {
		names := make([]string, len(members))
		for i, mem := range members {
			names[i] = mem.Name()
		}
		for _, r := range m.startSuperblocks(names, mv)() {
			if r.sb == nil {
				continue
			}
			id.superblocks++
			if newest == nil || r.sb.Events > newest.Events {
				newest = r.sb
			}
		}
	}
	if newest != nil {
		id.uuid = newest.SetUUID.String()
		id.name, id.homehost = newest.Name(), newest.Homehost()
	} else {
		id.uuid = kernelUUID(a)
	}
	return id
}

// kernelUUID returns the array UUID the kernel shows in md/uuid, in the
// form mdadm prints (sysfs.Array.UUID), or "" when it is zero (an array
// the kernel has not validated: not started) or cannot be read.
func kernelUUID(a sysfs.Array) string {
	u, err := a.UUID()
	if err != nil || u == (uuid.UUID{}) {
		return ""
	}
	return u.String()
}

// unread reports whether the array has members but no name could be read
// for it (none of their superblocks), or, when byUUID, no UUID either.
// Arrays with external metadata (or none) carry no name of the kind
// looked up and do not count.
func (id *identity) unread(byUUID bool) bool {
	if strings.HasPrefix(id.metadata, "external:") || id.metadata == "none" {
		return false
	}
	if byUUID {
		return id.uuid == "" && id.members > 0
	}
	return id.members > 0 && id.superblocks == 0
}

// sameUUID reports whether the array UUID u (canonical form) is what the
// user typed: the same 32 hex digits, with dashes or mdadm's colons.
func sameUUID(u, typed string) bool {
	if u == "" {
		return false
	}
	d := uuidDigits(typed)
	return len(d) == 32 && d == uuidDigits(u)
}

// uuidDigits is s without dashes and colons, in lower case.
func uuidDigits(s string) string {
	b := make([]byte, 0, 32)
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '-' || c == ':':
		case 'A' <= c && c <= 'Z':
			b = append(b, c+'a'-'A')
		default:
			b = append(b, c)
		}
	}
	return string(b)
}

// ErrAmbiguous is matched by the error for an array name that more than
// one array carries.
var ErrAmbiguous = errors.New("md: array name is ambiguous")

// ambiguousError is returned for a superblock name that more than one
// array carries, or that no array carries as far as can be read while
// some arrays' names cannot be read (then Arrays is empty); it lists them
// all. It matches ErrAmbiguous.
type ambiguousError struct {
	Name   string   // the name asked for
	Arrays []string // kernel names of the arrays that carry it, sorted
	Unread []string // arrays whose names could not be read, sorted
}

// Error names the candidates; the name is escaped (it may come from a
// disk).
func (e *ambiguousError) Error() string {
	if len(e.Arrays) == 0 {
		n := "1 array"
		if len(e.Unread) > 1 {
			n = fmt.Sprintf("%d arrays", len(e.Unread))
		}
		return fmt.Sprintf("md: cannot tell whether %q names an array: cannot read the name of %s (%s), no member's superblock could be read (run as root, or name the array by device)",
			escape.Text(e.Name), n, strings.Join(e.Unread, ", "))
	}
	if len(e.Unread) > 0 {
		return fmt.Sprintf("%v: %q is the name of %s, and the name of %s cannot be read (no member's superblock could be); name the array by device (%s)",
			ErrAmbiguous, escape.Text(e.Name), strings.Join(e.Arrays, " and "), strings.Join(e.Unread, " and "), strings.Join(e.Arrays, ", "))
	}
	return fmt.Sprintf("%v: %q is the name of %s; name the array by device (%s) or UUID",
		ErrAmbiguous, escape.Text(e.Name), strings.Join(e.Arrays, " and "), strings.Join(e.Arrays, ", "))
}

// Is reports whether target is ErrAmbiguous.
func (e *ambiguousError) Is(target error) bool { return target == ErrAmbiguous }

// snapshot is everything read about one array, before any decision.
type snapshot struct {
	name      string
	dev       sysfs.DevNum
	state     sysfs.ArrayState
	level     sysfs.Level
	metadata  sysfs.MetadataVersion
	raidDisks int
	// raidDisksBad: raid_disks could not be read or parsed.
	raidDisksBad bool
	// stateBad: array_state could not be read or parsed.
	stateBad  bool
	layout    int64
	chunk     int64
	component uint64 // KiB
	size      uint64 // sectors
	degraded  *uint64
	action    sysfs.SyncAction
	progress  sysfs.Progress
	// progressRead: sync_completed was read (the array has a redundancy
	// personality running).
	progressRead bool
	// resyncStart is resync_start: Valid while the members do not yet
	// agree beyond it (a resync to run, running or delayed).
	resyncStart sysfs.Optional[uint64]
	speed       sysfs.Optional[uint64]
	// mismatch is mismatch_cnt, nil when the array has none.
	mismatch *uint64
	// lastAction is last_sync_action in today's words (lastSyncAction),
	// empty when the array has none.
	lastAction sysfs.SyncAction
	members    []memberSnap
	// errs are the array's facts that could not be read (*readError)
	// and the members' attributes that did not parse.
	errs []error
	// kernelNums is what GET_DISK_INFO said; nil when not asked (status)
	// or when the ioctl failed (see devnumbers.go).
	kernelNums *kernelNumbers
	// bitmap is the write-intent bitmap as status reads it (bitmapOf);
	// nil when not read (decisions do not read it) or there is none.
	bitmap *ArrayBitmap
	// sysUUID is the kernel's md/uuid (canonical), read only when no
	// member superblock could be read (a user who may not open the
	// members still sees the array's identity).
	sysUUID string
}

type memberSnap struct {
	Member
	state sysfs.MemberState
	// left: reading the member's state or slot showed that it has
	// left the array since it was listed (memberLeft); readFS drops it.
	left bool
	sb   *superblock.Superblock
	// badSysfs lists the member's attributes that did not parse.
	badSysfs []error
	// errs is what could not be read for the member (Member.Err).
	errs []error
	// slotFromLink: the slot could not be read and Slot comes from the
	// array's rdN link to the member.
	slotFromLink bool
	// unread names the member's state and slot when they could not be
	// read (or did not parse): a decision about the member refuses.
	unread []string
}

// note records a failed read, except the absence of an attribute the
// level does not have.
func (s *snapshot) note(what string, err error) {
	if err != nil {
		s.errs = append(s.errs, &readError{what, err})
	}
}

// optional drops fs.ErrNotExist: the redundancy attributes exist only
// while a raid1/4/5/6/10 personality runs.
func optional(err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// lastSyncAction turns a last_sync_action value into the words of
// sync_action. Linux 6.1 names a recovery "recovery" there and shows
// "none" before the first sync; 6.12 and later show "recover" and "idle"
// (docs/scrub.md §6). Anything else is kept as read.
func lastSyncAction(raw sysfs.SyncAction) sysfs.SyncAction {
	switch raw {
	case "recovery":
		return sysfs.ActionRecover
	case "none":
		return sysfs.ActionIdle
	}
	return raw
}

// read takes a snapshot of the array name.
func (m *Manager) read(name string) *snapshot { return m.readFS(m.fs.WithCache(), name) }

// readFS takes a snapshot through fsys, which may carry a cache shared by
// the snapshots of one pass.
func (m *Manager) readFS(fsys sysfs.FS, name string) *snapshot {
	return m.readPolled(fsys, name, nil)
}

// readPolled is readFS that, with a Poller's memory pm, reads the
// members' superblocks only when sysfs shows the array changed since
// they were last read (Poller).
func (m *Manager) readPolled(fsys sysfs.FS, name string, pm *pollMemory) *snapshot {
	s := &snapshot{name: name}
	a, err := fsys.Array(name)
	if err != nil {
		s.note("array", err)
		return s
	}
	if d, err := a.Dev(); err == nil {
		s.dev = d
	} else {
		s.note("dev", err)
	}
	s.state, err = a.State()
	s.note("array_state", err)
	s.stateBad = err != nil
	s.level, err = a.Level()
	s.note("level", err)
	s.metadata, err = a.MetadataVersion()
	s.note("metadata_version", err)
	if rd, err := a.RaidDisks(); err == nil {
		if rd.Valid {
			s.raidDisks = int(rd.Value.Current)
		}
	} else {
		s.note("raid_disks", err)
		s.raidDisksBad = true
	}
	if l, err := a.Layout(); err == nil {
		s.layout = l.Current
	} else {
		s.note("layout", optional(err))
	}
	if c, err := a.ChunkSize(); err == nil {
		s.chunk = c.Current
	} else {
		s.note("chunk_size", optional(err))
	}
	s.component, err = a.ComponentSize()
	s.note("component_size", optional(err))
	s.size, err = a.Size()
	s.note("size", err)
	if d, err := a.Degraded(); err == nil {
		s.degraded = &d
	} else {
		s.note("degraded", optional(err))
	}
	s.action, err = a.SyncAction()
	s.note("sync_action", optional(err))
	// While sync_action says idle the kernel runs no sync: sync_completed
	// and sync_speed say "none" (md.c: both are shown only while
	// MD_RECOVERY_RUNNING or curr_resync is set, and action_show says
	// idle only without MD_RECOVERY_RUNNING). They are not read then: a
	// report of 64 idle arrays saves 128 opens. They belong to the same
	// attribute group as sync_action, so progressRead holds.
	if idle := err == nil && s.action == sysfs.ActionIdle; idle {
		s.progress, s.progressRead = sysfs.Progress{State: sysfs.ProgressNone}, true
	} else {
		s.progress, err = a.SyncCompleted()
		s.progressRead = err == nil
		s.note("sync_completed", optional(err))
		s.speed, err = a.SyncSpeed()
		s.note("sync_speed", optional(err))
	}
	s.resyncStart, err = a.ResyncStart()
	s.note("resync_start", optional(err))
	if n, err := a.MismatchCount(); err == nil {
		s.mismatch = &n
	} else {
		s.note("mismatch_cnt", optional(err))
	}
	if la, err := a.LastSyncAction(); err == nil {
		s.lastAction = lastSyncAction(la)
	} else {
		s.note("last_sync_action", optional(err))
	}

	members, err := a.Members()
	s.note("members", err)
	// The superblocks are read (from the disks) while sysfs is read.
	var sbs func() []sbResult
	var names []string
	if s.metadata.Kind == sysfs.MetadataNative {
		names = make([]string, len(members))
		for i, mem := range members {
			names[i] = mem.Name()
		}
		if pm == nil {
			sbs = m.startSuperblocks(names, s.metadata)
		}
	}
	// The rdN links say which member holds which slot; they are read
	// only for a member whose slot attribute cannot be (readMember).
	var links map[string]int
	slotLink := func(dir string) (int, bool) {
		if links == nil {
			links = map[string]int{}
			if l, err := a.SlotLinks(); err == nil {
				for slot, d := range l {
					links[d] = slot
				}
			}
		}
		slot, ok := links[dir]
		return slot, ok
	}
	for _, mem := range members {
		ms := m.readMember(fsys, mem, slotLink)
		if !ms.left {
			s.errs = append(s.errs, ms.badSysfs...)
		}
		s.members = append(s.members, ms)
	}
	if pm != nil && names != nil {
		sbs = pm.superblocks(m, s, names)
	}
	if sbs != nil {
		m.addSuperblocks(s, sbs())
	}
	s.members = slices.DeleteFunc(s.members, func(ms memberSnap) bool { return ms.left })
	if !slices.ContainsFunc(s.members, func(ms memberSnap) bool { return ms.sb != nil }) {
		s.sysUUID = kernelUUID(a)
	}
	return s
}

// sbResult is one member's superblock read.
type sbResult struct {
	sb  *superblock.Superblock
	err error
}

// startSuperblocks starts reading the superblocks of the members named
// (kernel names) all at once, each with the read deadline (readGate), and
// returns the function that waits for them: a member whose disk does not
// answer is reported as such (ErrNoAnswer in its Error) and delays the
// report by the deadline at most, however many members stall.
func (m *Manager) startSuperblocks(names []string, mv sysfs.MetadataVersion) func() []sbResult {
	res := make([]sbResult, len(names))
	var wg sync.WaitGroup
	for i, kname := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sb, err := m.readSuperblock(kname, mv)
			res[i] = sbResult{sb, err}
		}()
	}
	return func() []sbResult {
		wg.Wait()
		return res
	}
}

// addSuperblocks puts the superblocks read (res, in the order of
// s.members) into the members.
func (m *Manager) addSuperblocks(s *snapshot, res []sbResult) {
	for i := range s.members {
		ms, r := &s.members[i], res[i]
		if r.err != nil {
			ms.errs = append(ms.errs, &readError{"superblock", r.err})
			ms.setErr()
		}
		if r.sb == nil {
			continue
		}
		sb := r.sb
		ms.sb = sb
		ms.DeviceUUID = sb.DeviceUUID.String()
		if sb.Version == superblock.Version090 {
			ms.DeviceUUID = ""
		}
		n, ev := sb.DevNumber, sb.Events
		if sb.Version == superblock.Version090 {
			n = sb.ThisDisk.Number
		}
		ms.DevNumber, ms.Events = &n, &ev
	}
}

// readMember reads what sysfs says about one member; addSuperblocks
// adds its superblock.
//
// A slot that cannot be read is taken from the array's rdN link to the
// member (slotLink, given the member's directory name), when there is
// one: the kernel makes it when it gives the member its slot. The slot
// stays in unread (a decision that writes refuses), but the status shows
// where the member is rather than a missing slot and a spare.
func (m *Manager) readMember(fsys sysfs.FS, mem sysfs.Member, slotLink func(dir string) (int, bool)) (ms memberSnap) {
	ms = memberSnap{Member: Member{Device: mem.Name(), Slot: -1, Flags: sysfs.MemberState{}}}
	note := func(what string, err error) {
		if err != nil {
			ms.errs = append(ms.errs, &readError{what, err})
			if errors.Is(err, sysfs.ErrFormat) {
				// A value the kernel would not write: the array's
				// state cannot be trusted either.
				ms.badSysfs = append(ms.badSysfs, &readError{mem.Dir() + "/" + what, err})
			}
		}
	}
	defer ms.setErr()

	st, err := mem.State()
	if memberLeft(mem, err) {
		ms.left = true
		return ms
	}
	note("state", err)
	if err != nil {
		ms.unread = append(ms.unread, "state")
	}
	ms.state = st
	ms.Flags = append(ms.Flags, st...)
	if slot, err := mem.Slot(); err == nil {
		if slot >= 0 {
			ms.Slot = int(slot)
		}
	} else {
		if memberLeft(mem, err) {
			ms.left = true
			return ms
		}
		note("slot", err)
		ms.unread = append(ms.unread, "slot")
		if slotLink != nil {
			if slot, ok := slotLink(path.Base(mem.Dir())); ok {
				ms.Slot = slot
				ms.slotFromLink = true
			}
		}
	}
	ms.ReadErrors, err = mem.Errors()
	note("errors", err)
	// recovery_start only means something for a member being rebuilt.
	if !st.Has(sysfs.FlagInSync) && !st.Failed() && ms.Slot >= 0 {
		if rs, err := mem.RecoveryStart(); err == nil {
			if rs.Valid {
				v := rs.Value
				ms.RecoveredSectors = &v
			}
		} else {
			note("recovery_start", optional(err))
		}
	}
	if bb, err := mem.BadBlocks(); err == nil {
		ms.BadBlocks = len(bb)
	} else {
		note("bad_blocks", optional(err))
	}

	// The block link names the member's own block device; the dev-* name
	// can differ from it only by '!' for '/'.
	kname := mem.Name()
	lookup := func() (*blockdev.Device, error) { return blockdev.LookupIdentity(fsys, m.devRoot, kname) }
	if bl, err := mem.Block(); err == nil {
		kname = bl.Name
		// The link is resolved: describe the device there rather than
		// resolve class/block/NAME to the same directory again.
		lookup = func() (*blockdev.Device, error) { return blockdev.LookupIdentityAt(fsys, m.devRoot, bl.Dir) }
	} else {
		note("block", err)
	}
	ms.Device = kname
	ms.Path = path.Join(m.devRoot, kname)
	pathID := func() (string, error) { return blockdev.PathID(fsys, kname) }
	if d, err := lookup(); err == nil {
		ms.Path = d.Node
		ms.DevNum = d.Dev
		ms.SizeBytes = d.Size
		ms.Serial, ms.WWN, ms.Model = d.Serial, d.WWN, d.Model
		pathID = func() (string, error) { return d.PathID(fsys) }
	} else {
		note("device", err)
	}
	if p, err := pathID(); err == nil {
		ms.ByPath = p
	} else {
		var pe *blockdev.PathIDError
		if !errors.As(err, &pe) {
			note("by-path", err)
		}
	}

	return ms
}

// memberLeft reports whether err, from reading the state or slot of the
// member mem (listed a moment before), shows that the member has left its
// array. Linux 6.1 unbinds a removed member at once but deletes its dev-*
// directory later, from a workqueue (unbind_rdev_from_array), in two
// steps: the attributes first, then the directory (docs/kernels.md §7 and
// §9). The unbind removes the member's block link at once. So right after
// a removal a listing can still name the member while
//   - every read of it fails with ENODEV: md's rdev_attr_show says so once
//     the member is unbound (rdev->mddev is NULL), which proves it left;
//   - its attributes are missing while its directory is still there: it
//     left if the directory or its block link is gone too; with both
//     still there the member is bound, and it is kept (unread): a missing
//     attribute proves nothing.
//
// It looks once and never waits: a status call does not sleep per member.
func memberLeft(mem sysfs.Member, err error) bool {
	switch {
	case errors.Is(err, unix.ENODEV):
		return true
	case !errors.Is(err, fs.ErrNotExist):
		return false
	}
	for _, p := range []string{mem.Path(""), mem.Path("block")} {
		if _, err := os.Lstat(p); errors.Is(err, fs.ErrNotExist) {
			return true
		}
	}
	return false
}

// readSuperblock reads the superblock of the version the kernel reports
// from the member's device node, waiting at most the read deadline (the
// error then matches ErrNoAnswer). A superblock with a bad checksum is
// returned together with the error.
func (m *Manager) readSuperblock(kname string, mv sysfs.MetadataVersion) (*superblock.Superblock, error) {
	v, err := superblock.ParseVersion(fmt.Sprintf("%d.%d", mv.Major, mv.Minor))
	if err != nil {
		return nil, err
	}
	val, err := m.reads.do(path.Join(m.devRoot, kname)+" superblock "+v.String(), func() (any, error) {
		return m.readSuperblockNow(kname, v)
	})
	sb, _ := val.(*superblock.Superblock)
	return sb, err
}

// openSized opens a member device (or image) for reading its
// superblock, and returns its size.
func (m *Manager) openSized(kname string) (device, int64, error) {
	dev, err := m.open(kname)
	if err != nil {
		return nil, 0, err
	}
	size, err := dev.Size()
	if err != nil {
		dev.Close()
		return nil, 0, err
	}
	return dev, size, nil
}

func (m *Manager) readSuperblockNow(kname string, v superblock.Version) (*superblock.Superblock, error) {
	dev, size, err := m.openSized(kname)
	if err != nil {
		return nil, err
	}
	defer dev.Close()
	sb, err := superblock.Read(dev, size, v)
	var ce *superblock.ChecksumError
	if errors.As(err, &ce) {
		return ce.Superblock, err
	}
	return sb, err
}

// readError is a fact that could not be read: what (an attribute, a
// member's attribute as "dev-vdb/state", "superblock", "array") and the
// cause, which errors.Is and errors.As see through (fs.ErrNotExist,
// fs.ErrPermission, sysfs.ErrFormat, a superblock sentinel, ErrNoAnswer).
type readError struct {
	what string
	err  error
}

func (e *readError) Error() string { return e.what + ": " + e.err.Error() }
func (e *readError) Unwrap() error { return e.err }

// problem is a finding with its own words that matches a sentinel
// (ErrUnknownValue, superblock.ErrOutOfRange).
type problem struct {
	text string
	is   error
}

func (e *problem) Error() string { return e.text }
func (e *problem) Unwrap() error { return e.is }

// problems is several errors as one: the texts joined by "; " (as the
// JSON form has always shown them), each matched by errors.Is and
// errors.As.
type problems []error

func (e problems) Error() string {
	var b strings.Builder
	for i, err := range e {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(err.Error())
	}
	return b.String()
}
func (e problems) Unwrap() []error { return e }

// setErr sets the member's Err and Error from errs.
func (ms *memberSnap) setErr() {
	ms.Err, ms.Error = nil, ""
	switch len(ms.errs) {
	case 0:
	case 1:
		ms.Err = ms.errs[0]
	default:
		ms.Err = problems(slices.Clone(ms.errs))
	}
	if ms.Err != nil {
		ms.Error = ms.Err.Error()
	}
}

// errorTexts is the text of each error, for the JSON form.
func errorTexts(errs []error) []string {
	if len(errs) == 0 {
		return nil
	}
	out := make([]string, len(errs))
	for i, err := range errs {
		out[i] = err.Error()
	}
	return out
}
