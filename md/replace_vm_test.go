//go:build vmtest

package md

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	qt "github.com/frankban/quicktest"
	"golang.org/x/sys/unix"

	"github.com/cespare/xxhash/v2"

	"github.com/go-mdraid/mdraid/internal/mdadmtext"
	"github.com/go-mdraid/mdraid/internal/vmtest/guest"
	"github.com/go-mdraid/mdraid/superblock"
)

const dataBytes = 16 << 20

// vmManager is a Manager on the running system with its own lock dir.
func vmManager(t testing.TB) *Manager {
	t.Helper()
	m, err := Open(&Config{RunDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// writeData writes dataBytes of random data at the start of the array and
// returns its sha256.
func writeData(c *qt.C, dev string) [32]byte {
	buf := make([]byte, dataBytes)
	_, err := rand.Read(buf)
	c.Assert(err, qt.IsNil)
	f, err := os.OpenFile(dev, os.O_WRONLY, 0)
	c.Assert(err, qt.IsNil)
	_, err = f.WriteAt(buf, 0)
	c.Assert(err, qt.IsNil)
	c.Assert(f.Sync(), qt.IsNil)
	c.Assert(f.Close(), qt.IsNil)
	return sha256.Sum256(buf)
}

// readData reads the data back from the array with O_DIRECT, so the
// page cache cannot answer, and returns its sha256.
func readData(c *qt.C, dev string) [32]byte {
	f, err := os.OpenFile(dev, os.O_RDONLY|unix.O_DIRECT, 0)
	c.Assert(err, qt.IsNil)
	defer f.Close()
	buf := alignedBuf(dataBytes, 4096)
	c.Assert(readFull(f, buf, 0), qt.IsNil)
	return sha256.Sum256(buf)
}

// hashDisk hashes a whole device (xxhash: sha256 is slow under TCG, and
// this detects any change as well), read with O_DIRECT: what is on the
// disk, with no page cache dropped that the code under test could have
// relied on.
func hashDisk(c *qt.C, path string) uint64 {
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_DIRECT, 0)
	c.Assert(err, qt.IsNil)
	defer f.Close()
	h := xxhash.New()
	buf := alignedBuf(1<<20, 4096)
	for off := int64(0); ; off += int64(len(buf)) {
		n, err := unix.Pread(int(f.Fd()), buf, off)
		c.Assert(err, qt.IsNil)
		h.Write(buf[:n])
		if n < len(buf) {
			break
		}
	}
	return h.Sum64()
}

func createArray(c *qt.C, dev string, args []string, disks []guest.Disk) string {
	a := append([]string{"--create", dev, "--run", "--assume-clean"}, args...)
	for _, d := range disks {
		a = append(a, d.Path)
	}
	guest.Mdadm(c, a...)
	return guest.ArrayName(c, dev)
}

// TestVMReplaceProofs is the proof on the real kernel: for each kind of
// array, fail and remove member 1, replace it with a blank disk through
// the library, wait for the rebuild, check with mdadm, then fail an
// original member and read the data back through the new disk.
func TestVMReplaceProofs(t *testing.T) {
	cases := []struct {
		name  string
		args  []string
		disks int
		other int // the original member failed at the end, so that the new disk must serve
	}{
		{name: "boot", disks: 2, args: []string{"--level=1", "--metadata=1.0", "--name=boot", "--homehost=talos", "--raid-devices=2"}},
		{name: "bitmap12", disks: 2, args: []string{"--level=1", "--metadata=1.2", "--bitmap=internal", "--raid-devices=2"}},
		{name: "v090", disks: 2, args: []string{"--level=1", "--metadata=0.90", "--raid-devices=2"}},
		{name: "raid5", disks: 4, args: []string{"--level=5", "--raid-devices=4"}},
		{name: "raid10", disks: 4, args: []string{"--level=10", "--raid-devices=4"}},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			c := qt.New(t)
			disks := guest.ScratchDisks(t, tt.disks+1)
			dev := "/dev/md/" + tt.name
			md := createArray(c, dev, tt.args, disks[:tt.disks])
			mdDev := "/dev/" + md
			sum := writeData(c, mdDev)
			m := vmManager(t)
			ctx := context.Background()

			old, blank := disks[1], disks[tt.disks]
			c.Assert(m.Fail(ctx, md, old.Path), qt.IsNil)
			c.Assert(m.Remove(ctx, md, old.Name), qt.IsNil)

			res, err := m.Replace(ctx, ReplaceRequest{Array: md, With: blank.Path})
			c.Assert(err, qt.IsNil)
			c.Check(res.Slot, qt.Equals, 1)
			c.Check(res.Member, qt.Equals, blank.Name)
			t.Logf("PERF replace %s (metadata %s): executor %v, steps %v", tt.name, res.Plan.Metadata, res.Duration, res.Steps)

			a, err := m.WaitReplace(ctx, WaitRequest{Array: md, Member: blank.Name, Interval: 200 * time.Millisecond})
			c.Assert(err, qt.IsNil)
			c.Check(a.Availability, qt.Equals, Online)
			d := mdadmtext.ParseDetail(guest.Mdadm(c, "--detail", mdDev))
			// "active" only means writes happened within safe_mode_delay.
			c.Check(d.Fields["State"], qt.Matches, "clean|active")
			c.Check(atoiField(c, d, "Raid Devices"), qt.Equals, tt.disks)
			c.Check(guest.ReadAttr(c, md, "raid_disks"), qt.Equals, fmt.Sprint(tt.disks))
			row, ok := d.Row(blank.Path)
			c.Assert(ok, qt.IsTrue, qt.Commentf("%s not in mdadm --detail", blank.Path))
			c.Check(row.Slot, qt.Equals, "1")
			c.Check(row.State, qt.Matches, "active sync.*")
			c.Check(guest.ReadAttr(c, md, "dev-"+blank.Name+"/slot"), qt.Equals, "1")
			if tt.name == "v090" {
				t.Logf("mdadm --examine %s:\n%s", blank.Path, guest.Mdadm(c, "--examine", blank.Path))
			}

			// The new disk alone must serve its copy.
			c.Assert(m.Fail(ctx, md, disks[tt.other].Name), qt.IsNil)
			c.Check(readData(c, mdDev), qt.Equals, sum)
			guest.Mdadm(c, "--stop", mdDev)
		})
	}
}

