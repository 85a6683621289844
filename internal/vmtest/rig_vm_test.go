//go:build vmtest

package vmtest_test

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/go-mdraid/mdraid/internal/vmtest/guest"
)

// TestVMGuestRAID1 proves the rig end to end: modules, mdadm and its
// libraries, device nodes without udev, sysfs and /proc/mdstat.
func TestVMGuestRAID1(t *testing.T) {
	disks := guest.ScratchDisks(t, 2)
	for i, d := range disks {
		if d.Slot != i || d.ByPath != []string{"pci-0000:00:10.0", "pci-0000:00:11.0"}[i] || d.Size != 64<<20 {
			t.Fatalf("disk %d = %+v", i, d)
		}
		if l, err := os.Readlink("/dev/disk/by-path/" + d.ByPath); err != nil || l != "../../"+d.Name {
			t.Errorf("by-path link of %s: %q, %v", d.Name, l, err)
		}
	}
	guest.Mdadm(t, "--create", "/dev/md/rig", "--run", "--level=1", "--raid-devices=2",
		"--metadata=1.2", disks[0].Path, disks[1].Path)
	md := guest.ArrayName(t, "/dev/md/rig")
	guest.WaitSync(t, md)

	mdstat := guest.MDStat(t)
	t.Log(mdstat)
	if !regexp.MustCompile(md+` : active raid1 vdb\[1\] vda\[0\]`).MatchString(mdstat) ||
		!strings.Contains(mdstat, "[2/2] [UU]") {
		t.Errorf("unexpected /proc/mdstat:\n%s", mdstat)
	}
	if s := guest.ReadAttr(t, md, "array_state"); s != "clean" && s != "active" {
		t.Errorf("array_state = %q", s)
	}
	for _, m := range guest.Members(t, md) {
		if m.State != "in_sync" {
			t.Errorf("member %+v not in sync", m)
		}
	}
	if got := guest.ReadAttr(t, md, "metadata_version"); got != "1.2" {
		t.Errorf("metadata_version = %q", got)
	}
	out := guest.Mdadm(t, "--detail", "/dev/md/rig")
	if !strings.Contains(out, "Name : vmtest:rig") {
		t.Errorf("mdadm --detail:\n%s", out)
	}
	guest.Mdadm(t, "--stop", "/dev/md/rig")
	if arrays, _ := guest.Arrays(); len(arrays) != 0 {
		if s, err := os.ReadFile(guest.SysPath(md, "array_state")); err == nil {
			t.Errorf("after --stop %s still has array_state %s", md, s)
		}
	}
	// A member keeps its superblock after the stop; Reset (at cleanup) wipes it.
	if out := guest.Mdadm(t, "--examine", disks[0].Path); !strings.Contains(out, "Raid Level : raid1") {
		t.Errorf("examine:\n%s", out)
	}
}

// TestVMGuestReset checks that the cleanup helper really leaves blank disks.
func TestVMGuestReset(t *testing.T) {
	disks := guest.ScratchDisks(t, 3)

	guest.Mdadm(t, "--create", "/dev/md0", "--run", "--level=5", "--raid-devices=3",
		"--metadata=1.0", "--assume-clean", disks[0].Path, disks[1].Path, disks[2].Path)
	guest.Reset(t)
	if a, _ := guest.Arrays(); len(a) > 0 {
		for _, md := range a {
			if _, err := os.Stat(guest.SysPath(md, "level")); err == nil {
				t.Errorf("%s still exists after Reset", md)
			}
		}
	}
	for _, d := range disks {
		if out, err := guest.RunMdadm("--examine", d.Path); err == nil {
			t.Errorf("%s still has a superblock:\n%s", d.Name, out)
		}
	}
}
