// Package healvm proves heal and watch on the real kernel, across reboots
// and hot-plugs, with the VM rig (internal/vmtest). Its tests run on the
// host and boot the guest several times over the same disk images; they
// skip unless MDRAID_VMTEST=1.
package healvm

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	qt "github.com/frankban/quicktest"

	"github.com/go-mdraid/mdraid/internal/vmtest"
)

const (
	diskSize = 64 << 20
	mdctl    = "/vmtest/bin/mdctl"
)

// sh runs a shell script in the guest.
func sh(script string) []string { return []string{"sh", "-euc", script} }

// guestLib is shell shared by the guest scripts.
const guestLib = `
md() { basename "$(readlink -f /dev/md/boot)"; }
attr() { cat /sys/block/$(md)/md/$1; }
# wait_idle waits until the array is complete and no sync runs.
wait_idle() {
	n=0
	until [ "$(attr degraded)" = 0 ] && [ "$(attr sync_action)" = idle ]; do
		n=$((n+1)); [ $n -lt 1200 ] || { echo "not idle: $(attr degraded) $(attr sync_action)"; cat /proc/mdstat; exit 1; }
		sleep 0.1
	done
}
sum16() { dd if=/dev/md/boot bs=1M count=16 2>/dev/null | sha256sum | cut -d' ' -f1; }
# sum16d reads past the page cache (O_DIRECT), so the data comes from the
# members as they are now.
sum16d() { dd if=/dev/md/boot bs=1M count=16 iflag=direct 2>/dev/null | sha256sum | cut -d' ' -f1; }
`

// setup builds mdctl for the guest and returns the rig, the guest files
// and a shared state directory mounted at /state.
func setup(t *testing.T) (*vmtest.Rig, map[string]string, vmtest.Share) {
	r := vmtest.NewTestRig(t)
	bin := filepath.Join(t.TempDir(), "mdctl")
	if err := vmtest.BuildProgram(t.Context(), r.Root, "./cmd/mdctl", bin); err != nil {
		t.Fatal(err)
	}
	state := t.TempDir()
	return r, map[string]string{mdctl: bin}, vmtest.Share{Tag: "state", HostDir: state, GuestDir: "/state"}
}

func image(t *testing.T, name string) string {
	p := filepath.Join(t.TempDir(), name)
	if err := vmtest.CreateImage(p, diskSize); err != nil {
		t.Fatal(err)
	}
	return p
}