// TestVMHotReplace replaces a live member: the old one ends up faulty and
// removed, the new one holds its slot, and the data holds.
func TestVMHotReplace(t *testing.T) {
	c := qt.New(t)
	disks := guest.ScratchDisks(t, 3)
	md := createArray(c, "/dev/md/hot", []string{"--level=1", "--metadata=1.2", "--raid-devices=2"}, disks[:2])
	mdDev := "/dev/" + md
	sum := writeData(c, mdDev)
	m := vmManager(t)
	ctx := context.Background()
	res, err := m.Replace(ctx, ReplaceRequest{Array: md, With: disks[2].Path, Member: disks[1].Path, Hot: true})
	c.Assert(err, qt.IsNil)
	t.Logf("PERF hot replace: executor %v", res.Duration)
	c.Check(guest.ReadAttr(c, md, "dev-"+disks[2].Name+"/slot"), qt.Equals, "1")
	a, err := m.WaitReplace(ctx, WaitRequest{Array: md, Member: disks[2].Name, Replaced: disks[1].Name, Interval: 200 * time.Millisecond})
	c.Assert(err, qt.IsNil)
	c.Check(a.Availability, qt.Equals, Online)
	mem, _ := a.Find(disks[1].Name)
	c.Check(mem, qt.IsNil, qt.Commentf("the replaced member is still bound"))
	d := mdadmtext.ParseDetail(guest.Mdadm(c, "--detail", mdDev))
	// "active" only means writes happened within safe_mode_delay.
	c.Check(d.Fields["State"], qt.Matches, "clean|active")
	row, ok := d.Row(disks[2].Path)
	c.Assert(ok, qt.IsTrue)
	c.Check(row.Slot, qt.Equals, "1")
	c.Assert(m.Fail(ctx, md, disks[0].Name), qt.IsNil)
	c.Check(readData(c, mdDev), qt.Equals, sum)
	guest.Mdadm(c, "--stop", mdDev)
}

// arrayShape is what must not change when a replace is refused.
func arrayShape(c *qt.C, m *Manager, md string) string {
	a, err := m.Status(context.Background(), md)
	c.Assert(err, qt.IsNil)
	s := fmt.Sprintf("%s rd=%d avail=%s act=%s", a.State, a.RaidDisks, a.Availability, a.Activity.Kind)
	for _, sl := range a.Slots {
		s += fmt.Sprintf(" [%d %s", sl.Slot, sl.State)
		if sl.Member != nil {
			s += " " + sl.Member.Device + " " + sl.Member.Flags.String()
		}
		s += "]"
	}
	for _, sp := range a.Spares {
		s += " spare:" + sp.Device
	}
	for _, f := range a.Faulty {
		s += " faulty:" + f.Device
	}
	return s
}

// TestVMReplaceRefusals: every refusal on a real disk leaves the whole
// candidate byte-identical and the array unchanged.
func TestVMReplaceRefusals(t *testing.T) {
	c := qt.New(t)
	disks := guest.ScratchDisks(t, 8)
	ctx := context.Background()
	m := vmManager(t)
	md := createArray(c, "/dev/md/ref", []string{"--level=1", "--metadata=1.2", "--raid-devices=2"}, disks[:2])
	other := createArray(c, "/dev/md/other", []string{"--level=1", "--metadata=1.2", "--raid-devices=2"}, disks[6:8])
	cand := disks[2]

	type refusal struct {
		name    string
		with    string
		req     func(*ReplaceRequest)
		prepare func(c *qt.C) func() // returns an undo, may be nil
		want    error
	}
	run := func(c *qt.C, md string, tests []refusal) {
		for _, tt := range tests {
			c.Run(tt.name, func(c *qt.C) {
				var undo func()
				if tt.prepare != nil {
					undo = tt.prepare(c)
				}
				with := tt.with
				if with == "" {
					with = cand.Path
				}
				var before uint64
				fi, statErr := os.Stat(with)
				isBlock := statErr == nil && fi.Mode()&os.ModeDevice != 0 && fi.Mode()&os.ModeCharDevice == 0 && !strings.HasPrefix(with, "/dev/md")
				if isBlock {
					before = hashDisk(c, with)
				}
				shape := arrayShape(c, m, md)
				req := ReplaceRequest{Array: md, With: with}
				if tt.req != nil {
					tt.req(&req)
				}
				_, err := m.Replace(ctx, req)
				c.Check(err, qt.ErrorIs, tt.want)
				c.Check(err, qt.ErrorIs, ErrRefused)
				c.Logf("%s: %v", tt.name, err)
				c.Check(arrayShape(c, m, md), qt.Equals, shape)
				if isBlock {
					c.Check(hashDisk(c, with), qt.Equals, before, qt.Commentf("%s changed", with))
				}
				if undo != nil {
					undo()
				}
			})
		}
	}

	// A healthy array: nowhere to put the disk, and busy while checking.
	run(c, md, []refusal{
		{name: "healthy", want: ErrNoEmptySlot},
		{name: "check running", want: errArrayBusy, prepare: func(c *qt.C) func() {
			guest.WriteAttr(c, md, "sync_max", "1024")
			guest.WriteAttr(c, md, "sync_action", "check")
			return func() {
				guest.WriteAttr(c, md, "sync_action", "idle")
				guest.WriteAttr(c, md, "sync_max", "max")
			}
		}},
	})

	c.Assert(m.Fail(ctx, md, disks[1].Name), qt.IsNil)
	c.Assert(m.Remove(ctx, md, disks[1].Name), qt.IsNil)
	mkfs := func(cmd ...string) func(c *qt.C) func() {
		return func(c *qt.C) func() {
			guest.Run(c, cmd[0], append(cmd[1:], cand.Path)...)
			return func() { zeroEnds(c, cand) }
		}
	}
	writeAt := func(off int64, b []byte) func(c *qt.C) func() {
		return func(c *qt.C) func() {
			f, err := os.OpenFile(cand.Path, os.O_WRONLY, 0)
			c.Assert(err, qt.IsNil)
			if off < 0 {
				off += cand.Size
			}
			_, err = f.WriteAt(b, off)
			c.Assert(err, qt.IsNil)
			c.Assert(f.Close(), qt.IsNil)
			return func() { zero(c, cand.Path, off, len(b)) }
		}
	}
	img := filepath.Join(c.TempDir(), "img")
	c.Assert(os.WriteFile(img, make([]byte, 1<<20), 0o644), qt.IsNil)
	run(c, md, []refusal{
		{name: "ext2", prepare: mkfs("mke2fs", "-q"), want: errHasSignature},
		{name: "vfat", prepare: mkfs("mkdosfs"), want: errHasPartitionTable}, // boot sector 0x55aa comes first
		{name: "swap", prepare: mkfs("mkswap"), want: errHasSignature},
		{name: "stale md superblock", want: errHasMDSuperblock, prepare: func(c *qt.C) func() {
			guest.Mdadm(c, "--create", "/dev/md/stale", "--run", "--assume-clean", "--level=1", "--metadata=1.0", "--raid-devices=2", cand.Path, "missing")
			guest.Mdadm(c, "--stop", "/dev/md/stale")
			return func() { zero(c, cand.Path, cand.Size-(1<<20), 1<<20) }
		}},
		{name: "backup GPT header only", prepare: writeAt(-512, []byte("EFI PART")), want: errHasPartitionTable},
		{name: "LVM label", prepare: writeAt(512, []byte("LABELONE")), want: errHasSignature},
		{name: "LUKS2 secondary header", prepare: writeAt(0x4000, []byte("SKUL\xba\xbe\x00\x02")), want: errHasSignature},
		{name: "the array itself", with: "/dev/" + md, want: errCandidateMember},
		{name: "a member", with: disks[0].Path, want: errCandidateMember},
		{name: "a member of another array", with: disks[6].Path, want: errCandidateMember},
		{name: "another array", with: "/dev/" + other, want: errCandidateMember},
		{name: "mounted (mount table)", want: errCandidateBusy, prepare: func(c *qt.C) func() {
			// The guest kernel has no disk file system module, so the
			// mount table is injected: the real parser reads a line
			// naming the candidate's device number.
			mi := filepath.Join(c.TempDir(), "mountinfo")
			dev := guest.Run(c, "cat", "/sys/block/"+cand.Name+"/dev")
			line := fmt.Sprintf("36 25 %s / /mnt/data rw,relatime shared:1 - ext4 %s rw\n", strings.TrimSpace(dev), cand.Path)
			c.Assert(os.WriteFile(mi, []byte(line), 0o644), qt.IsNil)
			saved := m.ops.mountInfo
			m.ops.mountInfo = mi
			return func() { m.ops.mountInfo = saved }
		}},
		{name: "active swap", want: errCandidateBusy, prepare: func(c *qt.C) func() {
			guest.Run(c, "mkswap", cand.Path)
			guest.Run(c, "swapon", cand.Path)
			return func() { guest.Run(c, "swapoff", cand.Path); zeroEnds(c, cand) }
		}},
		{name: "opened exclusively", want: errCandidateBusy, prepare: func(c *qt.C) func() {
			f, err := os.OpenFile(cand.Path, os.O_RDONLY|unix.O_EXCL, 0)
			c.Assert(err, qt.IsNil)
			return func() { f.Close() }
		}},
		{name: "character device", with: "/dev/null", want: errNotBlockDevice},
		{name: "image file", with: img, want: errNotBlockDevice},
		{name: "slot out of range", req: func(r *ReplaceRequest) { r.Slot = slotp(2) }, want: errSlotInvalid},
		{name: "slot of a healthy member", req: func(r *ReplaceRequest) { r.Slot = slotp(0) }, want: errSlotInvalid},
		{name: "hot replace of a removed member", req: func(r *ReplaceRequest) { r.Hot, r.Member = true, disks[1].Path }, want: errMemberInvalid},
	})

	// Partitions: the disk is refused, and a partition too small for the
	// array too.
	part := disks[3]
	mbr := make([]byte, 512)
	copy(mbr[446:], []byte{0, 0, 0, 0, 0x83, 0, 0, 0, 0x00, 0x08, 0, 0, 0x00, 0x80, 0, 0}) // LBA 2048, 32768 sectors
	mbr[510], mbr[511] = 0x55, 0xaa
	f, err := os.OpenFile(part.Path, os.O_RDWR, 0)
	c.Assert(err, qt.IsNil)
	_, err = f.WriteAt(mbr, 0)
	c.Assert(err, qt.IsNil)
	c.Assert(unix.IoctlSetInt(int(f.Fd()), unix.BLKRRPART, 0), qt.IsNil)
	f.Close()
	waitNode(c, part.Path+"1", true)
	run(c, md, []refusal{
		{name: "disk with partitions", with: part.Path, want: errHasPartitionTable},
		{name: "partition too small", with: part.Path + "1", want: errCandidateTooSmall},
	})
	f, err = os.OpenFile(part.Path, os.O_RDWR, 0)
	c.Assert(err, qt.IsNil)
	_, err = f.WriteAt(make([]byte, 512), 0)
	c.Assert(err, qt.IsNil)
	c.Assert(unix.IoctlSetInt(int(f.Fd()), unix.BLKRRPART, 0), qt.IsNil)
	f.Close()

	// Several empty slots.
	guest.Mdadm(c, "--stop", "/dev/"+other)
	r10 := createArray(c, "/dev/md/r10", []string{"--level=10", "--raid-devices=4"}, []guest.Disk{disks[4], disks[5], disks[6], disks[7]})
	c.Assert(m.Fail(ctx, r10, disks[5].Name), qt.IsNil)
	c.Assert(m.Fail(ctx, r10, disks[7].Name), qt.IsNil)
	c.Assert(m.Remove(ctx, r10, disks[5].Name), qt.IsNil)
	c.Assert(m.Remove(ctx, r10, disks[7].Name), qt.IsNil)
	run(c, r10, []refusal{
		{name: "two empty slots", want: errSlotAmbiguous},
	})
	// The library refuses to fail the last copy of a raid10 half.
	c.Check(m.Fail(ctx, r10, disks[4].Name), qt.ErrorIs, errWouldFail)
}

