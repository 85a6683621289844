package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/go-mdraid/mdraid/internal/fixture"
	"github.com/go-mdraid/mdraid/internal/sysfstree"
	"github.com/go-mdraid/mdraid/internal/vmtest/guest"
)

// genCase is one fixture case.
type genCase struct {
	name  string
	desc  string
	array string // as created or assembled: "/dev/md0", "/dev/md/boot"
	sync  string // fixture.Info.Sync
	// disks are the devices captured, with what the case makes of each.
	disks []disk
	setup func(g *gen)
	// extra captures, file name -> shell command whose output is kept.
	extra map[string]string
	// cleanup, if set, runs after the capture (whatever happened) and
	// undoes what ResetDisks does not, such as partition tables the
	// kernel still knows.
	cleanup func() error
}

type disk struct{ name, role string }

func disks(spec ...string) []disk {
	var ds []disk
	for i, role := range spec {
		ds = append(ds, disk{name: "vd" + string(rune('a'+i)), role: role})
	}
	return ds
}

// gen runs a case's commands and records them for case.json.
type gen struct {
	cmds []string
}

type genError struct{ err error }

func (g *gen) fail(format string, args ...any) { panic(genError{fmt.Errorf(format, args...)}) }

// sh runs one shell command line, records it, and fails the case unless
// it exits 0.
func (g *gen) sh(line string) string { return g.shExit(line, 0) }

// shExit is sh for a command expected to exit with status want.
func (g *gen) shExit(line string, want int) string {
	rec := line
	if want != 0 {
		rec += fmt.Sprintf("  # exits %d", want)
	}
	g.cmds = append(g.cmds, rec)
	cmd := exec.Command("sh", "-c", line)
	cmd.Env = append(os.Environ(), "MDADM_NO_UDEV=1")
	out, err := cmd.CombinedOutput()
	fmt.Printf("gen: $ %s\n%s", line, out)
	if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != want {
		g.fail("%s: %v (want status %d)\n%s", line, err, want, out)
	}
	return string(out)
}

// note records a step that is not a shell command.
func (g *gen) note(s string) { g.cmds = append(g.cmds, "# "+s) }

func (g *gen) waitSync(md string) {
	g.note("wait until " + md + " is idle (sync_action idle, sync_completed none)")
	if err := guest.WaitIdle(md, 5*time.Minute); err != nil {
		g.fail("%v", err)
	}
}

func (g *gen) array(dev string) string {
	md, err := guest.ResolveArray(dev)
	if err != nil {
		g.fail("%v", err)
	}
	return md
}

