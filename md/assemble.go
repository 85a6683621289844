package md

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/google/uuid"
	"golang.org/x/sys/unix"

	"github.com/go-mdraid/mdraid/internal/escape"
	"github.com/go-mdraid/mdraid/md/mapfile"
	"github.com/go-mdraid/mdraid/superblock"
	"github.com/go-mdraid/mdraid/sysfs"
)

// StartState is what became of an array after a member was added: the
// values of mdadm's MD_STARTED.
type StartState string

// The start states.
const (
	// StartNo: not enough members to start.
	StartNo StartState = "no"
	// StartAlready: the array was running before.
	StartAlready StartState = "already"
	// StartYes: started now.
	StartYes StartState = "yes"
	// StartUnsafe: enough members to start, but not all the array
	// expects; it waits for the rest, or for Run (the last resort).
	StartUnsafe StartState = "unsafe"
)

// IncrementalRequest is one device for Manager.Incremental.
type IncrementalRequest struct {
	// Device is the block device: a path ("/dev/sdb1") or a kernel name
	// ("sdb1"), by the rule of Manager.DevicePath.
	Device string
	// Run starts the array as soon as enough members are present,
	// read-auto, rather than waiting for all it expects (mdadm -I
	// --run).
	Run bool
	// AddSpares hot-adds a spare of a running array, as mdadm -I does;
	// see AssembleRequest.AddSpares.
	AddSpares bool
	// DryRun changes nothing; the result is what Incremental would do
	// (see AssembleRequest.DryRun).
	DryRun bool
	// spareOfWhole: Assemble saw the device is a spare of an array that
	// its devices start whole, which it may join once started.
	spareOfWhole bool
}

// IncrementalResult is what Incremental did with one device.
type IncrementalResult struct {
	// Device is the member's kernel name ("sdb1").
	Device string
	// Array is the kernel name of the array it joined ("md127").
	Array string
	// Path is the array's name: "/dev/md/NAME", or "/dev/mdN" when it has
	// no usable name. DevName gives MD_DEVNAME.
	Path string
	// UUID is the array UUID, mdadm's MD_UUID text.
	UUID string
	// Foreign is true when the array's homehost is not this host's.
	Foreign bool
	// Started says whether the array runs now; ReadAuto that it was
	// started read-auto (foreign, or started with members missing).
	Started  StartState
	ReadAuto bool
	// Held says why an array with enough members to run was not started,
	// not even with Run: the create that wrote its superblocks did not
	// finish (no running array has updated them, and a member they name
	// is missing), or its members could not be read to tell. Started is
	// StartNo then. "" otherwise.
	Held string
	// Present and Expected count the members that count towards the
	// start and the members the freshest superblock expects.
	Present, Expected int
	// Writes lists every change made, in order ("new_array md127",
	// "SET_ARRAY_INFO 1.2", "ADD_NEW_DISK 8:16", "RUN_ARRAY", ...).
	Writes []string
	// Kicked names members detached because the freshest superblock
	// says they failed.
	Kicked []string
	// LeftBehind lists members attached but too far behind to count
	// (events two or more below the freshest): the kernel drops them
	// when the array starts. They are never forced in.
	LeftBehind []LeftBehind
	// DryRun says that nothing was changed: Writes are the writes the
	// call would make (IncrementalRequest.DryRun).
	DryRun bool
}

// LeftBehind is a member whose superblock is out of date.
type LeftBehind struct {
	// Device is the member's kernel name.
	Device string
	// Events is its superblock's event count, Want the freshest
	// member's.
	Events, Want uint64
}

// DevName is MD_DEVNAME: Path without "/dev/md/", or the whole Path
// when it is not under /dev/md/.
func (r *IncrementalResult) DevName() string {
	if s, ok := strings.CutPrefix(r.Path, "/dev/md/"); ok {
		return s
	}
	return r.Path
}

// Errors of assembly. Each is the cause inside a *RefusedError.
var (
	// ErrNotMember means the device carries no md superblock that
	// assembly can use.
	ErrNotMember = errors.New("md: no usable md superblock")
	// ErrMismatch means the device's superblock disagrees with the
	// array's members on the array.
	ErrMismatch = errors.New("md: superblock does not match the array")
	// ErrUnsupported means the array needs a tool this package is not:
	// a reshape in progress, clustered or lockless-bitmap arrays.
	ErrUnsupported = errors.New("md: array cannot be assembled by this package")
	// ErrInUse means the device is held: a member of an array, mounted,
	// or open exclusively by someone else.
	ErrInUse = errors.New("md: device is in use")
	// ErrLeftBehind means the device is an out-of-date member of an
	// array that runs without it; it is not added (Run adds it).
	ErrLeftBehind = errors.New("md: out-of-date member of a running array")
	// ErrLeftOut means another device claims the same slot of the
	// array and the other members' superblocks show that it, not this
	// one, is current: this one is not added.
	ErrLeftOut = errors.New("md: another device is current for this slot")
	// ErrConflict means two devices claim one slot of the array and the
	// superblocks cannot tell which is current, or two devices carry one
	// device UUID: no device of the array is added.
	ErrConflict = errors.New("md: two devices claim one place in the array")
	// ErrSpareNotAdded means the device is a spare (or names no slot) of
	// an array that is running: it joins only through replace or heal,
	// or with AddSpares.
	ErrSpareNotAdded = errors.New("md: not hot-adding a spare to a running array")
)

