package md

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/google/uuid"

	"github.com/go-mdraid/mdraid/internal/escape"
	"github.com/go-mdraid/mdraid/md/mapfile"
	"github.com/go-mdraid/mdraid/superblock"
	"github.com/go-mdraid/mdraid/sysfs"
)

// AssembleRequest is what Manager.Assemble assembles.
type AssembleRequest struct {
	// Devices are the block devices to look at; empty means every block
	// device of the machine (whole disks, partitions and md arrays), in
	// the kernel's order of names. Each is a path or a kernel name, by
	// the rule of Manager.DevicePath.
	Devices []string
	// Array, if set, limits assembly to the array with this UUID (either
	// text form) or name.
	Array string
	// Arrays, if set, limits assembly to the arrays with these UUIDs or
	// names (the initramfs's rd.md.uuid list), as Array does for one.
	Arrays []string
	// Run starts arrays that are enough but incomplete, read-auto.
	Run bool
	// AddSpares hot-adds a device whose superblock makes it a spare (or
	// names no slot) of an array that is already running, as mdadm
	// --incremental does. Without it such a device is refused
	// (ErrSpareNotAdded): a running, degraded array would rebuild onto it
	// at once, so a disk anyone plugs in would carry away a copy of the
	// array. A spare joins a running array through replace or heal.
	AddSpares bool
	// PickDuplicates decides a slot claimed by two devices that the other
	// members' superblocks do not tell apart, and two devices with one
	// device UUID, as mdadm --assemble does (the most events, then the
	// first device), instead of leaving that array unassembled
	// (ErrConflict).
	PickDuplicates bool
	// DryRun changes nothing: not the kernel, /dev or the map file (read
	// without its lock, which would create the lock file). The result
	// is what the run would do, from the same decisions: each device's
	// Writes are the writes it would make, in order. It cannot foresee
	// the kernel's own refusals (an ADD_NEW_DISK or a start that fails),
	// an exclusive open by another program, or an array on top of an
	// array that is not running yet.
	DryRun bool
}

// AssembleResult is what Assemble did. Each device offered is in at most
// one of Added, Skipped and Failed; a device that carries no md
// superblock is in none.
type AssembleResult struct {
	// Added lists each device added, in the order of the devices, with
	// the state it left its array in.
	Added []*IncrementalResult
	// Skipped lists the devices not added, with the reason: refusals,
	// which changed nothing.
	Skipped []Skipped
	// NotFound lists the arrays of AssembleRequest.Arrays (and Array) that
	// no device offered belongs to, as given.
	NotFound []string
	// Failed lists the devices whose assembly failed after something was
	// changed or tried: the kernel refused the device (its Err), or its
	// array did not start. Each failure is its array's alone: the other
	// arrays were assembled. An array this call created whose first
	// member or start failed was stopped again, and its number, link
	// and map entry given back (Result.Writes ends with the undoing).
	Failed []Failure
	// DryRun says that nothing was changed: the result is what the run
	// would do (AssembleRequest.DryRun).
	DryRun bool
}

// Failure is a device Assemble could not add, or whose array did not
// start.
type Failure struct {
	// Device is the path Assemble looked at.
	Device string
	// Result is what was done for the device (its Writes say every
	// change, and its undoing); nil when nothing was.
	Result *IncrementalResult
	// Err is why.
	Err error
}

// Skipped is a device Assemble did not add.
type Skipped struct {
	// Device is the path Assemble looked at.
	Device string
	// Reason is why it was not added: a *RefusedError (ErrInUse,
	// ErrLeftBehind, ErrMismatch, ErrLeftOut, ErrConflict,
	// ErrSpareNotAdded, ...).
	Reason error
}

// errFatal marks the failures after which no later step of an Assemble
// call is safe: the map file cannot be written, so the next array could
// be given a number or a name that another already has.
var errFatal = errors.New("md: assembly cannot go on")

