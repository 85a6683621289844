// Command scalevm measures go-mdraid at scale in the VM rig (issue 36):
// 64 RAID1 arrays on 16 disks of 8 GPT partitions each, against mdadm in
// the same boot.
//
//	MDRAID_VM_KERNEL=bookworm-6.1 go run ./bench/scalevm [-n 15] [-rounds 3] [-polls 10]
//
// It reports, with 8 and then 64 arrays running:
//   - `mdctl status` against `mdadm --detail --scan --verbose`, whole
//     process, median of n interleaved calls (through bench/statusvm's
//     rusage);
//   - in process, Status of one array by kernel name, superblock name and
//     UUID (median of n calls);
//   - the member disks' reads (/proc/diskstats, whole disks) over
//     `polls` calls of Manager.Discover, of an md.Poller, and of a
//     Prometheus registry with md/metrics' collector on a Poller, after
//     an idle stretch of the same length for the background;
//   - a member failed between two polls of the Poller: that the next poll
//     shows it, and what it read;
//   - md/watch's latency from a member's failure to its Fail event, 20
//     arrays failing one member each, in turn;
//
// and with 64 arrays, `mdctl assemble --scan` against `mdadm --assemble
// --scan` (rounds rounds, each from all arrays stopped).
package main

import (
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sys/unix"

	"github.com/go-mdraid/mdraid/bench/internal/cpuprofile"
	"github.com/go-mdraid/mdraid/bench/internal/guestrun"
	"github.com/go-mdraid/mdraid/internal/vmtest"
	"github.com/go-mdraid/mdraid/md"
	"github.com/go-mdraid/mdraid/md/metrics"
	"github.com/go-mdraid/mdraid/md/watch"
)

const (
	disks      = 16
	partitions = 8
	arrays     = disks / 2 * partitions // 64
	partMiB    = 8
	diskMiB    = partitions*partMiB + 4
)

func main() {
	guest := flag.Bool("guest", false, "run inside the VM")
	n := flag.Int("n", 15, "interleaved calls of each status command")
	rounds := flag.Int("rounds", 3, "assembly rounds of each tool")
	polls := flag.Int("polls", 10, "polls of each kind for the disk-read count")
	cpus := flag.Int("cpus", 2, "the guest's vCPUs")
	profile := flag.Bool("profile", false, "write a CPU profile of in-process Discover calls at 64 arrays to bench/scalevm.prof")
	flag.Parse()
	var err error
	if *guest {
		err = runGuest(*n, *rounds, *polls, *profile)
	} else {
		err = runHost(*n, *rounds, *polls, *cpus, *profile)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "scalevm:", err)
		os.Exit(1)
	}
}

func runHost(n, rounds, polls, cpus int, profile bool) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	rig, err := vmtest.NewRig()
	if err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "scalevm-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	files := map[string]string{}
	for _, p := range []struct{ pkg, guest string }{
		{"./bench/scalevm", "/vmtest/bin/scalevm"},
		{"./cmd/mdctl", "/usr/bin/mdctl"},
		{"./bench/statusvm/rusage", "/usr/bin/rusage"},
	} {
		exe := filepath.Join(work, filepath.Base(p.guest))
		if err := vmtest.BuildProgram(ctx, rig.Root, p.pkg, exe); err != nil {
			return err
		}
		files[p.guest] = exe
	}
	ds, err := vmtest.ScratchDisks(work, disks, diskMiB<<20)
	if err != nil {
		return err
	}
	share := filepath.Join(work, "out")
	if err := os.Mkdir(share, 0o755); err != nil {
		return err
	}
	args := []string{"/vmtest/bin/scalevm", "-guest", "-n", fmt.Sprint(n),
		"-rounds", fmt.Sprint(rounds), "-polls", fmt.Sprint(polls)}
	if profile {
		args = append(args, "-profile")
	}
	_, err = rig.Run(ctx, vmtest.Config{
		Cmd:       args,
		Files:     files,
		Disks:     ds,
		Shares:    []vmtest.Share{{Tag: "out", HostDir: share, GuestDir: "/out"}},
		CPUs:      cpus,
		MemoryMiB: 1536,
		Timeout:   40 * time.Minute,
		Console:   func(line string) { fmt.Println("guest:", line) },
	})
	if err != nil || !profile {
		return err
	}
	dst := filepath.Join(rig.Root, "bench", "scalevm.prof")
	if err := os.Rename(filepath.Join(share, "cpu.prof"), dst); err != nil {
		return err
	}
	fmt.Println("scalevm: wrote", dst, "(go tool pprof -top", dst+")")
	return nil
}