// notStartedError is the failure of an array's start: the array's
// outcome, for every device added to it.
type notStartedError struct{ err error }

func (e *notStartedError) Error() string { return e.err.Error() }
func (e *notStartedError) Unwrap() error { return e.err }

// incrementalOp is the operation name of Incremental's refusals.
const incrementalOp = "incremental"

// Incremental adds one device to the array its superblock names, as
// udev's mdadm --incremental does at boot (docs/assembly.md §2): the
// array is created when this is its first member, and started once every
// member it expects is present (or, with Run, as soon as enough are).
// Decisions follow mdadm's with no mdadm.conf: trust by homehost
// (Config.HomeHost), names and numbers as mdopen.c gives them, members
// counted by events with the kernel's allowance of one, and the map file
// (Config.MapDir) kept as mdadm keeps it so that mdadm, if present, sees
// the same arrays.
//
// It never writes to the device: members are bound with ADD_NEW_DISK and
// the kernel reads their superblocks. Refusals (no superblock, a device
// in use, a superblock that disagrees with the array, a reshape,
// clustered arrays, a member of a running array without Run, and a fact
// that cannot be established: whether the device is held, whether an
// array of its UUID is already assembling, the superblocks of the
// array's members) are *RefusedError values matching ErrRefused, and
// nothing was changed. An error after a change says what was changed in
// the result's Writes.
func (m *Manager) Incremental(ctx context.Context, req IncrementalRequest) (*IncrementalResult, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	req.Device = m.DevicePath(req.Device)
	if req.DryRun {
		d := m.withProbes().withDryRun()
		r, err := d.incremental(req, d.readDryMap(), nil)
		if r != nil {
			r.DryRun = true
		}
		return r, err
	}
	l, err := mapfile.Map{Dir: m.mapDir}.Lock()
	if err != nil {
		return nil, fmt.Errorf("md: %w", err)
	}
	defer l.Unlock()
	return m.withProbes().incremental(req, l, nil)
}

// member is a device offered to assembly, with its facts.
type offered struct {
	path  string
	kname string
	// disk is the kernel name of the whole disk: kname's own, or for a
	// partition its disk's (the directory above it in sysfs).
	disk string
	dev  sysfs.DevNum
	sb   *superblock.Superblock
}

func (m *Manager) offer(path string) (*offered, error) {
	o := &offered{path: path}
	dev, ok := devNumOf(path)
	if !ok {
		if _, err := os.Stat(path); err != nil {
			return nil, refuse(incrementalOp, "", path, err)
		}
		return nil, refuse(incrementalOp, "", path, fmt.Errorf("md: %s is not a block device", path))
	}
	o.dev = dev
	// Only the kernel name is needed: dev/block/MAJ:MIN links to the
	// device's directory (one readlink, not the dozen reads of a
	// blockdev.Device).
	dir, err := m.fs.Rel(m.fs.Path("dev", "block", dev.String()))
	if err != nil {
		return nil, refuse(incrementalOp, "", path, fmt.Errorf("md: %s (%v) is not in sysfs: %w", path, dev, err))
	}
	o.kname = filepath.Base(dir)
	o.disk = o.kname
	if p := filepath.Base(filepath.Dir(dir)); p != "block" {
		o.disk = p
	}
	sb, err := m.probe(o.kname)
	if err != nil {
		return nil, refuse(incrementalOp, "", path, err)
	}
	o.sb = sb
	return o, nil
}

// probeCache remembers the superblocks probed during one Assemble or
// Incremental call. Assembly looks at the same members again and again
// (each device added makes mdadm's rules look at the members already
// attached, and an array not in the map is found by its first member's
// superblock), and each look was four O_DIRECT reads. Members are never
// written by assembly, and the kernel writes their superblocks only when
// it starts an array or adds a disk to a running one: the cache is
// emptied then (forgetProbes).
//
// It also remembers the arrays this call created and the UUID each was
// created for (made): the kernel never changes an array's UUID, the map
// lock is held for the whole call, and the map says the same (create
// writes the entry), so assembling need not read a member of such an
// array again to tell that it is another UUID's.
type probeCache struct {
	mu   sync.Mutex
	m    map[string]sbResult
	made map[string]uuid.UUID
}