// Assemble assembles every array found on the devices: the end state of
// Incremental over each of them in turn, which is what udev leaves at
// boot. Unlike mdadm --assemble --scan, it does not pass over foreign
// arrays and does not stop at a stale member of a running array. With
// Run, arrays that are enough but incomplete are then started read-auto.
//
// One device or one array never stops the others (docs/assembly.md §10):
// a device the kernel refuses, or an array that does not start, is that
// array's outcome, in Failed; an array this call created that failed is
// stopped again and gives back its name. Devices that carry no
// superblock, are in use, or are refused are listed in Skipped; so are
// the devices of a slot claimed twice that the superblocks show are not
// current (ErrLeftOut), every device of an array whose slot is claimed by
// two devices that cannot be told apart (ErrConflict), and spares of a
// running array (ErrSpareNotAdded; see AssembleRequest). The error is
// for what stopped the whole call: ctx ending, the machine's devices or
// the map file that cannot be read or written. What was changed before
// is in the result. Where Incremental writes change to the array's
// uevent after each device, Assemble writes it once per array, at its
// end, to the last result of that array: udev's array rules then run on
// the state the arrays are left in.
//
// Different arrays are assembled at the same time, each array's devices
// one after the other in their order: the kernel makes every
// SET_ARRAY_INFO and ADD_NEW_DISK wait for the array to be suspended
// (Linux 6.7 and later; docs/assembly.md §9), and only calls on different
// arrays can wait together. An array's number and link are chosen once
// every device before its first has been decided on (creationOrder), so
// they are the ones one device after the other would give.
func (m *Manager) Assemble(ctx context.Context, req AssembleRequest) (*AssembleResult, error) {
	m = m.withProbes()
	if req.DryRun {
		m = m.withDryRun()
	}
	if len(req.Devices) > 0 {
		devs := make([]string, len(req.Devices))
		for i, d := range req.Devices {
			devs[i] = m.DevicePath(d)
		}
		req.Devices = devs
	}
	m.uevents = &ueventQueue{first: map[string]int{}, last: map[string]indexedResult{}}
	defer m.flushUevents()
	res := &AssembleResult{DryRun: req.DryRun}
	var ml mapAccess
	if req.DryRun {
		ml = m.readDryMap()
	} else {
		l, err := mapfile.Map{Dir: m.mapDir}.Lock()
		if err != nil {
			return nil, fmt.Errorf("md: %w", err)
		}
		defer l.Unlock()
		ml = &sharedMap{l: l}
	}
	var err error
	tried := map[string]bool{}
	undone := &callState{m: map[string]error{}, links: map[string]bool{}, found: map[string]bool{}, paths: map[*IncrementalResult]string{}}
	defer func() {
		res.NotFound = req.notFound(undone.found)
		if req.DryRun {
			for _, r := range res.Added {
				r.DryRun = true
			}
			for _, f := range res.Failed {
				if f.Result != nil {
					f.Result.DryRun = true
				}
			}
		}
	}()
	seen := 0 // devices offered in earlier rounds: the uevent order
	var fatal error
	for round := 0; round < 8; round++ {
		devs := req.Devices
		if len(devs) == 0 {
			devs, err = m.blockDevices()
			if err != nil {
				return res, err
			}
		}
		var todo []string
		for _, d := range devs {
			if !tried[d] {
				tried[d] = true
				todo = append(todo, d)
			}
		}
		outs, err := m.assembleRound(ctx, todo, req, ml, seen, undone)
		seen += len(todo)
		progress := false
		for i, o := range outs {
			switch {
			case !o.done || errors.Is(o.err, errStopped):
			case o.err == nil:
				res.Added = append(res.Added, o.res)
				undone.paths[o.res] = todo[i]
				if o.res.Started == StartYes {
					progress = true
				}
			case errors.Is(o.err, ErrRefused):
				if !errors.Is(o.err, ErrNotMember) && !errors.Is(o.err, fs.ErrNotExist) {
					res.Skipped = append(res.Skipped, Skipped{Device: todo[i], Reason: o.err})
				}
			default:
				res.Failed = append(res.Failed, Failure{Device: todo[i], Result: o.res, Err: o.err})
				if errors.Is(o.err, errFatal) && fatal == nil {
					fatal = o.err
				}
			}
		}
		if err != nil {
			undone.report(res)
			return res, err
		}
		if fatal != nil {
			undone.report(res)
			return res, fatal
		}
		if !progress || len(req.Devices) > 0 {
			break
		}
	}
	if req.Run {
		for _, r := range res.Added {
			if r.Started != StartUnsafe || undone.has(r) || !m.stillInactive(r.Array) {
				continue
			}
			// A set a killed create left is not started (unfinishedCreate);
			// members that cannot be read to tell are not either.
			if ms, err := m.members(r.Array); err != nil {
				r.Started, r.Held = StartNo, fmt.Sprintf("its members could not be read to tell whether its create finished: %v", err)
				continue
			} else if why := unfinishedCreate(superblocksOf(ms)); why != "" {
				r.Started, r.Held = StartNo, why
				continue
			}
			err := m.asm.Start(r.Array, true)
			m.forgetMembers(r.Array)
			if err != nil {
				err = fmt.Errorf("md: starting %s: %w", r.Array, err)
				if _, made := m.madeHere(r.Array); made {
					m.undoArray(r, ml, nil)
				}
				undone.add(r, err)
				continue
			}
			r.Started, r.ReadAuto = StartYes, true
			r.Writes = append(r.Writes, "array_state=read-auto")
		}
	}
	undone.report(res)
	if err := m.giveBackLinks(res, undone, ml); err != nil {
		return res, err
	}
	return res, nil
}

