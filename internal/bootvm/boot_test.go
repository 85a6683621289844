package bootvm

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	qt "github.com/frankban/quicktest"
	"github.com/google/uuid"

	"github.com/go-mdraid/mdraid/internal/vmtest"
	"github.com/go-mdraid/mdraid/superblock"
)

const (
	hostname = "mdboot"
	bindir   = "/usr/local/bin"
	// fsSize is the root file system's size; each member is memberSize
	// (1.0 keeps its superblock in the last 8 to 12 KiB).
	fsSize     = 640 << 20
	memberSize = fsSize + 4<<20
)

// guestReport is the Debian system's test unit: once multi-user.target is
// reached it writes to the root file system (so that the array is
// written in every boot), prints what the host checks as "VMTEST key=value"
// lines, then the exit marker, and powers the machine off the normal way.
const guestReport = `#!/bin/sh
say() { echo "VMTEST $*"; }
nonce=$(sed -n 's/.*mdraid\.vmtest\.nonce=\([0-9a-f]*\).*/\1/p' /proc/cmdline)
mkdir -p /var/lib/mdraid-vmtest
n=$(cat /var/lib/mdraid-vmtest/boots 2>/dev/null || echo 0)
n=$((n + 1))
echo "$n" >/var/lib/mdraid-vmtest/boots
sync
say "boots=$n"
say "target=$(systemctl is-active multi-user.target)"
say "default=$(systemctl get-default)"
say "failed=$(systemctl --failed --no-legend --plain | awk '{print $1}' | tr '\n' ' ')"
if command -v mdadm >/dev/null || [ -e /sbin/mdadm ] || [ -e /usr/sbin/mdadm ]; then say "mdadm=present"; else say "mdadm=absent"; fi
say "rootsrc=$(findmnt -no SOURCE /)"
say "rootlink=$(readlink -f /dev/md/root)"
` + bindir + `/mdctl status
say "status_rc=$?"
for d in /sys/block/md*/md; do
	say "array=$(basename "$(dirname "$d")") array_state=$(cat "$d/array_state") degraded=$(cat "$d/degraded") sync_action=$(cat "$d/sync_action") sync_completed=$(cat "$d/sync_completed" | tr -d ' ')"
done
cat /proc/mdstat
echo "--- /run/initramfs/mdctl.log"
cat /run/initramfs/mdctl.log 2>/dev/null
echo "--- mdctl in the journal (dracut logs there)"
journalctl -b -o short-monotonic --no-pager 2>/dev/null | grep -i 'mdctl' | head -n 40
echo "--- md in the kernel log"
dmesg | grep -E 'md/raid|md[0-9]+:|md: ' || true
say "syncs=$(dmesg | grep -c -E 'md: (resync|recovery|data-check) of RAID array')"
echo "MDRAID-VMTEST-EXIT $nonce rc=0"
systemctl poweroff --no-block
`

const guestUnit = `[Unit]
Description=go-mdraid boot test report
After=multi-user.target

[Service]
Type=oneshot
ExecStart=/usr/local/sbin/mdraid-vmtest
StandardOutput=journal+console
StandardError=journal+console

[Install]
WantedBy=multi-user.target
`

// system is a Debian system on an md RAID1 (metadata 1.0), ready to boot.
type system struct {
	kind    string // vmtest.InitramfsTools or vmtest.Dracut
	initrd  string
	members []vmtest.Disk
	fsUUID  string
	mdUUID  string // the array's, as rd.md.uuid takes it
}

func run(t *testing.T, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

func writeFile(t *testing.T, p, data string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), mode); err != nil {
		t.Fatal(err)
	}
}

// requireRoot skips (fails under CI) without what the build needs.
func requireRoot(t *testing.T, kind string) string {
	t.Helper()
	root, err := vmtest.DebianRoot(kind)
	if err == nil && os.Geteuid() != 0 {
		err = fmt.Errorf("%w: building the system needs root (chroot, update-initramfs)", vmtest.ErrUnavailable)
	}
	if err != nil {
		if errors.Is(err, vmtest.ErrUnavailable) && os.Getenv("CI") != "true" {
			t.Skipf("!!! BOOT TEST SKIPPED: %v", err)
		}
		t.Fatal(err)
	}
	return root
}