// madeHere returns the UUID of array n if this call created it.
func (m *Manager) madeHere(n string) (uuid.UUID, bool) {
	c := m.probes
	if c == nil {
		return uuid.UUID{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	u, ok := c.made[n]
	return u, ok
}

// remember records that this call created array n for UUID u.
func (m *Manager) remember(n string, u uuid.UUID) {
	if c := m.probes; c != nil {
		c.mu.Lock()
		c.made[n] = u
		c.mu.Unlock()
	}
}

// withProbes returns a copy of m for one Assemble or Incremental call:
// it remembers superblocks until the kernel may have written them, and
// where sysfs paths resolved to. Assembly asks for the same arrays again
// and again (every device offered is compared with the arrays being
// assembled), and each uncached look at /sys/block/mdN resolved every
// component of the path anew: about 1,000 lstat calls for eight arrays
// in the guest (bench/assemblevm -strace), each as dear as a read. The
// resolutions stay true for the call: an array's directory and a
// member's dev-* directory name the same device for as long as they
// exist, a path that stops existing fails at its open as it would
// uncached, and failed resolutions are not remembered.
func (m *Manager) withProbes() *Manager {
	c := *m
	c.probes = &probeCache{m: map[string]sbResult{}, made: map[string]uuid.UUID{}}
	c.fs = m.fs.WithCache()
	return &c
}

// forgetProbes empties the cache.
func (m *Manager) forgetProbes() {
	if c := m.probes; c != nil {
		c.mu.Lock()
		clear(c.m)
		c.mu.Unlock()
	}
}

// forgetMembers forgets the superblocks of array's members: the kernel
// may have written them (it writes the superblock of every member of the
// array it starts or adds a disk to, md.c md_update_sb, and of no other
// device). When the members cannot be listed, it forgets everything.
// Arrays that Assemble builds at the same time keep their members'
// superblocks: no other array's start writes them.
func (m *Manager) forgetMembers(array string) {
	c := m.probes
	if c == nil {
		return
	}
	var names []string
	a, err := m.fs.Array(array)
	if err == nil {
		var mems []sysfs.Member
		mems, err = a.MembersInKernelOrder()
		for _, mem := range mems {
			names = append(names, mem.Name())
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		clear(c.m)
		return
	}
	for _, n := range names {
		delete(c.m, n)
	}
}

// probe reads the superblock mdadm would use from a device, with
// O_DIRECT, and refuses one assembly cannot use. Within one assembly the
// answer is remembered (probeCache). A superblock that was read but
// belongs to an array assembly cannot handle is returned beside its
// error, which matches ErrUnsupported, so that the array's identity can
// still be compared (assembling); every other error returns no
// superblock.
func (m *Manager) probe(kname string) (*superblock.Superblock, error) {
	c := m.probes
	if c != nil {
		c.mu.Lock()
		r, ok := c.m[kname]
		c.mu.Unlock()
		if ok {
			return r.sb, r.err
		}
	}
	sb, err := m.probeNow(kname)
	if c != nil && !errors.Is(err, ErrNoAnswer) {
		c.mu.Lock()
		c.m[kname] = sbResult{sb, err}
		c.mu.Unlock()
	}
	return sb, err
}

func (m *Manager) probeNow(kname string) (*superblock.Superblock, error) {
	val, err := m.reads.do(filepath.Join(m.devRoot, kname)+" superblock", func() (any, error) {
		dev, size, err := m.openSized(kname)
		if err != nil {
			return nil, err
		}
		defer dev.Close()
		pr, err := superblock.Probe(dev, size)
		if err != nil {
			return nil, err
		}
		best := pr.Best()
		if best == nil {
			return nil, fmt.Errorf("%w: no superblock mdadm would use", ErrNotMember)
		}
		if best.Err != nil {
			return nil, best.Err
		}
		sb := best.Superblock
		if sb.HasBitmap() {
			bm, err := superblock.ReadBitmap(dev, sb)
			if err != nil {
				return nil, fmt.Errorf("md: reading the bitmap: %w", err)
			}
			switch bm.Version {
			case superblock.BitmapMajorClustered:
				return sbResult{sb, fmt.Errorf("%w: a clustered array (start it with the cluster's resource agent)", ErrUnsupported)}, nil
			case superblock.BitmapMajorLockless:
				return sbResult{sb, fmt.Errorf("%w: a lockless bitmap (use mdadm)", ErrUnsupported)}, nil
			}
		}
		return sbResult{sb: sb}, nil
	})
	if err != nil {
		if errors.Is(err, superblock.ErrNoSuperblock) {
			return nil, fmt.Errorf("md: %s: %w: %w", kname, ErrNotMember, err)
		}
		return nil, fmt.Errorf("md: %s: %w", kname, err)
	}
	r := val.(sbResult)
	sb := r.sb
	switch {
	case r.err != nil:
		return sb, fmt.Errorf("md: %s: %w", kname, r.err)
	case !sb.Level.Known() || sb.Level == superblock.LevelContainer || sb.Level == superblock.LevelFaulty:
		return sb, fmt.Errorf("md: %s: %w: level %v", kname, ErrUnsupported, sb.Level)
	case sb.RaidDisks == 0 || sb.RaidDisks > uint32(superblock.RoleMax):
		return nil, fmt.Errorf("md: %s: %w: raid_disks %d", kname, ErrNotMember, sb.RaidDisks)
	case sb.Reshaping():
		return sb, fmt.Errorf("md: %s: %w: a reshape is in progress (assemble it with mdadm --assemble)", kname, ErrUnsupported)
	case sb.Version == superblock.Version090 && sb.NotPersistent != 0:
		return nil, fmt.Errorf("md: %s: %w: not persistent", kname, ErrNotMember)
	}
	return sb, nil
}

// incremental is Incremental under the held map lock l. t is the
// device's place in an Assemble call that builds arrays at the same time
// (nil for one device on its own): see creationOrder.
func (m *Manager) incremental(req IncrementalRequest, l mapAccess, t *turn) (*IncrementalResult, error) {
	o, err := m.offer(req.Device)
	if err != nil {
		return nil, err
	}
	sb := o.sb
	local := trusted(sb, m.homeHost)
	res := &IncrementalResult{Device: o.kname, UUID: mapfile.Groups(sb.SetUUID), Foreign: !local}
	entries, err := l.Read()
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("md: %w", err)
	}
	uuidText := mapfile.UUIDText(sb)
	array, path, err := m.assembling(entries, sb, uuidText)
	if err != nil {
		return nil, refuse(incrementalOp, "", o.path, err)
	}
	if array == "" {
		if err := m.checkFree(o); err != nil {
			return nil, err
		}
		if err := m.create(res, o, local, entries, l, t); err != nil {
			return res, err
		}
	} else {
		t.arrayExists()
		res.Array, res.Path = array, path
		if err := m.join(res, o, req.Run, req.AddSpares || req.spareOfWhole); err != nil {
			return res, err
		}
	}
	err = m.maybeStart(res, local, req.Run)
	var nostart *notStartedError
	if errors.As(err, &nostart) && t != nil {
		if _, made := m.madeHere(res.Array); made {
			m.undoArray(res, l, t)
		}
	}
	if m.uevents != nil {
		m.uevents.add(t.index(), res)
	} else if uerr := m.asm.Uevent(res.Array); uerr == nil {
		res.Writes = append(res.Writes, "uevent change")
	}
	return res, err
}

// checkFree refuses a device someone holds (the kernel's holders), and
// one whose holders cannot be read: a fact that cannot be established.
// The O_EXCL open that follows (deletePartitions) is the kernel's own
// answer; mdadm makes both checks before adding a disk.
func (m *Manager) checkFree(o *offered) error {
	ents, err := os.ReadDir(m.fs.Path("class", "block", o.kname, "holders"))
	if err != nil {
		return refuse(incrementalOp, "", o.path, fmt.Errorf("%w: cannot tell whether %s is held: %w", errUnknownFact, o.kname, err))
	}
	if len(ents) > 0 {
		var holders []string
		for _, e := range ents {
			holders = append(holders, escape.Text(e.Name()))
		}
		sort.Strings(holders)
		return refuse(incrementalOp, "", o.path, fmt.Errorf("%w: %s is held by %s", ErrInUse, o.kname, strings.Join(holders, ", ")))
	}
	return nil
}

// deletePartitions removes the kernel partitions of a member about to be
// added; EBUSY means it is in use.
func (m *Manager) deletePartitions(res *IncrementalResult, o *offered) error {
	done, err := m.asm.DeletePartitions(filepath.Join(m.devRoot, o.kname))
	for _, p := range done {
		res.Writes = append(res.Writes, fmt.Sprintf("BLKPG_DEL_PARTITION %s %d", o.kname, p))
	}
	if err != nil {
		if len(done) == 0 && errors.Is(err, unix.EBUSY) {
			return refuse(incrementalOp, res.Array, o.path, fmt.Errorf("%w: %s cannot be opened exclusively, or a partition of it is in use: %w", ErrInUse, o.kname, err))
		}
		return fmt.Errorf("md: deleting the kernel's partitions of %s: %w", o.kname, err)
	}
	return nil
}

// assembling finds the array being assembled for sb's UUID: a live map
// entry, else (no map, or an array assembled by a tool that keeps none)
// an array whose members carry the UUID. An array is told by the first
// of its members, in the kernel's order, whose superblock answers; a
// member that carries no md superblock (ErrNotMember) tells nothing and
// is passed over. What cannot be established is an error wrapping
// errUnknownFact, never "no such array": the arrays or an array's
// members cannot be listed, a map entry's array cannot be read (alive),
// or no member of an array can be read, so that it may be this one.
// Creating a second array of one UUID would let the two diverge.
func (m *Manager) assembling(entries []mapfile.Entry, sb *superblock.Superblock, uuidText string) (array, path string, err error) {
	for _, e := range entries {
		if e.UUID != uuidText {
			continue
		}
		if u, ok := m.madeHere(e.Dev); ok && u != sb.SetUUID {
			// A stale entry whose number this call gave another
			// array: that array's own entry replaces it.
			continue
		}
		ok, err := m.alive(e.Dev)
		if err != nil {
			return "", "", fmt.Errorf("%w: cannot tell whether %s, the map's array of UUID %s, is assembling: %w", errUnknownFact, e.Dev, uuidText, err)
		}
		if u, made := m.madeHere(e.Dev); made && u != sb.SetUUID {
			// Made since the look above (a creation remembers its
			// array before the array exists).
			continue
		}
		if ok {
			return e.Dev, e.Path, nil
		}
	}
	names, err := m.fs.Arrays()
	if err != nil {
		return "", "", fmt.Errorf("%w: cannot tell whether an array of UUID %s is assembling: listing the arrays: %w", errUnknownFact, uuidText, err)
	}
	for _, n := range names {
		if u, ok := m.madeHere(n); ok && u != sb.SetUUID {
			continue
		}
		same, err := m.isArray(n, sb)
		if err != nil {
			return "", "", fmt.Errorf("%w: cannot tell whether %s is the array of UUID %s: %w", errUnknownFact, n, uuidText, err)
		}
		if !same {
			continue
		}
		p := "/dev/" + n
		if e, ok := mapfile.Find(entries, n); ok {
			p = e.Path
		}
		return n, p, nil
	}
	return "", "", nil
}

// isArray reports whether array n is sb's array, by the first of its
// members whose superblock answers (one assembly cannot use still names
// its UUID). An array that vanished, has no members, or whose members
// carry no md superblock is not; an error listing the members, or
// members that all fail to read, is an error.
func (m *Manager) isArray(n string, sb *superblock.Superblock) (bool, error) {
	a, err := m.fs.Array(n)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil // listed, then gone
	}
	if err != nil {
		return false, err
	}
	mems, err := a.MembersInKernelOrder()
	if err != nil {
		return false, fmt.Errorf("listing its members: %w", err)
	}
	var unread []string
	var first error
	for _, mem := range mems {
		msb, err := m.probe(mem.Name())
		if msb != nil {
			return msb.SetUUID == sb.SetUUID, nil
		}
		if errors.Is(err, ErrNotMember) {
			continue
		}
		unread = append(unread, mem.Name())
		if first == nil {
			first = err
		}
	}
	if first != nil {
		return false, fmt.Errorf("no member's superblock can be read (%s): %w", strings.Join(unread, ", "), first)
	}
	return false, nil
}

// alive reports whether md device name exists with members or a level,
// as mdadm's map lookups require it to be in /proc/mdstat. A name that
// is no array (gone, not a name, or being deleted: its attributes answer
// EBUSY) is not alive; another error reading array_state or the members
// is an error.
func (m *Manager) alive(name string) (bool, error) {
	if m.dryCreated(name) {
		return true, nil
	}
	a, err := m.fs.Array(name)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrInvalid) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	st, err := a.State()
	if errors.Is(err, unix.EBUSY) {
		// md_attr_show answers EBUSY for an array being deleted
		// (MD_DELETED, after STOP_ARRAY; seen on 6.12): gone.
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if st != sysfs.StateClear {
		return true, nil
	}
	mems, err := a.Members()
	if err != nil {
		return false, err
	}
	return len(mems) > 0, nil
}

// create makes a new array for o's superblock and binds o. In an
// Assemble call that builds arrays at the same time, it first waits until
// every device before o has been decided on (t.wait), so that numbers
// and links are chosen in the order of the devices, as one device after
// the other would choose them.
func (m *Manager) create(res *IncrementalResult, o *offered, local bool, entries []mapfile.Entry, l mapAccess, t *turn) error {
	if err := t.wait(); err != nil {
		return err
	}
	// Creations after a failed one may run at the same time as the
	// ones after them (the failed array's later devices were decided
	// on when it was created): choosing a number and a link, and taking
	// them, is one step.
	unlock := t.lockCreation()
	defer unlock()
	if t != nil {
		// The entries as the creations before this one left them.
		var err error
		if entries, err = l.Read(); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("md: %w", err)
		}
	}
	sb := o.sb
	name := arrayName(sb, local)
	n := chooseNumber(name, local, func(n int) bool {
		name := fmt.Sprintf("md%d", n)
		_, err := os.Stat(m.fs.Path("block", name))
		return err == nil || m.dryCreated(name)
	})
	if n < 0 {
		return refuse(incrementalOp, "", o.path, errors.New("md: every md number is in use"))
	}
	array := fmt.Sprintf("md%d", n)
	node := filepath.Join(m.devRoot, array)
	res.Array = array
	res.Path = "/dev/" + array
	link := ""
	if cname, err := linkName(name); err == nil && name != "" {
		byAny := local && !isLocal(sb, m.homeHost)
		link = chooseLink(cname, local, func(c string) bool {
			if t.linkTaken(c) {
				return true
			}
			if byAny && t.wantedByLocal(c) {
				// An array of homehost "any" yields the name to an
				// array of this host (docs/assembly.md §10).
				return true
			}
			for _, e := range entries {
				if e.Path != "/dev/md/"+c {
					continue
				}
				if _, ok := m.madeHere(e.Dev); ok {
					// An array this call made: its link, if it
					// gets one, is taken above (linkTaken); this
					// entry is an older one its own replaces.
					continue
				}
				// An array that cannot be read may be alive: its name
				// is taken (MakeLink leaves an existing link alone).
				if ok, err := m.alive(e.Dev); ok || err != nil {
					return true
				}
			}
			return false
		})
	}
	if err := m.deletePartitions(res, o); err != nil {
		return err
	}
	// Remembered before it exists, so that no other array's device
	// sees it unremembered.
	m.remember(array, sb.SetUUID)
	if err := m.asm.NewArray(array); err != nil {
		return fmt.Errorf("md: creating %s: %w", array, err)
	}
	res.Writes = append(res.Writes, "new_array "+array)
	t.created(m.linkToBe(link, array))
	unlock()
	if err := m.asm.MakeNode(node, sysfs.DevNum{Major: 9, Minor: uint32(n)}); err != nil {
		return fmt.Errorf("md: %w", err)
	}
	undo := func(err error) error {
		if serr := m.asm.StopArray(array); serr == nil {
			res.Writes = append(res.Writes, "STOP_ARRAY "+array)
			t.release(link) // given back: the next array of this name takes it
		}
		return err
	}
	major, minor := arrayInfoVersion(sb)
	if err := m.asm.SetArrayInfo(array, major, minor); err != nil {
		return undo(fmt.Errorf("md: SET_ARRAY_INFO on %s: %w", array, err))
	}
	res.Writes = append(res.Writes, fmt.Sprintf("SET_ARRAY_INFO %d.%d", major, minor))
	if err := m.asm.AddDisk(array, o.dev); err != nil {
		return undo(fmt.Errorf("md: adding %s to %s: %w", o.kname, array, err))
	}
	res.Writes = append(res.Writes, "ADD_NEW_DISK "+o.dev.String())
	// A member of an array that has not started has no slot; a kernel
	// that gives one, or a slot that cannot be read, is not one this
	// package knows how to assemble with.
	if s, err := m.memberSlot(array, o.kname); err != nil {
		return undo(fmt.Errorf("md: cannot tell whether the kernel gave %s a slot in %s before the array started: %w", o.kname, array, err))
	} else if s >= 0 {
		return undo(fmt.Errorf("md: the kernel gave %s slot %d before the array started; this kernel cannot assemble incrementally", o.kname, s))
	}
	t.confirm(link)
	if link != "" && m.makeLinks() {
		lp := filepath.Join(m.devRoot, "md", link)
		if err := m.asm.MakeLink(lp, "/dev/"+array); err == nil {
			res.Writes = append(res.Writes, "symlink "+lp)
			res.Path = "/dev/md/" + link
		} else if got, rerr := os.Readlink(lp); rerr == nil && got == "/dev/"+array {
			res.Path = "/dev/md/" + link
		}
	} else if link != "" {
		res.Path = "/dev/md/" + link
	}
	e := mapfile.Entry{Dev: array, Metadata: metadataText(sb), UUID: mapfile.UUIDText(sb), Path: res.Path}
	if err := l.Update(e); err != nil {
		return fmt.Errorf("%w: %s is assembling with %s but the map file was not updated: %w", errFatal, array, o.kname, err)
	}
	res.Writes = append(res.Writes, "map "+array)
	return nil
}