// filtered reports whether req names the arrays to assemble.
func (req *AssembleRequest) filtered() bool { return len(req.names()) > 0 }

// names is every array req names (Array, then Arrays).
func (req *AssembleRequest) names() []string {
	var out []string
	for _, a := range append([]string{req.Array}, req.Arrays...) {
		if a != "" {
			out = append(out, a)
		}
	}
	return out
}

// wants reports whether sb's array is one req names, and marks in found
// each name it matches.
func (req *AssembleRequest) wants(sb *superblock.Superblock, homehost string, found map[string]bool) bool {
	ok := false
	for _, a := range req.names() {
		if matchesArray(sb, a, homehost) {
			found[a] = true
			ok = true
		}
	}
	return ok
}

// notFound lists the arrays req names that found does not mark.
func (req *AssembleRequest) notFound(found map[string]bool) []string {
	var out []string
	for _, a := range req.names() {
		if !found[a] && !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return out
}

// callState is what one Assemble call keeps across its rounds: the
// arrays it made that did not start (every device added to one is a
// failure, with the array's error) and the links they gave back, the
// names of AssembleRequest.Arrays that some device matched, and the path
// each added device was offered as.
type callState struct {
	found map[string]bool // the names of AssembleRequest.Arrays matched
	mu    sync.Mutex
	m     map[string]error // array + " " + UUID -> why
	links map[string]bool  // links given back
	paths map[*IncrementalResult]string
}

func undoneKey(r *IncrementalResult) string { return r.Array + " " + r.UUID }

func (u *callState) add(r *IncrementalResult, err error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.m[undoneKey(r)] = err
	if l, ok := strings.CutPrefix(r.Path, "/dev/md/"); ok {
		u.links[l] = true
	}
}

func (u *callState) has(r *IncrementalResult) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	_, ok := u.m[undoneKey(r)]
	return ok
}

// report moves the devices added to an array that did not start from
// Added to Failed, with the array's error.
func (u *callState) report(res *AssembleResult) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.m) == 0 {
		return
	}
	kept := res.Added[:0]
	for _, r := range res.Added {
		if err, ok := u.m[undoneKey(r)]; ok {
			res.Failed = append(res.Failed, Failure{Device: u.paths[r], Result: r, Err: err})
			continue
		}
		kept = append(kept, r)
	}
	res.Added = kept
}

