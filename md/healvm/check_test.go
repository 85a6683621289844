package healvm

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	qt "github.com/frankban/quicktest"

	"github.com/go-mdraid/mdraid/internal/vmtest"
)

// checkLib is shell for the check scenario, after guestLib.
const checkLib = `
# check_running waits while mdctl (pid $1) runs until the check runs
# (sync_action check, sync_completed a position), then prints sync_min.
check_running() {
	n=0
	while :; do
		kill -0 "$1" 2>/dev/null || { echo "mdctl ended before the check was seen running: $(attr sync_action) $(attr sync_min)" >&2; exit 1; }
		if [ "$(attr sync_action)" = check ]; then
			case "$(attr sync_completed)" in none|delayed) ;; *) attr sync_min; return ;; esac
		fi
		n=$((n+1)); [ $n -lt 3000 ] || { echo "no check running" >&2; cat /proc/mdstat >&2; exit 1; }
		sleep 0.02
	done
}
`

// storeCheck returns the store file's "checks" entry for the array uuid
// (any spelling: dashes, colons, case), or nil. Field names are
// md.CheckRecord's in the issue 12 design.
func storeCheck(t *testing.T, path, uuid string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("%s: %v\n%s", path, err, b)
	}
	norm := strings.NewReplacer("-", "", ":", "")
	checks, _ := doc["checks"].([]any)
	for _, e := range checks {
		m, _ := e.(map[string]any)
		if u, _ := m["uuid"].(string); norm.Replace(strings.ToLower(u)) == norm.Replace(strings.ToLower(uuid)) {
			return m
		}
	}
	t.Logf("store %s:\n%s", path, b)
	return nil
}

// stateUint reads a decimal the guest left in the state directory.
func stateUint(t *testing.T, dir, name string) uint64 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return n
}

// checkJSON reads the one array of an `mdctl check --json` output the
// guest saved.
func checkJSON(t *testing.T, dir, name string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Arrays []map[string]any `json:"arrays"`
	}
	if err := json.Unmarshal(b, &doc); err != nil || len(doc.Arrays) != 1 {
		t.Fatalf("%s: not one array of check JSON (%v):\n%s", name, err, b)
	}
	return doc.Arrays[0]
}