// undoArray stops res.Array, which this Assemble call created and which
// did not start, and gives back its link and map entry, so that another
// array of that name gets them; each change is in res.Writes.
func (m *Manager) undoArray(res *IncrementalResult, l mapAccess, t *turn) {
	array := res.Array
	if err := m.asm.StopArray(array); err != nil {
		res.Writes = append(res.Writes, "STOP_ARRAY "+array+" failed: "+err.Error())
		return
	}
	res.Writes = append(res.Writes, "STOP_ARRAY "+array)
	m.forgetMembers(array)
	if link, ok := strings.CutPrefix(res.Path, "/dev/md/"); ok {
		if m.makeLinks() {
			lp := filepath.Join(m.devRoot, "md", link)
			if ok, err := m.asm.RemoveLink(lp, "/dev/"+array); err == nil && ok {
				res.Writes = append(res.Writes, "unlink "+lp)
			}
		}
		t.release(link)
	}
	if err := l.Remove(array); err == nil {
		res.Writes = append(res.Writes, "unmap "+array)
	}
}

// linkToBe is the link, of link chosen for array, that this array will
// be known by ("" for none): with udev the link udev makes; without, the
// one create makes, which it cannot where something else is already there
// (MakeLink leaves it alone). Creations later in the same Assemble call
// take it as taken, as they would take the map entry written for it.
func (m *Manager) linkToBe(link, array string) string {
	if link == "" || !m.makeLinks() {
		return link
	}
	lp := filepath.Join(m.devRoot, "md", link)
	if _, err := os.Lstat(lp); errors.Is(err, fs.ErrNotExist) {
		return link
	}
	if got, err := os.Readlink(lp); err == nil && got == "/dev/"+array {
		return link
	}
	return ""
}