// zeroEnds zeroes the first and last MiB of a disk.
func zeroEnds(c *qt.C, d guest.Disk) {
	zero(c, d.Path, 0, 1<<20)
	zero(c, d.Path, d.Size-(1<<20), 1<<20)
}

// zero writes n zero bytes at off.
func zero(c *qt.C, path string, off int64, n int) {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	c.Assert(err, qt.IsNil)
	defer f.Close()
	_, err = f.WriteAt(make([]byte, n), off)
	c.Assert(err, qt.IsNil)
	c.Assert(f.Sync(), qt.IsNil)
}

// Environment of the helper process TestVMReplaceHelper; read only by the
// VM tests.
const (
	helperEnv      = "MDRAID_TEST_REPLACE_HELPER" // "kill-after"
	helperStepEnv  = "MDRAID_TEST_REPLACE_STEP"   // the StepKind after which it dies
	helperArrayEnv = "MDRAID_TEST_REPLACE_ARRAY"
	helperWithEnv  = "MDRAID_TEST_REPLACE_WITH"
	helperRunEnv   = "MDRAID_TEST_REPLACE_RUNDIR"
)

// TestVMReplaceHelper is not a test: killedReplace runs the test binary
// again with this test selected, and it replaces with a hook that kills
// the process (SIGKILL: no deferred cleanup, no unfreeze) right after the
// step named in its environment.
func TestVMReplaceHelper(t *testing.T) {
	step := StepKind(os.Getenv(helperStepEnv))
	if os.Getenv(helperEnv) != "kill-after" || step == "" {
		t.Skip("helper process only")
	}
	m, err := Open(&Config{RunDir: os.Getenv(helperRunEnv)})
	if err != nil {
		t.Fatal(err)
	}
	m.ops.afterStep = func(k StepKind) error {
		if k == step {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {}
		}
		return nil
	}
	_, err = m.Replace(context.Background(), ReplaceRequest{Array: os.Getenv(helperArrayEnv), With: os.Getenv(helperWithEnv)})
	t.Fatalf("the hook did not kill the process after step %s: %v", step, err)
}

// killedReplace replaces with disk with in a new process
// (TestVMReplaceHelper) that kills itself right after step, and checks
// that it died by that SIGKILL.
func killedReplace(c *qt.C, md, with, runDir string, step StepKind) {
	c.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestVMReplaceHelper$")
	cmd.Env = append(os.Environ(), helperEnv+"=kill-after", helperStepEnv+"="+string(step),
		helperArrayEnv+"="+md, helperWithEnv+"="+with, helperRunEnv+"="+runDir)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	c.Assert(errors.As(err, &ee), qt.IsTrue, qt.Commentf("helper (kill after %s): %v\n%s", step, err, out))
	c.Assert(ee.Sys().(syscall.WaitStatus).Signal(), qt.Equals, syscall.SIGKILL, qt.Commentf("helper (kill after %s):\n%s", step, out))
}

// stateBlock is the granularity of diskState's hashes.
const stateBlock = 4096

