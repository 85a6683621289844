//go:build vmtest

package md

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	qt "github.com/frankban/quicktest"
	"golang.org/x/sys/unix"

	"github.com/go-mdraid/mdraid/internal/vmtest/guest"
	"github.com/go-mdraid/mdraid/superblock"
	"github.com/go-mdraid/mdraid/sysfs"
)

// The create executor killed at each of its steps: TestVMCreateKilled
// runs a create in a child process (this test binary, running
// TestCreateKilledChild) that sends itself SIGKILL right after the step
// named, so the kernel releases its descriptors as it would for an
// operator's kill -9 or an OOM kill. Then, on what the kill left:
//   - a rerun of the same create completes, or is refused with every
//     device it left something on (or the md device it left) named, and
//     writes nothing;
//   - assembly (assemble with --run, then run on every inactive array
//     holding the disks, as the boot's last resort does) never starts a
//     degraded array from it.

// Environment of the child.
const (
	killAtEnv  = "MDRAID_CREATE_KILL_AT"
	killReqEnv = "MDRAID_CREATE_KILL_REQUEST"
	killRunEnv = "MDRAID_CREATE_KILL_RUNDIR"
)

// killer kills the process after the step named at.
type killer struct {
	at   string
	adds int
}

func (k *killer) after(step string) {
	if step == k.at {
		fmt.Printf("killed after %q\n", step)
		os.Stdout.Sync()
		unix.Kill(os.Getpid(), unix.SIGKILL)
		time.Sleep(time.Hour)
	}
}

// killKernel is the system kernel door, with every device write a step:
// "claim N" after device N (of the request) is claimed, "write N" after
// it is written; "regions N" writes its bitmap and bad-block log areas
// but not its superblock, "torn N" also the first half of the
// superblock, before the kill.
type killKernel struct {
	kernel
	k    *killer
	devs []string
}

type killClaim struct {
	claimedDevice
	k    *killer
	step string
}

func (c killClaim) Write() error {
	err := c.claimedDevice.Write()
	c.k.after(c.step)
	return err
}

func (kk killKernel) ClaimDevice(w deviceWrite) (claimedDevice, error) {
	n := strconv.Itoa(slices.Index(kk.devs, w.Path))
	switch kk.k.at {
	case "regions " + n, "torn " + n:
		var rs []region
		for _, r := range w.Regions {
			if r.What == "superblock" {
				if kk.k.at == "regions "+n {
					continue
				}
				r.Data = r.Data[:len(r.Data)/2]
			}
			rs = append(rs, r)
		}
		w.Regions = rs
	}
	cl, err := kk.kernel.ClaimDevice(w)
	if err != nil {
		return cl, err
	}
	kk.k.after("claim " + n)
	step := "write " + n
	if kk.k.at == "regions "+n || kk.k.at == "torn "+n {
		step = kk.k.at
	}
	return killClaim{cl, kk.k, step}, nil
}

// killAssembly is the assembly door with its calls as steps: new_array,
// node, set_array_info, "add N" after the N-th ADD_NEW_DISK (from 0),
// run, link.
type killAssembly struct {
	assembly
	k *killer
}

func (ka killAssembly) NewArray(name string) error {
	err := ka.assembly.NewArray(name)
	ka.k.after("new_array")
	return err
}

func (ka killAssembly) MakeNode(path string, dev sysfs.DevNum) error {
	err := ka.assembly.MakeNode(path, dev)
	ka.k.after("node")
	return err
}

func (ka killAssembly) SetArrayInfo(array string, major, minor int) error {
	err := ka.assembly.SetArrayInfo(array, major, minor)
	ka.k.after("set_array_info")
	return err
}

func (ka killAssembly) AddDisk(array string, dev sysfs.DevNum) error {
	err := ka.assembly.AddDisk(array, dev)
	ka.k.adds++
	ka.k.after("add " + strconv.Itoa(ka.k.adds-1))
	return err
}

func (ka killAssembly) Start(array string, readAuto bool) error {
	err := ka.assembly.Start(array, readAuto)
	ka.k.after("run")
	return err
}

func (ka killAssembly) MakeLink(link, target string) error {
	err := ka.assembly.MakeLink(link, target)
	ka.k.after("link")
	return err
}