func fileSum(t *testing.T, p string) string {
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func boot(t *testing.T, r *vmtest.Rig, cfg vmtest.Config) *vmtest.Result {
	t.Helper()
	if cfg.Timeout == 0 {
		cfg.Timeout = 2 * time.Minute
	}
	res, err := r.RunTest(t, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("boot took %v", res.Duration.Round(time.Millisecond))
	return res
}

// TestOfflineSwapHeal is the boot mirror's life across three boots:
//
//  1. A healthy RAID1 (1.0, name boot, homehost talos) gets data and is
//     recorded in a store on the host.
//  2. With the machine off, member 1's disk is replaced by one that holds
//     an ext4 signature, and a blank disk sits in another port. After a
//     degraded start, heal with a corrupted store refuses and does
//     nothing; with the good store it refuses the non-blank disk and
//     leaves the blank one in the other port alone. Both disks are
//     byte-identical afterwards.
//  3. With the machine off again, member 1's port gets a blank disk. After
//     a degraded start, heal adds it to slot 1; the recovery completes,
//     raid_disks stays 2, and the data reads back the same from the new
//     disk alone.
func TestOfflineSwapHeal(t *testing.T) {
	c := qt.New(t)
	r, files, share := setup(t)
	a, b := image(t, "a.img"), image(t, "b.img")

	// Boot 1: create, write, record.
	boot(t, r, vmtest.Config{
		Files: files, Shares: []vmtest.Share{share},
		Disks: []vmtest.Disk{{Path: a, Slot: 0}, {Path: b, Slot: 1}},
		Cmd: sh(guestLib + `
			mdadm --create /dev/md/boot --run --assume-clean --level=1 --raid-devices=2 \
				--metadata=1.0 --name=boot --homehost=talos \
				/dev/disk/by-path/pci-0000:00:10.0 /dev/disk/by-path/pci-0000:00:11.0
			dd if=/dev/urandom of=/dev/md/boot bs=1M count=16 conv=fsync 2>/dev/null
			sum16 > /state/data.sha256
			` + mdctl + ` record --store /state/slots.json
			mdadm --stop /dev/md/boot
		`),
	})
	store := filepath.Join(share.HostDir, "slots.json")
	good, err := os.ReadFile(store)
	c.Assert(err, qt.IsNil)
	c.Assert(string(good), qt.Contains, `"by_path": "pci-0000:00:11.0"`)
	c.Assert(string(good), qt.Contains, `"name": "boot"`)
	// The corruption an attacker or a bad disk could make worst: the
	// recorded port of slot 1 moved to the port of the blank disk D.
	corrupt := bytes.Replace(good, []byte("pci-0000:00:11.0"), []byte("pci-0000:00:13.0"), 1)
	c.Assert(os.WriteFile(filepath.Join(share.HostDir, "corrupt.json"), corrupt, 0o644), qt.IsNil)

	// Boot 2: a non-blank disk in the recorded port, a blank one elsewhere.
	n, d := image(t, "nonblank.img"), image(t, "blank-elsewhere.img")
	f, err := os.OpenFile(n, os.O_WRONLY, 0)
	c.Assert(err, qt.IsNil)
	_, err = f.WriteAt([]byte{0x53, 0xef}, 1080) // ext2/3/4 superblock magic
	c.Assert(err, qt.IsNil)
	c.Assert(f.Close(), qt.IsNil)
	nSum, dSum := fileSum(t, n), fileSum(t, d)
	boot(t, r, vmtest.Config{
		Files: files, Shares: []vmtest.Share{share},
		Disks: []vmtest.Disk{{Path: a, Slot: 0}, {Path: n, Slot: 1}, {Path: d, Slot: 3}},
		Cmd: sh(guestLib + `
			mdadm --assemble /dev/md/boot --run /dev/disk/by-path/pci-0000:00:10.0
			[ "$(attr degraded)" = 1 ]
			rc=0; ` + mdctl + ` heal --store /state/corrupt.json >/state/out-corrupt 2>&1 || rc=$?
			echo "heal with a corrupt store: exit $rc"; cat /state/out-corrupt
			[ $rc = 2 ]
			[ "$(attr degraded)" = 1 ]
			# A refused slot (nothing written) exits 2, as every refusal.
			rc=0; ` + mdctl + ` heal --store /state/slots.json --json > /state/decisions.json || rc=$?
			cat /state/decisions.json
			[ $rc = 2 ]
			[ "$(attr degraded)" = 1 ] && [ "$(attr raid_disks)" = 2 ]
			ls -d /sys/block/$(md)/md/dev-* > /state/members
			mdadm --stop /dev/md/boot
		`),
	})
	out, err := os.ReadFile(filepath.Join(share.HostDir, "out-corrupt"))
	c.Assert(err, qt.IsNil)
	c.Assert(string(out), qt.Contains, "md: slot records are corrupt in /state/corrupt.json: checksum is")
	c.Assert(string(out), qt.Contains, "(nothing was done)")
	var ds []map[string]any
	b2, err := os.ReadFile(filepath.Join(share.HostDir, "decisions.json"))
	c.Assert(err, qt.IsNil)
	c.Assert(json.Unmarshal(b2, &ds), qt.IsNil)
	c.Assert(ds, qt.HasLen, 1, qt.Commentf("%s", b2))
	c.Assert(ds[0]["outcome"], qt.Equals, "refused")
	c.Assert(ds[0]["slot"], qt.Equals, float64(1))
	c.Assert(ds[0]["by_path"], qt.Equals, "pci-0000:00:11.0")
	c.Assert(ds[0]["device"], qt.Equals, "vdb")
	c.Assert(ds[0]["reason"], qt.Matches, `.*ext2/3/4.*`)
	members, err := os.ReadFile(filepath.Join(share.HostDir, "members"))
	c.Assert(err, qt.IsNil)
	c.Assert(strings.Fields(string(members)), qt.HasLen, 1)
	c.Assert(fileSum(t, n), qt.Equals, nSum, qt.Commentf("the non-blank disk was written"))
	c.Assert(fileSum(t, d), qt.Equals, dSum, qt.Commentf("the blank disk in another port was written"))

	// Boot 3: a blank disk in the recorded port.
	fresh := image(t, "fresh.img")
	boot(t, r, vmtest.Config{
		Files: files, Shares: []vmtest.Share{share},
		Disks: []vmtest.Disk{{Path: a, Slot: 0}, {Path: fresh, Slot: 1, Serial: "mdtest-new"}},
		Cmd: sh(guestLib + `
			mdadm --assemble /dev/md/boot --run /dev/disk/by-path/pci-0000:00:10.0
			[ "$(attr degraded)" = 1 ]
			` + mdctl + ` heal --store /state/slots.json | tee /state/heal.txt
			wait_idle
			[ "$(attr raid_disks)" = 2 ]
			new=$(basename "$(readlink -f /dev/disk/by-path/pci-0000:00:11.0)")
			[ "$(attr dev-$new/slot)" = 1 ] && [ "$(attr dev-$new/state)" = in_sync ]
			[ "$(sum16)" = "$(cat /state/data.sha256)" ]
			mdadm --detail /dev/md/boot | tee /state/detail.txt
			# The data must come back from the new disk alone.
			mdadm /dev/md/boot --fail /dev/disk/by-path/pci-0000:00:10.0
			[ "$(sum16d)" = "$(cat /state/data.sha256)" ]
			echo data-ok-from-new-disk
			mdadm --stop /dev/md/boot
		`),
	})
	heal, err := os.ReadFile(filepath.Join(share.HostDir, "heal.txt"))
	c.Assert(err, qt.IsNil)
	c.Assert(string(heal), qt.Matches, `(?s)md127 slot 1 \(pci-0000:00:11.0\): healed: added /dev/vdb to slot 1; recovery follows\n`)
	detail, err := os.ReadFile(filepath.Join(share.HostDir, "detail.txt"))
	c.Assert(err, qt.IsNil)
	c.Assert(string(detail), qt.Contains, "Raid Devices : 2")
	c.Assert(string(detail), qt.Contains, "Active Devices : 2")
	c.Assert(string(detail), qt.Contains, "Name : talos:boot")
}

// TestWatchHealHotplug runs mdctl watch --heal on a running machine: the
// array is recorded by the watcher itself; member 1's disk is pulled from
// its port (QMP device_del), writes make md fail it, and a blank disk
// plugged into the same port (device_add at the recorded PCI address) is
// healed into slot 1 without anyone asking.
func TestWatchHealHotplug(t *testing.T) {
	c := qt.New(t)
	r, files, share := setup(t)
	disks := []vmtest.Disk{{Path: image(t, "a.img"), Slot: 0}, {Path: image(t, "b.img"), Slot: 1}}
	vm, err := r.Boot(t.Context(), vmtest.Config{
		Files: files, Shares: []vmtest.Share{share}, Disks: disks, Monitor: true,
		Timeout: 3 * time.Minute,
		Console: func(l string) { t.Log("guest: " + l) },
		Cmd: sh(guestLib + `
			mdadm --create /dev/md/boot --run --assume-clean --level=1 --raid-devices=2 \
				--metadata=1.0 --name=boot --homehost=talos \
				/dev/disk/by-path/pci-0000:00:10.0 /dev/disk/by-path/pci-0000:00:11.0
			dd if=/dev/urandom of=/dev/md/boot bs=1M count=16 conv=fsync 2>/dev/null
			want=$(sum16)
			` + mdctl + ` watch --heal --store /state/slots.json --json --rescan 1m >/state/events.jsonl 2>/state/watch.log &
			wpid=$!
			wait_for() {
				n=0
				until grep -q "$1" /state/events.jsonl; do
					n=$((n+1)); [ $n -lt 900 ] || { echo "no $1"; cat /state/events.jsonl /state/watch.log; exit 1; }
					sleep 0.1
				done
			}
			wait_for '"event":"SlotRecorded"'
			echo ready-for-unplug
			n=0; until [ ! -e /sys/block/vdb ]; do n=$((n+1)); [ $n -lt 600 ]; sleep 0.1; done
			# md notices a pulled disk on the next write to it.
			dd if=/dev/urandom of=/dev/md/boot bs=4k count=4 seek=8192 conv=fsync 2>/dev/null || true
			wait_for '"event":"Fail"'
			wait_for '"event":"HealRefused"'
			echo ready-for-plug
			wait_for '"event":"HealStarted"'
			wait_idle
			sleep 0.5
			kill $wpid; wait $wpid || true
			[ "$(attr raid_disks)" = 2 ]
			for dv in /sys/block/$(md)/md/dev-*; do echo "$dv: $(cat $dv/slot) $(cat $dv/state)"; done
			[ "$(sum16)" = "$want" ]
			echo healed-and-data-ok
		`),
	})
	c.Assert(err, qt.IsNil)
	defer vm.Kill()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	c.Assert(vm.Expect(ctx, "ready-for-unplug"), qt.IsNil)
	c.Assert(vm.RemoveDisk(ctx, 1), qt.IsNil)
	c.Assert(vm.Expect(ctx, "ready-for-plug"), qt.IsNil)
	c.Assert(vm.AddDisk(vmtest.Disk{Path: image(t, "fresh.img"), Slot: 1, Serial: "mdtest-new"}), qt.IsNil)
	res, err := vm.Wait()
	c.Assert(err, qt.IsNil)
	t.Logf("boot took %v", res.Duration.Round(time.Millisecond))

	b, err := os.ReadFile(filepath.Join(share.HostDir, "events.jsonl"))
	c.Assert(err, qt.IsNil)
	var seq, refusals []string
	var started map[string]any
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var e map[string]any
		c.Assert(json.Unmarshal([]byte(line), &e), qt.IsNil, qt.Commentf("%s", line))
		seq = append(seq, e["event"].(string))
		switch e["event"] {
		case "HealStarted":
			started = e
		case "HealRefused":
			refusals = append(refusals, e["reason"].(string))
		}
	}
	t.Logf("events: %v", seq)
	// The only refusal is the empty port; waiting for a rebuild is not
	// reported as one.
	c.Assert(refusals, qt.DeepEquals, []string{`md: no disk in the recorded port: nothing in pci-0000:00:11.0`})
	c.Assert(started, qt.Not(qt.IsNil))
	c.Assert(started["slot"], qt.Equals, float64(1))
	c.Assert(started["by_path"], qt.Equals, "pci-0000:00:11.0")
	idx := func(s string) int {
		for i, v := range seq {
			if v == s {
				return i
			}
		}
		return -1
	}
	c.Assert(idx("SlotRecorded") < idx("Fail"), qt.IsTrue)
	c.Assert(idx("Fail") < idx("HealRefused"), qt.IsTrue)
	c.Assert(idx("HealRefused") < idx("HealStarted"), qt.IsTrue)
	c.Assert(idx("HealStarted") < idx("MemberAdded"), qt.IsTrue)
	c.Assert(res.Console, qt.Contains, "healed-and-data-ok")
}