// waitGone waits until /sys/block/<md> has disappeared.
func (g *gen) waitGone(md string) {
	g.note("wait until /sys/block/" + md + " is gone")
	for range 100 {
		if _, err := os.Stat("/sys/block/" + md); os.IsNotExist(err) {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	g.fail("/sys/block/%s still exists", md)
}

func (g *gen) attr(md, attr string) string {
	b, err := os.ReadFile(guest.SysPath(g.array(md), attr))
	if err != nil {
		g.fail("%v", err)
	}
	return strings.TrimSpace(string(b))
}

// waitFor polls until cond holds for an attribute.
func (g *gen) waitFor(md, attr, what string, cond func(string) bool) {
	g.note(fmt.Sprintf("wait until %s %s %s", md, attr, what))
	deadline := time.Now().Add(3 * time.Minute)
	for {
		v := g.attr(md, attr)
		if cond(v) {
			return
		}
		if time.Now().After(deadline) {
			mdstat, _ := os.ReadFile("/proc/mdstat")
			g.fail("%s %s = %q, still not %s\n%s", md, attr, v, what, mdstat)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// holdAt waits until a recovery limited by sync_max has checkpointed at
// the limit: sync_completed reads "<sync_max> / <total>".
func (g *gen) holdAt(md string, sectors int) {
	g.waitFor(md, "sync_completed", fmt.Sprintf("reaches %d (held by sync_max)", sectors), func(v string) bool {
		done, _, ok := strings.Cut(v, " / ")
		n, err := strconv.Atoi(done)
		return ok && err == nil && n >= sectors
	})
	time.Sleep(time.Second) // let the checkpoint's superblock write land
}

func create(md, opts string, devs ...string) string {
	return fmt.Sprintf("mdadm --create %s --run %s %s", md, opts, "/dev/"+strings.Join(devs, " /dev/"))
}

// pastCheckpoint waits until a running sync has checkpointed a position
// past 0 (sync_completed reads "<n> / <total>" with n > 0).
func (g *gen) pastCheckpoint(md string) {
	g.waitFor(md, "sync_completed", "is past 0 (a first position checkpoint)", func(v string) bool {
		done, _, ok := strings.Cut(v, " / ")
		n, err := strconv.Atoi(done)
		return ok && err == nil && n > 0
	})
}

// expectAttr fails the case unless an attribute reads want.
func (g *gen) expectAttr(md, attr, want string) {
	if v := g.attr(md, attr); v != want {
		g.fail("%s %s = %q, want %q", md, attr, v, want)
	}
}

// checkSpeed throttles the check cases (KiB/s): a pass over 64 MiB
// members takes about a minute, so a capture sees it running.
const checkSpeed = "1000"

// throttledCheck creates the check cases' 2-disk raid1 md0 (1.2,
// --assume-clean), starts a check at checkSpeed and waits until it is
// past its first position checkpoint.
func (g *gen) throttledCheck() {
	g.sh(create("/dev/md0", "--assume-clean --level=1 --raid-devices=2 --metadata=1.2", "vda", "vdb"))
	g.sh("echo " + checkSpeed + " > /sys/block/md0/md/sync_speed_max")
	g.sh("echo check > /sys/block/md0/md/sync_action")
	g.pastCheckpoint("md0")
}

// holdSectors is where held recoveries stop: 16 MiB into 64 MiB members.
const holdSectors = 32768

var cases = func() []genCase {
	var cs []genCase
	for _, v := range []string{"0.90", "1.0", "1.1", "1.2"} {
		cs = append(cs, genCase{
			name: "raid1-v" + v, desc: "clean 2-disk RAID1, metadata " + v,
			array: "/dev/md0", sync: "resync", disks: disks("active", "active"),
			setup: func(g *gen) {
				g.sh(create("/dev/md0", "--level=1 --raid-devices=2 --metadata="+v, "vda", "vdb"))
				g.waitSync("/dev/md0")
			},
		})
	}
	cs = append(cs,
		genCase{
			name: "boot-mirror", desc: "the boot mirror as the installer makes it: 1.0, name boot, homehost talos",
			array: "/dev/md/boot", sync: "resync", disks: disks("active", "active"),
			setup: func(g *gen) {
				g.sh("mdadm --create /dev/md/boot --name boot --homehost=talos --level=1 --metadata=1.0 --raid-devices=2 /dev/vda /dev/vdb")
				g.waitSync("/dev/md/boot")
			},
		},
		genCase{
			name: "raid1-bitmap", desc: "clean 2-disk RAID1, 1.2, internal bitmap",
			array: "/dev/md0", sync: "resync", disks: disks("active", "active"),
			setup: func(g *gen) {
				g.sh(create("/dev/md0", "--level=1 --raid-devices=2 --metadata=1.2 --bitmap=internal", "vda", "vdb"))
				g.waitSync("/dev/md0")
			},
		},
		genCase{
			name: "raid1-degraded-missing", desc: "2-disk RAID1 created with one slot 'missing'",
			array: "/dev/md0", sync: "none", disks: disks("active"),
			setup: func(g *gen) {
				g.sh("mdadm --create /dev/md0 --run --level=1 --raid-devices=2 --metadata=1.2 /dev/vda missing")
				g.waitSync("/dev/md0")
			},
		},
		genCase{
			name: "raid1-failed", desc: "2-disk RAID1 with vdb failed (mdadm --fail) but not removed",
			array: "/dev/md0", sync: "resync", disks: disks("active", "faulty"),
			setup: func(g *gen) {
				g.sh(create("/dev/md0", "--level=1 --raid-devices=2 --metadata=1.2", "vda", "vdb"))
				g.waitSync("/dev/md0")
				g.sh("mdadm /dev/md0 --fail /dev/vdb")
				g.waitSync("/dev/md0")
			},
		},
		genCase{
			name:  "raid1-removed-spare",
			desc:  "3-disk RAID1: vdc failed and removed, vdd added as a spare while recovery is frozen, so it stays a spare",
			array: "/dev/md0", sync: "resync", disks: disks("active", "active", "removed", "spare"),
			setup: func(g *gen) {
				g.sh(create("/dev/md0", "--level=1 --raid-devices=3 --metadata=1.2", "vda", "vdb", "vdc"))
				g.waitSync("/dev/md0")
				g.sh("mdadm /dev/md0 --fail /dev/vdc")
				g.sh("mdadm /dev/md0 --remove /dev/vdc")
				g.sh("echo frozen > /sys/block/md0/md/sync_action")
				g.sh("mdadm /dev/md0 --add /dev/vdd")
				if s := g.attr("md0", "dev-vdd/slot"); s != "none" {
					g.fail("vdd took slot %s", s)
				}
			},
		},
		genCase{
			name: "raid5", desc: "clean 4-disk RAID5",
			array: "/dev/md0", sync: "resync", disks: disks("active", "active", "active", "active"),
			setup: func(g *gen) {
				g.sh(create("/dev/md0", "--level=5 --raid-devices=4 --metadata=1.2", "vda", "vdb", "vdc", "vdd"))
				g.waitSync("/dev/md0")
			},
		},
		genCase{
			name: "raid5-degraded", desc: "4-disk RAID5 after vdd failed and was removed",
			array: "/dev/md0", sync: "resync", disks: disks("active", "active", "active", "removed"),
			setup: func(g *gen) {
				g.sh(create("/dev/md0", "--level=5 --raid-devices=4 --metadata=1.2", "vda", "vdb", "vdc", "vdd"))
				g.waitSync("/dev/md0")
				g.sh("mdadm /dev/md0 --fail /dev/vdd")
				g.sh("mdadm /dev/md0 --remove /dev/vdd")
			},
		},
		genCase{
			name: "raid6", desc: "clean 4-disk RAID6",
			array: "/dev/md0", sync: "resync", disks: disks("active", "active", "active", "active"),
			setup: func(g *gen) {
				g.sh(create("/dev/md0", "--level=6 --raid-devices=4 --metadata=1.2", "vda", "vdb", "vdc", "vdd"))
				g.waitSync("/dev/md0")
			},
		},
		genCase{
			name: "raid10", desc: "clean 4-disk RAID10 (near=2)",
			array: "/dev/md0", sync: "resync", disks: disks("active", "active", "active", "active"),
			setup: func(g *gen) {
				g.sh(create("/dev/md0", "--level=10 --raid-devices=4 --metadata=1.2", "vda", "vdb", "vdc", "vdd"))
				g.waitSync("/dev/md0")
			},
		},
		genCase{
			name: "raid0", desc: "2-disk RAID0",
			array: "/dev/md0", sync: "none", disks: disks("active", "active"),
			setup: func(g *gen) {
				g.sh(create("/dev/md0", "--level=0 --raid-devices=2 --metadata=1.2", "vda", "vdb"))
			},
		},
		genCase{
			name: "linear", desc: "2-disk linear array",
			array: "/dev/md0", sync: "none", disks: disks("active", "active"),
			setup: func(g *gen) {
				g.sh(create("/dev/md0", "--level=linear --raid-devices=2 --metadata=1.2", "vda", "vdb"))
			},
		},
		genCase{
			name:  "raid1-recovering",
			desc:  "2-disk RAID1: vdb failed and removed, vdc added; recovery held at sector 32768 by sync_max",
			array: "/dev/md0", sync: "held", disks: disks("active", "removed", "rebuilding"),
			setup: func(g *gen) {
				g.sh(create("/dev/md0", "--level=1 --raid-devices=2 --metadata=1.2", "vda", "vdb"))
				g.waitSync("/dev/md0")
				g.sh("mdadm /dev/md0 --fail /dev/vdb")
				g.sh("mdadm /dev/md0 --remove /dev/vdb")
				g.sh("echo frozen > /sys/block/md0/md/sync_action")
				g.sh("mdadm /dev/md0 --add /dev/vdc")
				g.sh(fmt.Sprintf("echo %d > /sys/block/md0/md/sync_max", holdSectors))
				g.sh("echo idle > /sys/block/md0/md/sync_action")
				g.holdAt("md0", holdSectors)
			},
		},
		genCase{
			name:  "raid1-replacing",
			desc:  "2-disk RAID1: vda being replaced by vdc (mdadm --replace --with), held at sector 32768 by sync_max",
			array: "/dev/md0", sync: "held", disks: disks("want_replacement", "active", "replacement"),
			setup: func(g *gen) {
				g.sh(create("/dev/md0", "--level=1 --raid-devices=2 --metadata=1.2", "vda", "vdb"))
				g.waitSync("/dev/md0")
				g.sh("mdadm /dev/md0 --add /dev/vdc")
				g.sh(fmt.Sprintf("echo %d > /sys/block/md0/md/sync_max", holdSectors))
				g.sh("mdadm /dev/md0 --replace /dev/vda --with /dev/vdc")
				g.holdAt("md0", holdSectors)
			},
		},
		genCase{
			name:  "raid5-inactive",
			desc:  "4-disk RAID5 stopped, then assembled with mdadm --incremental (as udev would) from 3 members, without --run: inactive",
			array: "/dev/md/inactive", sync: "resync", disks: disks("active", "active", "active", "absent"),
			setup: func(g *gen) {
				g.sh(create("/dev/md/inactive", "--name=inactive --level=5 --raid-devices=4 --metadata=1.2", "vda", "vdb", "vdc", "vdd"))
				g.waitSync("/dev/md/inactive")
				md := g.array("/dev/md/inactive")
				g.sh("mdadm --stop /dev/md/inactive")
				// The md device lingers for a moment; waiting keeps the
				// reassembled array at the same kernel name.
				g.waitGone(md)
				// Without udev nobody removes the stale /dev/md/inactive
				// link, and --incremental would pick another name.
				g.sh("rm /dev/md/inactive")
				// mdadm --assemble with a member short dissolves the array
				// again ("need all 4 to start it"); --incremental keeps it.
				for _, d := range []string{"vda", "vdb", "vdc"} {
					g.sh("mdadm --incremental /dev/" + d)
				}
				if s := g.attr("/dev/md/inactive", "array_state"); s != "inactive" {
					g.fail("array_state %s, want inactive", s)
				}
			},
		},
		genCase{
			name: "raid1-check-running",
			desc: "2-disk RAID1 (1.2, --assume-clean) with a check running, throttled by sync_speed_max " + checkSpeed +
				" KiB/s, captured after its first position checkpoint",
			array: "/dev/md0", sync: "assume-clean", disks: disks("active", "active"),
			setup: func(g *gen) {
				g.throttledCheck()
				g.expectAttr("md0", "sync_action", "check")
			},
		},
		genCase{
			name: "raid1-check-interrupted",
			desc: "2-disk RAID1 (1.2, --assume-clean): a check throttled by sync_speed_max " + checkSpeed +
				" KiB/s, stopped with idle after its first position checkpoint (the kernel sets sync_min to where it stopped)",
			array: "/dev/md0", sync: "assume-clean", disks: disks("active", "active"),
			setup: func(g *gen) {
				g.throttledCheck()
				g.sh("echo idle > /sys/block/md0/md/sync_action")
				g.waitSync("/dev/md0")
				if g.attr("md0", "sync_min") == "0" {
					g.fail("sync_min is 0 after an interrupted check")
				}
			},
		},
		genCase{
			name: "raid1-check-mismatch",
			desc: "2-disk RAID1 (1.2) created with --assume-clean over members that differ (64 KiB of random bytes written " +
				"16 MiB into vda beforehand, inside the data area), after a full check: mismatch_cnt is not 0",
			array: "/dev/md0", sync: "assume-clean", disks: disks("active", "active"),
			setup: func(g *gen) {
				g.sh("dd if=/dev/urandom of=/dev/vda bs=64k count=1 seek=256 conv=fsync")
				g.sh(create("/dev/md0", "--assume-clean --level=1 --raid-devices=2 --metadata=1.2", "vda", "vdb"))
				g.sh("echo check > /sys/block/md0/md/sync_action")
				g.waitSync("/dev/md0")
				g.expectAttr("md0", "last_sync_action", "check")
				if g.attr("md0", "mismatch_cnt") == "0" {
					g.fail("the check found no mismatch")
				}
			},
		},
		genCase{
			name:  "raid1-badblocks",
			desc:  "2-disk RAID1 with bad blocks recorded on vdb (sectors 10240+8 and 20480+16) and written to its log",
			array: "/dev/md0", sync: "resync", disks: disks("active", "active"),
			extra: map[string]string{"vdb.examine-badblocks.txt": "mdadm --examine-badblocks /dev/vdb"},
			setup: func(g *gen) {
				g.sh(create("/dev/md0", "--level=1 --raid-devices=2 --metadata=1.2", "vda", "vdb"))
				g.waitSync("/dev/md0")
				g.sh("echo '10240 8' > /sys/block/md0/md/dev-vdb/bad_blocks")
				g.sh("echo '20480 16' > /sys/block/md0/md/dev-vdb/bad_blocks")
				// The log reaches the disk with the next superblock write;
				// a write makes the array dirty, which forces one.
				g.sh("dd if=/dev/urandom of=/dev/md0 bs=4096 count=1 conv=fsync")
				g.waitFor("md0", "array_state", "is clean", func(v string) bool { return v == "clean" })
				out := g.sh("mdadm --examine-badblocks /dev/vdb")
				if !strings.Contains(out, "10240 for 8 sectors") {
					g.fail("bad blocks did not reach the superblock:\n%s", out)
				}
			},
		},
		genCase{
			name:  "raid1-readonly",
			desc:  "clean 2-disk RAID1 (1.2) switched read-only with mdadm --readonly: array_state readonly",
			array: "/dev/md0", sync: "resync", disks: disks("active", "active"),
			setup: func(g *gen) {
				g.sh(create("/dev/md0", "--level=1 --raid-devices=2 --metadata=1.2", "vda", "vdb"))
				g.waitSync("/dev/md0")
				g.sh("mdadm --readonly /dev/md0")
				g.expectAttr("md0", "array_state", "readonly")
			},
		},
		genCase{
			name: "raid1-read-auto",
			desc: "clean 2-disk RAID1 (1.2) put in read-auto by writing read-auto to array_state (the state md_mod.start_ro=1 " +
				"starts arrays in; the first write makes it active)",
			array: "/dev/md0", sync: "resync", disks: disks("active", "active"),
			setup: func(g *gen) {
				g.sh(create("/dev/md0", "--level=1 --raid-devices=2 --metadata=1.2", "vda", "vdb"))
				g.waitSync("/dev/md0")
				g.sh("echo read-auto > /sys/block/md0/md/array_state")
				g.expectAttr("md0", "array_state", "read-auto")
			},
		},
		genCase{
			name: "raid1-resync-pending",
			desc: "2-disk RAID1 (1.2) whose initial resync, throttled by sync_speed_max " + checkSpeed +
				" KiB/s, was stopped by writing frozen to sync_action after its first checkpoint: resync_start is " +
				"where it stopped, nothing runs (mdstat resync=PENDING, mdadm resyncing (PENDING))",
			array: "/dev/md0", sync: "pending", disks: disks("active", "active"),
			setup: func(g *gen) {
				g.sh(create("/dev/md0", "--level=1 --raid-devices=2 --metadata=1.2", "vda", "vdb"))
				g.sh("echo " + checkSpeed + " > /sys/block/md0/md/sync_speed_max")
				g.pastCheckpoint("md0")
				g.sh("echo frozen > /sys/block/md0/md/sync_action")
				g.waitFor("md0", "sync_completed", "is none", func(v string) bool { return v == "none" })
				g.pendingResync("md0")
			},
		},
		genCase{
			name: "raid1-resync-pending-read-auto",
			desc: "2-disk RAID1 (1.2) stopped during its initial resync (throttled by sync_speed_max " + checkSpeed +
				" KiB/s, after its first checkpoint), assembled with --readonly and put in read-auto: the resync " +
				"waits for the first write (mdstat active (auto-read-only), resync=PENDING)",
			array: "/dev/md0", sync: "pending", disks: disks("active", "active"),
			setup: func(g *gen) {
				g.sh(create("/dev/md0", "--level=1 --raid-devices=2 --metadata=1.2", "vda", "vdb"))
				g.sh("echo " + checkSpeed + " > /sys/block/md0/md/sync_speed_max")
				g.pastCheckpoint("md0")
				g.sh("mdadm --stop /dev/md0")
				g.waitGone("md0")
				g.sh("mdadm --assemble --readonly /dev/md0 /dev/vda /dev/vdb")
				g.sh("echo read-auto > /sys/block/md0/md/array_state")
				g.expectAttr("md0", "array_state", "read-auto")
				g.pendingResync("md0")
			},
		},
		genCase{
			name: "raid1-resync-delayed",
			desc: "two 2-disk RAID1 (1.2) on partitions of the same two disks: md0 on vda1+vdb1 resyncing, throttled by " +
				"sync_speed_max " + checkSpeed + " KiB/s; md1 on vda2+vdb2, created after md0's first checkpoint, waits " +
				"for it (they share physical units): md1's sync_completed delayed, mdstat resync=DELAYED",
			array: "/dev/md1", sync: "pending", disks: []disk{{"vda2", "active"}, {"vdb2", "active"}},
			cleanup: unpartition("vda", "vdb"),
			setup: func(g *gen) {
				g.partition([]mbrPart{{2048, 63488}, {65536, 65536}}, "vda", "vdb")
				g.sh(create("/dev/md0", "--level=1 --raid-devices=2 --metadata=1.2", "vda1", "vdb1"))
				g.sh("echo " + checkSpeed + " > /sys/block/md0/md/sync_speed_max")
				g.pastCheckpoint("md0")
				g.sh(create("/dev/md1", "--level=1 --raid-devices=2 --metadata=1.2", "vda2", "vdb2"))
				g.waitFor("md1", "sync_completed", "is delayed", func(v string) bool { return v == "delayed" })
				g.expectAttr("md0", "sync_action", "resync")
			},
		},
	)
	return cs
}()

// pendingResync fails the case unless md has a resync to do that has not
// run: resync_start is not none and nothing runs (sync_completed none).
func (g *gen) pendingResync(md string) {
	if v := g.attr(md, "resync_start"); v == "none" {
		g.fail("%s resync_start is none: no resync pending", md)
	}
	g.expectAttr(md, "sync_completed", "none")
}

func runGuest(out string, re *regexp.Regexp, suffix string) error {
	if !guest.InGuest() {
		return fmt.Errorf("-guest runs only inside the VM rig; run without -guest on the host")
	}
	var failed []string
	for _, c := range cases {
		if !re.MatchString(c.name) {
			continue
		}
		c.name += suffix
		fmt.Printf("gen: === case %s\n", c.name)
		if err := runCase(out, c); err != nil {
			fmt.Printf("gen: FAIL %s: %v\n", c.name, err)
			failed = append(failed, c.name)
		}
	}
	if err := guest.ResetDisks(); err != nil {
		return err
	}
	if len(failed) > 0 {
		return fmt.Errorf("failed cases: %s", strings.Join(failed, " "))
	}
	return nil
}

func runCase(out string, c genCase) (err error) {
	if err := guest.ResetDisks(); err != nil {
		return err
	}
	g := &gen{}
	defer func() {
		if r := recover(); r != nil {
			ge, ok := r.(genError)
			if !ok {
				panic(r)
			}
			err = ge.err
		}
	}()
	if c.cleanup != nil {
		defer func() {
			if cerr := c.cleanup(); cerr != nil && err == nil {
				err = cerr
			}
		}()
	}
	c.setup(g)
	tmp := filepath.Join(out, "."+c.name+".tmp")
	os.RemoveAll(tmp)
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return err
	}
	if err := capture(tmp, c, g); err != nil {
		return err
	}
	dst := filepath.Join(out, c.name)
	os.RemoveAll(dst)
	return os.Rename(tmp, dst)
}

// output runs a command and returns its combined output whatever its
// status: mdadm --detail of a degraded or inactive array still says
// something worth keeping.
func output(line string) []byte {
	out, _ := exec.Command("sh", "-c", line).CombinedOutput()
	return out
}

func capture(dir string, c genCase, g *gen) error {
	md, err := guest.ResolveArray(c.array)
	if err != nil {
		return err
	}
	files := map[string][]byte{
		"detail.txt":        output("mdadm --detail " + c.array),
		"detail-export.txt": output("mdadm --detail --export " + c.array),
	}
	if files["mdstat.txt"], err = os.ReadFile("/proc/mdstat"); err != nil {
		return err
	}
	entries, err := sysfstree.CaptureArray("/sys", md)
	if err != nil {
		return fmt.Errorf("sysfs capture: %w", err)
	}
	var sysfs bytes.Buffer
	if err := sysfstree.Write(&sysfs, entries); err != nil {
		return err
	}
	files["sysfs.txt"] = sysfs.Bytes()
	for name, line := range c.extra {
		files[name] = output(line)
	}

	all, err := guest.Disks()
	if err != nil {
		return err
	}
	byName := map[string]guest.Disk{}
	for _, d := range all {
		byName[d.Name] = d
	}
	info := fixture.Info{
		Name: c.name, Description: c.desc, Commands: g.cmds,
		Array: md, ArrayPath: c.array, Sync: c.sync,
		ProcVersion:  strings.TrimSpace(string(output("cat /proc/version"))),
		MdadmVersion: strings.TrimSpace(string(output("mdadm --version"))),
	}
	var uts unix.Utsname
	unix.Uname(&uts)
	info.Kernel = unix.ByteSliceToString(uts.Release[:])
	for _, cd := range c.disks {
		d, ok := byName[cd.name]
		if !ok {
			// A partition of a scratch disk: no by-path or serial of
			// its own.
			if d, err = partitionDisk(cd.name); err != nil {
				return err
			}
		}
		info.Members = append(info.Members, fixture.InfoMember{Name: d.Name, ByPath: d.ByPath, Serial: d.Serial, Size: d.Size, Role: cd.role})
		if err := guest.FlushBuffers(d.Path); err != nil {
			return err
		}
		files[d.Name+".examine.txt"] = output("mdadm --examine " + d.Path)
		if err := fixture.CaptureRegions(filepath.Join(dir, d.Name+".regions.gz"), d.Path); err != nil {
			return err
		}
	}
	js, err := json.MarshalIndent(info, "", "  ")
	if err != nil {
		return err
	}
	files["case.json"] = append(js, '\n')
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}
