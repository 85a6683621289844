package vmtest

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

// sh runs a shell script in the guest.
func sh(script string) []string { return []string{"sh", "-euc", script} }

func TestBootSmoke(t *testing.T) {
	r := NewTestRig(t)
	res, err := r.RunTest(t, Config{
		Disks: TestDisks(t, 2, 64<<20),
		Cmd: sh(`
			ls -l /dev/disk/by-path /dev/disk/by-id
			cat /proc/mdstat
			grep -q mdraid.vmtest=1 /proc/cmdline
			[ "$MDRAID_VM_GUEST" = 1 ]
			[ "$(readlink /dev/disk/by-path/pci-0000:00:11.0)" = ../../vdb ]
			[ "$(cat /sys/block/vda/serial)" = mdtest-0 ]
			[ "$(cat /sys/block/vdb/size)" = 131072 ]
			mdadm --version
			ls /src/go.mod
		`),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("boot took %v", res.Duration)
	// Every personality module the kernel has is loaded (7.2 lists them
	// sorted, 6.x in load order, so each is looked for alone); the rest are
	// the ones the rig reports missing.
	want := []string{"mdadm - v", "[raid1]"}
	for _, p := range []struct{ mod, pers string }{
		{"linear", "[linear]"}, {"raid0", "[raid0]"}, {"raid10", "[raid10]"}, {"raid456", "[raid6]"}, {"raid456", "[raid5]"}, {"raid456", "[raid4]"},
	} {
		if !slices.Contains(r.Missing, p.mod) {
			want = append(want, p.pers)
		} else if strings.Contains(res.Console, p.pers) {
			t.Errorf("module %s reported missing, but the console shows %s", p.mod, p.pers)
		}
	}
	for _, w := range want {
		if !strings.Contains(res.Console, w) {
			t.Errorf("console lacks %q", w)
		}
	}
	t.Logf("kernel %s (%s), missing modules: %v", r.Kernel.Version, r.Kernel.Label, r.Missing)
}

func TestGuestFailureIsReported(t *testing.T) {
	r := NewTestRig(t)
	// How the rig reports a failed guest does not depend on the kernel:
	// it runs on the matrix's first kernel only (it costs half a minute
	// a kernel).
	if m, err := Matrix(); err == nil && len(m) > 0 && r.Kernel.Version != m[0].Version {
		t.Skipf("rig behaviour, checked on the matrix's first kernel (%s)", m[0].Label)
	}
	tests := []struct {
		name    string
		cmd     []string
		timeout time.Duration
		check   func(error) bool
	}{
		{"exit status", sh("echo failing on purpose; exit 3"), 0, func(err error) bool {
			var e *ExitError
			return errors.As(err, &e) && e.Code == 3
		}},
		{"kernel panic", sh("echo c > /proc/sysrq-trigger; sleep 60"), 0, func(err error) bool {
			return errors.Is(err, ErrPanic)
		}},
		{"timeout", sh("sleep 600"), 12 * time.Second, func(err error) bool {
			return errors.Is(err, ErrTimeout)
		}},
		{"no marker", []string{"/bin/busybox", "poweroff", "-f"}, 0, func(err error) bool {
			return errors.Is(err, ErrNoMarker)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := r.RunTest(t, Config{Cmd: tt.cmd, Timeout: tt.timeout})
			if err == nil || !tt.check(err) {
				t.Fatalf("got error %v, want the %s to be reported", err, tt.name)
			}
			t.Logf("reported as: %v", err)
		})
	}
}

// TestMultiBoot writes a marker in one boot and reads it in the next, after
// moving the image to another PCI slot and putting a fresh image in its old
// slot.
func TestMultiBoot(t *testing.T) {
	r := NewTestRig(t)
	disks := TestDisks(t, 2, 64<<20)
	_, err := r.RunTest(t, Config{Disks: disks, Cmd: sh(`
		echo marker-from-boot-1 | dd of=/dev/disk/by-path/pci-0000:00:10.0 bs=512 seek=100 conv=notrunc
		sync
	`)})
	if err != nil {
		t.Fatal(err)
	}
	fresh := t.TempDir() + "/fresh.img"
	if err := CreateImage(fresh, 64<<20); err != nil {
		t.Fatal(err)
	}
	moved := []Disk{{Path: fresh, Slot: 0}, {Path: disks[0].Path, Slot: 3}, disks[1]}
	_, err = r.RunTest(t, Config{Disks: moved, Cmd: sh(`
		dd if=/dev/disk/by-path/pci-0000:00:13.0 bs=512 skip=100 count=1 2>/dev/null | grep -a marker-from-boot-1
		[ "$(cat /sys/block/$(basename $(readlink /dev/disk/by-id/virtio-mdtest-3))/size)" = 131072 ]
		if dd if=/dev/disk/by-path/pci-0000:00:10.0 bs=512 skip=100 count=1 2>/dev/null | grep -a marker; then
			echo "fresh image in slot 0 has the marker"; exit 1
		fi
	`)})
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(disks[0].Path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(b[100*512:]), "marker-from-boot-1") {
		t.Error("host image lacks the marker")
	}
}

// TestHotplug adds a disk through QMP while the guest runs, removes it and
// adds it again at another slot.
func TestHotplug(t *testing.T) {
	r := NewTestRig(t)
	img := t.TempDir() + "/hot.img"
	if err := CreateImage(img, 32<<20); err != nil {
		t.Fatal(err)
	}
	vm, err := r.Boot(t.Context(), Config{
		Monitor: true,
		Disks:   TestDisks(t, 1, 64<<20),
		Timeout: 2 * time.Minute,
		Console: func(l string) { t.Log("guest: " + l) },
		Cmd: sh(`
			echo waiting-for-hotplug
			n=0
			until grep -qx mdtest-hot /sys/block/*/serial 2>/dev/null; do
				n=$((n+1)); [ $n -lt 600 ] || exit 1; sleep 0.1
			done
			d=$(grep -lx mdtest-hot /sys/block/*/serial); d=${d%/serial}
			[ "$(basename $(readlink -f $d/device/..))" = 0000:00:15.0 ]
			[ "$(cat $d/size)" = 65536 ]
			echo hotplug-seen ${d##*/}
			until [ ! -e $d ]; do
				n=$((n+1)); [ $n -lt 1200 ] || exit 1; sleep 0.1
			done
			echo hot-unplug-seen
			until grep -qx mdtest-again /sys/block/*/serial 2>/dev/null; do
				n=$((n+1)); [ $n -lt 1800 ] || exit 1; sleep 0.1
			done
			[ "$(readlink -f $(dirname $(grep -lx mdtest-again /sys/block/*/serial))/device/..)" = /sys/devices/pci0000:00/0000:00:16.0 ]
		`),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { vm.Kill(); vm.Wait() }() // on failure: stop before the test ends
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := vm.Expect(ctx, "waiting-for-hotplug"); err != nil {
		t.Fatal(err)
	}
	if err := vm.AddDisk(Disk{Path: img, Slot: 5, Serial: "mdtest-hot"}); err != nil {
		t.Fatal(err)
	}
	if err := vm.Expect(ctx, "hotplug-seen"); err != nil {
		t.Fatal(err)
	}
	if err := vm.RemoveDisk(ctx, 5); err != nil {
		t.Fatal(err)
	}
	if err := vm.Expect(ctx, "hot-unplug-seen"); err != nil {
		t.Fatal(err)
	}
	// The same image again, at another port; the guest exits once it sees it.
	if err := vm.AddDisk(Disk{Path: img, Slot: 6, Serial: "mdtest-again"}); err != nil {
		t.Fatal(err)
	}
	if _, err := vm.Wait(); err != nil {
		t.Fatal(err)
	}
}
