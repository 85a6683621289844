// Package assemblevm proves assembly on the real kernel against mdadm,
// with the VM rig (internal/vmtest): one boot creates arrays of every
// kind with mdadm, and later boots on copies of the same disks assemble
// them with mdadm --incremental, mdctl incremental (mdadm deleted before
// the first command), mdctl assemble --scan (with md_mod not loaded) and
// a real udev running mdadm's rules or contrib/udev's, and compare what
// each leaves. Its tests run on the host and skip unless MDRAID_VMTEST=1.
package assemblevm

import (
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	qt "github.com/frankban/quicktest"

	"github.com/go-mdraid/mdraid/internal/vmtest"
)

const (
	diskSize = 32 << 20
	nDisks   = 16 // the last holds nParts partitions
	nParts   = 4
	// missingSlot is the disk left out after the first boot: the raid5's
	// third.
	missingSlot = 4
	mdctl       = "/vmtest/bin/mdctl"
)

func sh(script string) []string { return []string{"sh", "-euc", script} }

// guestLib is shell shared by the boots. P0..P12 are the disks by path.
var guestLib = func() string {
	var b strings.Builder
	b.WriteString("hostname talos\nexport MDADM_NO_UDEV=1\n")
	for i := range nDisks {
		fmt.Fprintf(&b, "P%d=/dev/disk/by-path/%s\n", i, vmtest.Disk{Slot: i}.ByPath())
	}
	// The partitioned disk's kernel name (it changes when a disk before
	// it is left out).
	fmt.Fprintf(&b, "PN=$(readlink -f $P%d)\n", nDisks-1)
	b.WriteString(`
# dump prints what assembly left: every md device with its level, state
# and member:slot pairs (whole-disk members by PCI path), then the
# /dev/md links.
dump() {
	for d in /sys/block/md*; do
		[ -e "$d/md/array_state" ] || continue
		st=$(cat "$d/md/array_state")
		[ "$st" = clear ] && continue
		mem=$(for m in "$d"/md/dev-*; do
			[ -e "$m" ] || continue
			k=${m##*/dev-}
			p=$(for l in /dev/disk/by-path/pci-*; do
				case $l in *-part*) continue;; esac
				[ "$(readlink -f "$l")" = "/dev/$k" ] && echo "${l##*/}"
			done)
			echo "${p:-$k}:$(cat "$m/slot")"
		done | sort | tr '\n' ' ')
		echo "${d##*/} level=$(cat "$d/md/level") state=$st members=$mem"
	done | sort
	for l in /dev/md/*; do
		[ -L "$l" ] && echo "link ${l##*/} -> $(readlink -f "$l")"
	done | sort
}
# idlinks prints the links udev's array rules make in /dev/disk/by-id.
idlinks() {
	for l in /dev/disk/by-id/md-*; do
		[ -L "$l" ] && echo "idlink ${l##*/} -> $(readlink -f "$l")"
	done | sort
}
# lastresort starts every array left waiting, with $1 (the last-resort
# unit's mdadm --run, or mdctl run), and dumps again.
lastresort() {
	for d in /sys/block/md*; do
		[ "$(cat "$d/md/array_state" 2>/dev/null)" = inactive ] || continue
		rc=0; $1 "/dev/${d##*/}" >&2 || rc=$?; echo "run ${d##*/} $rc"
	done
	dump
}
# verify checks the data written at creation on every started array.
verify() {
	for d in /sys/block/md*; do
		case $(cat "$d/md/array_state" 2>/dev/null) in ''|inactive|clear) continue;; esac
		u=$(cat "$d/md/uuid")
		got=$(dd if="/dev/${d##*/}" bs=1M count=1 2>/dev/null | sha256sum | cut -d' ' -f1)
		[ "$got" = "$(cat "/state/sum-$u")" ] || { echo "data differs on ${d##*/} ($u)"; exit 1; }
		echo "data ok ${d##*/}"
	done
}
`)
	return b.String()
}()