func disk(i int) string { return fmt.Sprintf("vd%c", 'a'+i) }

// partitionDisk writes a GPT with partitions equal partitions of
// partMiB each (protective MBR, both headers, both entry arrays) and has
// the kernel read it.
func partitionDisk(name string) error {
	f, err := os.OpenFile("/dev/"+name, os.O_RDWR|unix.O_EXCL, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	size, err := unix.IoctlGetUint64(int(f.Fd()), unix.BLKGETSIZE64)
	if err != nil {
		return err
	}
	last := size/512 - 1
	entries := make([]byte, 128*128)
	linux := uuid.MustParse("0FC63DAF-8483-4772-8E79-3D69D8477DE4")
	for i := range partitions {
		e := entries[i*128:]
		putGUID(e[0:], linux)
		putGUID(e[16:], uuid.New())
		first := uint64(2048 + i*partMiB*2048)
		binary.LittleEndian.PutUint64(e[32:], first)
		binary.LittleEndian.PutUint64(e[40:], first+partMiB*2048-1)
		copy(e[56:], utf16(fmt.Sprintf("p%d", i+1)))
	}
	entriesCRC := crc32.ChecksumIEEE(entries)
	diskGUID := uuid.New()
	header := func(my, alt, entriesLBA uint64) []byte {
		h := make([]byte, 512)
		copy(h, "EFI PART")
		binary.LittleEndian.PutUint32(h[8:], 0x00010000)
		binary.LittleEndian.PutUint32(h[12:], 92)
		binary.LittleEndian.PutUint64(h[24:], my)
		binary.LittleEndian.PutUint64(h[32:], alt)
		binary.LittleEndian.PutUint64(h[40:], 34)
		binary.LittleEndian.PutUint64(h[48:], last-33)
		putGUID(h[56:], diskGUID)
		binary.LittleEndian.PutUint64(h[72:], entriesLBA)
		binary.LittleEndian.PutUint32(h[80:], 128)
		binary.LittleEndian.PutUint32(h[84:], 128)
		binary.LittleEndian.PutUint32(h[88:], entriesCRC)
		binary.LittleEndian.PutUint32(h[16:], crc32.ChecksumIEEE(h[:92]))
		return h
	}
	mbr := make([]byte, 512)
	p := mbr[446:]
	p[1], p[2], p[3] = 0, 2, 0 // CHS of LBA 1
	p[4] = 0xee
	p[5], p[6], p[7] = 0xff, 0xff, 0xff
	binary.LittleEndian.PutUint32(p[8:], 1)
	binary.LittleEndian.PutUint32(p[12:], uint32(min(last, 0xffffffff)))
	mbr[510], mbr[511] = 0x55, 0xaa
	for _, w := range []struct {
		lba uint64
		b   []byte
	}{
		{0, mbr}, {1, header(1, last, 2)}, {2, entries},
		{last - 32, entries}, {last, header(last, 1, last-32)},
	} {
		if _, err := f.WriteAt(w.b, int64(w.lba*512)); err != nil {
			return err
		}
	}
	if err := f.Sync(); err != nil {
		return err
	}
	return unix.IoctlSetInt(int(f.Fd()), unix.BLKRRPART, 0)
}

// putGUID writes u in GPT's mixed-endian form.
func putGUID(b []byte, u uuid.UUID) {
	binary.LittleEndian.PutUint32(b[0:], binary.BigEndian.Uint32(u[0:]))
	binary.LittleEndian.PutUint16(b[4:], binary.BigEndian.Uint16(u[4:]))
	binary.LittleEndian.PutUint16(b[6:], binary.BigEndian.Uint16(u[6:]))
	copy(b[8:16], u[8:16])
}

func utf16(s string) []byte {
	b := make([]byte, 2*len(s))
	for i, c := range []byte(s) {
		b[2*i] = c
	}
	return b
}

// members returns the two partitions of array k: partition k/8+1 of a
// pair of disks.
func members(k int) (string, string) {
	pair, part := k%(disks/2), k/(disks/2)+1
	return fmt.Sprintf("/dev/%s%d", disk(2*pair), part), fmt.Sprintf("/dev/%s%d", disk(2*pair+1), part)
}

// create makes arrays from..to-1 with mdadm, clean, metadata 1.2.
func create(from, to int) error {
	host, _ := os.Hostname()
	for k := from; k < to; k++ {
		a, b := members(k)
		if o, err := guestrun.Sh("mdadm", "--create", fmt.Sprintf("/dev/md%d", k), "--run", "--assume-clean",
			"--level=1", "--raid-devices=2", "--metadata=1.2", "--homehost="+host,
			fmt.Sprintf("--name=s%d", k), a, b); err != nil {
			return fmt.Errorf("%v: %s", err, o)
		}
	}
	return nil
}

// sample is one whole-process call: wall and CPU (user + system) time.
type sample struct{ wall, cpu time.Duration }

// measure runs a command once through rusage (bench/statusvm/rusage).
// A status of 0 is required: no array is degraded when it runs.
func measure(args ...string) (sample, error) {
	out, err := exec.Command("rusage", args...).Output()
	if err != nil {
		return sample{}, fmt.Errorf("rusage %s: %v", args[0], err)
	}
	var wall, rss, utime, stime, minflt int64
	var status int
	if _, err := fmt.Sscan(string(out), &wall, &rss, &utime, &stime, &minflt, &status); err != nil {
		return sample{}, fmt.Errorf("rusage %s: %q: %v", args[0], out, err)
	}
	if status != 0 {
		return sample{}, fmt.Errorf("%s: exit status %d", strings.Join(args, " "), status)
	}
	return sample{time.Duration(wall), time.Duration(utime + stime)}, nil
}

// statusRatio times mdadm --detail --scan --verbose and mdctl status,
// n rounds after one to warm up, each round in a random order.
func statusRatio(n, count int) error {
	jobs := []struct {
		label string
		args  []string
		walls []time.Duration
		cpus  []time.Duration
	}{
		{label: "mdadm --detail --scan --verbose", args: []string{"mdadm", "--detail", "--scan", "--verbose"}},
		{label: "mdctl status", args: []string{"mdctl", "status"}},
		{label: "mdctl status --json", args: []string{"mdctl", "status", "--json"}},
	}
	for i := -1; i < n; i++ {
		// In a new order each round: a call right after another
		// program may pay for its after-effects in the guest.
		for _, j := range rand.Perm(len(jobs)) {
			s, err := measure(jobs[j].args...)
			if err != nil {
				return err
			}
			if i >= 0 {
				jobs[j].walls = append(jobs[j].walls, s.wall)
				jobs[j].cpus = append(jobs[j].cpus, s.cpu)
			}
		}
	}
	base := guestrun.Median(jobs[0].walls)
	for _, j := range jobs {
		m := guestrun.Median(j.walls)
		fmt.Printf("RESULT %d arrays: %-32s median %9v (CPU %v), ratio to mdadm %.2f\n", count, j.label+":",
			m.Round(100*time.Microsecond), guestrun.Median(j.cpus).Round(100*time.Microsecond), float64(m)/float64(base))
	}
	return nil
}

// lookups times Status of the last array by kernel name, superblock name
// and UUID, in process.
func lookups(ctx context.Context, m *md.Manager, n, count int) error {
	kname := fmt.Sprintf("md%d", count-1)
	a, err := m.Status(ctx, kname)
	if err != nil {
		return err
	}
	var base time.Duration
	for _, l := range []struct{ by, name string }{{"kernel name", kname}, {"name", a.Name}, {"UUID", a.UUID}} {
		var ts []time.Duration
		for i := -1; i < n; i++ {
			start := time.Now()
			got, err := m.Status(ctx, l.name)
			d := time.Since(start)
			if err != nil {
				return err
			}
			if got.Device != kname {
				return fmt.Errorf("Status(%q) found %s, want %s", l.name, got.Device, kname)
			}
			if i >= 0 {
				ts = append(ts, d)
			}
		}
		med := guestrun.Median(ts)
		if base == 0 {
			base = med
		}
		fmt.Printf("RESULT %d arrays: Status by %-11s median %9v, ratio to kernel name %.2f\n", count, l.by+":", med.Round(10*time.Microsecond), float64(med)/float64(base))
	}
	return nil
}

// diskReads sums reads completed and sectors read of the member disks
// (whole disks: a partition's reads count there too).
func diskReads() (ios, sectors uint64, err error) {
	b, err := os.ReadFile("/proc/diskstats")
	if err != nil {
		return 0, 0, err
	}
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) < 6 || len(f[2]) != 3 || !strings.HasPrefix(f[2], "vd") {
			continue
		}
		r, err1 := strconv.ParseUint(f[3], 10, 64)
		s, err2 := strconv.ParseUint(f[5], 10, 64)
		if err := errors.Join(err1, err2); err != nil {
			return 0, 0, err
		}
		ios += r
		sectors += s
	}
	return ios, sectors, nil
}