// diskState is what a disk holds, read whole through an O_DIRECT
// descriptor (the page cache cannot answer, and none is dropped): a hash
// of every 4 KiB block, and the superblock found at each of the four md
// locations.
type diskState struct {
	sums []uint64
	// sbs holds what decodes as an md superblock at a version's location
	// (valid or not); a blank location has no entry.
	sbs map[superblock.Version]*superblock.Superblock
	// md is the 1.2 superblock's area and its bitmap's, 4 KiB aligned:
	// what a replace writes on a new member, and md rewrites later.
	md []span
}

var allVersions = []superblock.Version{superblock.Version090, superblock.Version10, superblock.Version11, superblock.Version12}

func readDiskState(c *qt.C, d guest.Disk) diskState {
	c.Helper()
	f, err := os.OpenFile(d.Path, os.O_RDONLY|unix.O_DIRECT, 0)
	c.Assert(err, qt.IsNil)
	defer f.Close()
	img := alignedBuf(int(d.Size), 4096)
	for off := int64(0); off < d.Size; off += 4 << 20 {
		c.Assert(readFull(f, img[off:min(off+4<<20, d.Size)], off), qt.IsNil)
	}
	s := diskState{sbs: map[superblock.Version]*superblock.Superblock{}}
	for off := 0; off < len(img); off += stateBlock {
		s.sums = append(s.sums, xxhash.Sum64(img[off:min(off+stateBlock, len(img))]))
	}
	r := bytes.NewReader(img)
	for _, v := range allVersions {
		if sb, _ := superblock.Read(r, d.Size, v); sb != nil {
			s.sbs[v] = sb
		}
	}
	if sb := s.sbs[superblock.Version12]; sb != nil {
		s.md = append(s.md, span{sb.DiskOffset &^ 4095, 4096})
		if sb.HasBitmap() {
			loc, err := superblock.BitmapLocation(sb)
			c.Assert(err, qt.IsNil)
			bm, err := superblock.ReadBitmap(r, sb)
			c.Assert(err, qt.IsNil)
			end := (loc + int64(bm.Size(4096)) + 4095) &^ 4095
			s.md = append(s.md, span{loc &^ 4095, end - loc&^4095})
		}
	}
	return s
}

// changedOutside lists, as byte offsets, the 4 KiB blocks that differ
// between a and b and lie outside every span of area.
func changedOutside(c *qt.C, a, b diskState, area []span) []int64 {
	c.Helper()
	c.Assert(len(b.sums), qt.Equals, len(a.sums))
	var out []int64
	for i := range a.sums {
		off := int64(i) * stateBlock
		if a.sums[i] != b.sums[i] && !inSpans(off, area) {
			out = append(out, off)
		}
	}
	return out
}

func inSpans(off int64, area []span) bool {
	for _, s := range area {
		if off >= s.off && off < s.off+s.n {
			return true
		}
	}
	return false
}

// checkOnlyOurs checks that the disk carries a 1.2 superblock and no
// superblock at any other md location.
func checkOnlyOurs(c *qt.C, s diskState) {
	c.Helper()
	c.Check(s.sbs[superblock.Version12], qt.Not(qt.IsNil), qt.Commentf("no 1.2 superblock"))
	for _, v := range allVersions {
		if sb := s.sbs[v]; v != superblock.Version12 && sb != nil {
			c.Errorf("a %s superblock appeared at byte %d", v, sb.DiskOffset)
		}
	}
}

// fillDisk writes b over the whole disk with O_DIRECT. A disk of one
// fill byte (0x00, 0x5a or 0xff) is blank by the blank rule, and on a
// disk of 0x5a any write, of zeros too, shows. The rig's reset zeroes the
// whole disk again when the test ends.
func fillDisk(c *qt.C, d guest.Disk, b byte) {
	c.Helper()
	f, err := os.OpenFile(d.Path, os.O_WRONLY|unix.O_DIRECT, 0)
	c.Assert(err, qt.IsNil)
	defer f.Close()
	buf := alignedBuf(4<<20, 4096)
	for i := range buf {
		buf[i] = b
	}
	for off := int64(0); off < d.Size; off += int64(len(buf)) {
		_, err := f.WriteAt(buf[:min(int64(len(buf)), d.Size-off)], off)
		c.Assert(err, qt.IsNil)
	}
	c.Assert(f.Sync(), qt.IsNil)
}

// superblock12 reads the 1.2 superblock of path through its own O_DIRECT
// descriptor.
func superblock12(c *qt.C, path string) *superblock.Superblock {
	c.Helper()
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_DIRECT, 0)
	c.Assert(err, qt.IsNil)
	defer f.Close()
	buf := alignedBuf(4096, 4096)
	c.Assert(readFull(f, buf, 8*512), qt.IsNil)
	sb, err := superblock.Decode(buf)
	c.Assert(err, qt.IsNil)
	return sb
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func hasStep(steps []StepTiming, k StepKind) bool {
	for _, st := range steps {
		if st.Kind == k {
			return true
		}
	}
	return false
}