func boot(t *testing.T, r *vmtest.Rig, cfg vmtest.Config) {
	t.Helper()
	cfg.Timeout = 5 * time.Minute
	res, err := r.RunTest(t, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("boot took %v", res.Duration.Round(time.Millisecond))
}

func copyDisks(t *testing.T, src []vmtest.Disk) []vmtest.Disk {
	dir := t.TempDir()
	var out []vmtest.Disk
	for _, d := range src {
		p := filepath.Join(dir, filepath.Base(d.Path))
		in, err := os.Open(d.Path)
		if err != nil {
			t.Fatal(err)
		}
		o, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(o, in); err != nil {
			t.Fatal(err)
		}
		in.Close()
		if err := o.Close(); err != nil {
			t.Fatal(err)
		}
		out = append(out, vmtest.Disk{Path: p, Slot: d.Slot})
	}
	return out
}

// TestAssembleLikeMdadm is issue 11's proof: on the same disks, mdctl
// leaves the arrays mdadm leaves.
func TestAssembleLikeMdadm(t *testing.T) {
	c := qt.New(t)
	r := vmtest.NewTestRig(t)
	r.RequireModules(t, "raid1", "raid456", "raid10")
	bin := filepath.Join(t.TempDir(), "mdctl")
	c.Assert(vmtest.BuildProgram(t.Context(), r.Root, "./cmd/mdctl", bin), qt.IsNil)
	files := map[string]string{mdctl: bin}
	state := t.TempDir()
	share := vmtest.Share{Tag: "state", HostDir: state, GuestDir: "/state"}
	disks, err := vmtest.ScratchDisks(t.TempDir(), nDisks, diskSize)
	c.Assert(err, qt.IsNil)
	c.Assert(writeMBR(disks[nDisks-1].Path), qt.IsNil)

	// Boot 1: mdadm creates every kind, data goes on, all stop.
	boot(t, r, vmtest.Config{Files: files, Shares: []vmtest.Share{share}, Disks: disks, Cmd: sh(guestLib + `
		c="mdadm --create --run --assume-clean"
		$c /dev/md/boot --level=1 --raid-devices=2 --metadata=1.0 --name=boot --homehost=talos $P0 $P1
		$c /dev/md/r5 --level=5 --raid-devices=3 --metadata=1.2 --bitmap=internal --name=r5 --homehost=talos $P2 $P3 $P4
		$c /dev/md5 --level=1 --raid-devices=2 --metadata=0.90 --homehost=talos $P5 $P6
		$c /dev/md/data --level=10 --raid-devices=2 --metadata=1.2 --name=data --homehost=elsewhere $P7 $P8
		$c /dev/md/three --level=1 --raid-devices=3 --metadata=1.2 --name=three --homehost=talos $P9 $P10 $P11
		$c /dev/md/half --level=1 --raid-devices=2 --metadata=1.2 --name=half --homehost=talos $P12 missing
		$c /dev/md/parts --level=1 --raid-devices=2 --metadata=1.2 --name=parts --homehost=talos ${PN}1 ${PN}2
		# Foreign names with no host in them: a 0.90 array made on
		# another host, and a 1.2 array whose name has no host prefix.
		$c /dev/md9 --level=1 --raid-devices=2 --metadata=0.90 --homehost=elsewhere $P13 $P14
		$c /dev/md/solo --level=1 --raid-devices=2 --metadata=1.2 --name=solo --homehost='<none>' ${PN}3 ${PN}4
		mdadm /dev/md/three --fail $P11
		mdadm /dev/md/three --remove $P11
		ls -l /dev/md/
		for d in /sys/block/md*; do
			dd if=/dev/urandom of="/dev/${d##*/}" bs=1M count=1 conv=fsync 2>/dev/null
			dd if="/dev/${d##*/}" bs=1M count=1 2>/dev/null | sha256sum | cut -d' ' -f1 > "/state/sum-$(cat "$d/md/uuid")"
		done
		ls /state
		cat /proc/mdstat
		mdadm --stop --scan
		cat /proc/mdstat
	`)})

	// The later boots lack one disk of the raid5 (slot 4): it lost a
	// member by not being there at boot, so it waits for it (or for the
	// last resort), under mdadm as under mdctl.
	var later []vmtest.Disk
	for _, d := range disks {
		if d.Slot != missingSlot {
			later = append(later, d)
		}
	}
	// The order udev would deliver the disks in: shuffled, the same for
	// mdadm and mdctl.
	order := rand.New(rand.NewPCG(11, 0)).Perm(nDisks - 1 + nParts)
	var devs []string
	for _, i := range order {
		switch {
		case i == missingSlot:
		case i < nDisks-1:
			devs = append(devs, fmt.Sprintf("$P%d", i))
		default:
			devs = append(devs, fmt.Sprintf("${PN}%d", i-(nDisks-1)+1))
		}
	}
	each := func(cmd string) string {
		return "for d in " + strings.Join(devs, " ") + "; do rc=0; " + cmd + ` "$d" || rc=$?; echo "rc ${d##*/} $rc"; done`
	}
	t.Logf("disk order: %v", order)
	noMdadm := `rm -f "$(command -v mdadm)"; ! command -v mdadm
	`

	// Boot 2: mdadm --incremental, then the cross-checks with mdadm.
	boot(t, r, vmtest.Config{Files: files, Shares: []vmtest.Share{share}, Disks: copyDisks(t, later), Cmd: sh(guestLib + `
		{ ` + each("mdadm --incremental --export") + `; dump; } > /state/mdadm.txt
		cat /state/mdadm.txt; cat /run/mdadm/map
		lastresort "mdadm --run" > /state/mdadm-run.txt
		cat /state/mdadm-run.txt
		verify
		cp /run/mdadm/map /state/map-mdadm
		# Again in the kernel's order of the disks, as udev delivers
		# them at boot: the reference for mdctl assemble --scan.
		mdadm --stop --scan
		rm -rf /dev/md /run/mdadm
		{ for d in $(ls /dev/vd*); do rc=0; mdadm --incremental "$d" || rc=$?; done; dump; } > /state/mdadm-sorted.txt
		cat /state/mdadm-sorted.txt
		# Arrays mdctl assembles are then managed by mdadm.
		mdadm --stop --scan
		rm -rf /dev/md /run/mdadm
		` + mdctl + ` assemble --scan --run
		cat /proc/mdstat
		mdadm --detail --scan | sort | tee /state/detail-scan
		{ ` + mdctl + ` status --brief || true; } | sort > /state/brief
		for l in /dev/md/*; do mdadm --detail "$l" >/dev/null || [ $? -le 2 ]; done
		# mdctl stop, then mdadm assembles them again.
		for d in /sys/block/md*; do ` + mdctl + ` stop "${d##*/}"; done
		[ -z "$(ls /sys/block | grep '^md' || true)" ] || { ls /sys/block; exit 1; }
		[ ! -s /run/mdadm/map ]
		[ -z "$(ls /dev/md 2>/dev/null)" ] || { ls -l /dev/md; exit 1; }
		mdadm --assemble --scan --run || true
		cat /proc/mdstat
		[ "$(grep -c ' : active ' /proc/mdstat)" -ge 4 ]
		verify
		# mdadm --assemble of one foreign array, named with its devices:
		# the state it starts it in.
		mdadm --stop --scan
		mdadm --assemble /dev/md/data $P7 $P8
		cat "/sys/block/$(basename "$(readlink -f /dev/md/data)")/md/array_state" > /state/assemble-foreign-mdadm
	`)})
	// Boot 3: mdctl incremental in the same order, without mdadm.
	boot(t, r, vmtest.Config{Files: files, Shares: []vmtest.Share{share}, Disks: copyDisks(t, later), Cmd: sh(guestLib + noMdadm + `
		{ ` + each(mdctl+" incremental --export") + `; dump; } > /state/mdctl.txt
		cat /state/mdctl.txt; cat /run/mdadm/map
		cp /run/mdadm/map /state/map-mdctl
		lastresort "` + mdctl + ` run" > /state/mdctl-run.txt
		cat /state/mdctl-run.txt
		verify
	`)})
	// Boot 4: mdctl assemble --scan, without mdadm, and without md_mod
	// loaded: it has no new_array, so the first array is made by opening
	// its node, which makes the kernel ask modprobe for block-major-9-N;
	// the personalities are asked for when the arrays start (md-level-N).
	boot(t, r, vmtest.Config{Files: files, Shares: []vmtest.Share{share}, Disks: copyDisks(t, later), Env: []string{"VMTEST_NOLOAD=" + noLoad}, Cmd: sh(guestLib + noMdadm + `
		[ ! -e /sys/module/md_mod ] || { echo "md_mod is loaded"; exit 1; }
		printf '#!/bin/sh\necho "$*" >> /tmp/modprobe.log\nexec /sbin/modprobe "$@"\n' > /tmp/modprobe
		chmod 755 /tmp/modprobe
		echo /tmp/modprobe > /proc/sys/kernel/modprobe
		` + mdctl + ` assemble --scan
		cat /tmp/modprobe.log; cp /tmp/modprobe.log /state/modprobe.log
		ls -l /dev/md*
		stat -c '%n %F %t:%T %a %u:%g' /dev/md127 > /state/node
		dump > /state/scan.txt
		cat /state/scan.txt
		verify
		# One array at a time, by name and by UUID.
		u=$(cat /sys/block/$(basename "$(readlink -f /dev/md/half)")/md/uuid)
		` + mdctl + ` stop /dev/md/boot /dev/md/half
		[ ! -e /dev/md/boot ] && [ ! -e /dev/md/half ]
		` + mdctl + ` assemble boot
		` + mdctl + ` assemble "$u"
		[ "$(cat /sys/block/$(basename "$(readlink -f /dev/md/boot)")/md/array_state)" = clean ]
		[ "$(cat /sys/block/$(basename "$(readlink -f /dev/md/half)")/md/array_state)" = clean ]
		# The raid5 that lost a disk waits; the last resort starts it.
		r5=$(basename "$(readlink -f /dev/md/r5)")
		[ "$(cat /sys/block/$r5/md/array_state)" = inactive ]
		` + mdctl + ` run "$r5"
		[ "$(cat /sys/block/$r5/md/array_state)" = read-auto ]
		rc=0; ` + mdctl + ` assemble nosuch || rc=$?; [ $rc = 2 ]
		verify
		# One foreign array by its name.
		` + mdctl + ` stop /dev/md/elsewhere:data
		` + mdctl + ` assemble elsewhere:data
		cat "/sys/block/$(basename "$(readlink -f /dev/md/elsewhere:data)")/md/array_state" > /state/assemble-foreign-mdctl
	`)})

	// Boots 5 and 6: a real udev (systemd-udevd from the host, one event
	// at a time so that the order is the kernel's in both) with Debian's
	// persistent-storage rules, and either mdadm's rules or ours with
	// mdadm deleted; each leaves the arrays, /dev/md and by-id links.
	udev := udevFiles(t)
	udevBoot := func(out string, rules map[string]string, pre string) {
		f := map[string]string{}
		for k, v := range files {
			f[k] = v
		}
		for k, v := range udev {
			f[k] = v
		}
		for k, v := range rules {
			f[k] = v
		}
		boot(t, r, vmtest.Config{Files: f, Shares: []vmtest.Share{share}, Disks: copyDisks(t, later), Cmd: sh(guestLib + pre + `
			unset MDADM_NO_UDEV
			# One worker: events run in the order of the trigger (the
			# kernel's), the same for both rule sets; the order
			# decides what a stale member does. (mdadm then waits a
			# few seconds per array for udev, which is busy with it.)
			/lib/systemd/systemd-udevd --daemon --children-max=1 --resolve-names=never
			udevadm trigger --type=devices --action=add --subsystem-match=block
			udevadm settle --timeout=240
			cat /proc/mdstat
			{ dump; idlinks; } > /state/` + out + `
			cat /state/` + out + `
			verify
		`)})
	}
	udevBoot("udev-mdadm.txt", hostRules(t, "63-md-raid-arrays.rules", "64-md-raid-assembly.rules"), "")
	// The rules as scripts/install-contrib installs them, with the path
	// of the installed mdctl written for @BINDIR@.
	dest := t.TempDir()
	inst := exec.Command(filepath.Join(r.Root, "scripts", "install-contrib"))
	inst.Env = append(os.Environ(), "DESTDIR="+dest, "BINDIR=/usr/local/bin", "UDEVDIR=/lib/udev/rules.d")
	if out, err := inst.CombinedOutput(); err != nil {
		t.Fatalf("scripts/install-contrib: %v\n%s", err, out)
	}
	ours := map[string]string{"/usr/local/bin/mdctl": bin}
	for _, n := range []string{"63-mdctl-raid-arrays.rules", "64-mdctl-raid-assembly.rules"} {
		ours["/lib/udev/rules.d/"+n] = filepath.Join(dest, "lib", "udev", "rules.d", n)
	}
	udevBoot("udev-mdctl.txt", ours, noMdadm)

	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(state, name))
		c.Assert(err, qt.IsNil)
		return string(b)
	}
	want := read("mdadm.txt")
	c.Logf("mdadm --incremental left:\n%s", want)
	c.Check(read("mdctl.txt"), qt.Equals, want)
	c.Check(sortLines(read("map-mdctl")), qt.Equals, sortLines(read("map-mdadm")))
	c.Check(read("mdctl-run.txt"), qt.Equals, read("mdadm-run.txt"))
	// status --brief prints mdadm --detail --scan's ARRAY lines.
	c.Check(read("brief"), qt.Equals, read("detail-scan"))
	c.Check(canonical(read("scan.txt")), qt.Equals, canonical(read("mdadm-sorted.txt")))
	// Every array is there, with its link; the foreign ones with no host
	// in their name are always suffixed.
	for _, l := range []string{"link boot ", "link r5 ", "link elsewhere:data ", "link three ", "link half ", "link parts ", "link 9_0 ", "link solo_0 "} {
		c.Check(want, qt.Contains, l)
	}

	// Without md_mod: the kernel asked for the md block major when the
	// node was opened, and for the personalities when arrays started.
	probes := read("modprobe.log")
	c.Check(probes, qt.Matches, `(?s).*block-major-9-127\b.*`)
	c.Check(probes, qt.Matches, `(?s).*md-(level-1|raid1)\b.*`)
	c.Logf("node made without md_mod: %s", read("node"))
	c.Check(read("node"), qt.Matches, `/dev/md127 block special file 9:7f 600 0:0\n`)

	// mdadm --assemble starts a foreign array with RUN_ARRAY (writable);
	// mdctl assemble leaves it read-auto, as udev's incremental pass
	// does (docs/assembly.md section 8).
	c.Check(read("assemble-foreign-mdadm"), qt.Matches, `(clean|active)\n`)
	c.Check(read("assemble-foreign-mdctl"), qt.Equals, "read-auto\n")

	// Under a real udev, our rules leave what mdadm's leave.
	udevWant := read("udev-mdadm.txt")
	c.Logf("mdadm's udev rules left:\n%s", udevWant)
	c.Check(read("udev-mdctl.txt"), qt.Equals, udevWant)
	for _, l := range []string{"link boot ", "link elsewhere:data ", "link 9_0 ", "link solo_0 ", "idlink md-name-talos:boot ", "idlink md-uuid-"} {
		c.Check(udevWant, qt.Contains, l)
	}
}