// giveBackLinks gives each link that an array that did not start gave
// back to the first array of this call (in the order of the devices)
// whose name it is, and which was linked with a suffix ("boot_0")
// because of it: the real array of that name gets its name although a
// device that failed came first.
func (m *Manager) giveBackLinks(res *AssembleResult, undone *callState, l mapAccess) error {
	if len(undone.links) == 0 {
		return nil
	}
	entries, err := l.Read()
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("md: %w", err)
	}
	for _, r := range res.Added {
		cur, ok := strings.CutPrefix(r.Path, "/dev/md/")
		if !ok {
			continue
		}
		base, _, ok := cutSuffix(cur)
		if !ok || !undone.links[base] {
			continue
		}
		taken := false
		for _, e := range entries {
			if e.Path == "/dev/md/"+base && e.Dev != r.Array {
				if ok, err := m.alive(e.Dev); ok || err != nil {
					taken = true
				}
			}
		}
		if taken {
			continue
		}
		delete(undone.links, base)
		target := "/dev/" + r.Array
		var writes []string
		if m.makeLinks() {
			lp := filepath.Join(m.devRoot, "md", base)
			if err := m.asm.MakeLink(lp, target); err != nil {
				continue // something else is there: left alone
			}
			writes = append(writes, "symlink "+lp)
			old := filepath.Join(m.devRoot, "md", cur)
			if ok, err := m.asm.RemoveLink(old, target); err == nil && ok {
				writes = append(writes, "unlink "+old)
			}
		}
		e, _ := mapfile.Find(entries, r.Array)
		e.Path = "/dev/md/" + base
		if err := l.Update(e); err != nil {
			return fmt.Errorf("%w: %s took back its name %s, but the map file was not updated: %w", errFatal, r.Array, base, err)
		}
		writes = append(writes, "map "+r.Array)
		for _, x := range res.Added {
			if x.Array == r.Array && x.UUID == r.UUID {
				x.Path = "/dev/md/" + base
			}
		}
		r.Writes = append(r.Writes, writes...)
	}
	return nil
}

// cutSuffix splits a link chosen with chooseLink's "_N" suffix.
func cutSuffix(link string) (base string, n int, ok bool) {
	i := strings.LastIndexByte(link, '_')
	if i <= 0 {
		return "", 0, false
	}
	n, err := strconv.Atoi(link[i+1:])
	if err != nil || n < 0 || strconv.Itoa(n) != link[i+1:] {
		return "", 0, false
	}
	return link[:i], n, true
}

// outcome is what became of one device of an Assemble round.
type outcome struct {
	done bool // looked at (not passed over by Array, not after a stop)
	res  *IncrementalResult
	err  error
}

// assembleRound runs Incremental over devs, the devices of one array one
// after the other and different arrays at the same time, and returns
// each device's outcome in the order of devs. A failure that is not a
// refusal, or ctx ending (the error returned), stops every group before
// its next device, and a creation waiting for its turn (errStopped):
// what one device after the other would not have reached is not begun.
// base is the number of devices offered in earlier rounds.
//
// An md device or partition (lateDevice) is taken on its own, once every
// device before it is done and before any after it begins: the arrays
// assembled before it may be what it is, or what it carries (a stacked
// array's member), so it is read only then. The devices between two such
// are a batch (assembleBatch).
func (m *Manager) assembleRound(ctx context.Context, devs []string, req AssembleRequest, ml mapAccess, base int, undone *callState) ([]outcome, error) {
	outs := make([]outcome, len(devs))
	order := newCreationOrder(len(devs), base)
	defer func() {
		order.mu.Lock()
		undone.mu.Lock()
		for l := range order.released {
			undone.links[l] = true
		}
		undone.mu.Unlock()
		order.mu.Unlock()
	}()
	start := 0
	for i := 0; i <= len(devs); i++ {
		if i < len(devs) && !lateDevice(devs[i]) {
			continue
		}
		if err := m.assembleBatch(ctx, devs, start, i, req, ml, order, outs, undone); err != nil {
			return outs, err
		}
		if i < len(devs) {
			m.forgetProbes() // it may have been read as another array's member
			if err := m.assembleBatch(ctx, devs, i, i+1, req, ml, order, outs, undone); err != nil {
				return outs, err
			}
		}
		start = i + 1
	}
	return outs, ctx.Err()
}

