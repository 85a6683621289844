package watch

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	qt "github.com/frankban/quicktest"

	"github.com/go-mdraid/mdraid/md"
)

// TestDiffCheckFixture follows a check through snapshots of a real
// capture (a clean raid1, Linux 6.1). The captures hold no running check,
// so each step writes into the materialized tree what the kernel shows
// during and after a check (sync_action, sync_completed, last_sync_action,
// mismatch_cnt), and the snapshot is taken by Discover as the watcher
// takes it.
func TestDiffCheckFixture(t *testing.T) {
	m, sys := fixtureSystem(t, "raid1-v1.2")
	dir := filepath.Join(sys, "block", "md0", "md")
	steps := []struct {
		name  string
		attrs map[string]string
		want  []string
	}{
		{"idle, as captured", nil, []string{}},
		{"check requested, not started", map[string]string{"sync_action": "check"}, []string{}},
		{"check runs", map[string]string{"sync_completed": "8192 / 129024", "last_sync_action": "check"},
			[]string{"RebuildStarted md0 check 6%", "CheckStarted md0 check 6%"}},
		{"check passes 40%", map[string]string{"sync_completed": "65536 / 129024", "mismatch_cnt": "128"},
			[]string{"Rebuild40 md0 check 40%"}},
		{"check finished", map[string]string{"sync_action": "idle", "sync_completed": "none", "mismatch_cnt": "256"},
			[]string{"RebuildFinished md0 check", "CheckFinished md0 check mismatches=256"}},
		{"repair resumed", map[string]string{"sync_action": "repair", "last_sync_action": "repair", "sync_completed": "64512 / 129024", "mismatch_cnt": "0"},
			[]string{"RebuildStarted md0 repair 50%", "CheckStarted md0 repair 50%"}},
		{"repair stopped", map[string]string{"sync_action": "idle", "sync_completed": "none", "mismatch_cnt": "128"},
			[]string{"RebuildFinished md0 repair", "CheckFinished md0 repair mismatches=128"}},
		{"resync", map[string]string{"sync_action": "resync", "last_sync_action": "resync", "sync_completed": "0 / 129024", "mismatch_cnt": "0"},
			[]string{"RebuildStarted md0 resync 0%"}},
		{"resync finished", map[string]string{"sync_action": "idle", "sync_completed": "none"},
			[]string{"RebuildFinished md0 resync"}},
	}
	var prev *md.Report
	for _, s := range steps {
		for k, v := range s.attrs {
			qt.Assert(t, os.WriteFile(filepath.Join(dir, k), []byte(v+"\n"), 0o644), qt.IsNil)
		}
		cur, err := m.Discover(context.Background())
		qt.Assert(t, err, qt.IsNil)
		qt.Assert(t, cur.Arrays, qt.HasLen, 1)
		qt.Assert(t, cur.Arrays[0].Errors, qt.HasLen, 0)
		// A check is activity, not degradation.
		qt.Check(t, cur.Arrays[0].Availability, qt.Equals, md.Online, qt.Commentf("%s", s.name))
		qt.Check(t, brief(diff(prev, cur, nil)), qt.DeepEquals, s.want, qt.Commentf("%s", s.name))
		prev = cur
	}
}