// makeLinks reports whether assembly makes /dev/md/NAME itself: when
// udev is not running (mdadm's test: neither /dev/.udev nor /run/udev),
// or Config.NoUdev says so (MDADM_NO_UDEV).
func (m *Manager) makeLinks() bool {
	if m.noUdev {
		return true
	}
	for _, p := range []string{filepath.Join(m.devRoot, ".udev"), m.udevDir} {
		if _, err := os.Stat(p); err == nil {
			return false
		}
	}
	return true
}

// memberSlot reads md/dev-KNAME/slot of array (-1 for none).
func (m *Manager) memberSlot(array, kname string) (int, error) {
	if m.dryMember(array, kname) {
		return -1, nil // bound to an array that has not started
	}
	a, err := m.fs.Array(array)
	if err != nil {
		return 0, err
	}
	mem, err := a.Member(kname)
	if err != nil {
		return 0, err
	}
	s, err := mem.Slot()
	if err != nil {
		return 0, err
	}
	return int(s), nil
}

// members lists the members attached to array, with their superblocks,
// in the kernel's order of the dev-* entries, which is mdadm's. A member
// that carries no md superblock (ErrNotMember) is left out; any other
// error reading a member's superblock is an error: the members could
// not be compared or counted.
func (m *Manager) members(array string) ([]attached, error) {
	names, err := m.memberNames(array)
	if err != nil {
		return nil, err
	}
	var out []attached
	for _, n := range names {
		sb, err := m.probe(n)
		if errors.Is(err, ErrNotMember) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("md: the superblock of %s, a member of %s, cannot be used: %w", n, array, err)
		}
		out = append(out, attached{Name: n, SB: sb})
	}
	return out, nil
}