// lateDevice reports whether path names an md device or a partition of
// one (mdN, mdNpM, md_dNN, /dev/md/NAME).
func lateDevice(path string) bool {
	return strings.HasPrefix(filepath.Base(path), "md") || filepath.Base(filepath.Dir(path)) == "md"
}

// assembleBatch runs Incremental over devs[from:to], grouped: by the UUID
// of the superblock each offers, and with the other partitions and the
// whole of its disk (groupDevices). A device that offers none is decided
// on at once, as Incremental refuses it before anything else; so are the
// devices sortOut leaves out. It returns when every group is done, with
// ctx's error if ctx ended.
func (m *Manager) assembleBatch(ctx context.Context, devs []string, from, to int, req AssembleRequest, ml mapAccess, order *creationOrder, outs []outcome, undone *callState) error {
	offers := make([]*offered, len(devs))
	for i := from; i < to; i++ {
		if err := ctx.Err(); err != nil {
			order.stop()
			return err
		}
		if order.isStopped() {
			order.resolve(i)
			continue
		}
		d := devs[i]
		o, err := m.offer(d)
		if req.filtered() && (err != nil || !req.wants(o.sb, m.homeHost, undone.found)) {
			order.resolve(i)
			continue
		}
		if err != nil {
			// Incremental's first step is this offer, and its refusal.
			outs[i] = outcome{done: true, err: err}
			order.resolve(i)
			continue
		}
		offers[i] = o
	}
	sorted, spareOK := m.sortOut(offers, req.PickDuplicates, req.AddSpares)
	for i, err := range sorted {
		if err != nil {
			outs[i] = outcome{done: true, err: err}
			offers[i] = nil
			order.resolve(i)
		}
	}
	order.wantLocal(m.localLinks(offers))
	groups := groupDevices(offers, order.group)
	var wg sync.WaitGroup
	for _, g := range groups {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// The arrays of this group that did not start: their
			// later devices are not tried.
			failed := map[uuid.UUID]error{}
			for _, i := range g {
				if order.isStopped() {
					order.resolve(i)
					continue
				}
				if ctx.Err() != nil {
					order.stop()
					order.resolve(i)
					continue
				}
				if err := failed[offers[i].sb.SetUUID]; err != nil {
					outs[i] = outcome{done: true, err: err}
					order.resolve(i)
					continue
				}
				r, err := m.incremental(IncrementalRequest{Device: devs[i], AddSpares: req.AddSpares, spareOfWhole: spareOK[i]}, ml, &turn{order, i})
				outs[i] = outcome{done: true, res: r, err: err}
				var nostart *notStartedError
				switch {
				case err == nil || errors.Is(err, ErrRefused) || errors.Is(err, errStopped):
				case errors.Is(err, errFatal):
					order.stop()
				case errors.As(err, &nostart):
					undone.add(r, err)
					failed[offers[i].sb.SetUUID] = fmt.Errorf("md: not tried: %w", err)
				}
				order.resolve(i)
			}
		}()
	}
	wg.Wait()
	return ctx.Err()
}