// noLoad are the modules boot 4 leaves for the kernel to ask for: md_mod
// and everything that needs it (file names without .ko).
const noLoad = "md-mod raid0 raid1 raid10 raid456 linear"

// udevFiles are the host's udevd (udevadm is both) with its libraries and
// Debian's persistent-storage rules (blkid and path_id).
func udevFiles(t *testing.T) map[string]string {
	t.Helper()
	adm, err := exec.LookPath("udevadm")
	if err != nil {
		t.Fatalf("udevadm not found (scripts/vm-deps installs udev): %v", err)
	}
	files, err := vmtest.ProgramFiles(adm)
	if err != nil {
		t.Fatal(err)
	}
	files["/usr/bin/udevadm"] = adm
	files["/lib/systemd/systemd-udevd"] = adm
	for k, v := range hostRules(t, "60-persistent-storage.rules") {
		files[k] = v
	}
	return files
}

// hostRules are udev rules files of the host, by name.
func hostRules(t *testing.T, names ...string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, n := range names {
		p := filepath.Join("/lib/udev/rules.d", n)
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("%v (scripts/vm-deps installs udev and mdadm)", err)
		}
		out[p] = p
	}
	return out
}

// writeMBR gives the image at p an MS-DOS partition table with two
// nParts partitions of type fd (Linux raid autodetect), 14000 sectors
// each, 14336 sectors apart from 1 MiB on.
func writeMBR(p string) error {
	f, err := os.OpenFile(p, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	mbr := make([]byte, 512)
	for i := range nParts {
		start := uint32(2048 + 14336*i)
		e := mbr[446+16*i:]
		e[4] = 0xfd
		binary.LittleEndian.PutUint32(e[8:], start)
		binary.LittleEndian.PutUint32(e[12:], 14000)
	}
	mbr[510], mbr[511] = 0x55, 0xaa
	if _, err := f.WriteAt(mbr, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func sortLines(s string) string {
	l := strings.Split(strings.TrimSpace(s), "\n")
	sort.Strings(l)
	return strings.Join(l, "\n")
}

var mdNum = regexp.MustCompile(`\bmd[0-9]+\b`)

// canonical replaces md numbers by the link that names them, so that
// two assemblies that numbered the arrays in another order compare
// equal when they left the same arrays under the same names.
func canonical(s string) string {
	names := map[string]string{}
	for _, l := range strings.Split(s, "\n") {
		var name, target string
		if _, err := fmt.Sscanf(l, "link %s -> %s", &name, &target); err == nil {
			names[filepath.Base(target)] = "<" + name + ">"
		}
	}
	s = mdNum.ReplaceAllStringFunc(s, func(m string) string {
		if n, ok := names[m]; ok {
			return n
		}
		return m
	})
	return sortLines(s)
}