// join binds o to the existing, assembling array res.Array.
func (m *Manager) join(res *IncrementalResult, o *offered, run, addSpares bool) error {
	array := res.Array
	if m.hasMember(array, o.kname) {
		// Already one of its members: nothing to do, and nothing to say
		// beyond "in use".
		return refuse(incrementalOp, array, o.path, fmt.Errorf("%w: %s is already a member of %s", ErrInUse, o.kname, array))
	}
	st, err := m.arrayState(array)
	if err != nil {
		return err
	}
	running := st != sysfs.StateInactive && st != sysfs.StateClear
	if running && !inSync(o.sb) && !addSpares {
		return refuse(incrementalOp, array, o.path, fmt.Errorf("%w: %s is a spare of %s, which is running: a degraded array would rebuild onto it at once (replace or heal add a disk to a slot; --add-spares adds it as mdadm would)", ErrSpareNotAdded, o.kname, array))
	}
	ms, err := m.members(array)
	if err != nil {
		return refuse(incrementalOp, array, o.path, fmt.Errorf("%w: cannot compare %s with the members of %s: %w", errUnknownFact, o.kname, array, err))
	}
	if running && inSync(o.sb) && !run {
		why := "its superblock says it is in sync"
		if len(ms) > 0 {
			why = fmt.Sprintf("its superblock (events %d) names a slot, the array's (events %d) went on without it", o.sb.Events, ms[0].SB.Events)
		}
		return refuse(incrementalOp, array, o.path, fmt.Errorf("%w: not adding %s to %s, which is running: %s (mdctl re-add puts it back into its slot; mdctl incremental --run adds it as mdadm -I --run does)", ErrLeftBehind, o.kname, array, why))
	}
	if len(ms) > 0 {
		if why := mismatch(ms[0].SB, o.sb); why != "" {
			return refuse(incrementalOp, array, o.path, fmt.Errorf("%w: %s and %s differ in %s", ErrMismatch, o.kname, ms[0].Name, why))
		}
	}
	if err := m.checkFree(o); err != nil {
		return err
	}
	if err := m.deletePartitions(res, o); err != nil {
		return err
	}
	err = m.asm.AddDisk(array, o.dev)
	if errors.Is(err, unix.EBUSY) && !running {
		// Another member holds the same descriptor number: detach those
		// with fewer events and try again (mdadm find_reject).
		for _, x := range ms {
			if descNr(x.SB) == descNr(o.sb) && x.SB.Events < o.sb.Events {
				dir := "dev-" + strings.ReplaceAll(x.Name, "/", "!")
				if s, _ := m.memberSlot(array, x.Name); s >= 0 {
					if err := m.asm.SetSlot(array, x.Name, -1); err != nil {
						return fmt.Errorf("md: detaching the older %s from %s: %w", x.Name, array, err)
					}
				}
				if err := m.asm.WriteState(array, x.Name, sysfs.CmdRemove); err != nil {
					return fmt.Errorf("md: detaching the older %s from %s: %w", x.Name, array, err)
				}
				res.Writes = append(res.Writes, dir+"/state=remove")
			}
		}
		err = m.asm.AddDisk(array, o.dev)
	}
	if running {
		m.forgetMembers(array) // the kernel writes the members' superblocks
	}
	if err != nil {
		return fmt.Errorf("md: adding %s to %s: %w", o.kname, array, err)
	}
	res.Writes = append(res.Writes, "ADD_NEW_DISK "+o.dev.String())
	return nil
}

