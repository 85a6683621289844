//go:build vmtest

package main

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	qt "github.com/frankban/quicktest"

	"github.com/go-mdraid/mdraid/internal/vmtest/guest"
)

// TestVMNodeExporterAgrees runs Debian's prometheus-node-exporter (md
// collector only) in the guest beside mdctl status --format=prometheus on
// the same live arrays: healthy, degraded, recovering (held by sync_max),
// a pending resync (frozen) and inactive; then the healthy one again
// while a check runs on it. Every node_md_* family both
// print has the same HELP and TYPE, and every series the same labels and
// value, apart from the differences documented in package md/metrics
// (the families node_exporter 1.5.0 lacks; an inactive array's blocks and
// required disks; a running sync's position).
func TestVMNodeExporterAgrees(t *testing.T) {
	c := qt.New(t)
	bin := os.Getenv("MDRAID_VM_NODE_EXPORTER")
	if bin == "" {
		t.Skip("no prometheus-node-exporter on the host (scripts/ci-deps installs it)")
	}
	guest.Run(t, "ip", "link", "set", "lo", "up")
	d := guest.ScratchDisks(t, 8)
	one := func(i int) []guest.Disk { return d[i : i+1] }

	healthy := vmCreate(c, "/dev/md/nehealthy", d[0:2], "--level=1", "--raid-devices=2")
	degraded := vmCreate(c, "/dev/md/nedegraded", one(2), "--level=1", "--raid-devices=2", "missing")
	recovering := vmCreate(c, "/dev/md/nerecover", one(3), "--level=1", "--raid-devices=2", "missing")
	guest.WriteAttr(c, recovering, "sync_max", "32768")
	guest.Mdadm(c, "/dev/md/nerecover", "--add", d[4].Path)
	for deadline := time.Now().Add(3 * time.Minute); !strings.HasPrefix(guest.ReadAttr(c, recovering, "sync_completed"), "32768 / "); {
		if time.Now().After(deadline) {
			c.Fatalf("the recovery of %s did not reach sync_max: %s", recovering, guest.MDStat(t))
		}
		time.Sleep(50 * time.Millisecond)
	}

	// A resync that has not run: created without --assume-clean while
	// the system's speed limit holds it, then frozen.
	old := strings.TrimSpace(guest.Run(t, "cat", "/proc/sys/dev/raid/speed_limit_max"))
	c.Assert(guest.WriteFile("/proc/sys/dev/raid/speed_limit_max", "1000"), qt.IsNil)
	defer guest.WriteFile("/proc/sys/dev/raid/speed_limit_max", old)
	args := []string{"--create", "/dev/md/nepending", "--run", "--level=1", "--raid-devices=2", d[5].Path, d[6].Path}
	guest.Mdadm(c, args...)
	pending := guest.ArrayName(c, "/dev/md/nepending")
	// Freeze once the resync runs (sync_completed "N / M"), written by a
	// shell as testdata/gen does: in two runs on 6.1 frozen written from
	// this test's process (WriteAttr) left the resync going. (Not
	// explained; 6.1's action_store takes the array lock
	// interruptibly, and a Go process gets signals.)
	for deadline := time.Now().Add(time.Minute); !strings.Contains(guest.ReadAttr(c, pending, "sync_completed"), " / "); {
		if time.Now().After(deadline) {
			c.Fatalf("the resync of %s did not start: %s", pending, guest.MDStat(t))
		}
		time.Sleep(20 * time.Millisecond)
	}
	guest.Run(t, "sh", "-c", "echo frozen > "+guest.SysPath(pending, "sync_action"))
	guest.WaitAttr(c, pending, "sync_completed", "none", time.Minute)
	rs := guest.ReadAttr(c, pending, "resync_start")
	_, err := strconv.ParseUint(rs, 10, 64)
	c.Assert(err, qt.IsNil, qt.Commentf("resync_start %q: no resync pending", rs))

	// Inactive: a degraded mirror stopped with its members kept
	// (inactive written to array_state).
	inactive := vmCreate(c, "/dev/md/neinactive", one(7), "--level=1", "--raid-devices=2", "missing")
	guest.WriteAttr(c, inactive, "array_state", "inactive")

	// compare scrapes both and checks the arrays devs, each allowed to
	// differ in the families allowed names for it.
	compare := func(t *testing.T, devs []string, allowed map[string]map[string]bool) string {
		theirsText := scrapeNodeExporter(t, bin, "/proc", "/sys")
		_, ours, errOut := runCLI(t, "status", "--format=prometheus")
		t.Logf("mdstat:\n%s", guest.MDStat(t))
		for _, dev := range devs {
			t.Run(dev, func(t *testing.T) {
				c := qt.New(t)
				theirs, mine := mdFamilies(t, theirsText, dev), mdFamilies(t, ours, dev)
				c.Assert(len(theirs) > 0, qt.IsTrue, qt.Commentf("node_exporter shows nothing for %s:\n%s", dev, theirsText))
				for name, tf := range theirs {
					of, ok := mine[name]
					if !c.Check(ok, qt.IsTrue, qt.Commentf("mdctl lacks %s (stderr %s)", name, errOut)) {
						continue
					}
					c.Check(of.help, qt.Equals, tf.help, qt.Commentf("HELP of %s", name))
					c.Check(of.typ, qt.Equals, tf.typ, qt.Commentf("TYPE of %s", name))
					c.Check(len(of.series), qt.Equals, len(tf.series), qt.Commentf("%s: mdctl %v, node_exporter %v", name, of.series, tf.series))
					for k, v := range tf.series {
						if allowed[dev][name] {
							continue
						}
						g, ok := of.series[k]
						c.Check(ok, qt.IsTrue, qt.Commentf("%s%s: mdctl lacks it", name, k))
						c.Check(g, qt.Equals, v, qt.Commentf("%s%s: mdctl %v, node_exporter %v", name, k, g, v))
					}
				}
				for name := range mine {
					if _, ok := theirs[name]; !ok {
						c.Check(nodeExporterVersionDifferences[name], qt.IsTrue, qt.Commentf("%s: node_exporter has no such family", name))
					}
				}
			})
		}
		return ours
	}
	ours := compare(t, []string{healthy, degraded, recovering, pending, inactive}, map[string]map[string]bool{
		// A running sync: mdstat's position against sync_completed.
		recovering: {"node_md_blocks_synced": true},
		// An inactive array (see package md/metrics).
		inactive: {"node_md_blocks": true, "node_md_blocks_synced": true, "node_md_disks_required": true},
	})
	if pending != "" {
		// The pending resync is what node_exporter reads from mdstat.
		c.Check(mdFamilies(t, ours, pending)["node_md_blocks_synced"].series, qt.DeepEquals, map[string]float64{`{device="` + pending + `"}`: 0})
	}

	// A check: the healthy mirror checked up to a held sync_max (the
	// system's speed limit is still low).
	guest.WriteAttr(c, healthy, "sync_max", "32768")
	guest.WriteAttr(c, healthy, "sync_action", "check")
	for deadline := time.Now().Add(3 * time.Minute); !strings.HasPrefix(guest.ReadAttr(c, healthy, "sync_completed"), "32768 / "); {
		if time.Now().After(deadline) {
			c.Fatalf("the check of %s did not reach sync_max: %s", healthy, guest.MDStat(t))
		}
		time.Sleep(50 * time.Millisecond)
	}
	c.Assert(guest.ReadAttr(c, healthy, "sync_action"), qt.Equals, "check")
	t.Run("checking", func(t *testing.T) {
		compare(t, []string{healthy}, map[string]map[string]bool{
			// A running sync: mdstat's position against sync_completed.
			healthy: {"node_md_blocks_synced": true},
		})
	})
	guest.WriteAttr(c, healthy, "sync_action", "idle")
}
