package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	qt "github.com/frankban/quicktest"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/go-mdraid/mdraid/internal/fixture"
	"github.com/go-mdraid/mdraid/md"
	"github.com/go-mdraid/mdraid/sysfs"
)

// checkedSystem materializes a real capture and overwrites md/ attributes
// of its array with what the kernel shows during or after a check: the
// captures hold no check (see TestStatusCheck).
func checkedSystem(t *testing.T, name string, attrs map[string]string) []string {
	t.Helper()
	fc := fixture.Named(t, name)
	sys, dev := fc.System(t)
	for k, v := range attrs {
		p := filepath.Join(sys, "block", fc.Info.Array, "md", k)
		qt.Assert(t, os.WriteFile(p, []byte(v+"\n"), 0o644), qt.IsNil)
	}
	return []string{"--sysfs", sys, "--dev", dev}
}

// TestStatusCheck shows a finished check that found mismatches and a
// running check, in text, JSON and metrics: real captures of a clean
// raid5 and raid1 (Linux 6.1) with sync_action, sync_completed,
// sync_speed, last_sync_action and mismatch_cnt changed to a check's
// values. Neither is degradation: the exit code stays 0.
func TestStatusCheck(t *testing.T) {
	tests := []struct {
		name, fixture string
		attrs         map[string]string
		mismatch      uint64
		last          sysfs.SyncAction
		text          []string
		position      float64 // mdraid_array_check_position_ratio; -1 for none
	}{{
		name:    "raid5 checked",
		fixture: "raid5",
		attrs:   map[string]string{"last_sync_action": "check", "mismatch_cnt": "16"},
		last:    sysfs.ActionCheck, mismatch: 16,
		text:     []string{"  last sync: check, 16 mismatched sectors (8.0 KiB): on raid5 the parity disagrees with the data: a real inconsistency to investigate\n"},
		position: -1,
	}, {
		name:    "raid1 checking",
		fixture: "raid1-v1.2",
		attrs: map[string]string{"sync_action": "check", "last_sync_action": "check", "mismatch_cnt": "256",
			"sync_completed": "32768 / 129024", "sync_speed": "1000"},
		last: sysfs.ActionCheck, mismatch: 256,
		text: []string{
			"  check:   [=====>..............]  25.4% (16.0 MiB / 63.0 MiB)  1000.0 KiB/s  eta 48s\n",
			"  check running: 256 mismatched sectors so far (128.0 KiB): on raid1 this can be harmless (swap, writes in flight, O_DIRECT rewrites); investigate if it recurs on data at rest\n",
		},
		position: 32768.0 / 129024,
	}, {
		name:    "raid1 repaired",
		fixture: "raid1-v1.2",
		attrs:   map[string]string{"last_sync_action": "repair", "mismatch_cnt": "128"},
		last:    sysfs.ActionRepair, mismatch: 128,
		text:     []string{"  last sync: repair, 128 mismatched sectors (64.0 KiB): found and rewritten by the repair: the copies agree again\n"},
		position: -1,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := qt.New(t)
			roots := checkedSystem(t, tt.fixture, tt.attrs)

			code, out, errOut := runCLI(t, append([]string{"status"}, roots...)...)
			c.Check(code, qt.Equals, 0, qt.Commentf("%s", errOut))
			for _, want := range tt.text {
				c.Check(out, qt.Contains, want)
			}
			c.Check(out, qt.Contains, "health: ONLINE")

			code, out, _ = runCLI(t, append([]string{"status", "--json"}, roots...)...)
			c.Check(code, qt.Equals, 0)
			var r md.Report
			c.Assert(json.Unmarshal([]byte(out), &r), qt.IsNil)
			c.Assert(r.Arrays, qt.HasLen, 1)
			c.Check(r.Arrays[0].MismatchSectors, qt.DeepEquals, &tt.mismatch)
			c.Check(r.Arrays[0].LastSyncAction, qt.Equals, tt.last)
			c.Check(strings.Count(out, `"mismatch_sectors": `), qt.Equals, 1)

			code, out, _ = runCLI(t, append([]string{"status", "--format=prometheus"}, roots...)...)
			c.Check(code, qt.Equals, 0)
			p := expfmt.NewTextParser(model.UTF8Validation)
			mfs, err := p.TextToMetricFamilies(strings.NewReader(out))
			c.Assert(err, qt.IsNil, qt.Commentf("%s", out))
			c.Check(mfs["mdraid_array_mismatch_sectors"].GetMetric()[0].GetGauge().GetValue(), qt.Equals, float64(tt.mismatch))
			pos := mfs["mdraid_array_check_position_ratio"]
			if tt.position < 0 {
				c.Check(pos, qt.IsNil)
				return
			}
			c.Assert(pos, qt.Not(qt.IsNil))
			c.Check(pos.GetMetric()[0].GetGauge().GetValue(), qt.Equals, tt.position)
		})
	}
}

// TestSyncLine pins the line for arrays without the attributes and
// without a sync since they started.
func TestSyncLine(t *testing.T) {
	zero := uint64(0)
	tests := []struct {
		name string
		a    md.Array
		want string
	}{
		{"raid0", md.Array{Level: "raid0", Activity: md.Activity{Kind: sysfs.ActionIdle}}, ""},
		{"fresh", md.Array{Level: "raid1", LastSyncAction: sysfs.ActionIdle, MismatchSectors: &zero,
			Activity: md.Activity{Kind: sysfs.ActionIdle}}, "  last sync: none since the array started"},
		{"hostile word", md.Array{Level: "raid1", LastSyncAction: "x\x1b[2J", MismatchSectors: &zero,
			Activity: md.Activity{Kind: sysfs.ActionIdle}}, `  last sync: x\x1b[2J, 0 mismatched sectors`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			qt.Check(t, syncLine(&tt.a), qt.Equals, tt.want)
		})
	}
}