// buildSystem makes the Debian system: a copy of the cached root with
// mdctl and contrib/ installed as the README says (scripts/install-contrib
// with INITRAMFS=kind), an initramfs made in it by Debian's
// update-initramfs or dracut for the rig's kernel, and the root file
// system written onto a mirror that mdctl created in a rig VM.
func buildSystem(t *testing.T, r *vmtest.Rig, kind string) *system {
	debRoot := requireRoot(t, kind)
	c := qt.New(t)
	start := time.Now()
	work := t.TempDir()
	tree := filepath.Join(work, "root")
	run(t, nil, "cp", "-a", debRoot, tree)

	bin := filepath.Join(tree, bindir, "mdctl")
	c.Assert(vmtest.BuildProgram(t.Context(), r.Root, "./cmd/mdctl", bin), qt.IsNil)
	out := run(t, []string{"DESTDIR=" + tree, "BINDIR=" + bindir, "INITRAMFS=" + kind},
		filepath.Join(r.Root, "scripts", "install-contrib"))
	t.Logf("install-contrib:\n%s", out)

	fsUUID := uuid.NewString()
	writeFile(t, filepath.Join(tree, "etc/hostname"), hostname+"\n", 0o644)
	writeFile(t, filepath.Join(tree, "etc/machine-id"), strings.ReplaceAll(uuid.NewString(), "-", "")+"\n", 0o444)
	writeFile(t, filepath.Join(tree, "etc/fstab"), "UUID="+fsUUID+" / ext4 errors=remount-ro 0 1\n", 0o644)
	writeFile(t, filepath.Join(tree, "usr/local/sbin/mdraid-vmtest"), guestReport, 0o755)
	writeFile(t, filepath.Join(tree, "etc/systemd/system/mdraid-vmtest.service"), guestUnit, 0o644)
	wants := filepath.Join(tree, "etc/systemd/system/multi-user.target.wants")
	c.Assert(os.MkdirAll(wants, 0o755), qt.IsNil)
	c.Assert(os.Symlink("/etc/systemd/system/mdraid-vmtest.service", filepath.Join(wants, "mdraid-vmtest.service")), qt.IsNil)
	def := filepath.Join(tree, "etc/systemd/system/default.target")
	os.Remove(def)
	c.Assert(os.Symlink("/lib/systemd/system/multi-user.target", def), qt.IsNil)

	// The kernel's modules, for update-initramfs only (hard links where
	// the cache is on the same file system); the booted root does not
	// need them and the file system stays small.
	v := r.Kernel.Version
	mods := filepath.Join(tree, "usr/lib/modules", v)
	c.Assert(os.MkdirAll(mods, 0o755), qt.IsNil)
	if err := exec.Command("cp", "-al", r.Kernel.Modules+"/.", mods).Run(); err != nil {
		run(t, nil, "cp", "-a", r.Kernel.Modules+"/.", mods)
	}
	// bookworm's mkinitramfs reads /boot/config-<v> for the compressors
	// the kernel takes; Debian's newer kernels ship it beside the
	// modules (linux-base-<v>).
	kroot := filepath.Dir(filepath.Dir(filepath.Dir(r.Kernel.Modules))) // <root>/lib/modules/<v>
	config := ""
	for _, p := range []string{filepath.Join(kroot, "boot", "config-"+v), filepath.Join(r.Kernel.Modules, "config")} {
		if b, err := os.ReadFile(p); err == nil {
			config = string(b)
			break
		}
	}
	c.Assert(config, qt.Not(qt.Equals), "", qt.Commentf("kernel %s: no config (scripts/vm-deps fetches it)", v))
	writeFile(t, filepath.Join(tree, "boot", "config-"+v), config, 0o644)
	path := []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin"}
	initrdIn := filepath.Join(tree, "boot", "initrd.img-"+v)
	var list string
	need := []string{"usr/local/bin/mdctl", "etc/udev/rules.d/63-mdctl-raid-arrays.rules", "/raid1.ko"}
	switch kind {
	case vmtest.InitramfsTools:
		out = run(t, path, "chroot", tree, "update-initramfs", "-c", "-k", v)
		t.Logf("update-initramfs:\n%s", out)
		list = run(t, path, "chroot", tree, "lsinitramfs", "/boot/initrd.img-"+v)
		need = append(need, "scripts/local-block/mdctl", "scripts/local-bottom/mdctl",
			"etc/udev/rules.d/64-mdctl-raid-assembly.rules", "conf/conf.d/mdctl", "etc/modprobe.d/mdctl.conf")
	case vmtest.Dracut:
		// Not host-only: the chroot is not the machine that boots
		// (a host-only image would carry rd.md.uuid itself; the
		// boot passes it on the command line).
		out = run(t, path, "chroot", tree, "dracut", "--no-hostonly", "--force", "--kver", v, "/boot/initrd.img-"+v)
		t.Logf("dracut:\n%s", out)
		list = run(t, path, "chroot", tree, "lsinitrd", "/boot/initrd.img-"+v)
		need = append(need, "etc/udev/rules.d/65-mdctl-incremental.rules", "sbin/mdctl-start",
			"hooks/pre-trigger/30-parse-mdctl.sh", "hooks/shutdown/30-mdctl-shutdown.sh", "etc/mdctl.env")
	}
	for _, want := range need {
		c.Check(strings.Contains(list, want), qt.IsTrue, qt.Commentf("the initramfs lacks %s", want))
	}
	c.Check(regexp.MustCompile(`(?m)/mdadm$|/mdmon$`).MatchString(list), qt.IsFalse, qt.Commentf("mdadm in the initramfs"))
	initrd := filepath.Join(work, "initrd.img")
	// The image stays in /boot, where the booted system has it (dracut's
	// shutdown unpacks it again into /run/initramfs).
	run(t, nil, "cp", initrdIn, initrd)
	c.Assert(os.RemoveAll(mods), qt.IsNil)

	fsImg := filepath.Join(work, "fs.img")
	run(t, nil, "mkfs.ext4", "-q", "-F", "-d", tree, "-U", fsUUID, "-L", "root", fsImg, fmt.Sprint(fsSize>>20)+"M")
	c.Assert(os.RemoveAll(tree), qt.IsNil)

	// The mirror, as a provisioner makes it: mdctl create (1.0, name
	// root, homehost mdboot) on two blank disks in a rig VM, then the
	// root file system written at byte 0 of each member (1.0 keeps its
	// data from sector 0; both halves the same, so --assume-clean holds).
	var disks []vmtest.Disk
	for i := range 2 {
		p := filepath.Join(work, fmt.Sprintf("member%d.img", i))
		c.Assert(vmtest.CreateImage(p, memberSize), qt.IsNil)
		disks = append(disks, vmtest.Disk{Path: p, Slot: i})
	}
	mdctl := filepath.Join(work, "mdctl")
	c.Assert(vmtest.BuildProgram(t.Context(), r.Root, "./cmd/mdctl", mdctl), qt.IsNil)
	res, err := r.RunTest(t, vmtest.Config{
		Files: map[string]string{"/vmtest/bin/mdctl": mdctl},
		Disks: disks, Timeout: 3 * time.Minute,
		Cmd: []string{"sh", "-euc", `
			/vmtest/bin/mdctl create /dev/md/root --level=1 --raid-devices=2 --metadata=1.0 \
				--name=root --homehost=` + hostname + ` --assume-clean \
				/dev/disk/by-path/pci-0000:00:10.0 /dev/disk/by-path/pci-0000:00:11.0
			cat /proc/mdstat
			[ "$(cat /sys/block/$(basename "$(readlink -f /dev/md/root)")/md/component_size)" -ge ` + fmt.Sprint(fsSize>>10) + ` ]
			/vmtest/bin/mdctl stop /dev/md/root
		`},
	})
	c.Assert(err, qt.IsNil, qt.Commentf("creating the mirror"))
	t.Logf("mirror created in %v", res.Duration.Round(time.Second))
	for _, d := range disks {
		copySparse(t, d.Path, fsImg)
	}
	t.Logf("system built in %v", time.Since(start).Round(time.Second))
	mdUUID := superblockOf(t, disks[0].Path).SetUUID.String()
	return &system{kind: kind, initrd: initrd, members: disks, fsUUID: fsUUID, mdUUID: mdUUID}
}

