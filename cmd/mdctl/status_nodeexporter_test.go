package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	qt "github.com/frankban/quicktest"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/procfs"
	procsysfs "github.com/prometheus/procfs/sysfs"

	"github.com/go-mdraid/mdraid/internal/fixture"
	"github.com/go-mdraid/mdraid/md"
)

// nodeExporterMD is what node_exporter's md collector (collector/
// mdadm_linux.go) reports for one array, computed with the parsers it
// uses: prometheus/procfs's MDStat on the capture's /proc/mdstat and its
// sysfs Mdraids on the capture's sysfs tree.
func nodeExporterMD(t *testing.T, fc *fixture.Case, sysRoot string) map[string]float64 {
	t.Helper()
	proc := t.TempDir()
	if err := os.WriteFile(filepath.Join(proc, "mdstat"), []byte(fc.Texts["mdstat.txt"]), 0o644); err != nil {
		t.Fatal(err)
	}
	pfs, err := procfs.NewFS(proc)
	if err != nil {
		t.Fatal(err)
	}
	stats, err := pfs.MDStat()
	if err != nil {
		t.Fatalf("procfs MDStat: %v", err)
	}
	want := map[string]float64{}
	found := false
	for _, s := range stats {
		if s.Name != fc.Info.Array {
			continue
		}
		found = true
		for _, st := range []string{"active", "inactive", "recovering", "resync", "check"} {
			v := 0.0
			// node_exporter's stateVals keys: resyncing, checking.
			if map[string]string{"resync": "resyncing", "check": "checking"}[st] == s.ActivityState || st == s.ActivityState {
				v = 1
			}
			want[fmt.Sprintf("node_md_state{state=%q}", st)] = v
		}
		want[`node_md_disks{state="active"}`] = float64(s.DisksActive)
		want[`node_md_disks{state="failed"}`] = float64(s.DisksFailed)
		want[`node_md_disks{state="spare"}`] = float64(s.DisksSpare)
		want["node_md_disks_required"] = float64(s.DisksTotal)
		want["node_md_blocks"] = float64(s.BlocksTotal)
		want["node_md_blocks_synced"] = float64(s.BlocksSynced)
	}
	if !found {
		t.Fatalf("%s is not in the capture's mdstat", fc.Info.Array)
	}
	sfs, err := procsysfs.NewFS(sysRoot)
	if err != nil {
		t.Fatal(err)
	}
	raids, err := sfs.Mdraids()
	if err != nil {
		// node_exporter's collector fails here and sends neither
		// node_md_raid_disks nor node_md_degraded for any array.
		want["mdraids error"] = 1
		return want
	}
	for _, r := range raids {
		if r.Device != fc.Info.Array {
			continue
		}
		if r.Disks != nil {
			want["node_md_raid_disks"] = float64(*r.Disks)
		}
		want["node_md_degraded"] = float64(r.DegradedDisks)
	}
	return want
}

// mdctlMD is the node_md_* series mdctl status --format=prometheus prints
// for the one array of a capture, keyed as nodeExporterMD keys them.
func mdctlMD(t *testing.T, out string) map[string]float64 {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(strings.NewReader(out))
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	got := map[string]float64{}
	for name, mf := range mfs {
		if !strings.HasPrefix(name, "node_md_") {
			continue
		}
		for _, m := range mf.GetMetric() {
			key := name
			for _, l := range m.GetLabel() {
				if l.GetName() == "state" {
					key += fmt.Sprintf("{state=%q}", l.GetValue())
				}
			}
			got[key] = m.GetGauge().GetValue()
		}
	}
	return got
}

