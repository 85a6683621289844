package healvm

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	qt "github.com/frankban/quicktest"

	"github.com/go-mdraid/mdraid/internal/vmtest"
)

// TestHealReAddAcrossBoots (issue 33) is a mirror's member that comes
// back, across seven boots over the same two disks:
//
//  1. A healthy RAID1 with a write-intent bitmap gets data and is
//     recorded.
//  2. Member 1's disk (b) is absent at boot: mdctl assemble --scan --run
//     (no mdadm) starts the mirror degraded, and it is written to.
//  3. b is back in its port: mdctl assemble --scan --run leaves the
//     out-of-date b out and starts the mirror degraded; heal --re-add
//     puts b back into slot 1 (md copies what the bitmap marked), and the
//     data reads back the same from b alone (a is failed for that).
//  4. mdctl re-add puts a back (the operator's command, no store).
//  5. b is absent again; the mirror is written to.
//  6. b is back: heal --re-add, a new process reading the store, does not
//     re-add it a second time (exit 2, b byte-identical, the store says
//     blocked).
//  7. mdctl re-add --store, the operator's word, re-adds it and clears
//     the marks.
func TestHealReAddAcrossBoots(t *testing.T) {
	c := qt.New(t)
	r, files, share := setup(t)
	a, b := image(t, "a.img"), image(t, "b.img")
	both := []vmtest.Disk{{Path: a, Slot: 0}, {Path: b, Slot: 1}}
	alone := []vmtest.Disk{{Path: a, Slot: 0}}
	// Boots assemble as an OS without mdadm does: mdctl assemble --scan
	// --run, every disk present offered.
	degradedWrite := sh(guestLib + `
		` + mdctl + ` --homehost talos assemble --scan --run
		[ "$(attr degraded)" = 1 ]
		dd if=/dev/urandom of=/dev/md/boot bs=1M count=1 conv=fsync 2>/dev/null
		sum16 > /state/data.sha256
		mdadm --stop /dev/md/boot
	`)

	boot(t, r, vmtest.Config{
		Files: files, Shares: []vmtest.Share{share}, Disks: both,
		Cmd: sh(guestLib + `
			mdadm --create /dev/md/boot --run --assume-clean --level=1 --raid-devices=2 \
				--metadata=1.0 --name=boot --homehost=talos --bitmap=internal --bitmap-chunk=64K \
				/dev/disk/by-path/pci-0000:00:10.0 /dev/disk/by-path/pci-0000:00:11.0
			dd if=/dev/urandom of=/dev/md/boot bs=1M count=16 conv=fsync 2>/dev/null
			` + mdctl + ` record --store /state/slots.json
			mdadm --stop /dev/md/boot
		`),
	})
	boot(t, r, vmtest.Config{Files: files, Shares: []vmtest.Share{share}, Disks: alone, Cmd: degradedWrite})
	boot(t, r, vmtest.Config{
		Files: files, Shares: []vmtest.Share{share}, Disks: both,
		Cmd: sh(guestLib + `
			rc=0; ` + mdctl + ` --homehost talos assemble --scan --run > /state/asm3.txt 2>&1 || rc=$?
			cat /state/asm3.txt; echo "assemble exit $rc"
			[ "$(attr degraded)" = 1 ]
			` + mdctl + ` heal --store /state/slots.json --re-add | tee /state/heal3.txt
			wait_idle
			[ "$(attr raid_disks)" = 2 ]
			back=$(basename "$(readlink -f /dev/disk/by-path/pci-0000:00:11.0)")
			[ "$(attr dev-$back/slot)" = 1 ] && [ "$(attr dev-$back/state)" = in_sync ]
			[ "$(sum16)" = "$(cat /state/data.sha256)" ]
			mdadm /dev/md/boot --fail /dev/disk/by-path/pci-0000:00:10.0
			[ "$(sum16d)" = "$(cat /state/data.sha256)" ]
			echo data-ok-from-the-returned-disk
			mdadm --stop /dev/md/boot
		`),
	})
	// Assembly at boot left the returned disk out: its superblock is
	// behind the running array's.
	asm3, err := os.ReadFile(filepath.Join(share.HostDir, "asm3.txt"))
	c.Assert(err, qt.IsNil)
	c.Check(string(asm3), qt.Matches, `(?s).*vda: added to md127 \(/dev/md/boot, 1 of 1 members\): started\..*/dev/vdb: not added: md: out-of-date member of a running array.*`)
	heal3, err := os.ReadFile(filepath.Join(share.HostDir, "heal3.txt"))
	c.Assert(err, qt.IsNil)
	c.Assert(string(heal3), qt.Matches, `(?s)md127 slot 1 \(pci-0000:00:11.0\): healed: re-added /dev/vdb into slot 1: md took it back; with the bitmap only what changed is copied .*`)

	// Boot 3 failed a to read from b alone: a goes back in by hand.
	boot(t, r, vmtest.Config{
		Files: files, Shares: []vmtest.Share{share}, Disks: both,
		Cmd: sh(guestLib + `
			mdadm --assemble /dev/md/boot --run /dev/disk/by-path/pci-0000:00:11.0
			` + mdctl + ` re-add boot /dev/disk/by-path/pci-0000:00:10.0
			wait_idle
			mdadm --stop /dev/md/boot
		`),
	})
	boot(t, r, vmtest.Config{Files: files, Shares: []vmtest.Share{share}, Disks: alone, Cmd: degradedWrite})
	bSum := fileSum(t, b)
	boot(t, r, vmtest.Config{
		Files: files, Shares: []vmtest.Share{share}, Disks: both,
		Cmd: sh(guestLib + `
			mdadm --assemble /dev/md/boot --run /dev/disk/by-path/pci-0000:00:10.0
			rc=0; ` + mdctl + ` heal --store /state/slots.json --re-add --json > /state/heal5.json || rc=$?
			cat /state/heal5.json
			[ $rc = 2 ]
			[ "$(attr degraded)" = 1 ]
			mdadm --stop /dev/md/boot
		`),
	})
	c.Assert(fileSum(t, b), qt.Equals, bSum, qt.Commentf("the disk heal would not re-add was written"))
	var ds []map[string]any
	out, err := os.ReadFile(filepath.Join(share.HostDir, "heal5.json"))
	c.Assert(err, qt.IsNil)
	c.Assert(json.Unmarshal(out, &ds), qt.IsNil, qt.Commentf("%s", out))
	c.Assert(ds, qt.HasLen, 1)
	c.Check(ds[0]["outcome"], qt.Equals, "refused")
	c.Check(ds[0]["reason"], qt.Matches, `.*heal re-added it at .* and it went missing again; an operator re-adds it with mdctl re-add --store.*`)
	store, err := os.ReadFile(filepath.Join(share.HostDir, "slots.json"))
	c.Assert(err, qt.IsNil)
	c.Check(string(store), qt.Contains, `"blocked": true`)

	boot(t, r, vmtest.Config{
		Files: files, Shares: []vmtest.Share{share}, Disks: both,
		Cmd: sh(guestLib + `
			mdadm --assemble /dev/md/boot --run /dev/disk/by-path/pci-0000:00:10.0
			` + mdctl + ` re-add boot /dev/disk/by-path/pci-0000:00:11.0 --store /state/slots.json
			wait_idle
			[ "$(sum16)" = "$(cat /state/data.sha256)" ]
			mdadm --stop /dev/md/boot
		`),
	})
	store, err = os.ReadFile(filepath.Join(share.HostDir, "slots.json"))
	c.Assert(err, qt.IsNil)
	c.Check(string(store), qt.Not(qt.Contains), `"re_adds"`, qt.Commentf("the operator's re-add left the marks"))
}