// readsOver runs poll k times and returns the member disks' reads.
func readsOver(k int, poll func() error) (ios, sectors uint64, took time.Duration, err error) {
	i0, s0, err := diskReads()
	if err != nil {
		return 0, 0, 0, err
	}
	start := time.Now()
	for range k {
		if err := poll(); err != nil {
			return 0, 0, 0, err
		}
	}
	took = time.Since(start)
	i1, s1, err := diskReads()
	return i1 - i0, s1 - s0, took, err
}

// pollReads counts the disks' reads of each way of polling.
func pollReads(ctx context.Context, m *md.Manager, k int) error {
	discover := func() error {
		r, err := m.Discover(ctx)
		if err == nil && len(r.Arrays) != arrays {
			err = fmt.Errorf("discover found %d arrays, want %d", len(r.Arrays), arrays)
		}
		return err
	}
	p := m.NewPoller()
	poll := func() error {
		r, err := p.Discover(ctx)
		if err == nil && len(r.Arrays) != arrays {
			err = fmt.Errorf("poller found %d arrays, want %d", len(r.Arrays), arrays)
		}
		return err
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(metrics.NewCollector(ctx, m.NewPoller()))
	scrape := func() error {
		fams, err := reg.Gather()
		if err == nil && len(fams) == 0 {
			err = errors.New("empty scrape")
		}
		return err
	}
	// The first poll of each poller reads every superblock.
	if err := errors.Join(poll(), scrape()); err != nil {
		return err
	}
	idle := func() error { time.Sleep(20 * time.Millisecond); return nil }
	for _, w := range []struct {
		label string
		f     func() error
	}{
		{"idle (no calls, 20 ms each)", idle},
		{"Manager.Discover", discover},
		{"Poller.Discover", poll},
		{"registry scrape, collector on a Poller", scrape},
	} {
		ios, sectors, took, err := readsOver(k, w.f)
		if err != nil {
			return err
		}
		fmt.Printf("RESULT %d arrays, %d member disks: %-40s %d calls: %4d reads (%d sectors) of member disks, %.1f per call; %v per call\n",
			arrays, disks, w.label+":", k, ios, sectors, float64(ios)/float64(k), (took / time.Duration(k)).Round(100*time.Microsecond))
	}

	// A member fails between two polls.
	_, b := members(5)
	before := p.SuperblockReads()
	if o, err := guestrun.Sh("mdadm", "/dev/md5", "--fail", b); err != nil {
		return fmt.Errorf("%v: %s", err, o)
	}
	ios, _, _, err := readsOver(1, func() error {
		r, err := p.Discover(ctx)
		if err != nil {
			return err
		}
		for _, arr := range r.Arrays {
			if arr.Device != "md5" {
				continue
			}
			if arr.Availability != md.Degraded || len(arr.Faulty) != 1 || "/dev/"+arr.Faulty[0].Device != b {
				return fmt.Errorf("the poll after failing %s shows md5 %s with faulty %v", b, arr.Availability, arr.Faulty)
			}
			return nil
		}
		return errors.New("md5 is gone")
	})
	if err != nil {
		return err
	}
	fmt.Printf("RESULT failed %s of md5 between two polls: the next poll shows md5 degraded, %s faulty; it read %d superblocks (%d disk reads)\n",
		b, b, p.SuperblockReads()-before, ios)
	ios, _, _, err = readsOver(k, poll)
	if err != nil {
		return err
	}
	fmt.Printf("RESULT the %d polls after it: %d reads of member disks\n", k, ios)
	return putBack(5)
}

// latencySamples is how many arrays watchLatency fails a member of.
const latencySamples = 20

// watchLatency starts md/watch over all arrays and fails one member of
// each of latencySamples arrays in turn (a write of faulty to its state, as the
// kernel's own failure notifies it), timing the Fail event of each.
// The members are put back (removed, blanked and added: a recovery of
// partMiB) afterwards.
func watchLatency(ctx context.Context, m *md.Manager) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ready := make(chan struct{})
	ch, err := watch.Start(ctx, m, &watch.Options{Rescan: time.Hour, Ready: func() { close(ready) }})
	if err != nil {
		return err
	}
	<-ready
	var lat []time.Duration
	for k := 10; k < 10+latencySamples; k++ {
		_, b := members(k)
		array := fmt.Sprintf("md%d", k)
		start := time.Now()
		if err := os.WriteFile(filepath.Join("/sys/block", array, "md", "dev-"+filepath.Base(b), "state"), []byte("faulty"), 0); err != nil {
			return err
		}
		timeout := time.After(5 * time.Second)
	wait:
		for {
			select {
			case e := <-ch:
				if e.Array == array && e.Type == watch.Fail {
					lat = append(lat, time.Since(start))
					break wait
				}
			case <-timeout:
				return fmt.Errorf("no Fail event for %s within 5 s", array)
			}
		}
		// Let the watcher's look again settle before the next.
		time.Sleep(300 * time.Millisecond)
	}
	cancel()
	for range ch {
	}
	sorted := slices.Clone(lat)
	slices.Sort(sorted)
	fmt.Printf("RESULT %d arrays: watch, member faulty -> Fail event, %d samples: median %v p90 %v max %v\n",
		arrays, len(sorted), sorted[len(sorted)/2].Round(100*time.Microsecond), sorted[len(sorted)*9/10].Round(100*time.Microsecond), sorted[len(sorted)-1].Round(100*time.Microsecond))
	for k := 10; k < 10+latencySamples; k++ {
		if err := putBack(k); err != nil {
			return err
		}
	}
	return nil
}

