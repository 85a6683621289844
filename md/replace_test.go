package md

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	qt "github.com/frankban/quicktest"
	"github.com/go-mdraid/mdraid/sysfs"
	"github.com/google/uuid"
)

// fakeKernel records every call and imitates the kernel's visible effects
// on the sysfs tree of a fixture, so that the executor's re-reads and its
// verification see what a real kernel would show. ClaimDevice really
// claims and its Write really writes (image files).
type fakeKernel struct {
	mu    sync.Mutex
	fs    sysfs.FS
	calls []string
	// fail makes the call whose name (such as "AddNewDisk") matches
	// return the error.
	fail map[string]error
	// recover is what sync_action reads after unfreezing.
	recover string
	// added is the kernel name ADD_NEW_DISK shows as a new member: the
	// base name of the image last written.
	added string
	// show makes ADD_NEW_DISK show the added member in sysfs.
	show bool
	// slotted is set once a slot was pinned: unfreezing then starts
	// "recovery".
	slotted bool
	// slotState is what the new member's state reads once its slot is
	// set ("spare" when empty: a member being rebuilt).
	slotState string
	// onCall, when set, runs at the start of every call, with its name.
	onCall func(name string)
	// addedSlot, when set, is the slot ADD_NEW_DISK's shown member gets
	// (md's recovery into the only free slot).
	addedSlot *int
}

func (k *fakeKernel) record(name string, args ...any) error {
	if k.onCall != nil {
		k.onCall(name)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	s := make([]string, len(args))
	for i, a := range args {
		s[i] = fmt.Sprint(a)
	}
	k.calls = append(k.calls, name+"("+strings.Join(s, ", ")+")")
	return k.fail[name]
}

func (k *fakeKernel) Calls() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]string(nil), k.calls...)
}

func (k *fakeKernel) attr(array string, elem ...string) string {
	return k.fs.Path(append([]string{"block", array, "md"}, elem...)...)
}

func (k *fakeKernel) set(path, v string) error { return os.WriteFile(path, []byte(v+"\n"), 0o644) }

func (k *fakeKernel) SetFaulty(array string, dev sysfs.DevNum) error {
	return k.record("SetFaulty", array, dev)
}

func (k *fakeKernel) HotRemove(array string, dev sysfs.DevNum) error {
	if err := k.record("HotRemove", array, dev); err != nil {
		return err
	}
	a, _ := k.fs.Array(array)
	mems, _ := a.Members()
	for _, m := range mems {
		if bl, err := m.Block(); err == nil {
			if d, err := blockDevNum(k.fs, bl.Name); err == nil && d == dev {
				return os.RemoveAll(k.attr(array, m.Dir()))
			}
		}
	}
	return nil
}

func blockDevNum(fsys sysfs.FS, name string) (sysfs.DevNum, error) {
	b, err := os.ReadFile(fsys.Path("class", "block", name, "dev"))
	if err != nil {
		return sysfs.DevNum{}, err
	}
	return sysfs.ParseDevNum(strings.TrimSpace(string(b)))
}

func (k *fakeKernel) AddNewDisk(array string, dev sysfs.DevNum) error {
	if err := k.record("AddNewDisk", array, dev); err != nil {
		return err
	}
	if !k.show {
		return nil
	}
	if err := k.addedMember(array, k.added); err != nil {
		return err
	}
	if k.addedSlot != nil {
		return k.set(filepath.Join(k.attr(array, "dev-"+k.added), "slot"), fmt.Sprint(*k.addedSlot))
	}
	return nil
}

// ReAddDisk records the call; with show, the member appears in its slot,
// rebuilding.
func (k *fakeKernel) ReAddDisk(array string, dev sysfs.DevNum, number uint32, slot int, writeMostly, failFast bool) error {
	if err := k.record("ReAddDisk", array, dev, number, slot, writeMostly, failFast); err != nil {
		return err
	}
	if !k.show {
		return nil
	}
	if err := k.addedMember(array, k.added); err != nil {
		return err
	}
	return k.set(filepath.Join(k.attr(array, "dev-"+k.added), "slot"), fmt.Sprint(slot))
}

func (k *fakeKernel) RunArray(array string) error { return k.record("RunArray", array) }

func (k *fakeKernel) SetArrayState(array string, st sysfs.ArrayState) error {
	return k.record("SetArrayState", array, st)
}