// nodeExporterDifferences are the node_md_* values in which mdctl differs
// from node_exporter on a real capture, each for a reason given in
// the documentation of package md/metrics ("node_exporter's node_md_* series"). The test fails
// when one of them goes away too, so the list stays true.
var nodeExporterDifferences = func() map[string]map[string]bool {
	d := map[string]map[string]bool{}
	// add lists keys for each capture of the names (a name ending in
	// "*" stands for the captures on 6.1, 6.12 and 7.2).
	add := func(names []string, keys ...string) {
		for _, n := range names {
			all := []string{n}
			if base, ok := strings.CutSuffix(n, "*"); ok {
				all = []string{base, base + "-k6.12", base + "-k7.2"}
			}
			for _, c := range all {
				d[c] = map[string]bool{}
				for _, key := range keys {
					d[c][key] = true
				}
			}
		}
	}
	// A running sync: node_exporter takes the position from
	// /proc/mdstat (curr_resync less the I/O in flight), mdctl from
	// sync_completed (the last checkpoint); they differ by what is in
	// flight when the capture was made.
	add([]string{"raid1-bitmap"}, "node_md_blocks_synced")
	add([]string{"raid1-check-running", "raid1-check-running-k7.2"}, "node_md_blocks_synced")
	// An inactive array: mdstat shows the members' total size and no
	// [n/m], and raid_disks reads empty, so node_exporter reports that
	// size as blocks and blocks synced, 0 disks required and no
	// raid_disks; mdctl reports 0 blocks (it serves nothing) and the
	// slot count of the newest superblock.
	add([]string{"raid5-inactive*"}, "node_md_blocks", "node_md_blocks_synced", "node_md_disks_required", "node_md_raid_disks")
	// A delayed resync: procfs (v0.22) cannot parse sync_completed
	// "delayed", so node_exporter's collector fails after the mdstat
	// series and sends no node_md_raid_disks or node_md_degraded for
	// any array.
	add([]string{"raid1-resync-delayed*"}, "mdraids error", "node_md_raid_disks", "node_md_degraded")
	return d
}()

// TestMetricsMatchNodeExporter: on every real capture, each node_md_*
// series mdctl prints has the value node_exporter's md collector gives
// for the same kernel state (computed with the prometheus/procfs parsers
// it uses, on the capture's mdstat and sysfs), apart from the listed
// differences.
func TestMetricsMatchNodeExporter(t *testing.T) {
	for _, fc := range fixture.All(t) {
		if strings.Count(fc.Texts["mdstat.txt"], " : ") > 2 && filepath.Base(filepath.Dir(fc.Dir)) == "bench" {
			continue // a benchmark capture of many arrays
		}
		t.Run(filepath.Base(fc.Dir), func(t *testing.T) {
			c := qt.New(t)
			sys, dev := fc.System(t)
			want := nodeExporterMD(t, fc, sys)
			code, out, errOut := runCLI(t, "status", "--format=prometheus", "--sysfs", sys, "--dev", dev, fc.Info.Array)
			c.Assert(code, qt.Equals, exitHealthy, qt.Commentf("%s", errOut))
			got := mdctlMD(t, out)
			differs := nodeExporterDifferences[filepath.Base(fc.Dir)]
			for k := range got {
				if _, ok := want[k]; !ok && !differs[k] {
					c.Errorf("%s: mdctl prints %v, node_exporter has no such series", k, got[k])
				}
			}
			for k := range differs {
				_, inWant := want[k]
				_, inGot := got[k]
				c.Check(inWant || inGot, qt.IsTrue, qt.Commentf("%s: listed as a difference but neither prints it", k))
			}
			for k, w := range want {
				g, ok := got[k]
				if differs[k] {
					c.Check(ok && g == w, qt.IsFalse, qt.Commentf("%s: listed as a difference but equal (%v): drop it from the list and the doc", k, w))
					continue
				}
				c.Check(ok, qt.IsTrue, qt.Commentf("%s missing", k))
				c.Check(g, qt.Equals, w, qt.Commentf("%s: mdctl %v, node_exporter %v", k, g, w))
			}
		})
	}
}