// putBack removes array k's failed second member, blanks it, adds it
// again and waits for the recovery.
func putBack(k int) error {
	_, b := members(k)
	dev := fmt.Sprintf("/dev/md%d", k)
	for _, args := range [][]string{{dev, "--remove", b}, {"--zero-superblock", b}, {dev, "--add", b}} {
		if o, err := guestrun.Sh("mdadm", args...); err != nil {
			return fmt.Errorf("%v: %s", err, o)
		}
	}
	if o, err := guestrun.Sh("mdadm", "--wait", dev); err != nil && !strings.Contains(err.Error(), "exit status 1") {
		return fmt.Errorf("%v: %s", err, o)
	}
	return nil
}

// assembleRatio times mdadm --assemble --scan and mdctl assemble --scan
// of all arrays, in turn, each from all stopped.
func assembleRatio(rounds int) error {
	jobs := []struct {
		label string
		args  []string
		walls []time.Duration
	}{
		{label: "mdadm --assemble --scan", args: []string{"mdadm", "--assemble", "--scan"}},
		{label: "mdctl assemble --scan", args: []string{"mdctl", "assemble", "--scan"}},
	}
	for i := 0; i < rounds; i++ {
		for j := range jobs {
			if err := guestrun.Reset(); err != nil {
				return err
			}
			cmd := exec.Command(jobs[j].args[0], jobs[j].args[1:]...)
			start := time.Now()
			out, err := cmd.CombinedOutput()
			d := time.Since(start)
			if err != nil {
				return fmt.Errorf("%s: %v\n%s", strings.Join(jobs[j].args, " "), err, out)
			}
			st, _ := os.ReadFile("/proc/mdstat")
			if got := strings.Count(string(st), " : active "); got != arrays {
				return fmt.Errorf("%s started %d of %d arrays:\n%s", strings.Join(jobs[j].args, " "), got, arrays, out)
			}
			jobs[j].walls = append(jobs[j].walls, d)
		}
	}
	base := guestrun.Median(jobs[0].walls)
	for _, j := range jobs {
		m := guestrun.Median(j.walls)
		fmt.Printf("RESULT %d arrays: %-24s median %v of %d (%v), ratio to mdadm %.2f\n", arrays, j.label+":", m.Round(time.Millisecond), rounds, j.walls, float64(m)/float64(base))
	}
	return nil
}