func (k *fakeKernel) SetSyncAction(array string, act sysfs.SyncAction) error {
	if err := k.record("SetSyncAction", array, act); err != nil {
		return err
	}
	v := string(act)
	if act == sysfs.ActionIdle && k.recover != "" && k.slotted {
		v = k.recover
	}
	return k.set(k.attr(array, "sync_action"), v)
}

func (k *fakeKernel) SetSyncMin(array string, sectors uint64) error {
	if err := k.record("SetSyncMin", array, sectors); err != nil {
		return err
	}
	return k.set(k.attr(array, "sync_min"), fmt.Sprint(sectors))
}

func (k *fakeKernel) SetSyncMax(array string, limit sysfs.Optional[uint64]) error {
	v := "max"
	if limit.Valid {
		v = fmt.Sprint(limit.Value)
	}
	if err := k.record("SetSyncMax", array, v); err != nil {
		return err
	}
	return k.set(k.attr(array, "sync_max"), v)
}

func (k *fakeKernel) SetSafeModeDelay(array, seconds string) error {
	if err := k.record("SetSafeModeDelay", array, seconds); err != nil {
		return err
	}
	return k.set(k.attr(array, "safe_mode_delay"), seconds)
}

func (k *fakeKernel) SetBitmapLocation(array, loc string) error {
	if err := k.record("SetBitmapLocation", array, loc); err != nil {
		return err
	}
	return k.set(k.attr(array, "bitmap", "location"), loc)
}

func (k *fakeKernel) SetComponentSize(array string, kib uint64) error {
	if err := k.record("SetComponentSize", array, kib); err != nil {
		return err
	}
	if err := k.set(k.attr(array, "component_size"), fmt.Sprint(kib)); err != nil {
		return err
	}
	// The array's size as md sets it for raid1 (the fixtures' level).
	return k.set(k.fs.Path("block", array, "size"), fmt.Sprint(kib*2))
}

func (k *fakeKernel) SetMemberSize(array, member string, kib uint64) error {
	if err := k.record("SetMemberSize", array, member, kib); err != nil {
		return err
	}
	return k.set(k.attr(array, "dev-"+member, "size"), fmt.Sprint(kib))
}

func (k *fakeKernel) SetSlot(array, member string, slot int) error {
	if err := k.record("SetSlot", array, member, slot); err != nil {
		return err
	}
	if err := k.set(k.attr(array, "dev-"+member, "slot"), fmt.Sprint(slot)); err != nil {
		return err
	}
	k.slotted = true
	if k.slotState != "" {
		return k.set(k.attr(array, "dev-"+member, "state"), k.slotState)
	}
	return nil
}

func (k *fakeKernel) WriteState(array, member string, cmd sysfs.MemberCommand) error {
	if err := k.record("WriteState", array, member, cmd); err != nil {
		return err
	}
	if cmd == sysfs.CmdWantReplacement {
		return k.set(k.attr(array, "dev-"+member, "state"), "in_sync,want_replacement")
	}
	if k.show {
		// The flags md sets and clears on request (state_store).
		flag := map[sysfs.MemberCommand]string{sysfs.CmdWriteMostly: "write_mostly", sysfs.CmdClearWriteMostly: "write_mostly",
			sysfs.CmdFailFast: "failfast", sysfs.CmdClearFailFast: "failfast"}[cmd]
		if flag != "" {
			p := k.attr(array, "dev-"+member, "state")
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			var keep []string
			for _, f := range strings.Split(strings.TrimSpace(string(b)), ",") {
				if f != flag && f != "" {
					keep = append(keep, f)
				}
			}
			if !strings.HasPrefix(string(cmd), "-") {
				keep = append(keep, flag)
			}
			return k.set(p, strings.Join(keep, ","))
		}
	}
	return nil
}

func (k *fakeKernel) ClaimDevice(w deviceWrite) (claimedDevice, error) {
	if err := k.record("ClaimDevice", filepath.Base(w.Path)); err != nil {
		return nil, err
	}
	c, err := sysKernel{}.ClaimDevice(w)
	if err != nil {
		return nil, err
	}
	return &fakeClaim{k: k, w: w, c: c}, nil
}

// fakeClaim records the write of a real claim ("WriteDevice"), which
// can be made to fail.
type fakeClaim struct {
	k *fakeKernel
	w deviceWrite
	c claimedDevice
}