// sortOut applies sortMembers to the offered devices of each array that
// no one holds (a running array's members are held: they are its
// members already), and returns a refusal for each device that is left
// out or whose array is a conflict (nil for the others).
func (m *Manager) sortOut(offers []*offered, lax, addSpares bool) (errs []error, spareOK []bool) {
	errs = make([]error, len(offers))
	spareOK = make([]bool, len(offers))
	byUUID := map[uuid.UUID][]int{}
	var order []uuid.UUID
	for i, o := range offers {
		if o == nil || m.held(o.kname) {
			continue
		}
		u := o.sb.SetUUID
		if _, ok := byUUID[u]; !ok {
			order = append(order, u)
		}
		byUUID[u] = append(byUUID[u], i)
	}
	for _, u := range order {
		idx := byUUID[u]
		if len(idx) < 2 {
			continue
		}
		knames := make([]string, len(idx))
		sbs := make([]*superblock.Superblock, len(idx))
		for j, i := range idx {
			knames[j], sbs[j] = offers[i].kname, offers[i].sb
		}
		vs := sortMembers(knames, sbs, lax)
		degraded := !addSpares && startsDegraded(sbs, vs)
		for j, v := range vs {
			o := offers[idx[j]]
			switch {
			case v.conflict == "" && v.leftOut == "" && degraded && slotOf(o.sb) < 0:
				errs[idx[j]] = refuse(incrementalOp, "", o.path, fmt.Errorf("%w: %s is a spare of array %s, which would start degraded and rebuild onto it at once (replace or heal add a disk to a slot; --add-spares adds it as mdadm would)", ErrSpareNotAdded, o.kname, mapfile.Groups(u)))
			case v.conflict != "":
				errs[idx[j]] = refuse(incrementalOp, "", o.path, fmt.Errorf("%w: array %s: %s (nothing of it is assembled; remove the device that does not belong, or assemble with --pick-duplicates as mdadm would)", ErrConflict, mapfile.Groups(u), escape.Text(v.conflict)))
			case v.leftOut != "":
				errs[idx[j]] = refuse(incrementalOp, "", o.path, fmt.Errorf("%w: %s: %s", ErrLeftOut, o.kname, escape.Text(v.leftOut)))
			case v.conflict == "" && !degraded && slotOf(o.sb) < 0:
				// A spare of an array that starts whole from these
				// devices: it may join after the start, as a hot spare
				// (a degraded array is not rebuilt onto it at once).
				spareOK[idx[j]] = true
			}
		}
	}
	return errs, spareOK
}

// held reports whether anyone holds the device kname (an unreadable
// holders directory counts as held: Incremental refuses it anyway).
func (m *Manager) held(kname string) bool {
	ents, err := os.ReadDir(m.fs.Path("class", "block", kname, "holders"))
	return err != nil || len(ents) > 0
}

// localLinks is the links that the arrays of this host (by homehost,
// not by "any") among offers would take: an array of homehost "any"
// never takes one of them (see create).
func (m *Manager) localLinks(offers []*offered) map[string]bool {
	out := map[string]bool{}
	for _, o := range offers {
		if o == nil || !isLocal(o.sb, m.homeHost) {
			continue
		}
		if l, err := linkName(arrayName(o.sb, true)); err == nil && l != "" {
			out[l] = true
		}
	}
	return out
}

// groupDevices groups the offered devices (nil: none) for assembleRound:
// by the UUID of their superblocks, and a disk with its partitions (adding
// a disk deletes its partitions, and a member partition makes its disk
// busy, so those too are decided one after the other). Each group lists
// its devices in order, and the groups are in the order of their first
// devices. array[i] is set to the index of the first device of device
// i's UUID.
func groupDevices(offers []*offered, array []int) [][]int {
	parent := make([]int, len(offers))
	for i := range parent {
		parent[i] = i
	}
	find := func(i int) int {
		for parent[i] != i {
			parent[i] = parent[parent[i]]
			i = parent[i]
		}
		return i
	}
	union := func(i, j int) {
		a, b := find(i), find(j)
		if a > b {
			a, b = b, a
		}
		parent[b] = a // a group's root is its first device
	}
	byUUID := map[uuid.UUID]int{}
	byDisk := map[string]int{}
	for i, o := range offers {
		if o == nil {
			continue
		}
		if f, ok := byUUID[o.sb.SetUUID]; ok {
			union(f, i)
			array[i] = f
		} else {
			byUUID[o.sb.SetUUID] = i
			array[i] = i
		}
		if f, ok := byDisk[o.disk]; ok {
			union(f, i)
		} else {
			byDisk[o.disk] = i
		}
	}
	var groups [][]int
	at := map[int]int{}
	for i, o := range offers {
		if o == nil {
			continue
		}
		r := find(i)
		g, ok := at[r]
		if !ok {
			g = len(groups)
			at[r] = g
			groups = append(groups, nil)
		}
		groups[g] = append(groups[g], i)
	}
	return groups
}