// descNr is the kernel's descriptor number for a member.
func descNr(sb *superblock.Superblock) uint32 {
	if sb.Version == superblock.Version090 {
		return sb.ThisDisk.Number
	}
	return sb.DevNumber
}

// mismatch is mdadm's compare_super: what makes two superblocks belong
// to different arrays, or "".
func mismatch(a, b *superblock.Superblock) string {
	switch {
	case a.SetUUID != b.SetUUID:
		return "UUID"
	case a.Version != b.Version:
		return "metadata version"
	case a.Level != b.Level:
		return "level"
	case a.RaidDisks != b.RaidDisks:
		return "raid_disks"
	case a.Layout != b.Layout:
		return "layout"
	case a.ChunkSize != b.ChunkSize:
		return "chunk size"
	case a.Size != b.Size:
		return "size"
	case uint32(a.CTime) != uint32(b.CTime):
		return "creation time"
	}
	return ""
}

// maybeStart counts the members and starts the array when mdadm would.
func (m *Manager) maybeStart(res *IncrementalResult, local, run bool) error {
	array := res.Array
	ms, err := m.members(array)
	if err != nil {
		// After the member was bound: not a refusal, and not started.
		return fmt.Errorf("md: %s was not started, as its members cannot be counted: %w", array, err)
	}
	c := countActive(ms)
	res.Present, res.Expected = c.Active, c.Expected
	st, err := m.arrayState(array)
	if err != nil {
		return err
	}
	if c.Best == nil || !enough(c.Best.Level, c.Best.Layout, c.Best.Clean(), c.Avail) {
		res.Started = StartNo
		if st != sysfs.StateInactive && st != sysfs.StateClear {
			res.Started = StartAlready
		}
		return nil
	}
	if st != sysfs.StateInactive && st != sysfs.StateClear {
		res.Started = StartAlready
		return nil
	}
	all := c.Active >= c.Expected
	if run && !all {
		if why := unfinishedCreate(superblocksOf(ms)); why != "" {
			res.Started, res.Held = StartNo, why
			return nil
		}
	}
	if !run && !all {
		res.Started = StartUnsafe
		return nil
	}
	for _, k := range c.Removed {
		dir := "dev-" + strings.ReplaceAll(k, "/", "!")
		if err := m.asm.WriteState(array, k, sysfs.CmdRemove); err != nil {
			return fmt.Errorf("md: detaching %s from %s before starting it: %w", k, array, err)
		}
		res.Writes = append(res.Writes, dir+"/state=remove")
		res.Kicked = append(res.Kicked, k)
	}
	var max uint64
	for _, x := range ms {
		if inSync(x.SB) && x.SB.Events > max {
			max = x.SB.Events
		}
	}
	for _, x := range ms {
		if inSync(x.SB) && x.SB.Events+1 < max {
			res.LeftBehind = append(res.LeftBehind, LeftBehind{Device: x.Name, Events: x.SB.Events, Want: max})
		}
	}
	readAuto := !all || !local
	err = m.asm.Start(array, readAuto)
	m.forgetMembers(array) // a started array's superblocks are written
	if err != nil {
		return &notStartedError{fmt.Errorf("md: %s is assembled with %d of %d members but did not start: %w", array, c.Active, c.Expected, err)}
	}
	res.ReadAuto = readAuto
	if readAuto {
		res.Writes = append(res.Writes, "array_state=read-auto")
	} else {
		res.Writes = append(res.Writes, "RUN_ARRAY")
	}
	res.Started = StartYes
	return nil
}