func (f *fakeClaim) Write() error {
	what := make([]string, len(f.w.Regions))
	for i, r := range f.w.Regions {
		what[i] = fmt.Sprintf("%s@%d+%d", r.What, r.Off, len(r.Data))
	}
	if err := f.k.record("WriteDevice", filepath.Base(f.w.Path), f.w.LBS, strings.Join(what, " ")); err != nil {
		f.c.Close()
		return err
	}
	f.k.mu.Lock()
	f.k.added = filepath.Base(f.w.Path)
	f.k.mu.Unlock()
	return f.c.Write()
}

func (f *fakeClaim) Close() error { return f.c.Close() }

// addedMember is what the fake shows after ADD_NEW_DISK of name: an
// unslotted spare.
func (k *fakeKernel) addedMember(array, name string) error {
	dir := k.attr(array, "dev-"+name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := k.set(filepath.Join(dir, "slot"), "none"); err != nil {
		return err
	}
	return k.set(filepath.Join(dir, "state"), "spare")
}

func slotp(n int) *int { return &n }

// TestCandidateFactsHostileBitmapAllocation: a hostile candidate (one
// 1.2 superblock with a bitmap whose bits fill almost the whole disk)
// does not make candidateFacts allocate what its superblock says.
func TestCandidateFactsHostileBitmapAllocation(t *testing.T) {
	c := qt.New(t)
	r, f, p := bitmapPlan(c)

	const size = 1 << 30
	path := r.candidate(t, "vdz", size)
	sb := p.Superblock.Clone()
	sb.DataOffset = size/512 - 64
	sb.DataSize = 64
	bm := *f.bitmap
	bm.ChunkSize = 512
	bm.SyncSize = 900 << 20 * 8 // bits/8 = 900 MiB
	sb.BBLogOffset, sb.BBLogSize = 0, 0
	hdr, err := sb.MarshalBinary()
	c.Assert(err, qt.IsNil)
	bh, err := bm.MarshalBinary()
	c.Assert(err, qt.IsNil)
	// Only the superblock and the bitmap header: a sparse image.
	writeImage(t, path, sb.DiskOffset, hdr)
	writeImage(t, path, sb.DiskOffset+int64(sb.BitmapOffset)*512, bh)
	before := readImage(t, path)

	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	cand := r.m.candidateFacts(path, true)
	runtime.ReadMemStats(&m1)
	c.Check(m1.TotalAlloc-m0.TotalAlloc < 64<<20, qt.IsTrue, qt.Commentf("candidateFacts allocated %d MiB", (m1.TotalAlloc-m0.TotalAlloc)>>20))
	_, err = planReplace(f, cand, ReplaceRequest{Array: r.name, With: path, AllowImageFile: true}, uuid.New())
	c.Check(err, qt.ErrorIs, ErrRefused)
	c.Check(bytes.Equal(readImage(t, path), before), qt.IsTrue)
}

// TestRebuildDone: a member being rebuilt that shows "faulty" beside
// "spare" (bad blocks not yet recorded) is still being rebuilt; one that
// shows "faulty" alone failed the rebuild.
func TestRebuildDone(t *testing.T) {
	tests := []struct {
		flags  string
		action sysfs.SyncAction
		done   bool
		err    error
	}{
		{"spare", sysfs.ActionRecover, false, nil},
		{"faulty,blocked,spare", sysfs.ActionRecover, false, nil},
		{"in_sync", sysfs.ActionIdle, true, nil},
		{"faulty,in_sync,blocked", sysfs.ActionIdle, true, nil},
		{"faulty", sysfs.ActionRecover, false, errRebuildFailed},
		{"faulty,blocked", sysfs.ActionIdle, false, errRebuildFailed},
	}
	for _, tt := range tests {
		t.Run(tt.flags, func(t *testing.T) {
			a := mirrorMissing()
			a.Slots[1] = Slot{Slot: 1, State: SlotRebuilding, Member: &Member{
				Device: "vdc", Path: "/dev/vdc", Slot: 1, Flags: sysfs.ParseMemberState(tt.flags)}}
			a.Activity = Activity{Kind: tt.action}
			done, err := rebuildDone(a, "vdc")
			qt.Check(t, done, qt.Equals, tt.done)
			if tt.err == nil {
				qt.Check(t, err, qt.IsNil)
			} else {
				qt.Check(t, err, qt.ErrorIs, tt.err)
			}
		})
	}
}
