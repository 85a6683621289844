package md

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	qt "github.com/frankban/quicktest"
	"golang.org/x/sys/unix"

	"github.com/go-mdraid/mdraid/superblock"
	"github.com/go-mdraid/mdraid/sysfs"
)

// writeCall is the WriteDevice call the fake records for a plan.
func writeCall(p *Plan) string {
	what := make([]string, len(p.regions))
	for i, r := range p.regions {
		what[i] = fmt.Sprintf("%s@%d+%d", r.What, r.Off, len(r.Data))
	}
	return fmt.Sprintf("WriteDevice(vdz, %d, %s)", p.lbs, strings.Join(what, " "))
}

// TestExecuteReplaceSequence checks the exact kernel calls of a replace
// and what ends up on the new disk.
func TestExecuteReplaceSequence(t *testing.T) {
	tests := []struct {
		fixture string
		req     ReplaceRequest
		want    func(p *Plan) []string
	}{
		{fixture: "raid1-failed", req: ReplaceRequest{Member: "vdb"}, want: func(p *Plan) []string {
			return []string{
				"SetSyncAction(md0, frozen)",
				"ClaimDevice(vdz)",
				"HotRemove(md0, 254:16)",
				writeCall(p),
				"AddNewDisk(md0, 0:0)",
				"SetSlot(md0, vdz, 1)",
				"SetSyncAction(md0, idle)",
			}
		}},
		{fixture: "raid1-degraded-missing", want: func(p *Plan) []string {
			return []string{
				"SetSyncAction(md0, frozen)",
				"ClaimDevice(vdz)",
				writeCall(p),
				"AddNewDisk(md0, 0:0)",
				"SetSlot(md0, vdz, 1)",
				"SetSyncAction(md0, idle)",
			}
		}},
		{fixture: "raid5-degraded", req: ReplaceRequest{Slot: slotp(3)}, want: func(p *Plan) []string {
			return []string{
				"SetSyncAction(md0, frozen)",
				"ClaimDevice(vdz)",
				writeCall(p),
				"AddNewDisk(md0, 0:0)",
				"SetSlot(md0, vdz, 3)",
				"SetSyncAction(md0, idle)",
			}
		}},
		{fixture: "raid1-v1.2", req: ReplaceRequest{Hot: true, Member: "vdb"}, want: func(p *Plan) []string {
			return []string{
				"SetSyncAction(md0, frozen)",
				"ClaimDevice(vdz)",
				writeCall(p),
				"AddNewDisk(md0, 0:0)",
				"WriteState(md0, vdb, want_replacement)",
				"SetSlot(md0, vdz, 1)",
				"SetSyncAction(md0, idle)",
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.fixture, func(t *testing.T) {
			c := qt.New(t)
			r, path := replaceOn(t, tt.fixture)
			if tt.req.Hot {
				r.k.slotState = "spare,replacement"
			}
			req := tt.req
			req.Array, req.With, req.AllowImageFile = r.name, path, true
			res, err := r.m.Replace(context.Background(), req)
			c.Assert(err, qt.IsNil)
			c.Check(r.k.Calls(), qt.DeepEquals, tt.want(res.Plan))
			c.Check(res.Member, qt.Equals, "vdz")
			c.Check(res.Slot, qt.Equals, res.Plan.Slot)
			c.Check(res.SyncAction, qt.Equals, "recover")
			c.Check(res.Duration > 0, qt.IsTrue)

			// What the disk now carries is the planned superblock.
			f, err := os.Open(path)
			c.Assert(err, qt.IsNil)
			defer f.Close()
			sb, err := superblock.Read(f, 64<<20, res.Plan.Superblock.Version)
			c.Assert(err, qt.IsNil)
			c.Check(sb.SetUUID, qt.Equals, res.Plan.Superblock.SetUUID)
			c.Check(sb.Role(), qt.Equals, superblock.RoleSpare)
			c.Check(sb.Events, qt.Equals, uint64(0))
		})
	}
}

func TestExecuteReplaceLocked(t *testing.T) {
	c := qt.New(t)
	r, path := replaceOn(t, "raid1-degraded-missing")
	p, err := r.m.PlanReplace(context.Background(), ReplaceRequest{Array: r.name, With: path, AllowImageFile: true})
	c.Assert(err, qt.IsNil)
	unlock, err := lockArray(r.m.ops.runDir, p.UUID)
	c.Assert(err, qt.IsNil)
	_, err = r.m.ExecuteReplace(context.Background(), p)
	c.Check(err, qt.ErrorIs, errLocked)
	c.Check(err, qt.ErrorIs, ErrRefused) // nothing was written
	var le *lockedError
	c.Assert(errors.As(err, &le), qt.IsTrue)
	c.Check(le.PID, qt.Equals, os.Getpid())
	c.Check(r.k.Calls(), qt.HasLen, 0)
	unlock()
	_, err = r.m.ExecuteReplace(context.Background(), p)
	c.Check(err, qt.IsNil)
}

// TestExecuteReplacePlanChanged: the executor re-reads the array and
// refuses, writing nothing, when it changed since planning.
func TestExecuteReplacePlanChanged(t *testing.T) {
	c := qt.New(t)
	r, path := replaceOn(t, "raid1-degraded-missing")
	p, err := r.m.PlanReplace(context.Background(), ReplaceRequest{Array: r.name, With: path, AllowImageFile: true})
	c.Assert(err, qt.IsNil)
	c.Assert(os.WriteFile(r.k.attr(r.name, "sync_action"), []byte("check\n"), 0o644), qt.IsNil)
	_, err = r.m.ExecuteReplace(context.Background(), p)
	c.Check(err, qt.ErrorIs, ErrPlanChanged)
	c.Check(err, qt.ErrorIs, errArrayBusy)
	c.Check(r.k.Calls(), qt.HasLen, 0)

	// A filesystem appeared on the candidate.
	c.Assert(os.WriteFile(r.k.attr(r.name, "sync_action"), []byte("idle\n"), 0o644), qt.IsNil)
	fd, err := os.OpenFile(path, os.O_WRONLY, 0)
	c.Assert(err, qt.IsNil)
	_, err = fd.WriteAt([]byte("XFSB"), 0)
	fd.Close()
	c.Assert(err, qt.IsNil)
	_, err = r.m.ExecuteReplace(context.Background(), p)
	c.Check(err, qt.ErrorIs, ErrPlanChanged)
	c.Check(err, qt.ErrorIs, errHasSignature)
	c.Check(r.k.Calls(), qt.HasLen, 0)
}

// TestExecuteReplacePlanDiffers: the executor's final plan succeeds but
// is not the plan shown (the candidate grew: it is another disk, or the
// same path now names another one): refused, nothing called, the
// candidate byte-identical. The refusals above come from the final plan
// refusing; this one only from comparing the two.
func TestExecuteReplacePlanDiffers(t *testing.T) {
	c := qt.New(t)
	r, path := replaceOn(t, "raid1-degraded-missing")
	p, err := r.m.PlanReplace(context.Background(), ReplaceRequest{Array: r.name, With: path, AllowImageFile: true})
	c.Assert(err, qt.IsNil)
	c.Assert(os.Truncate(path, 128<<20), qt.IsNil)
	before := readImage(c, path)
	_, err = r.m.ExecuteReplace(context.Background(), p)
	c.Check(err, qt.ErrorIs, ErrPlanChanged)
	c.Check(err, qt.ErrorIs, ErrRefused)
	c.Check(err, qt.ErrorMatches, `.*the candidate disk changed.*`)
	r.checkNothingWritten(c, path, before)
}

// TestPlanDiff: each difference that matters between the plan shown and
// the executor's final plan is named; the same plan gives "".
func TestPlanDiff(t *testing.T) {
	base := Plan{Slot: 1, DevNumber: 2, UUID: "u", RaidDisks: 2, candDev: sysfs.DevNum{Major: 254, Minor: 0},
		Remove: &PlanMember{Device: "vdb"}, Candidate: &Candidate{SizeBytes: 1 << 20}}
	for _, tt := range []struct {
		name   string
		change func(q *Plan)
		want   string
	}{
		{"same", func(*Plan) {}, ""},
		{"slot", func(q *Plan) { q.Slot = 0 }, "slot 1 is now 0"},
		{"candidate device", func(q *Plan) { q.candDev = sysfs.DevNum{Major: 8, Minor: 0} }, "the candidate disk changed"},
		{"candidate size", func(q *Plan) { c := *q.Candidate; c.SizeBytes++; q.Candidate = &c }, "the candidate disk changed"},
		{"dev_number", func(q *Plan) { q.DevNumber = 3 }, "dev_number 2 is now 3"},
		{"array uuid", func(q *Plan) { q.UUID = "v" }, "the array changed"},
		{"raid disks", func(q *Plan) { q.RaidDisks = 3 }, "the array changed"},
		{"no removal", func(q *Plan) { q.Remove = nil }, "the member to remove changed"},
		{"another removal", func(q *Plan) { q.Remove = &PlanMember{Device: "vda"} }, "the member to remove changed"},
		{"resume stage", func(q *Plan) { q.Resume = ResumePinned }, `resume stage "" is now "` + string(ResumePinned) + `"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, q := base, base
			tt.change(&q)
			qt.Check(t, planDiff(&p, &q), qt.Equals, tt.want)
		})
	}
}

// TestExecuteReplaceAddFails: ADD_NEW_DISK fails; the error says what the
// disk now carries, and the same replace run again resumes with the
// superblock it wrote. EBUSY (someone holds the disk exclusively, which
// mdadm --incremental does for a moment before it adds a disk) is retried
// for a moment and then leaves recovery frozen for the rerun; any other
// error unfreezes.
func TestExecuteReplaceAddFails(t *testing.T) {
	for _, tt := range []struct {
		name   string
		err    error
		frozen bool
	}{
		{name: "EBUSY", err: unix.EBUSY, frozen: true},
		{name: "EINVAL", err: unix.EINVAL},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := qt.New(t)
			r, path := replaceOn(t, "raid1-failed")
			r.k.fail = map[string]error{"AddNewDisk": &os.PathError{Op: "ioctl ADD_NEW_DISK", Path: "/dev/md0", Err: tt.err}}
			req := ReplaceRequest{Array: r.name, With: path, Member: "vdb", AllowImageFile: true}
			p1, err := r.m.PlanReplace(context.Background(), req)
			c.Assert(err, qt.IsNil)
			_, err = r.m.ExecuteReplace(context.Background(), p1)
			c.Assert(err, qt.ErrorIs, tt.err)
			var ee *ExecError
			c.Assert(errors.As(err, &ee), qt.IsTrue)
			c.Check(ee.Step, qt.Equals, StepAdd)
			c.Check(ee.Done, qt.DeepEquals, []StepKind{StepFreeze, StepClaim, StepRemove, StepWriteSuperblock})
			c.Check(ee.State, qt.Contains, "vdb was removed from md0")
			calls := r.k.Calls()
			adds := 0
			for _, call := range calls {
				if strings.HasPrefix(call, "AddNewDisk") {
					adds++
				}
			}
			if tt.frozen {
				c.Check(ee.State, qt.Contains, "left frozen")
				c.Check(adds, qt.Equals, addTries)
				c.Check(calls[len(calls)-1], qt.Matches, `AddNewDisk.*`)
			} else {
				c.Check(ee.State, qt.Contains, "Run the same replace again")
				c.Check(ee.State, qt.Contains, "Recovery was unfrozen")
				c.Check(adds, qt.Equals, 1)
				c.Check(calls[len(calls)-1], qt.Equals, "SetSyncAction(md0, idle)")
			}
			t.Log(err)

			r.k.fail = nil
			r.k.calls = nil
			res, err := r.m.Replace(context.Background(), req)
			c.Assert(err, qt.IsNil)
			c.Check(res.Plan.Resume, qt.Equals, ResumeWritten)
			c.Check(res.Plan.DeviceUUID, qt.Equals, p1.DeviceUUID)
			c.Check(res.Plan.Remove, qt.IsNil) // vdb went in the first run
			want := []string{
				"SetSyncAction(md0, frozen)",
				"ClaimDevice(vdz)",
				writeCall(res.Plan),
				"AddNewDisk(md0, 0:0)",
				"SetSlot(md0, vdz, 1)",
				"SetSyncAction(md0, idle)",
			}
			if tt.frozen {
				want = want[1:] // the freeze is adopted
			}
			c.Check(r.k.Calls(), qt.DeepEquals, want)
		})
	}
}

// TestRerunAfterKillAfterRemove: a replace killed after it removed the
// faulty member, before it wrote anything, leaves recovery frozen and its
// freeze record naming that member; the same replace run again, naming
// the member, finds it gone (removed by the interrupted run) instead of
// refusing, and completes.
func TestRerunAfterKillAfterRemove(t *testing.T) {
	c := qt.New(t)
	r, path := replaceOn(t, "raid1-failed")
	req := ReplaceRequest{Array: r.name, With: path, Member: "vdb", AllowImageFile: true}
	r.m.ops.afterStep = func(k StepKind) error {
		if k == StepRemove {
			panic(errKilled)
		}
		return nil
	}
	func() {
		defer func() {
			if v := recover(); v != errKilled {
				panic(v)
			}
		}()
		r.m.Replace(context.Background(), req)
	}()
	r.m.ops.afterStep = nil
	b, err := os.ReadFile(r.k.attr(r.name, "sync_action"))
	c.Assert(err, qt.IsNil)
	c.Assert(strings.TrimSpace(string(b)), qt.Equals, "frozen")

	res, err := r.m.Replace(context.Background(), req)
	c.Assert(err, qt.IsNil)
	c.Check(res.Plan.Remove, qt.IsNil)
	c.Check(res.Plan.adopted, qt.Not(qt.IsNil))
	c.Check(res.Slot, qt.Equals, 1)
}

var errKilled = errors.New("killed")

// TestExecuteReplaceSlotFails: pinning the slot fails; recovery stays
// frozen so that the kernel cannot rebuild into another slot.
func TestExecuteReplaceSlotFails(t *testing.T) {
	c := qt.New(t)
	r, path := replaceOn(t, "raid1-degraded-missing")
	r.k.fail = map[string]error{"SetSlot": unix.EBUSY}
	_, err := r.m.Replace(context.Background(), ReplaceRequest{Array: r.name, With: path, AllowImageFile: true})
	var ee *ExecError
	c.Assert(errors.As(err, &ee), qt.IsTrue)
	c.Check(ee.Step, qt.Equals, StepSetSlot)
	c.Check(ee.State, qt.Contains, "left frozen")
	calls := r.k.Calls()
	c.Check(calls[len(calls)-1], qt.Equals, "SetSlot(md0, vdz, 1)")

}

// TestExecuteReplaceVerifyFails: every step ran but recovery did not
// start into the slot.
func TestExecuteReplaceVerifyFails(t *testing.T) {
	c := qt.New(t)
	r, path := replaceOn(t, "raid1-degraded-missing")
	r.k.recover = "" // sync_action stays idle, the member a spare
	_, err := r.m.Replace(context.Background(), ReplaceRequest{Array: r.name, With: path, AllowImageFile: true})
	c.Assert(err, qt.ErrorIs, errVerify)
	var ee *ExecError
	c.Assert(errors.As(err, &ee), qt.IsTrue)
	c.Check(ee.Step, qt.Equals, StepVerify)
	// What was changed is said.
	c.Check(ee.State, qt.Matches, `every step ran \(.*vdz.* carries a spare superblock of md0, dev_number \d+; it was added and pinned to slot 1, and recovery unfrozen\)\. But .*`)
	c.Check(ee.NothingChanged, qt.IsFalse)
}

// TestExecuteReplaceConcurrent: two replaces of one array at once, each
// with its own disk: exactly one succeeds.
func TestExecuteReplaceConcurrent(t *testing.T) {
	c := qt.New(t)
	r, path := replaceOn(t, "raid1-degraded-missing")
	other := r.candidate(t, "vdy", 64<<20)
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, p := range []string{path, other} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = r.m.Replace(context.Background(), ReplaceRequest{Array: r.name, With: p, AllowImageFile: true})
		}()
	}
	wg.Wait()
	ok := 0
	for _, err := range errs {
		if err == nil {
			ok++
		} else {
			c.Check(errors.Is(err, errLocked) || errors.Is(err, ErrRefused), qt.IsTrue, qt.Commentf("%v", err))
			t.Log(err)
		}
	}
	c.Check(ok, qt.Equals, 1)
}

// danglingMember makes a member's block link point nowhere, as when its
// disk was pulled: the kernel keeps dev-X, the block device is gone.
func danglingMember(t *testing.T, r *replaceRig, member string) {
	t.Helper()
	link := r.m.fs.Path("block", r.name, "md", "dev-"+member, "block")
	target, err := os.Readlink(link)
	if err != nil {
		t.Fatal(err)
	}
	dir, err := filepath.EvalSymlinks(filepath.Dir(link))
	if err != nil {
		t.Fatal(err)
	}
	gone := filepath.Join(dir, target)
	if _, err := os.Stat(gone); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(gone); err != nil {
		t.Fatal(err)
	}
}

// TestExecuteReplaceRemovesPulledMember: a faulty member whose disk is
// gone has no device number; it is removed through sysfs, never with a
// HOT_REMOVE_DISK of 0:0.
func TestExecuteReplaceRemovesPulledMember(t *testing.T) {
	c := qt.New(t)
	r, path := replaceOn(t, "raid1-failed")
	danglingMember(t, r, "vdb")
	res, err := r.m.Replace(context.Background(), ReplaceRequest{Array: r.name, With: path, Member: "vdb", AllowImageFile: true})
	c.Assert(err, qt.IsNil)
	c.Check(r.k.Calls(), qt.DeepEquals, []string{
		"SetSyncAction(md0, frozen)",
		"ClaimDevice(vdz)",
		"WriteState(md0, vdb, remove)",
		writeCall(res.Plan),
		"AddNewDisk(md0, 0:0)",
		"SetSlot(md0, vdz, 1)",
		"SetSyncAction(md0, idle)",
	})
	c.Check(res.Slot, qt.Equals, 1)
}

// TestHotRemoveENXIO: "not a member" counts as removed only when the
// member's directory is really gone.
func TestHotRemoveENXIO(t *testing.T) {
	c := qt.New(t)
	r, _ := replaceOn(t, "raid1-failed")
	r.k.fail = map[string]error{"HotRemove": unix.ENXIO}
	err := hotRemove(r.k, r.m.fs, r.name, &PlanMember{Device: "vdb", dev: sysfs.DevNum{Major: 254, Minor: 16}})
	c.Check(err, qt.ErrorIs, unix.ENXIO)
	c.Assert(os.RemoveAll(r.m.fs.Path("block", r.name, "md", "dev-vdb")), qt.IsNil)
	err = hotRemove(r.k, r.m.fs, r.name, &PlanMember{Device: "vdb", dev: sysfs.DevNum{Major: 254, Minor: 16}})
	c.Check(err, qt.IsNil)
}

// TestExecuteRefusesUnreadableSyncActionWritesNothing: through the
// executor, the refusal writes nothing to the candidate.
func TestExecuteRefusesUnreadableSyncActionWritesNothing(t *testing.T) {
	c := qt.New(t)
	r, path := replaceOn(t, "raid1-degraded-missing")
	before := readImage(t, path)
	c.Assert(os.Remove(r.m.fs.Path("block", r.name, "md", "sync_action")), qt.IsNil)
	_, err := r.m.Replace(context.Background(), ReplaceRequest{Array: r.name, With: path, AllowImageFile: true})
	c.Assert(err, qt.ErrorIs, errUnknownFact)
	r.checkNothingWritten(c, path, before)
}

// TestHotSlotFailureSaysWantReplacement: a hot replace whose slot pin
// fails after want_replacement was set says that the old member is
// marked, and how to clear it.
func TestHotSlotFailureSaysWantReplacement(t *testing.T) {
	c := qt.New(t)
	r, path := replaceOn(t, "raid1-v1.2")
	r.k.fail = map[string]error{"SetSlot": unix.EBUSY}
	_, err := r.m.Replace(context.Background(), ReplaceRequest{Array: r.name, With: path, Member: "vdb", Hot: true, AllowImageFile: true})
	var ee *ExecError
	c.Assert(errors.As(err, &ee), qt.IsTrue)
	c.Check(ee.Done, qt.Contains, StepWantReplacement)
	c.Check(ee.State, qt.Contains, "want_replacement")
	c.Check(ee.State, qt.Contains, "-want_replacement")
}

// TestSlotFailureWithoutFreezeSaysNotFrozen: the message of a SetSlot
// failure says recovery is left frozen only when this run froze it.
func TestSlotFailureWithoutFreezeSaysNotFrozen(t *testing.T) {
	c := qt.New(t)
	r, path := replaceOn(t, "raid1-degraded-missing")
	r.k.fail = map[string]error{"SetSlot": unix.EBUSY}
	p, err := r.m.PlanReplace(context.Background(), ReplaceRequest{Array: r.name, With: path, AllowImageFile: true})
	c.Assert(err, qt.IsNil)
	x := &execution{m: r.m, p: p, key: p.UUID, done: []StepKind{StepWriteSuperblock, StepAdd}}
	err = x.failed(StepSetSlot, unix.EBUSY)
	var ee *ExecError
	c.Assert(errors.As(err, &ee), qt.IsTrue)
	c.Check(strings.Contains(ee.State, "left frozen"), qt.IsFalse, qt.Commentf("%s", ee.State))
	c.Check(ee.State, qt.Contains, "not frozen")
}

// TestAdoptedFreezeFailureIsAChange: a run that adopted the freeze an
// interrupted replace left, and fails before writing, unfreezes an array
// that was frozen before it started: that is a change, and
// NothingChanged is not set.
func TestAdoptedFreezeFailureIsAChange(t *testing.T) {
	c := qt.New(t)
	r, path := replaceOn(t, "raid1-degraded-missing")
	p, err := r.m.PlanReplace(context.Background(), ReplaceRequest{Array: r.name, With: path, AllowImageFile: true})
	c.Assert(err, qt.IsNil)
	p.adopted = &freezeRecord{}
	x := &execution{m: r.m, p: p, key: p.UUID, froze: true}
	err = x.failed(StepWriteSuperblock, &notWrittenError{unix.EBUSY})
	var ee *ExecError
	c.Assert(errors.As(err, &ee), qt.IsTrue)
	c.Check(ee.NothingChanged, qt.IsFalse)
	c.Check(ee.State, qt.Contains, "Recovery was unfrozen")
}

// TestWriteDeviceNothingWritten checks that WriteDevice says when it
// wrote nothing: a path that does not name the planned device is refused
// before any write, and the file is byte-identical afterwards.
func TestWriteDeviceNothingWritten(t *testing.T) {
	c := qt.New(t)
	path := filepath.Join(t.TempDir(), "other")
	orig := bytes.Repeat([]byte{0xa5}, 64<<10)
	c.Assert(os.WriteFile(path, orig, 0o644), qt.IsNil)
	err := sysKernel{}.WriteDevice(deviceWrite{Path: path, Dev: sysfs.DevNum{Major: 253, Minor: 32}, Size: 64 << 10, LBS: 512, MaxLBS: 512, Regions: []region{{What: "superblock", Off: 4096, Data: make([]byte, 512)}}})
	c.Assert(err, qt.ErrorIs, ErrPlanChanged)
	c.Assert(nothingWritten(err), qt.IsTrue)
	got, rerr := os.ReadFile(path)
	c.Assert(rerr, qt.IsNil)
	c.Assert(bytes.Equal(got, orig), qt.IsTrue)

	err = sysKernel{}.WriteDevice(deviceWrite{Path: filepath.Join(t.TempDir(), "gone"), LBS: 512, MaxLBS: 512})
	c.Assert(err, qt.ErrorIs, os.ErrNotExist)
	c.Assert(nothingWritten(err), qt.IsTrue)
}

// TestWriteFailureAdvice (issue 10 item 8): when the claim or the write
// fails before writing (the path now names another disk, O_EXCL got
// EBUSY, the first read failed), the message says that nothing was
// written there and what was changed (the faulty member leaves after the
// claim, before the write), never advises wiping that disk, and
// NothingChanged is set only when nothing stays changed.
func TestWriteFailureAdvice(t *testing.T) {
	changed := &notWrittenError{fmt.Errorf("%w: /dev/vdz is now device 8:0, the plan was made for 253:32", ErrPlanChanged)}
	busy := &notWrittenError{&os.PathError{Op: "open", Path: "/dev/vdz", Err: unix.EBUSY}}
	unread := &notWrittenError{fmt.Errorf("reading around md superblock 1.2: %w", unix.EIO)}
	tests := []struct {
		name           string
		fixture        string
		member         string
		call           string
		err            error
		is             error
		step           StepKind
		wantState      string
		nothingChanged bool
		removed        bool
	}{
		{name: "path re-pointed, faulty member named", fixture: "raid1-failed", member: "vdb", call: "ClaimDevice", err: changed, is: ErrPlanChanged, step: StepClaim,
			wantState: `nothing was written to .*/vdz\. Nothing else was changed\. Recovery was unfrozen\.`, nothingChanged: true},
		{name: "EBUSY, faulty member named", fixture: "raid1-failed", member: "vdb", call: "ClaimDevice", err: busy, is: unix.EBUSY, step: StepClaim,
			wantState: `nothing was written to .*/vdz\. Nothing else was changed\. Recovery was unfrozen\.`, nothingChanged: true},
		{name: "EBUSY, nothing to remove", fixture: "raid1-degraded-missing", call: "ClaimDevice", err: busy, is: unix.EBUSY, step: StepClaim,
			wantState: `nothing was written to .*/vdz\. Nothing else was changed\. Recovery was unfrozen\.`, nothingChanged: true},
		{name: "first read fails after the remove", fixture: "raid1-failed", member: "vdb", call: "WriteDevice", err: unread, is: unix.EIO, step: StepWriteSuperblock,
			wantState: `nothing was written to .*/vdz\. vdb was removed from md0\. Recovery was unfrozen\.`, removed: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := qt.New(t)
			r, path := replaceOn(t, tt.fixture)
			before := readImage(t, path)
			r.k.fail = map[string]error{tt.call: tt.err}
			_, err := r.m.Replace(context.Background(), ReplaceRequest{Array: r.name, With: path, Member: tt.member, AllowImageFile: true})
			c.Assert(err, qt.ErrorIs, tt.is)
			var ee *ExecError
			c.Assert(errors.As(err, &ee), qt.IsTrue)
			c.Check(ee.Step, qt.Equals, tt.step)
			c.Check(ee.State, qt.Matches, tt.wantState)
			c.Check(ee.State, qt.Not(qt.Contains), "zero-superblock")
			c.Check(ee.State, qt.Not(qt.Contains), "wipe")
			c.Check(ee.State, qt.Not(qt.Contains), "Wipe")
			c.Check(ee.State, qt.Not(qt.Contains), "partial")
			c.Check(ee.NothingChanged, qt.Equals, tt.nothingChanged)
			c.Check(bytes.Equal(readImage(t, path), before), qt.IsTrue, qt.Commentf("the candidate changed"))
			removed := false
			for _, call := range r.k.Calls() {
				removed = removed || strings.HasPrefix(call, "HotRemove")
			}
			c.Check(removed, qt.Equals, tt.removed)
		})
	}
}

// TestWritePartialAdvice: a write that failed after it started may have
// left part of our superblock; the advice names the disk by its device
// number as well, and NothingChanged is false.
func TestWritePartialAdvice(t *testing.T) {
	c := qt.New(t)
	r, path := replaceOn(t, "raid1-degraded-missing")
	r.k.fail = map[string]error{"WriteDevice": &os.PathError{Op: "write", Path: path, Err: unix.EIO}}
	_, err := r.m.Replace(context.Background(), ReplaceRequest{Array: r.name, With: path, AllowImageFile: true})
	var ee *ExecError
	c.Assert(errors.As(err, &ee), qt.IsTrue)
	c.Check(ee.State, qt.Matches, `the superblock write on .* failed and may be partial; .*`)
	c.Check(ee.NothingChanged, qt.IsFalse)
}

// TestExecuteFinalBlankCheck (item 10): a file system made between the
// plan (and the executor's re-plan) and the write is found by the check
// on the descriptor that writes, and is not overwritten; the faulty
// member the plan removes is still bound (it leaves after that check).
func TestExecuteFinalBlankCheck(t *testing.T) {
	c := qt.New(t)
	r, path := replaceOn(t, "raid1-failed")
	var before []byte
	r.m.ops.afterStep = func(k StepKind) error {
		if k == StepFreeze { // mkfs finishes now
			writeImage(t, path, 0, []byte("XFSB"))
			before = readImage(t, path)
		}
		return nil
	}
	_, err := r.m.Replace(context.Background(), ReplaceRequest{Array: r.name, With: path, Member: "vdb", AllowImageFile: true})
	c.Assert(err, qt.ErrorIs, ErrPlanChanged)
	c.Check(err, qt.ErrorIs, errHasSignature)
	var ee *ExecError
	c.Assert(errors.As(err, &ee), qt.IsTrue)
	c.Check(ee.Step, qt.Equals, StepClaim)
	c.Check(ee.State, qt.Contains, "nothing was written to "+path)
	c.Check(ee.State, qt.Contains, "Nothing else was changed")
	c.Check(ee.State, qt.Not(qt.Contains), "zero-superblock")
	c.Check(ee.NothingChanged, qt.IsTrue)
	c.Check(bytes.Equal(readImage(t, path), before), qt.IsTrue, qt.Commentf("the candidate changed"))
	// The faulty member stays: the refusal leaves the array as it was.
	c.Check(r.k.Calls(), qt.DeepEquals, []string{"SetSyncAction(md0, frozen)", "ClaimDevice(vdz)", "SetSyncAction(md0, idle)"})
}

// TestExecuteReplaceVerifyBadBlocks: the new member meets a bad sector as
// its rebuild starts, so its state shows "faulty" beside "spare" until
// the bad block is recorded; that is a rebuild running, not a failed
// member. A member that shows "faulty" alone did fail.
func TestExecuteReplaceVerifyBadBlocks(t *testing.T) {
	for state, want := range map[string]error{"faulty,blocked,spare": nil, "faulty": errVerify} {
		t.Run(state, func(t *testing.T) {
			c := qt.New(t)
			r, path := replaceOn(t, "raid1-degraded-missing")
			r.k.slotState = state
			_, err := r.m.Replace(context.Background(), ReplaceRequest{Array: r.name, With: path, AllowImageFile: true})
			if want == nil {
				c.Check(err, qt.IsNil)
			} else {
				c.Check(err, qt.ErrorIs, want)
			}
		})
	}
}

// TestExecuteRemoveFails: the faulty member is removed once the
// candidate is claimed and found blank, before anything is written. A
// removal that fails therefore leaves nothing written: the message says
// so and that the member is still bound, the claim is released and
// recovery unfrozen, the candidate is byte-identical, and the same
// replace run again starts afresh. The member may have a device number
// (HOT_REMOVE_DISK) or be pulled (removed through sysfs).
func TestExecuteRemoveFails(t *testing.T) {
	for _, tt := range []struct {
		name   string
		pulled bool
		call   string
	}{
		{name: "hot remove", call: "HotRemove"},
		{name: "pulled member", pulled: true, call: "WriteState"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := qt.New(t)
			r, path := replaceOn(t, "raid1-failed")
			if tt.pulled {
				danglingMember(t, r, "vdb")
			}
			before := readImage(t, path)
			r.k.fail = map[string]error{tt.call: unix.EINVAL}
			req := ReplaceRequest{Array: r.name, With: path, Member: "vdb", AllowImageFile: true}
			_, err := r.m.Replace(context.Background(), req)
			c.Assert(err, qt.ErrorIs, unix.EINVAL)
			var ee *ExecError
			c.Assert(errors.As(err, &ee), qt.IsTrue)
			c.Check(ee.Step, qt.Equals, StepRemove)
			c.Check(ee.Done, qt.DeepEquals, []StepKind{StepFreeze, StepClaim})
			c.Check(ee.State, qt.Matches, `nothing was written to .*/vdz; vdb is still bound to md0\. Recovery was unfrozen\.`)
			c.Check(ee.NothingChanged, qt.IsTrue)
			c.Check(bytes.Equal(readImage(t, path), before), qt.IsTrue, qt.Commentf("the candidate changed"))
			_, serr := os.Stat(r.m.fs.Path("block", r.name, "md", "dev-vdb"))
			c.Check(serr, qt.IsNil, qt.Commentf("vdb is no longer bound"))
			// The claim was released: the candidate can be opened
			// exclusively again (an image has no O_EXCL; the rerun
			// below claims it once more either way).
			r.k.fail = nil
			r.k.calls = nil
			res, err := r.m.Replace(context.Background(), req)
			c.Assert(err, qt.IsNil)
			c.Check(res.Plan.Resume, qt.Equals, ResumeNone)
			c.Assert(res.Plan.Remove, qt.Not(qt.IsNil))
			c.Check(steps(res.Plan), qt.DeepEquals, stepsRemove)
		})
	}
}

// TestExecuteRemoveFindsMemberGone: a pulled member that leaves on its
// own between the plan and its removal (udev ran mdadm -If) counts as
// removed: its sysfs state cannot be written, but its directory is gone.
func TestExecuteRemoveFindsMemberGone(t *testing.T) {
	c := qt.New(t)
	r, path := replaceOn(t, "raid1-failed")
	danglingMember(t, r, "vdb")
	r.m.ops.afterStep = func(k StepKind) error {
		if k == StepClaim {
			return os.RemoveAll(r.m.fs.Path("block", r.name, "md", "dev-vdb"))
		}
		return nil
	}
	r.k.fail = map[string]error{"WriteState": os.ErrNotExist}
	res, err := r.m.Replace(context.Background(), ReplaceRequest{Array: r.name, With: path, Member: "vdb", AllowImageFile: true})
	c.Assert(err, qt.IsNil)
	c.Check(res.Slot, qt.Equals, 1)
}

// TestRemoveFailureKeepsResumedSpareFrozen: in a rerun that finds the
// candidate added (or pinned) by an interrupted replace, a removal that
// fails leaves recovery frozen, so that the kernel cannot rebuild that
// spare into another slot, and the message says what the disk is.
func TestRemoveFailureKeepsResumedSpareFrozen(t *testing.T) {
	for _, stage := range []ResumeStage{ResumeAdded, ResumePinned} {
		t.Run(string(stage), func(t *testing.T) {
			c := qt.New(t)
			r, path := replaceOn(t, "raid1-failed")
			p, err := r.m.PlanReplace(context.Background(), ReplaceRequest{Array: r.name, With: path, Member: "vdb", AllowImageFile: true})
			c.Assert(err, qt.IsNil)
			p.Resume, p.pinned = stage, 1
			r.k.calls = nil
			x := &execution{m: r.m, p: p, key: p.UUID, froze: true}
			err = x.failed(StepRemove, unix.EINVAL)
			var ee *ExecError
			c.Assert(errors.As(err, &ee), qt.IsTrue)
			c.Check(ee.State, qt.Contains, "vdb is still bound to md0")
			c.Check(ee.State, qt.Contains, "left frozen")
			c.Check(ee.State, qt.Contains, "interrupted replace")
			c.Check(r.k.Calls(), qt.HasLen, 0, qt.Commentf("recovery was unfrozen"))
		})
	}
}

// TestAddRaceWithUdev: the disk is bound to the array when our
// ADD_NEW_DISK fails (udev's mdadm --incremental added it after the
// write's close). The message says so instead of "was not added", and
// recovery stays frozen with our freeze record, so that the kernel cannot
// rebuild it into another slot: the array is then as a replace killed
// right after its ADD_NEW_DISK leaves it, whose rerun pins the slot
// (TestVMReplaceKilled).
func TestAddRaceWithUdev(t *testing.T) {
	c := qt.New(t)
	r, path := replaceOn(t, "raid1-degraded-missing")
	r.k.show = true
	r.m.ops.afterStep = func(k StepKind) error {
		if k == StepWriteSuperblock {
			// mdadm -I adds it first.
			if err := r.k.addedMember(r.name, "vdz"); err != nil {
				return err
			}
			r.k.fail = map[string]error{"AddNewDisk": &os.PathError{Op: "ioctl ADD_NEW_DISK", Path: "/dev/md0", Err: unix.EBUSY}}
		}
		return nil
	}
	p, err := r.m.PlanReplace(context.Background(), ReplaceRequest{Array: r.name, With: path, AllowImageFile: true})
	c.Assert(err, qt.IsNil)
	_, err = r.m.ExecuteReplace(context.Background(), p)
	c.Assert(err, qt.ErrorIs, unix.EBUSY)
	var ee *ExecError
	c.Assert(errors.As(err, &ee), qt.IsTrue)
	c.Check(ee.Step, qt.Equals, StepAdd)
	c.Check(ee.State, qt.Contains, "not by this replace")
	c.Check(ee.State, qt.Contains, "left frozen")
	c.Check(ee.State, qt.Not(qt.Contains), "was not added")
	c.Check(ee.NothingChanged, qt.IsFalse)
	calls := r.k.Calls()
	c.Check(calls[len(calls)-1], qt.Matches, `AddNewDisk\(.*`, qt.Commentf("recovery was unfrozen"))
	b, err := os.ReadFile(r.k.attr(r.name, "sync_action"))
	c.Assert(err, qt.IsNil)
	c.Check(strings.TrimSpace(string(b)), qt.Equals, "frozen")
	rec, err := readFreeze(r.m.ops.runDir, p.UUID)
	c.Assert(err, qt.IsNil)
	c.Assert(rec, qt.Not(qt.IsNil))
	c.Check(rec.Written, qt.IsTrue)
}