// errStopped is the error of a creation that did not begin because its
// Assemble call stopped while it waited for its turn.
var errStopped = errors.New("md: assembly stopped before this device")

// creationOrder makes the arrays that one Assemble round builds at the
// same time get the numbers and links that one device after the other
// would give them. A device is decided on when its Incremental returned,
// or as soon as its array exists (a device of an array that exists joins
// it and creates none; arrayExists). A creation waits until every device
// before its own has been decided on (wait); so creations happen one at
// a time, in the order of the devices, each seeing every array and
// number made before it. The links those creations chose are taken for
// the ones after them (linkTaken), as their map entries would be.
type creationOrder struct {
	create   sync.Mutex // held from choosing a number to taking it
	mu       sync.Mutex
	cond     *sync.Cond
	resolved []bool
	group    []int // each device's array: its UUID's first device, -1 for none
	low      int   // every device before low is resolved
	links    map[string]linkState
	local    map[string]bool // links the arrays of this host among the devices would take
	released map[string]bool // links given back by creations undone
	stopped  bool
	base     int
}

// wantLocal adds links that arrays of this host would take.
func (o *creationOrder) wantLocal(links map[string]bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.local == nil {
		o.local = map[string]bool{}
	}
	for l := range links {
		o.local[l] = true
	}
}

// linkState is whether a link chosen by a creation of the call is held:
// pending until the creation's first member is added (a creation whose
// first member the kernel refuses gives its link back), then taken.
type linkState int

const (
	linkPending linkState = iota + 1
	linkTaken
)

func newCreationOrder(n, base int) *creationOrder {
	o := &creationOrder{resolved: make([]bool, n), group: make([]int, n), links: map[string]linkState{}, base: base}
	for i := range o.group {
		o.group[i] = -1
	}
	o.cond = sync.NewCond(&o.mu)
	return o
}

// resolve marks device i decided on.
func (o *creationOrder) resolve(i int) {
	o.mu.Lock()
	o.resolved[i] = true
	o.advance()
	o.mu.Unlock()
}

// advance moves low past resolved devices and wakes the waiters; o.mu
// is held.
func (o *creationOrder) advance() {
	for o.low < len(o.resolved) && o.resolved[o.low] {
		o.low++
	}
	o.cond.Broadcast()
}

// stop makes the groups pass over their remaining devices, and the
// waiting creations return errStopped.
func (o *creationOrder) stop() {
	o.mu.Lock()
	o.stopped = true
	o.cond.Broadcast()
	o.mu.Unlock()
}

func (o *creationOrder) isStopped() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.stopped
}

// turn is one device's place in a creationOrder; a nil turn (Incremental
// on one device) waits for nothing.
type turn struct {
	o *creationOrder
	i int
}

// wait returns when every device before t's has been decided on, or
// errStopped when the call stopped first.
func (t *turn) wait() error {
	if t == nil {
		return nil
	}
	o := t.o
	o.mu.Lock()
	defer o.mu.Unlock()
	for o.low < t.i && !o.stopped {
		o.cond.Wait()
	}
	if o.stopped {
		return errStopped
	}
	return nil
}

// arrayExists marks t's device, and every later device of its array
// (its UUID), decided on: they join an existing array.
func (t *turn) arrayExists() {
	if t == nil {
		return
	}
	o := t.o
	o.mu.Lock()
	g := o.group[t.i]
	for j := t.i; j < len(o.group); j++ {
		if j == t.i || (g >= 0 && o.group[j] == g) {
			o.resolved[j] = true
		}
	}
	o.advance()
	o.mu.Unlock()
}

// created records that t's device created its array, with link ("" for
// none) pending, and marks the array's devices decided on.
func (t *turn) created(link string) {
	if t == nil {
		return
	}
	if link != "" {
		t.o.mu.Lock()
		t.o.links[link] = linkPending
		t.o.mu.Unlock()
	}
	t.arrayExists()
}

// confirm records that the creation of t's device holds link: its first
// member was added.
func (t *turn) confirm(link string) {
	if t == nil || link == "" {
		return
	}
	t.o.mu.Lock()
	if t.o.links[link] == linkPending {
		t.o.links[link] = linkTaken
	}
	t.o.cond.Broadcast()
	t.o.mu.Unlock()
}