// TestVMReplaceKilled (issue 10, "also prove on the real kernel"): a
// replace is killed (SIGKILL: no deferred cleanup, no unfreeze) right
// after each step that leaves the array half changed, on a raid1 1.2
// with an internal bitmap and data on it, then rerun by a new Manager
// (as a new process would). The first run writes nothing on the disk
// outside the 1.2 superblock and bitmap area; a replace with another disk
// is refused meanwhile and writes nothing; the rerun keeps the device
// UUID and dev_number the first run wrote, writes nothing else on the
// disk before recovery starts, and no superblock appears at any other md
// location; then the disk rebuilds into slot 1, raid_disks stays 2,
// recovery ends unfrozen, and the data verifies through the new disk
// alone.
func TestVMReplaceKilled(t *testing.T) {
	cases := []struct {
		step StepKind
		// slot is what dev-NEW/slot reads after the kill; "" when the
		// disk is not a member.
		slot string
		// resume is the stage the rerun's plan must find.
		resume ResumeStage
	}{
		{step: StepWriteSuperblock, resume: ResumeWritten},
		{step: StepAdd, slot: "none", resume: ResumeAdded},
		{step: StepSetSlot, slot: "1", resume: ResumePinned},
	}
	for _, tt := range cases {
		t.Run(string(tt.step), func(t *testing.T) {
			c := qt.New(t)
			disks := guest.ScratchDisks(t, 4)
			ctx := context.Background()
			md := createArray(c, "/dev/md/kill", []string{"--level=1", "--metadata=1.2", "--bitmap=internal", "--raid-devices=2"}, disks[:2])
			mdDev := "/dev/" + md
			sum := writeData(c, mdDev)
			m := vmManager(t)
			runDir := m.ops.runDir
			// Failed, not removed: the rerun names it, and finds it
			// removed or removes it.
			c.Assert(m.Fail(ctx, md, disks[1].Name), qt.IsNil)
			cand, other := disks[2], disks[3]
			fillDisk(c, cand, 0x5a)
			blank := readDiskState(c, cand)

			killedReplace(c, md, cand.Path, runDir, tt.step)
			c.Check(guest.ReadAttr(c, md, "sync_action"), qt.Equals, "frozen")
			c.Check(guest.ReadAttr(c, md, "raid_disks"), qt.Equals, "2")
			if tt.slot == "" {
				_, err := os.Stat(guest.SysPath(md, "dev-"+cand.Name))
				c.Check(err, qt.ErrorIs, os.ErrNotExist)
			} else {
				c.Check(guest.ReadAttr(c, md, "dev-"+cand.Name+"/slot"), qt.Equals, tt.slot)
			}
			killed := readDiskState(c, cand)
			checkOnlyOurs(c, killed)
			sb := killed.sbs[superblock.Version12]
			c.Assert(sb, qt.Not(qt.IsNil))
			c.Check(sb.SetUUID, qt.Equals, superblock12(c, disks[0].Path).SetUUID)
			if tt.step == StepWriteSuperblock {
				c.Check(sb.Role(), qt.Equals, superblock.RoleSpare)
				c.Check(sb.Events, qt.Equals, uint64(0))
			}
			// The mask is the superblock and the bitmap, nothing wider.
			c.Assert(killed.md, qt.HasLen, 2)
			c.Check(changedOutside(c, blank, killed, killed.md), qt.HasLen, 0,
				qt.Commentf("the killed run wrote outside its superblock and bitmap area %v", killed.md))
			a, err := m.Status(ctx, md)
			c.Assert(err, qt.IsNil)
			c.Assert(a.Freeze, qt.Not(qt.IsNil))
			c.Check(a.Freeze.ByReplace, qt.IsTrue)
			c.Check(a.Freeze.Stale, qt.IsTrue)

			// A different disk is refused while our half-done work sits on
			// the first one, and is left byte-identical.
			otherBefore := readDiskState(c, other)
			_, err = m.Replace(ctx, ReplaceRequest{Array: md, With: other.Path})
			c.Logf("replace with another disk: %v", err)
			c.Check(err, qt.ErrorIs, errArrayBusy)
			c.Check(err, qt.ErrorIs, ErrRefused)
			c.Check(changedOutside(c, otherBefore, readDiskState(c, other), nil), qt.HasLen, 0, qt.Commentf("changed blocks of %s", other.Path))
			c.Check(guest.ReadAttr(c, md, "sync_action"), qt.Equals, "frozen")

			// The rerun, by a new Manager on the same run directory. Until
			// recovery is unfrozen, the disk holds nothing but what the
			// killed run wrote (md may rewrite its superblock and bitmap):
			// looked at once the slot is pinned, the last step before the
			// unfreeze (and the one whose writes come last).
			m2, err := Open(&Config{RunDir: runDir})
			c.Assert(err, qt.IsNil)
			type seen struct {
				after  StepKind
				action string
				disk   diskState
			}
			var during []seen
			m2.ops.afterStep = func(k StepKind) error {
				if k == StepSetSlot {
					during = append(during, seen{k, guest.ReadAttr(c, md, "sync_action"), readDiskState(c, cand)})
				}
				return nil
			}
			res, err := m2.Replace(ctx, ReplaceRequest{Array: md, With: cand.Path, Member: disks[1].Name})
			m2.ops.afterStep = nil
			c.Assert(err, qt.IsNil, qt.Commentf("the rerun after a kill after %s did not converge", tt.step))
			t.Logf("rerun steps: %v", res.Steps)
			c.Check(res.Slot, qt.Equals, 1)
			c.Check(res.Member, qt.Equals, cand.Name)
			c.Check(res.Plan.Resume, qt.Equals, tt.resume)
			if res.Plan.Resume == ResumeWritten {
				c.Check(res.Plan.DeviceUUID, qt.Equals, sb.DeviceUUID.String())
				c.Check(res.Plan.DevNumber, qt.Equals, sb.DevNumber)
			}
			if hasStep(res.Steps, StepRemove) {
				c.Check(res.Plan.Remove.Device, qt.Equals, disks[1].Name)
			}
			c.Check(hasStep(res.Steps, StepFreeze), qt.IsFalse, qt.Commentf("froze again instead of adopting the freeze"))
			if tt.step != StepWriteSuperblock {
				// The disk is a member already: writing it again would
				// write a member.
				c.Check(hasStep(res.Steps, StepWriteSuperblock), qt.IsFalse)
				c.Check(hasStep(res.Steps, StepAdd), qt.IsFalse)
			}
			for _, w := range res.Plan.Writes {
				c.Check(inSpans(w.Offset, killed.md) && inSpans(w.Offset+int64(w.Length)-1, killed.md), qt.IsTrue,
					qt.Commentf("the rerun writes %s at %d+%d, outside the killed run's area %v", w.What, w.Offset, w.Length, killed.md))
			}
			c.Check(during, qt.HasLen, btoi(hasStep(res.Steps, StepSetSlot)))
			for _, s := range during {
				c.Check(s.action, qt.Equals, "frozen", qt.Commentf("after step %s", s.after))
				c.Check(changedOutside(c, blank, s.disk, killed.md), qt.HasLen, 0,
					qt.Commentf("after step %s the rerun had written outside %v", s.after, killed.md))
				checkOnlyOurs(c, s.disk)
				if got := s.disk.sbs[superblock.Version12]; got != nil {
					c.Check(got.DeviceUUID, qt.Equals, sb.DeviceUUID, qt.Commentf("after step %s", s.after))
					c.Check(got.DevNumber, qt.Equals, sb.DevNumber, qt.Commentf("after step %s", s.after))
				}
			}

			a, err = m2.WaitReplace(ctx, WaitRequest{Array: md, Member: cand.Name, Interval: 200 * time.Millisecond})
			c.Assert(err, qt.IsNil)
			c.Check(a.Availability, qt.Equals, Online)
			c.Check(a.Freeze, qt.IsNil)
			c.Check(guest.ReadAttr(c, md, "sync_action"), qt.Equals, "idle")
			c.Check(guest.ReadAttr(c, md, "raid_disks"), qt.Equals, "2")
			c.Check(guest.ReadAttr(c, md, "dev-"+cand.Name+"/slot"), qt.Equals, "1")
			rec, err := readFreeze(runDir, a.UUID)
			c.Assert(err, qt.IsNil)
			c.Check(rec, qt.IsNil)
			d := mdadmtext.ParseDetail(guest.Mdadm(c, "--detail", mdDev))
			row, ok := d.Row(cand.Path)
			c.Assert(ok, qt.IsTrue, qt.Commentf("%s not in mdadm --detail", cand.Path))
			c.Check(row.Slot, qt.Equals, "1")
			c.Check(row.State, qt.Matches, "active sync.*")
			final := superblock12(c, cand.Path)
			c.Check(final.DeviceUUID, qt.Equals, sb.DeviceUUID)
			c.Check(final.DevNumber, qt.Equals, sb.DevNumber)

			// The new disk alone serves the data.
			c.Assert(m2.Fail(ctx, md, disks[0].Name), qt.IsNil)
			c.Check(readData(c, mdDev), qt.Equals, sum)
			guest.Mdadm(c, "--stop", mdDev)
		})
	}
}

