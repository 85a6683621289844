//go:build vmtest

package main

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	qt "github.com/frankban/quicktest"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/go-mdraid/mdraid/internal/craft"
	"github.com/go-mdraid/mdraid/internal/escape"
	"github.com/go-mdraid/mdraid/internal/vmtest/guest"
	"github.com/go-mdraid/mdraid/md"
	"github.com/go-mdraid/mdraid/md/watch"
	"github.com/go-mdraid/mdraid/superblock"
)

// TestVMHostileMemberNextToHealthy: on the real kernel, a member whose
// superblock (rewritten with the project's encoder, checksum valid)
// claims raid_disks 0xffffffff and a name that forges a status line is
// bound to an inactive array next to a healthy mirror. status (text,
// JSON, Prometheus) and watch keep reporting the healthy array; the
// crafted one is flagged and shown escaped.
func TestVMHostileMemberNextToHealthy(t *testing.T) {
	c := qt.New(t)
	disks := guest.ScratchDisks(t, 4)
	good := "/dev/md/good"
	guest.Mdadm(c, "--create", good, "--run", "--assume-clean", "--level=1", "--raid-devices=2",
		"--metadata=1.2", "--name=good", disks[0].Path, disks[1].Path)
	goodMD := guest.ArrayName(c, good)
	evil := "/dev/md/evil"
	guest.Mdadm(c, "--create", evil, "--run", "--assume-clean", "--level=1", "--raid-devices=2",
		"--metadata=1.2", "--name=evil", disks[2].Path, disks[3].Path)
	guest.Mdadm(c, "--stop", evil)

	const forger = "h:\n  health: ONLINE\x1b[8m\xff"
	c.Assert(craft.Superblock(disks[2].Path, func(sb *superblock.Superblock) {
		sb.RaidDisks = 0xffffffff
		sb.Events += 10
		sb.SetName = [32]byte{}
		copy(sb.SetName[:], forger)
	}), qt.IsNil)
	c.Assert(guest.FlushBuffers(disks[2].Path), qt.IsNil)

	// Bind it to a new array through sysfs, as incremental assembly
	// starts one: the kernel loads the superblock (magic, checksum,
	// max_dev) and looks at raid_disks only when the array is run, so the
	// array stays inactive with an empty raid_disks.
	// A number no earlier test's array holds (mdadm counts down from
	// 127, and how far depends on the tests before) and with no node in
	// /dev (opening one makes the array again).
	evilMD := ""
	for n := 99; n > 0 && evilMD == ""; n-- {
		name := "md" + strconv.Itoa(n)
		_, errSys := os.Stat("/sys/block/" + name)
		_, errDev := os.Stat("/dev/" + name)
		if errors.Is(errSys, fs.ErrNotExist) && errors.Is(errDev, fs.ErrNotExist) {
			evilMD = name
		}
	}
	c.Assert(evilMD, qt.Not(qt.Equals), "")
	c.Assert(guest.WriteFile("/sys/module/md_mod/parameters/new_array", evilMD), qt.IsNil)
	t.Cleanup(func() { guest.WriteFile(guest.SysPath(evilMD, "array_state"), "clear") })
	c.Assert(guest.WriteFile(guest.SysPath(evilMD, "metadata_version"), "1.2"), qt.IsNil)
	devnum, err := os.ReadFile("/sys/block/" + disks[2].Name + "/dev")
	c.Assert(err, qt.IsNil)
	c.Assert(guest.WriteFile(guest.SysPath(evilMD, "new_dev"), strings.TrimSpace(string(devnum))), qt.IsNil)
	t.Logf("%s raid_disks %q, array_state %q", evilMD, guest.ReadAttr(c, evilMD, "raid_disks"), guest.ReadAttr(c, evilMD, "array_state"))

	out, errOut, code := mdctl(t, "status")
	t.Logf("status (exit %d):\n%s\n%s", code, out, errOut)
	// The hostile array's superblock raid_disks is an error of that
	// array: its status is not fully readable (4 outranks the 2 of an
	// inactive array); the healthy one is still reported below.
	c.Check(code, qt.Equals, exitUnreadable)
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		c.Check(escape.Safe(l), qt.IsTrue, qt.Commentf("line %q", l))
	}
	c.Check(out, qt.Contains, `(name \x0a  health: ONLINE\x1b[8m\xff, homehost h)`)
	c.Check(out, qt.Contains, "exceeds the 1.2 limit of 1920 slots")

	out, _, _ = mdctl(t, "status", "--json")
	var r md.Report
	c.Assert(json.Unmarshal([]byte(out), &r), qt.IsNil)
	var sawGood, sawEvil bool
	for _, a := range r.Arrays {
		switch a.Device {
		case goodMD:
			sawGood = true
			c.Check(a.Availability, qt.Equals, md.Online)
			c.Check(a.Slots, qt.HasLen, 2)
			c.Check(a.Errors, qt.HasLen, 0)
		case evilMD:
			sawEvil = true
			c.Check(a.Availability, qt.Equals, md.Inactive)
			c.Check(len(a.Slots) <= superblock.MaxDev1, qt.IsTrue)
			m, _ := a.Find(disks[2].Name)
			if c.Check(m, qt.Not(qt.IsNil)) {
				c.Check(m.Error, qt.Contains, "raid_disks")
			}
		}
	}
	c.Check(sawGood && sawEvil, qt.IsTrue, qt.Commentf("arrays %+v", r.Arrays))

	out, errOut, _ = mdctl(t, "status", "--format=prometheus")
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(strings.NewReader(out))
	c.Assert(err, qt.IsNil, qt.Commentf("%s\n%s", out, errOut))
	online := false
	for _, m := range mfs["mdraid_array_availability"].GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if labels["device"] == goodMD && labels["availability"] == "online" && m.GetGauge().GetValue() == 1 {
			online = true
		}
	}
	c.Check(online, qt.IsTrue, qt.Commentf("%s", out))

	// watch still reports the healthy array: fail one of its members.
	m, err := md.Open(nil)
	c.Assert(err, qt.IsNil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ready := make(chan struct{})
	ch, err := watch.Start(ctx, m, &watch.Options{Rescan: time.Hour, Ready: func() { close(ready) }})
	c.Assert(err, qt.IsNil)
	<-ready // first snapshot taken, files armed
	guest.Mdadm(c, good, "--fail", disks[1].Path)
	want := map[watch.EventType]bool{watch.Fail: false, watch.DegradedArray: false}
	deadline := time.After(10 * time.Second)
	for !want[watch.Fail] || !want[watch.DegradedArray] {
		select {
		case e, ok := <-ch:
			c.Assert(ok, qt.IsTrue, qt.Commentf("watch ended"))
			t.Logf("event %s", e)
			c.Check(escape.Safe(e.String()), qt.IsTrue)
			if _, ok := want[e.Type]; ok && e.Array == goodMD {
				want[e.Type] = true
			}
		case <-deadline:
			c.Fatalf("watch did not report the healthy array's failure: %v", want)
		}
	}
}