// linkTaken reports whether an earlier creation of the call chose link;
// while that creation has not added its first member yet, it waits to
// see whether it keeps it.
func (t *turn) linkTaken(link string) bool {
	if t == nil {
		return false
	}
	t.o.mu.Lock()
	defer t.o.mu.Unlock()
	for t.o.links[link] == linkPending && !t.o.stopped {
		t.o.cond.Wait()
	}
	return t.o.links[link] != 0
}

// lockCreation takes the creation lock of t's call, and returns its
// unlock.
func (t *turn) lockCreation() func() {
	if t == nil {
		return func() {}
	}
	t.o.create.Lock()
	var once sync.Once
	return func() { once.Do(t.o.create.Unlock) }
}

// release gives back link, which t's device's array took and no longer
// holds (it was stopped again).
func (t *turn) release(link string) {
	if t == nil || link == "" {
		return
	}
	t.o.mu.Lock()
	if _, ok := t.o.links[link]; ok {
		delete(t.o.links, link)
		if t.o.released == nil {
			t.o.released = map[string]bool{}
		}
		t.o.released[link] = true
	}
	t.o.cond.Broadcast()
	t.o.mu.Unlock()
}

// wantedByLocal reports whether an array of this host among the devices
// of the call would take link.
func (t *turn) wantedByLocal(link string) bool {
	if t == nil {
		return false
	}
	t.o.mu.Lock()
	defer t.o.mu.Unlock()
	return t.o.local[link]
}

// index is t's device's place among every device the Assemble call
// offered (0 for no turn).
func (t *turn) index() int {
	if t == nil {
		return 0
	}
	return t.o.base + t.i
}

// mapAccess is the held map lock as incremental uses it.
type mapAccess interface {
	Read() ([]mapfile.Entry, error)
	Update(mapfile.Entry) error
	Remove(dev string) error
}

// sharedMap makes one held map lock safe for the arrays that Assemble
// builds at the same time: each read and each update (a read, then a
// write of the file) is whole.
type sharedMap struct {
	mu sync.Mutex
	l  *mapfile.Lock
}

func (s *sharedMap) Read() ([]mapfile.Entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.l.Read()
}

func (s *sharedMap) Update(e mapfile.Entry) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.l.Update(e)
}

func (s *sharedMap) Remove(dev string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.l.Remove(dev)
}

// ueventQueue holds, for one Assemble call, the last result of each array
// a device was added to, and the first device that touched it. mdadm
// --incremental writes change to the array's uevent after each device so
// that udev's array rules run again; an assembly of every device needs
// them to run once, on the state it ends in (flush), in the order the
// arrays were first touched.
type ueventQueue struct {
	mu    sync.Mutex
	first map[string]int
	last  map[string]indexedResult
}

type indexedResult struct {
	i int
	r *IncrementalResult
}

// add records r, the result of the device at index i.
func (q *ueventQueue) add(i int, r *IncrementalResult) {
	if r.Array == "" {
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if f, ok := q.first[r.Array]; !ok || i < f {
		q.first[r.Array] = i
	}
	if l, ok := q.last[r.Array]; !ok || i >= l.i {
		q.last[r.Array] = indexedResult{i, r}
	}
}

// flushUevents writes change to the uevent of each array in the queue,
// and records the write in the array's last result.
func (m *Manager) flushUevents() {
	q := m.uevents
	arrays := make([]string, 0, len(q.first))
	for a := range q.first {
		arrays = append(arrays, a)
	}
	sort.Slice(arrays, func(i, j int) bool { return q.first[arrays[i]] < q.first[arrays[j]] })
	for _, a := range arrays {
		if err := m.asm.Uevent(a); err == nil {
			r := q.last[a].r
			r.Writes = append(r.Writes, "uevent change")
		}
	}
}

func (m *Manager) stillInactive(array string) bool {
	st, err := m.arrayState(array)
	return err == nil && st == sysfs.StateInactive
}