// copySparse writes src at offset 0 of dst, skipping zero blocks (dst is
// a fresh sparse image: its unwritten blocks read as zeros).
func copySparse(t *testing.T, dst, src string) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 1<<20)
	zero := make([]byte, len(buf))
	for off := int64(0); ; off += int64(len(buf)) {
		n, err := io.ReadFull(in, buf)
		if n > 0 && !bytes.Equal(buf[:n], zero[:n]) {
			if _, werr := out.WriteAt(buf[:n], off); werr != nil {
				t.Fatal(werr)
			}
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// boot starts the system on disks and returns the guest's VMTEST lines.
func (s *system) boot(t *testing.T, r *vmtest.Rig, disks []vmtest.Disk) (map[string]string, *vmtest.Result) {
	t.Helper()
	res, err := r.RunTest(t, vmtest.Config{
		Initrd: s.initrd, Disks: disks,
		// loglevel=6: the console shows notices, such as what
		// contrib's mdctl.shutdown logs at power-off.
		KernelArgs: s.kernelArgs(),
		Timeout:    8 * time.Minute, PowerOffTimeout: 3 * time.Minute,
	})
	if err != nil {
		t.Fatalf("boot: %v", err)
	}
	t.Logf("boot to power-off took %v", res.Duration.Round(time.Second))
	if res.Killed {
		t.Errorf("the system did not power off within 3 minutes of its report")
	}
	if !strings.Contains(res.Console, "mdctl.shutdown: ") {
		t.Errorf("contrib's mdctl.shutdown logged nothing at power-off")
	}
	// dracut's shutdown (systemd-shutdown switches to the unpacked
	// initramfs) runs 90mdctl's hook, which stops the root's array once
	// the root is unmounted.
	if s.kind == vmtest.Dracut && !strings.Contains(res.Console, "mdctl: stopping md arrays") {
		t.Errorf("90mdctl's shutdown hook did not run")
	}
	if s.kind == vmtest.Dracut && !strings.Contains(res.Console, "mdctl: waiting for md arrays to finish syncing") {
		t.Errorf("90mdctl's pre-mount hook did not run with rd.md.waitclean=1")
	}
	got := map[string]string{}
	for _, line := range strings.Split(res.Console, "\n") {
		// journal+console lines carry the time and the unit's name
		// before what the script said.
		if i := strings.Index(line, "VMTEST "); i >= 0 {
			rest := line[i+len("VMTEST "):]
			for _, f := range strings.Fields(rest) {
				if k, v, ok := strings.Cut(f, "="); ok {
					got[k] = v
				}
			}
			if k, v, ok := strings.Cut(rest, "="); ok && k == "failed" {
				got[k] = strings.TrimSpace(v)
			}
		}
	}
	return got, res
}

// kernelArgs: the root, and for dracut what a host-only image would
// carry (rd.md.uuid) and a shorter initqueue timeout (rd.retry=30: the
// degraded start at 20 s, as initramfs-tools').
func (s *system) kernelArgs() string {
	// loglevel=6: the console shows notices, such as what contrib's
	// mdctl.shutdown logs at power-off.
	args := "root=UUID=" + s.fsUUID + " ro loglevel=6"
	if s.kind == vmtest.Dracut {
		// rd.info: dracut's info lines (mdctl-start's, and the
		// shutdown hook's) reach the console despite quiet.
		// rd.md.waitclean=1: mdctl wait --scan before the root is
		// mounted (nothing syncs here: it must return at once).
		args += " rd.md.uuid=" + s.mdUUID + " rd.retry=30 rd.info rd.md.waitclean=1"
	}
	return args
}

// superblockOf reads a member image's 1.0 superblock.
func superblockOf(t *testing.T, p string) *superblock.Superblock {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	sb, err := superblock.Read(f, st.Size(), superblock.Version10)
	if err != nil {
		t.Fatalf("%s: %v", p, err)
	}
	return sb
}

func checkClean(t *testing.T, what string, paths ...string) {
	t.Helper()
	var events []uint64
	for _, p := range paths {
		sb := superblockOf(t, p)
		if !sb.Clean() {
			t.Errorf("%s: %s's superblock is not clean (resync_offset %d, events %d)", what, filepath.Base(p), sb.ResyncOffset, sb.Events)
		}
		events = append(events, sb.Events)
	}
	for _, e := range events[1:] {
		if e != events[0] {
			t.Errorf("%s: the members' events differ: %v", what, events)
		}
	}
}

// TestBootRootOnMirror (issue 34): a Debian system whose root file system
// is on an md RAID1 (metadata 1.0, as the seed's boot mirror) boots from
// the initramfs Debian's update-initramfs makes with contrib's
// initramfs-tools hook, with no mdadm package anywhere (see bootScenarios).
// It runs on 6.1 and on the newest kernel of the matrix (sid).
func TestBootRootOnMirror(t *testing.T) {
	r := vmtest.NewTestRig(t)
	if l := r.Kernel.Label; l != "" && l != "bookworm-6.1" && l != "sid" {
		t.Skipf("the initramfs-tools boot test runs on bookworm-6.1 and sid; this is %s", l)
	}
	bootScenarios(t, r, buildSystem(t, r, vmtest.InitramfsTools))
}

// TestBootRootOnMirrorDracut (issue 34) is TestBootRootOnMirror with the
// initramfs that Debian's dracut makes with contrib's 90mdctl module, on
// the newest kernel of the matrix (sid), with rd.md.uuid naming the
// mirror and rd.retry=30.
func TestBootRootOnMirrorDracut(t *testing.T) {
	r := vmtest.NewTestRig(t)
	if l := r.Kernel.Label; l != "" && l != "sid" {
		t.Skipf("the dracut boot test runs on sid; this is %s", l)
	}
	bootScenarios(t, r, buildSystem(t, r, vmtest.Dracut))
}

// bootScenarios boots the system three times:
//
//  1. both disks: the system reaches multi-user.target with / on the
//     mirror (/dev/md/root, named as a local array), mdctl status exits 0,
//     and after a normal power-off both members' superblocks say clean;
//  2. both disks again: the second boot starts no resync (the kernel
//     logs none and nothing runs), and the data written by the first
//     boot is there;
//  3. member 1's disk absent: the initramfs starts the mirror degraded
//     after the degraded-start delay, the system boots, mdctl status
//     says degraded (exit 1), and the power-off leaves the remaining
//     member clean.
func bootScenarios(t *testing.T, r *vmtest.Rig, sys *system) {
	a, b := sys.members[0].Path, sys.members[1].Path

	t.Run("clean", func(t *testing.T) {
		c := qt.New(t)
		got, _ := sys.boot(t, r, sys.members)
		c.Check(got["boots"], qt.Equals, "1")
		c.Check(got["target"], qt.Equals, "active")
		c.Check(got["default"], qt.Equals, "multi-user.target")
		c.Check(got["mdadm"], qt.Equals, "absent")
		c.Check(got["rootsrc"], qt.Matches, `/dev/md[0-9]+`)
		c.Check(got["rootlink"], qt.Equals, got["rootsrc"], qt.Commentf("/dev/md/root must name the root's array"))
		c.Check(got["status_rc"], qt.Equals, "0")
		c.Check(got["degraded"], qt.Equals, "0")
		c.Check(got["failed"], qt.Equals, "", qt.Commentf("failed units"))
		checkClean(t, "after the first power-off", a, b)
	})
	if t.Failed() {
		return
	}
	t.Run("no-resync-after-poweroff", func(t *testing.T) {
		c := qt.New(t)
		got, _ := sys.boot(t, r, sys.members)
		c.Check(got["boots"], qt.Equals, "2", qt.Commentf("the first boot's write is not there"))
		c.Check(got["status_rc"], qt.Equals, "0")
		c.Check(got["syncs"], qt.Equals, "0", qt.Commentf("the kernel started a sync"))
		c.Check(got["sync_action"], qt.Equals, "idle")
		c.Check(got["sync_completed"], qt.Equals, "none")
		checkClean(t, "after the second power-off", a, b)
	})
	t.Run("degraded", func(t *testing.T) {
		c := qt.New(t)
		got, res := sys.boot(t, r, sys.members[:1])
		c.Check(got["boots"], qt.Equals, "3")
		c.Check(got["target"], qt.Equals, "active")
		c.Check(got["rootsrc"], qt.Matches, `/dev/md[0-9]+`)
		c.Check(got["status_rc"], qt.Equals, "1", qt.Commentf("mdctl status of a degraded mirror"))
		c.Check(got["degraded"], qt.Equals, "1")
		switch sys.kind {
		case vmtest.InitramfsTools:
			c.Check(res.Console, qt.Contains, "run --scan", qt.Commentf("the initramfs's degraded start is not in its log"))
		case vmtest.Dracut:
			c.Check(res.Console, qt.Contains, "mdctl-start: the initqueue timed out", qt.Commentf("dracut's timeout job did not run"))
		}
		checkClean(t, "the remaining member after the degraded boot's power-off", a)
	})
}