// TestVMReplaceAddFails: ADD_NEW_DISK fails (someone holds the disk
// exclusively once the superblock is written); the failure says so and
// leaves recovery frozen, and a rerun resumes on the superblock it wrote
// (adopting the freeze) and completes.
func TestVMReplaceAddFails(t *testing.T) {
	c := qt.New(t)
	disks := guest.ScratchDisks(t, 3)
	ctx := context.Background()
	md := createArray(c, "/dev/md/addf", []string{"--level=1", "--metadata=1.2", "--bitmap=internal", "--raid-devices=2"}, disks[:2])
	mdDev := "/dev/" + md
	sum := writeData(c, mdDev)
	m := vmManager(t)
	c.Assert(m.Fail(ctx, md, disks[1].Name), qt.IsNil)
	c.Assert(m.Remove(ctx, md, disks[1].Name), qt.IsNil)
	cand := disks[2]
	var holder *os.File
	m.ops.afterStep = func(k StepKind) error {
		if k == StepWriteSuperblock {
			var err error
			holder, err = os.OpenFile(cand.Path, os.O_RDONLY|unix.O_EXCL, 0)
			return err
		}
		return nil
	}
	_, err := m.Replace(ctx, ReplaceRequest{Array: md, With: cand.Path})
	m.ops.afterStep = nil
	c.Assert(err, qt.ErrorIs, unix.EBUSY)
	var xe *ExecError
	c.Assert(errors.As(err, &xe), qt.IsTrue)
	c.Check(xe.Step, qt.Equals, StepAdd)
	c.Check(xe.NothingChanged, qt.IsFalse)
	t.Logf("ADD_NEW_DISK failure: %v", err)
	c.Assert(holder, qt.Not(qt.IsNil))
	holder.Close()
	// EBUSY: someone held the disk exclusively, as mdadm --incremental
	// does right before it adds one; recovery stays frozen for the rerun.
	c.Check(guest.ReadAttr(c, md, "sync_action"), qt.Equals, "frozen")
	res, err := m.Replace(ctx, ReplaceRequest{Array: md, With: cand.Path})
	c.Assert(err, qt.IsNil)
	c.Check(res.Plan.Resume, qt.Equals, ResumeWritten)
	c.Check(res.Slot, qt.Equals, 1)
	a, err := m.WaitReplace(ctx, WaitRequest{Array: md, Member: cand.Name, Interval: 200 * time.Millisecond})
	c.Assert(err, qt.IsNil)
	c.Check(a.Availability, qt.Equals, Online)
	c.Assert(m.Fail(ctx, md, disks[0].Name), qt.IsNil)
	c.Check(readData(c, mdDev), qt.Equals, sum)
	guest.Mdadm(c, "--stop", mdDev)
}

// TestVMReplaceConcurrent (issue 10, "also prove on the real kernel"):
// two replaces with different disks race for the one empty slot of a
// raid1, each through its own Manager (they share only the run
// directory), released together from a barrier: either both Replace
// calls at once, or both plans made first (both pass) and both executed
// at once. Exactly one wins, whichever it is; the other is refused
// (errLocked or ErrRefused), not as a failed execution, and its disk is
// byte-identical afterwards, also once the winner's rebuild is done. The
// array keeps its two slots and its data.
func TestVMReplaceConcurrent(t *testing.T) {
	for _, planFirst := range []bool{false, true} {
		name := "replace"
		if planFirst {
			name = "plan-then-execute"
		}
		t.Run(name, func(t *testing.T) {
			c := qt.New(t)
			disks := guest.ScratchDisks(t, 4)
			ctx := context.Background()
			md := createArray(c, "/dev/md/conc", []string{"--level=1", "--metadata=1.2", "--raid-devices=2"}, disks[:2])
			mdDev := "/dev/" + md
			sum := writeData(c, mdDev)
			m := vmManager(t)
			c.Assert(m.Fail(ctx, md, disks[1].Name), qt.IsNil)
			c.Assert(m.Remove(ctx, md, disks[1].Name), qt.IsNil)
			cands := disks[2:4]
			before := make([]diskState, len(cands))
			mgrs := make([]*Manager, len(cands))
			for i, d := range cands {
				fillDisk(c, d, 0x5a)
				before[i] = readDiskState(c, d)
				var err error
				mgrs[i], err = Open(&Config{RunDir: m.ops.runDir})
				c.Assert(err, qt.IsNil)
			}

			var ready, done sync.WaitGroup
			start := make(chan struct{})
			results := make([]*ReplaceResult, len(cands))
			errs := make([]error, len(cands))
			planErrs := make([]error, len(cands))
			for i, d := range cands {
				ready.Add(1)
				done.Add(1)
				go func() {
					defer done.Done()
					req := ReplaceRequest{Array: md, With: d.Path}
					var p *Plan
					if planFirst {
						p, planErrs[i] = mgrs[i].PlanReplace(ctx, req)
					}
					ready.Done()
					<-start
					switch {
					case !planFirst:
						results[i], errs[i] = mgrs[i].Replace(ctx, req)
					case planErrs[i] == nil:
						results[i], errs[i] = mgrs[i].ExecuteReplace(ctx, p)
					default:
						errs[i] = planErrs[i]
					}
				}()
			}
			ready.Wait()
			close(start)
			done.Wait()
			for i, err := range planErrs {
				c.Assert(err, qt.IsNil, qt.Commentf("plan with %s", cands[i].Path))
			}

			winner := -1
			for i, err := range errs {
				if err == nil {
					c.Check(winner, qt.Equals, -1, qt.Commentf("both replaces succeeded"))
					winner = i
					continue
				}
				t.Logf("the replace with %s: %v", cands[i].Path, err)
				c.Check(errors.Is(err, errLocked) || errors.Is(err, ErrRefused), qt.IsTrue, qt.Commentf("%v", err))
				var xe *ExecError
				c.Check(errors.As(err, &xe), qt.IsFalse, qt.Commentf("the loser failed while executing: %v", err))
			}
			c.Assert(winner, qt.Not(qt.Equals), -1, qt.Commentf("neither replace succeeded"))
			loser := 1 - winner
			win, lose := cands[winner], cands[loser]
			t.Logf("%s won, %s lost", win.Path, lose.Path)
			c.Check(results[winner].Slot, qt.Equals, 1)
			c.Check(results[winner].Member, qt.Equals, win.Name)
			c.Check(changedOutside(c, before[loser], readDiskState(c, lose), nil), qt.HasLen, 0, qt.Commentf("the loser's disk %s changed", lose.Path))
			_, err := os.Stat(guest.SysPath(md, "dev-"+lose.Name))
			c.Check(err, qt.ErrorIs, os.ErrNotExist, qt.Commentf("the loser's disk is bound"))
			c.Check(guest.ReadAttr(c, md, "raid_disks"), qt.Equals, "2")

			a, err := m.WaitReplace(ctx, WaitRequest{Array: md, Member: win.Name, Interval: 200 * time.Millisecond})
			c.Assert(err, qt.IsNil)
			c.Check(a.Availability, qt.Equals, Online)
			c.Check(a.RaidDisks, qt.Equals, 2)
			c.Check(a.Spares, qt.HasLen, 0)
			c.Check(guest.ReadAttr(c, md, "dev-"+win.Name+"/slot"), qt.Equals, "1")
			c.Check(changedOutside(c, before[loser], readDiskState(c, lose), nil), qt.HasLen, 0, qt.Commentf("the loser's disk %s changed during the rebuild", lose.Path))
			c.Assert(m.Fail(ctx, md, disks[0].Name), qt.IsNil)
			c.Check(readData(c, mdDev), qt.Equals, sum)
			guest.Mdadm(c, "--stop", mdDev)
		})
	}
}