// TestCreateKilledChild is the child of TestVMCreateKilled; it skips
// when not run by it.
func TestCreateKilledChild(t *testing.T) {
	at := os.Getenv(killAtEnv)
	if at == "" {
		t.Skip("the child process of TestVMCreateKilled")
	}
	var req CreateRequest
	if err := json.Unmarshal([]byte(os.Getenv(killReqEnv)), &req); err != nil {
		t.Fatal(err)
	}
	m, err := Open(&Config{RunDir: os.Getenv(killRunEnv)})
	if err != nil {
		t.Fatal(err)
	}
	k := &killer{at: at}
	m.ops.k = killKernel{kernel: m.ops.k, k: k, devs: req.Devices}
	m.asm = killAssembly{assembly: m.asm, k: k}
	_, err = m.Create(context.Background(), req)
	t.Fatalf("the create ran to its end without reaching step %q: %v", at, err)
}

// killCase is one kill: the step, whether a rerun may complete, what
// a refused rerun must name ("md" for the md device the kill left, else
// a device index), and whether every superblock was written by then (an
// array that then starts is whole).
type killCase struct {
	at        string
	completes bool
	names     []string
	whole     bool
	// what, when set, is in the refusal (what the kill left).
	what string
	// runs: the kill left a running array, whose own writes (the
	// resync) change the disks after the kill.
	runs bool
	// unfinished: after assembly held the array back, mdctl run
	// --unfinished starts it degraded (mdadm's way, asked for).
	unfinished bool
}

func TestVMCreateKilled(t *testing.T) {
	mirror := []killCase{
		{at: "claim 1", completes: true},
		{at: "regions 0", names: []string{"0"}, what: "md write-intent bitmap superblock"},
		{at: "torn 0", names: []string{"0"}, what: "md superblock 1.2"},
		{at: "write 0", names: []string{"0"}, unfinished: true},
		{at: "regions 1", names: []string{"0", "1"}, what: "md write-intent bitmap superblock"},
		{at: "torn 1", names: []string{"0", "1"}},
		{at: "write 1", names: []string{"0", "1"}, whole: true},
		{at: "new_array", names: []string{"0", "1"}, whole: true},
		{at: "node", names: []string{"0", "1"}, whole: true},
		{at: "set_array_info", names: []string{"0", "1"}, whole: true},
		{at: "add 0", names: []string{"md", "1"}, whole: true},
		{at: "add 1", names: []string{"md"}, whole: true},
		{at: "run", names: []string{"md"}, whole: true, runs: true},
		{at: "link", names: []string{"md"}, whole: true, runs: true},
	}
	t.Run("mirror-1.2-bitmap", func(t *testing.T) {
		for _, kc := range mirror {
			t.Run(strings.ReplaceAll(kc.at, " ", "-"), func(t *testing.T) {
				killedCreate(t, CreateRequest{Array: "/dev/md/killed", Level: 1, RaidDevices: 2, Name: "killed", Metadata: superblock.Version12,
					Bitmap: "internal"}, 2, kc)
			})
		}
	})
	// raid5: the spare that recovery fills is written first, then the
	// members in slot order; none of these prefixes may start.
	t.Run("raid5", func(t *testing.T) {
		for _, kc := range []killCase{
			{at: "write 3", names: []string{"3"}},
			{at: "write 0", names: []string{"3", "0"}},
			{at: "write 1", names: []string{"3", "0", "1"}},
		} {
			t.Run(strings.ReplaceAll(kc.at, " ", "-"), func(t *testing.T) {
				killedCreate(t, CreateRequest{Array: "/dev/md/killed5", Level: 5, RaidDevices: 4, Name: "killed5", Metadata: superblock.Version12}, 4, kc)
			})
		}
	})
}