// mdstatSync is the sync line of an array in /proc/mdstat ("" if none).
func mdstatSync(mdstat, array string) string {
	blocks := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(array) + ` : [^\n]*\n((?:[ \t]+[^\n]*\n?)*)`).FindStringSubmatch(mdstat)
	if blocks == nil {
		return ""
	}
	for _, l := range strings.Split(blocks[1], "\n") {
		if strings.Contains(l, "resync") || strings.Contains(l, "recovery") || strings.Contains(l, "check") || strings.Contains(l, "reshape") {
			return strings.TrimSpace(l)
		}
	}
	return ""
}

// TestStatusPendingAndDelayedResync: on the real captures of a resync
// that has not started (frozen; read-auto; delayed behind another array
// on the same disks) from 6.1, 6.12 and 7.2, status says PENDING or
// DELAYED exactly when the kernel's mdstat says resync=PENDING or
// resync=DELAYED (and mdadm --detail "(PENDING)"/"(DELAYED)"), the
// redundancy is not full, JSON carries pending and resync_start, and
// node_md_blocks_synced is 0 as node_exporter reports it. Every other
// capture shows no pending sync.
func TestStatusPendingAndDelayedResync(t *testing.T) {
	seen := map[string]int{}
	for _, fc := range fixture.All(t) {
		t.Run(filepath.Base(fc.Dir), func(t *testing.T) {
			c := qt.New(t)
			sync := mdstatSync(fc.Texts["mdstat.txt"], fc.Info.Array)
			var want string
			switch {
			case strings.Contains(sync, "resync=PENDING"):
				want = md.PendingResync
				c.Check(fc.Texts["detail.txt"], qt.Contains, "(PENDING)")
			case strings.Contains(sync, "resync=DELAYED"):
				want = md.PendingDelayed
				c.Check(fc.Texts["detail.txt"], qt.Contains, "(DELAYED)")
			}
			seen[want]++
			sys, dev := fc.System(t)
			roots := []string{"--sysfs", sys, "--dev", dev, fc.Info.Array}

			_, out, _ := runCLI(t, append([]string{"status", "--json"}, roots...)...)
			var r md.Report
			c.Assert(json.Unmarshal([]byte(out), &r), qt.IsNil)
			c.Assert(r.Arrays, qt.HasLen, 1)
			a := r.Arrays[0]
			c.Check(a.Activity.Pending, qt.Equals, want)

			_, text, _ := runCLI(t, append([]string{"status"}, roots...)...)
			_, prom, _ := runCLI(t, append([]string{"status", "--format=prometheus"}, roots...)...)
			synced := mdctlMD(t, prom)["node_md_blocks_synced"]
			if want == "" {
				c.Check(text, qt.Not(qt.Contains), "PENDING")
				c.Check(text, qt.Not(qt.Contains), "DELAYED")
				return
			}
			c.Check(a.Redundancy, qt.Equals, md.Reduced)
			c.Check(text, qt.Contains, "redundancy reduced")
			c.Check(text, qt.Contains, "  resync: "+strings.ToUpper(want))
			c.Check(synced, qt.Equals, 0.0)
			// resync_start as the kernel shows it.
			m := regexp.MustCompile(`md/resync_start" "(\d+)\\n"`).FindStringSubmatch(fc.Texts["sysfs.txt"])
			c.Assert(m, qt.HasLen, 2)
			rs, err := strconv.ParseUint(m[1], 10, 64)
			c.Assert(err, qt.IsNil)
			c.Assert(a.Activity.ResyncStartSectors, qt.Not(qt.IsNil))
			c.Check(*a.Activity.ResyncStartSectors, qt.Equals, rs)
			if a.State == "read-auto" {
				c.Check(a.Availability, qt.Equals, md.ReadOnly)
				c.Check(text, qt.Contains, "it starts at the first write")
			}
		})
	}
	// Each kernel of the matrix: pending (frozen), pending (read-auto),
	// and delayed.
	qt.Check(t, seen[md.PendingResync] >= 6, qt.IsTrue, qt.Commentf("%v", seen))
	qt.Check(t, seen[md.PendingDelayed] >= 3, qt.IsTrue, qt.Commentf("%v", seen))
}