// superblocksOf is the superblocks of ms.
func superblocksOf(ms []attached) []*superblock.Superblock {
	sbs := make([]*superblock.Superblock, len(ms))
	for i, x := range ms {
		sbs[i] = x.SB
	}
	return sbs
}

// matchesArray reports whether sb is of the array named by want: its
// UUID in either text form, or its name.
func matchesArray(sb *superblock.Superblock, want, homehost string) bool {
	if sameUUID(sb.SetUUID.String(), want) || sameUUID(mapfile.Groups(sb.SetUUID), want) {
		return true
	}
	return want == arrayName(sb, trusted(sb, homehost)) || want == sb.FullName()
}

// blockDevices lists the machine's block devices as /dev paths, sorted
// by kernel name, leaving out those with no size.
func (m *Manager) blockDevices() ([]string, error) {
	ents, err := os.ReadDir(m.fs.Path("class", "block"))
	if err != nil {
		return nil, fmt.Errorf("md: listing block devices: %w", err)
	}
	var out []string
	for _, e := range ents {
		name := e.Name()
		if strings.HasPrefix(name, "ram") || strings.HasPrefix(name, "zram") {
			continue
		}
		b, err := sysfs.ReadFile(m.fs.Path("class", "block", name, "size"))
		if err != nil || strings.TrimSpace(string(b)) == "0" {
			continue
		}
		out = append(out, filepath.Join(m.devRoot, strings.ReplaceAll(name, "!", "/")))
	}
	sort.Strings(out)
	return out, nil
}
