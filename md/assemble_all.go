package md

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/google/uuid"

	"github.com/go-mdraid/mdraid/md/mapfile"
	"github.com/go-mdraid/mdraid/sysfs"
)

// AssembleRequest is what Manager.Assemble assembles.
type AssembleRequest struct {
	// Devices are the block devices to look at; empty means every block
	// device of the machine (whole disks, partitions and md arrays), in
	// the kernel's order of names.
	Devices []string
	// Array, if set, limits assembly to the array with this UUID (either
	// text form) or name.
	Array string
	// Run starts arrays that are enough but incomplete, read-auto.
	Run bool
}

// AssembleResult is what Assemble did.
type AssembleResult struct {
	// Added lists each device added, in the order of the devices, with
	// the state it left its array in.
	Added []*IncrementalResult
	// Skipped lists the devices not added, with the reason.
	Skipped []Skipped
	// Failed is the first device (in the order of the devices) whose
	// Incremental failed and stopped Assemble, with what was changed for
	// it before it failed (its Writes), when that is Assemble's error;
	// nil otherwise, and when the failure came before the device was
	// looked at. It is not in Added.
	Failed *IncrementalResult
	// AlsoFailed lists the other devices whose Incremental failed: the
	// arrays are assembled at the same time, so another array's device
	// can fail before Assemble stops. Their Writes are what was changed
	// for them.
	AlsoFailed []*IncrementalResult
}

// Skipped is a device Assemble did not add.
type Skipped struct {
	// Device is the path Assemble looked at.
	Device string
	// Reason is why it was not added: a *RefusedError (ErrInUse,
	// ErrLeftBehind, ErrMismatch, ...).
	Reason error
}

// Assemble assembles every array found on the devices: the end state of
// Incremental over each of them in turn, which is what udev leaves at
// boot. Unlike mdadm --assemble --scan, it does not pass over foreign
// arrays and does not stop at a stale member of a running array. With
// Run, arrays that are enough but incomplete are then started read-auto.
// Devices that carry no superblock, are in use, or are refused are
// listed in Skipped; the error is for failures that stopped it. What was
// changed before such a failure is in the result: the Writes of each
// device in Added, of Failed and of AlsoFailed. Where Incremental writes
// change to the array's uevent after each device, Assemble writes it
// once per array, at its end, to the last result of that array: udev's
// array rules then run on the state the arrays are left in.
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
	m.uevents = &ueventQueue{first: map[string]int{}, last: map[string]indexedResult{}}
	defer m.flushUevents()
	res := &AssembleResult{}
	l, err := mapfile.Map{Dir: m.mapDir}.Lock()
	if err != nil {
		return nil, fmt.Errorf("md: %w", err)
	}
	defer l.Unlock()
	ml := &sharedMap{l: l}
	tried := map[string]bool{}
	seen := 0 // devices offered in earlier rounds: the uevent order
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
		outs, err := m.assembleRound(ctx, todo, req, ml, seen)
		seen += len(todo)
		progress := false
		var errs []error
		for i, o := range outs {
			switch {
			case !o.done || errors.Is(o.err, errStopped):
			case o.err == nil:
				res.Added = append(res.Added, o.res)
				if o.res.Started == StartYes {
					progress = true
				}
			case errors.Is(o.err, ErrRefused):
				if !errors.Is(o.err, ErrNotMember) && !errors.Is(o.err, fs.ErrNotExist) {
					res.Skipped = append(res.Skipped, Skipped{Device: todo[i], Reason: o.err})
				}
			default:
				errs = append(errs, o.err)
				if len(errs) == 1 {
					res.Failed = o.res // its Writes say what was changed
				} else if o.res != nil {
					res.AlsoFailed = append(res.AlsoFailed, o.res)
				}
			}
		}
		if err != nil {
			return res, err
		}
		if len(errs) > 0 {
			return res, errors.Join(errs...)
		}
		if !progress || len(req.Devices) > 0 {
			break
		}
	}
	if req.Run {
		for _, r := range res.Added {
			if r.Started == StartUnsafe && m.stillInactive(r.Array) {
				err := m.asm.Start(r.Array, true)
				m.forgetMembers(r.Array)
				if err != nil {
					return res, fmt.Errorf("md: starting %s: %w", r.Array, err)
				}
				r.Started, r.ReadAuto = StartYes, true
				r.Writes = append(r.Writes, "array_state=read-auto")
			}
		}
	}
	return res, nil
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
func (m *Manager) assembleRound(ctx context.Context, devs []string, req AssembleRequest, ml mapAccess, base int) ([]outcome, error) {
	outs := make([]outcome, len(devs))
	order := newCreationOrder(len(devs), base)
	start := 0
	for i := 0; i <= len(devs); i++ {
		if i < len(devs) && !lateDevice(devs[i]) {
			continue
		}
		if err := m.assembleBatch(ctx, devs, start, i, req, ml, order, outs); err != nil {
			return outs, err
		}
		if i < len(devs) {
			m.forgetProbes() // it may have been read as another array's member
			if err := m.assembleBatch(ctx, devs, i, i+1, req, ml, order, outs); err != nil {
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
// on at once, as Incremental refuses it before anything else. It returns
// when every group is done, with ctx's error if ctx ended.
func (m *Manager) assembleBatch(ctx context.Context, devs []string, from, to int, req AssembleRequest, ml mapAccess, order *creationOrder, outs []outcome) error {
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
		if req.Array != "" && (err != nil || !matchesArray(o.sb, req.Array, m.homeHost)) {
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
	groups := groupDevices(offers, order.group)
	var wg sync.WaitGroup
	for _, g := range groups {
		wg.Add(1)
		go func() {
			defer wg.Done()
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
				r, err := m.incremental(IncrementalRequest{Device: devs[i]}, ml, &turn{order, i})
				outs[i] = outcome{done: true, res: r, err: err}
				if err != nil && !errors.Is(err, ErrRefused) && !errors.Is(err, errStopped) {
					order.stop()
				}
				order.resolve(i)
			}
		}()
	}
	wg.Wait()
	return ctx.Err()
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
	mu       sync.Mutex
	cond     *sync.Cond
	resolved []bool
	group    []int // each device's array: its UUID's first device, -1 for none
	low      int   // every device before low is resolved
	links    map[string]bool
	stopped  bool
	base     int
}

func newCreationOrder(n, base int) *creationOrder {
	o := &creationOrder{resolved: make([]bool, n), group: make([]int, n), links: map[string]bool{}, base: base}
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
// none), and marks the array's devices decided on.
func (t *turn) created(link string) {
	if t == nil {
		return
	}
	if link != "" {
		t.o.mu.Lock()
		t.o.links[link] = true
		t.o.mu.Unlock()
	}
	t.arrayExists()
}

// linkTaken reports whether an earlier creation of the call chose link.
func (t *turn) linkTaken(link string) bool {
	if t == nil {
		return false
	}
	t.o.mu.Lock()
	defer t.o.mu.Unlock()
	return t.o.links[link]
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
	a, err := m.fs.Array(array)
	if err != nil {
		return false
	}
	st, err := a.State()
	return err == nil && st == sysfs.StateInactive
}