func runGuest(n, rounds, polls int, profile bool) error {
	ctx := context.Background()
	for i := range disks {
		if err := partitionDisk(disk(i)); err != nil {
			return fmt.Errorf("partitioning %s: %w", disk(i), err)
		}
	}
	// devtmpfs makes the partitions' nodes; wait for the last.
	last := fmt.Sprintf("/dev/%s%d", disk(disks-1), partitions)
	for i := 0; ; i++ {
		if _, err := os.Stat(last); err == nil {
			break
		} else if i == 100 {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
	m, err := md.Open(nil)
	if err != nil {
		return err
	}
	uname, _ := guestrun.Sh("uname", "-r")
	ver, _ := guestrun.Sh("mdadm", "--version")
	fmt.Printf("RESULT kernel %s, %s", strings.TrimSpace(uname), ver)
	fmt.Printf("RESULT %d vCPU TCG guest; %d disks of %d GPT partitions (%d MiB each); RAID1, metadata 1.2, no bitmap, clean\n",
		runtime.NumCPU(), disks, partitions, partMiB)

	if err := create(0, disks/2); err != nil {
		return err
	}
	if err := statusRatio(n, disks/2); err != nil {
		return err
	}
	if err := lookups(ctx, m, n, disks/2); err != nil {
		return err
	}
	if err := create(disks/2, arrays); err != nil {
		return err
	}
	if err := statusRatio(n, arrays); err != nil {
		return err
	}
	if err := lookups(ctx, m, n, arrays); err != nil {
		return err
	}
	if profile {
		times, err := cpuprofile.Run("/out/cpu.prof", 20, nil, func() error {
			_, err := m.Discover(ctx)
			return err
		})
		if err != nil {
			return err
		}
		fmt.Printf("RESULT in-process Discover of %d arrays: median %v\n", arrays, guestrun.Median(times))
		return nil
	}
	if err := watchLatency(ctx, m); err != nil {
		return err
	}
	if err := pollReads(ctx, m, polls); err != nil {
		return err
	}
	if err := assembleRatio(rounds); err != nil {
		return err
	}
	return nil
}