// killedCreate runs req on n scratch disks in a child killed at kc.at,
// then checks the rerun and assembly.
func killedCreate(t *testing.T, req CreateRequest, n int, kc killCase) {
	c := qt.New(t)
	ctx := context.Background()
	disks := guest.ScratchDisks(t, n)
	for _, d := range disks {
		req.Devices = append(req.Devices, d.Path)
	}
	before := arraysNow(c)
	os.Remove(req.Array) // a link an earlier test left
	// The md devices the kill left, also those without members, are
	// cleared: the disks' reset stops only arrays.
	t.Cleanup(func() {
		guest.StopAll()
		for _, md := range newArrays(c, before) {
			guest.WriteFile(guest.SysPath(md, "array_state"), "clear")
		}
		// Without udev the link outlives its array, and a later md
		// device of that number would make it someone else's.
		os.Remove(req.Array)
	})
	runDir := t.TempDir()
	b, err := json.Marshal(req)
	c.Assert(err, qt.IsNil)
	exe, err := os.Executable()
	c.Assert(err, qt.IsNil)
	cmd := exec.Command(exe, "-test.run=^TestCreateKilledChild$", "-test.v")
	cmd.Env = append(os.Environ(), killAtEnv+"="+kc.at, killReqEnv+"="+string(b), killRunEnv+"="+runDir)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	c.Assert(errors.As(err, &ee), qt.IsTrue, qt.Commentf("%v\n%s", err, out))
	ws, ok := ee.Sys().(syscall.WaitStatus)
	c.Assert(ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL, qt.IsTrue, qt.Commentf("not killed: %v\n%s", err, out))
	left := newArrays(c, before)
	t.Logf("killed after %q; md devices left: %v", kc.at, left)

	// The rerun, on what the kill left.
	sums := make([]uint64, n)
	for i, d := range disks {
		sums[i] = hashDisk(c, d.Path)
	}
	m, err := Open(&Config{RunDir: runDir})
	c.Assert(err, qt.IsNil)
	res, err := m.Create(ctx, req)
	if kc.completes {
		c.Assert(err, qt.IsNil)
		c.Check(guest.ReadAttr(c, res.Array, "degraded"), qt.Equals, "0")
		return
	}
	c.Assert(err, qt.ErrorIs, ErrRefused, qt.Commentf("%v", err))
	t.Logf("rerun refused: %v", err)
	for _, nm := range kc.names {
		want := ""
		if nm == "md" {
			c.Assert(left, qt.Not(qt.HasLen), 0)
			want = left[0]
		} else {
			i, _ := strconv.Atoi(nm)
			want = disks[i].Path
		}
		c.Check(err, qt.ErrorMatches, ".*"+regexp.QuoteMeta(want)+".*")
	}
	if kc.what != "" {
		c.Check(err, qt.ErrorMatches, ".*"+regexp.QuoteMeta(kc.what)+".*")
	}
	for i, d := range disks {
		if kc.runs {
			break // the array's resync writes them
		}
		c.Check(hashDisk(c, d.Path), qt.Equals, sums[i], qt.Commentf("%s changed by a refused create", d.Path))
	}
	c.Check(newArrays(c, before), qt.DeepEquals, left, qt.Commentf("the refused create left an md device"))

	// Assembly, as a boot would try it: never a degraded start.
	ares, aerr := m.Assemble(ctx, AssembleRequest{Devices: req.Devices, Run: true})
	t.Logf("assemble --run: %v", aerr)
	if ares != nil {
		for _, r := range ares.Added {
			t.Logf("  %s -> %s: started %s, %d of %d; held: %s", r.Device, r.Array, r.Started, r.Present, r.Expected, r.Held)
		}
	}
	for _, md := range newArrays(c, before) {
		if guest.ReadAttr(c, md, "array_state") == "inactive" {
			rerr := m.Run(ctx, md)
			t.Logf("run %s: %v", md, rerr)
		}
	}
	started := false
	for _, md := range newArrays(c, before) {
		st := guest.ReadAttr(c, md, "array_state")
		if st == "inactive" || st == "clear" {
			continue
		}
		started = true
		c.Check(guest.ReadAttr(c, md, "degraded"), qt.Equals, "0", qt.Commentf("%s started degraded from what a killed create left", md))
		c.Check(guest.ReadAttr(c, md, "raid_disks"), qt.Equals, strconv.Itoa(req.RaidDevices))
	}
	// Every superblock written: the array is complete and may start;
	// short of that it must not.
	if !kc.whole {
		c.Check(started, qt.IsFalse, qt.Commentf("an array started from part of a create"))
	}
	if kc.unfinished {
		// Asked for, it starts degraded, as mdadm --run would.
		mds := newArrays(c, before)
		c.Assert(mds, qt.HasLen, 1)
		c.Assert(m.Run(ctx, mds[0], &Change{Unfinished: true}), qt.IsNil)
		c.Check(guest.ReadAttr(c, mds[0], "degraded"), qt.Equals, "1")
	}
}

// arraysNow lists the md devices.
func arraysNow(c *qt.C) []string {
	a, err := guest.Arrays()
	c.Assert(err, qt.IsNil)
	return a
}

// newArrays lists the md devices not in before.
func newArrays(c *qt.C, before []string) []string {
	var out []string
	for _, md := range arraysNow(c) {
		if !slices.Contains(before, md) {
			out = append(out, md)
		}
	}
	return out
}