// TestVMRun starts a raid5 assembled one member short; a replace is
// refused while it is inactive.
func TestVMRun(t *testing.T) {
	c := qt.New(t)
	disks := guest.ScratchDisks(t, 4)
	ctx := context.Background()
	md := createArray(c, "/dev/md/run5", []string{"--level=5", "--raid-devices=3"}, disks[:3])
	// In use: written once (a never-written set one short is held back
	// as an unfinished create, TestVMCreateKilled).
	writeData(c, "/dev/"+md)
	guest.Mdadm(c, "--stop", "/dev/"+md)
	for i := 0; i < 100; i++ { // the old node must be gone before reassembly
		if _, err := os.Stat("/sys/block/" + md); err != nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	os.Remove("/dev/md/run5")
	out, _ := guest.RunMdadm("--assemble", "/dev/md/run5", disks[0].Path, disks[1].Path)
	t.Logf("mdadm --assemble without --run: %s\n%s", out, guest.MDStat(c))
	md = arrayHolding(disks[0].Name)
	if md == "" {
		// This mdadm stopped the array again; incremental assembly (as
		// udev does) leaves it assembled and inactive.
		guest.Mdadm(c, "--incremental", disks[0].Path)
		guest.Mdadm(c, "--incremental", disks[1].Path)
		t.Logf("after mdadm --incremental:\n%s", guest.MDStat(c))
		md = arrayHolding(disks[0].Name)
	}
	c.Assert(md, qt.Not(qt.Equals), "")
	c.Assert(guest.ReadAttr(c, md, "array_state"), qt.Equals, "inactive")
	m := vmManager(t)
	_, err := m.Replace(ctx, ReplaceRequest{Array: md, With: disks[3].Path})
	c.Check(err, qt.ErrorIs, errArrayInactive)
	c.Assert(m.Run(ctx, md), qt.IsNil)
	c.Check(guest.ReadAttr(c, md, "array_state"), qt.Not(qt.Equals), "inactive")
	d := mdadmtext.ParseDetail(guest.Mdadm(c, "--detail", "/dev/"+md))
	c.Check(d.Fields["State"], qt.Contains, "degraded")
	c.Check(m.Run(ctx, md), qt.ErrorIs, errArrayRunning)
	guest.Mdadm(c, "--stop", "/dev/"+md)
}

// arrayHolding returns the array that has disk as a member, or "".
func arrayHolding(disk string) string {
	names, _ := guest.Arrays()
	for _, n := range names {
		if _, err := os.Stat(guest.SysPath(n, "dev-"+disk)); err == nil {
			return n
		}
	}
	return ""
}

// TestVMReplacePerformance times the replace itself against mdadm --add
// of the same case (a degraded raid1 1.2 with a blank disk).
func TestVMReplacePerformance(t *testing.T) {
	c := qt.New(t)
	disks := guest.ScratchDisks(t, 4)
	ctx := context.Background()
	m := vmManager(t)
	var ours, theirs []time.Duration
	for i := 0; i < 1; i++ {
		md := createArray(c, "/dev/md/perf", []string{"--level=1", "--metadata=1.2", "--raid-devices=2"}, disks[:2])
		guest.WriteAttr(c, md, "sync_speed_max", "1000")
		c.Assert(m.Fail(ctx, md, disks[1].Name), qt.IsNil)
		c.Assert(m.Remove(ctx, md, disks[1].Name), qt.IsNil)
		res, err := m.Replace(ctx, ReplaceRequest{Array: md, With: disks[2].Path})
		c.Assert(err, qt.IsNil)
		ours = append(ours, res.Duration)
		t.Logf("PERF steps: %v", res.Steps)
		guest.WriteAttr(c, md, "sync_action", "idle")
		guest.Mdadm(c, "--stop", "/dev/"+md)
		guest.Reset(c)

		md = createArray(c, "/dev/md/perf", []string{"--level=1", "--metadata=1.2", "--raid-devices=2"}, disks[:2])
		guest.WriteAttr(c, md, "sync_speed_max", "1000")
		guest.Mdadm(c, "/dev/"+md, "--fail", disks[1].Path)
		guest.Mdadm(c, "/dev/"+md, "--remove", disks[1].Path)
		start := time.Now()
		guest.Mdadm(c, "/dev/"+md, "--add", disks[3].Path)
		theirs = append(theirs, time.Since(start))
		guest.Mdadm(c, "--stop", "/dev/"+md)
		guest.Reset(c)
	}
	t.Logf("PERF replace executor (start of ExecuteReplace to return): %v", ours)
	t.Logf("PERF mdadm --add (process start to exit): %v", theirs)
}

// degradedMirror creates a 1.2 raid1 on disks[0:2] and fails and removes
// disks[1]: an array with one empty slot.
func degradedMirror(c *qt.C, m *Manager, name string, disks []guest.Disk) string {
	md := createArray(c, "/dev/md/"+name, []string{"--level=1", "--metadata=1.2", "--raid-devices=2"}, disks[:2])
	c.Assert(m.Fail(context.Background(), md, disks[1].Name), qt.IsNil)
	c.Assert(m.Remove(context.Background(), md, disks[1].Name), qt.IsNil)
	return md
}

// rereadPartitions asks the kernel to re-read dev's partition table.
func rereadPartitions(c *qt.C, dev string) {
	f, err := os.OpenFile(dev, os.O_RDWR, 0)
	c.Assert(err, qt.IsNil)
	defer f.Close()
	c.Assert(unix.IoctlSetInt(int(f.Fd()), unix.BLKRRPART, 0), qt.IsNil)
	// BLKRRPART updates sysfs before it returns; devtmpfs makes or
	// removes the nodes a moment later.
	for _, p := range []string{dev + "1", dev + "2"} {
		_, err := os.Stat("/sys/class/block/" + filepath.Base(p))
		waitNode(c, p, err == nil)
	}
}

// waitNode waits until the device node path exists (or, with !present,
// is gone), as devtmpfs makes it after the kernel adds the device.
func waitNode(c *qt.C, path string, present bool) {
	c.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := os.Stat(path)
		if (err == nil) == present {
			return
		}
		if time.Now().After(deadline) {
			c.Fatalf("%s: present=%v wanted, not seen within 10s (%v)", path, present, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestVMReplaceRefusesPartitionData (issue 10, item 1): a disk whose MBR
// was wiped, so that the kernel shows no partition, still holds an ext2
// at 1 MiB, or an LVM PV label at 1 MiB + 512. Replace refuses it and
// the disk and the array are unchanged.
func TestVMReplaceRefusesPartitionData(t *testing.T) {
	c := qt.New(t)
	disks := guest.ScratchDisks(t, 3)
	m := vmManager(t)
	md := degradedMirror(c, m, "pdata", disks)
	cand := disks[2]

	// A DOS partition at sector 2048 of 32768 sectors, an ext2 in it,
	// then the MBR wiped.
	mbr := make([]byte, 512)
	copy(mbr[446:], []byte{0, 0, 0, 0, 0x83, 0, 0, 0, 0x00, 0x08, 0, 0, 0x00, 0x80, 0, 0})
	mbr[510], mbr[511] = 0x55, 0xaa
	f, err := os.OpenFile(cand.Path, os.O_RDWR, 0)
	c.Assert(err, qt.IsNil)
	_, err = f.WriteAt(mbr, 0)
	c.Assert(err, qt.IsNil)
	c.Assert(f.Close(), qt.IsNil)
	rereadPartitions(c, cand.Path)
	part := cand.Path + "1"
	if _, err := os.Stat(part); err != nil {
		// Without udev the node may be missing: make it from sysfs.
		dev := strings.TrimSpace(guest.Run(c, "cat", "/sys/class/block/"+cand.Name+"1/dev"))
		maj, mnr, _ := strings.Cut(dev, ":")
		guest.Run(c, "mknod", part, "b", maj, mnr)
	}
	guest.Run(c, "mke2fs", "-q", part)
	zero(c, cand.Path, 0, 512)
	rereadPartitions(c, cand.Path)
	_, err = os.Stat("/sys/class/block/" + cand.Name + "1")
	c.Assert(err, qt.ErrorIs, os.ErrNotExist, qt.Commentf("the partition is still known"))

	for _, tt := range []struct {
		name    string
		prepare func()
	}{
		{"ext2 at 1 MiB", func() {}},
		{"LVM2 PV label at 1 MiB + 512", func() {
			zero(c, cand.Path, 1<<20, 4096)
			f, err := os.OpenFile(cand.Path, os.O_WRONLY, 0)
			c.Assert(err, qt.IsNil)
			_, err = f.WriteAt([]byte("LABELONE\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00LVM2 001"), 1<<20+512)
			c.Assert(err, qt.IsNil)
			c.Assert(f.Close(), qt.IsNil)
		}},
	} {
		c.Run(tt.name, func(c *qt.C) {
			tt.prepare()
			before := hashDisk(c, cand.Path)
			shape := arrayShape(c, m, md)
			_, err := m.Replace(context.Background(), ReplaceRequest{Array: md, With: cand.Path})
			c.Logf("%v", err)
			c.Check(err, qt.ErrorIs, ErrRefused)
			c.Check(err, qt.ErrorIs, errHasSignature)
			c.Check(err, qt.ErrorMatches, `.*in a partition at byte 1048576.*`)
			c.Check(hashDisk(c, cand.Path), qt.Equals, before)
			c.Check(arrayShape(c, m, md), qt.Equals, shape)
		})
	}
	guest.Mdadm(c, "--stop", "/dev/"+md)
}

// TestVMReplaceRefuses4Kn (issue 10, item 2): a blank disk with
// 4096-byte logical blocks is refused for an array of 512-byte blocks,
// on every kernel (6.1 raised the array's block size to 4096, 7.2 kept
// 512 over the 4Kn member). The disk and the array are unchanged.
func TestVMReplaceRefuses4Kn(t *testing.T) {
	c := qt.New(t)
	disks := guest.ScratchDisks(t, 2)
	kn := guest.Disk4Kn(t)
	c.Assert(kn.LogicalBlockSize, qt.Equals, int64(4096))
	m := vmManager(t)
	md := degradedMirror(c, m, "lbs", disks)
	c.Assert(strings.TrimSpace(guest.Run(c, "cat", "/sys/block/"+md+"/queue/logical_block_size")), qt.Equals, "512")

	before := hashDisk(c, kn.Path)
	shape := arrayShape(c, m, md)
	p, err := m.PlanReplace(context.Background(), ReplaceRequest{Array: md, With: kn.Path})
	c.Check(err, qt.ErrorIs, errCandidateBlockSize)
	c.Assert(p, qt.Not(qt.IsNil))
	c.Check(p.Candidate.LogicalBlockSize, qt.Equals, int64(4096))
	_, err = m.Replace(context.Background(), ReplaceRequest{Array: md, With: kn.Path})
	c.Logf("%v", err)
	c.Check(err, qt.ErrorIs, ErrRefused)
	c.Check(err, qt.ErrorIs, errCandidateBlockSize)
	c.Check(hashDisk(c, kn.Path), qt.Equals, before)
	c.Check(arrayShape(c, m, md), qt.Equals, shape)
	c.Check(strings.TrimSpace(guest.Run(c, "cat", "/sys/block/"+md+"/queue/logical_block_size")), qt.Equals, "512")
	guest.Mdadm(c, "--stop", "/dev/"+md)
}

// TestVMReplaceFinalBlankCheckKeepsFaultyMember: a file system signature
// that appears on the candidate after the executor's re-plan (here, right
// after the freeze) is found by the last blank check, on the exclusive
// descriptor that would write. The refusal leaves everything as it was:
// the candidate byte-identical, the failed member still bound and faulty
// (it is removed only after that check), the in-sync member's superblock
// at the same event count, and recovery unfrozen.
func TestVMReplaceFinalBlankCheckKeepsFaultyMember(t *testing.T) {
	c := qt.New(t)
	disks := guest.ScratchDisks(t, 3)
	ctx := context.Background()
	md := createArray(c, "/dev/md/lastcheck", []string{"--level=1", "--metadata=1.2", "--raid-devices=2"}, disks[:2])
	m := vmManager(t)
	c.Assert(m.Fail(ctx, md, disks[1].Name), qt.IsNil)
	cand := disks[2]
	fillDisk(c, cand, 0x5a)
	var before diskState
	var events uint64
	m.ops.afterStep = func(k StepKind) error {
		if k != StepFreeze {
			return nil
		}
		// mkfs finishes now.
		f, err := os.OpenFile(cand.Path, os.O_WRONLY|unix.O_DIRECT, 0)
		c.Assert(err, qt.IsNil)
		buf := alignedBuf(4096, 4096)
		for i := range buf {
			buf[i] = 0x5a
		}
		copy(buf, "XFSB")
		_, err = f.WriteAt(buf, 0)
		c.Assert(err, qt.IsNil)
		c.Assert(f.Close(), qt.IsNil)
		before = readDiskState(c, cand)
		events = superblock12(c, disks[0].Path).Events
		return nil
	}
	_, err := m.Replace(ctx, ReplaceRequest{Array: md, With: cand.Path, Member: disks[1].Name})
	m.ops.afterStep = nil
	t.Logf("replace: %v", err)
	c.Assert(err, qt.ErrorIs, errHasSignature)
	c.Check(err, qt.ErrorIs, ErrPlanChanged)
	var xe *ExecError
	c.Assert(errors.As(err, &xe), qt.IsTrue)
	c.Check(xe.Step, qt.Equals, StepClaim)
	c.Check(xe.NothingChanged, qt.IsTrue)
	c.Check(xe.State, qt.Contains, "Nothing else was changed")

	c.Check(changedOutside(c, before, readDiskState(c, cand), nil), qt.HasLen, 0, qt.Commentf("the candidate changed"))
	c.Check(guest.ReadAttr(c, md, "dev-"+disks[1].Name+"/state"), qt.Equals, "faulty")
	c.Check(guest.ReadAttr(c, md, "sync_action"), qt.Equals, "idle")
	c.Check(guest.ReadAttr(c, md, "raid_disks"), qt.Equals, "2")
	c.Check(superblock12(c, disks[0].Path).Events, qt.Equals, events, qt.Commentf("the array's superblocks were written"))
	guest.Mdadm(c, "--stop", "/dev/"+md)
}