// TestCheckCursorSurvivesReboot is issue 12's time-boxed check across a
// reboot:
//
//  1. A mirror throttled to sync_speed_max 1000 KiB/s (8 MiB members, a
//     pass of about 8 s) is checked with --duration 3s and a store on
//     the host: mdctl returns at the deadline with the check stopped
//     (sync_action idle) and the cursor stored, non-zero and not past
//     the kernel's interruption point (sync_min).
//  2. After a reboot, which the kernel's position does not survive
//     (sync_min reads 0 after assembly), `mdctl check --wait` with the
//     same store resumes there (sync_min reads the cursor while the
//     check runs), completes (exit 0, "clean"), and the store's entry
//     has no cursor and records the finished pass.
func TestCheckCursorSurvivesReboot(t *testing.T) {
	c := qt.New(t)
	r, files, share := setup(t)
	disks := []vmtest.Disk{{Path: image(t, "a.img"), Slot: 0}, {Path: image(t, "b.img"), Slot: 1}}

	// Boot 1: create, throttle, check for 3 s.
	boot(t, r, vmtest.Config{
		Files: files, Shares: []vmtest.Share{share}, Disks: disks,
		Cmd: sh(guestLib + checkLib + `
			mdadm --create /dev/md/boot --run --assume-clean --level=1 --raid-devices=2 \
				--metadata=1.2 --name=boot --size=8192 \
				/dev/disk/by-path/pci-0000:00:10.0 /dev/disk/by-path/pci-0000:00:11.0
			mdadm --detail --export /dev/md/boot | sed -n 's/^MD_UUID=//p' > /state/uuid
			echo 1000 > /sys/block/$(md)/md/sync_speed_max
			start=$(date +%s)
			rc=0; ` + mdctl + ` check --duration 3s --store /state/checks.json --json $(md) > /state/first.json || rc=$?
			echo "first check: exit $rc after $(( $(date +%s) - start )) s"; cat /state/first.json
			[ $rc = 0 ]
			[ "$(attr sync_action)" = idle ]
			attr sync_min > /state/stopped_at
			echo "stopped at $(cat /state/stopped_at)"
			mdadm --stop /dev/md/boot
		`),
	})
	dir := share.HostDir
	store := filepath.Join(dir, "checks.json")
	first := checkJSON(t, dir, "first.json")
	c.Check(first["result"], qt.Equals, "stopped")
	c.Check(first["finished"], qt.Equals, false)
	b, err := os.ReadFile(filepath.Join(dir, "uuid"))
	c.Assert(err, qt.IsNil)
	uuid := strings.TrimSpace(string(b))
	c.Assert(uuid, qt.Not(qt.Equals), "")
	stoppedAt := stateUint(t, dir, "stopped_at")
	e := storeCheck(t, store, uuid)
	c.Assert(e, qt.Not(qt.IsNil), qt.Commentf("no checks entry for %s", uuid))
	cur, _ := e["cursor"].(float64)
	cursor := uint64(cur)
	t.Logf("stopped at %d, cursor %d", stoppedAt, cursor)
	c.Assert(cursor > 0, qt.IsTrue, qt.Commentf("no cursor stored: %v", e))
	c.Assert(cursor <= stoppedAt, qt.IsTrue)
	c.Assert(cursor%8, qt.Equals, uint64(0))

	// Boot 2: the kernel has forgotten; the store has not.
	boot(t, r, vmtest.Config{
		Files: files, Shares: []vmtest.Share{share}, Disks: disks,
		Cmd: sh(guestLib + checkLib + `
			mdadm --assemble /dev/md/boot /dev/disk/by-path/pci-0000:00:10.0 /dev/disk/by-path/pci-0000:00:11.0
			wait_idle
			attr sync_min > /state/assembled_sync_min
			echo 1000 > /sys/block/$(md)/md/sync_speed_max
			` + mdctl + ` check --wait --store /state/checks.json --json $(md) > /state/second.json 2>/state/second.err &
			pid=$!
			check_running $pid > /state/resumed_at
			echo "resumed at $(cat /state/resumed_at)"
			echo system > /sys/block/$(md)/md/sync_speed_max
			rc=0; wait $pid || rc=$?
			echo "second check: exit $rc"; cat /state/second.json /state/second.err
			echo $rc > /state/second.rc
			attr sync_min > /state/finished_sync_min
			mdadm --stop /dev/md/boot
		`),
	})
	c.Check(stateUint(t, dir, "assembled_sync_min"), qt.Equals, uint64(0))
	c.Check(stateUint(t, dir, "resumed_at"), qt.Equals, cursor)
	c.Check(stateUint(t, dir, "second.rc"), qt.Equals, uint64(0))
	c.Check(stateUint(t, dir, "finished_sync_min"), qt.Equals, uint64(0))
	second := checkJSON(t, dir, "second.json")
	c.Check(second["result"], qt.Equals, "clean")
	c.Check(second["finished"], qt.Equals, true)
	c.Check(second["mismatch_sectors"], qt.Equals, float64(0))
	e = storeCheck(t, store, uuid)
	if c.Check(e, qt.Not(qt.IsNil)) {
		c.Check(e["cursor"] == nil || e["cursor"] == float64(0), qt.IsTrue, qt.Commentf("cursor kept after a finished pass: %v", e))
		c.Check(e["last_action"], qt.Equals, "check")
		fin, _ := e["last_finished"].(string)
		c.Check(fin, qt.Not(qt.Equals), "", qt.Commentf("no finish time recorded: %v", e))
	}
}
