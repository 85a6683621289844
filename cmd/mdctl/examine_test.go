package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	qt "github.com/frankban/quicktest"

	"github.com/go-mdraid/mdraid/superblock"
	"github.com/go-mdraid/mdraid/superblock/superblocktest"
)

// mdctl runs the CLI in-process and returns stdout, stderr and the exit
// code.
func mdctl(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	exited := -1
	// The mdadm captures were made in UTC: the local zone is pinned to
	// it (the clock carries it, see runAt).
	code = runAt(args, &out, &errb, func(c int) {
		if exited < 0 {
			exited = c
		}
	}, func() time.Time { return time.Now().UTC() })
	if exited >= 0 {
		code = exited
	}
	return out.String(), errb.String(), code
}

// imageFile writes a real image into the test's temp dir.
func imageFile(t *testing.T, name string) string {
	t.Helper()
	img := superblocktest.ByName(t, name)
	return superblocktest.WriteFile(t, img, filepath.Join(t.TempDir(), filepath.Base(name)+".img"))
}

// Known differences from mdadm's text: we do not know the local host, and
// 0.90 rows name devices only on the system that has them.
var (
	localTo = regexp.MustCompile(` {1,2}\(local to host [^)]*\)`)
	devName = regexp.MustCompile(`(?m)^(this|\s+\d+)(\s.*\S)   /dev/\S+$`)
	// lbsLine is examine's logical_block_size line (Linux 6.19+), which
	// mdadm does not print.
	lbsLine = regexp.MustCompile(`(?m)^  Logical Block : (\d+) bytes\n`)
)

// kernelAtLeast reports whether a kernel release ("7.2.13+deb14-amd64")
// is major.minor or newer.
func kernelAtLeast(release string, major, minor int) bool {
	var a, b int
	if _, err := fmt.Sscanf(release, "%d.%d", &a, &b); err != nil {
		return false
	}
	return a > major || a == major && b >= minor
}

// TestExamineMatchesMdadm compares the output with mdadm --examine's,
// captured by the fixture generator, line by line.
func TestExamineMatchesMdadm(t *testing.T) {
	n := 0
	for _, img := range superblocktest.Images(t) {
		if img.Examine == "" {
			continue
		}
		n++
		t.Run(img.Name, func(t *testing.T) {
			c := qt.New(t)
			path := superblocktest.WriteFile(t, img, filepath.Join(t.TempDir(), "member"))
			// No sysfs: the device numbers of the capture's system mean
			// nothing here (TestExamine090DeviceColumn has them).
			out, stderr, code := mdctl(t, "examine", "--sysfs", t.TempDir(), "--dev", t.TempDir(), path)
			c.Assert(code, qt.Equals, 0, qt.Commentf("stderr: %s", stderr))
			want := localTo.ReplaceAllString(img.Examine, "")
			want = devName.ReplaceAllString(want, "$1$2")
			// mdadm names the device it examined; we name the file.
			want = want[strings.Index(want, "\n")+1:]
			got := out[strings.Index(out, "\n")+1:]
			// Linux 6.19 and later record logical_block_size in every 1.x
			// superblock they write; examine shows it, mdadm 4.2 does not.
			if m := lbsLine.FindStringSubmatch(got); m != nil {
				c.Check(m[1] == "512" || m[1] == "4096", qt.IsTrue, qt.Commentf("logical block size %s", m[1]))
				c.Check(stderr, qt.Contains, "kernels before 6.19 refuse to import this superblock")
				got = lbsLine.ReplaceAllString(got, "")
			} else if !strings.Contains(got, "Version : 0.90") && !neverWritten.MatchString(got) {
				// (A superblock at events 0 is as mdadm wrote it: the
				// kernel has not written it yet, as in a resync delayed
				// from the start.)
				c.Check(kernelAtLeast(img.Kernel, 6, 19), qt.IsFalse, qt.Commentf("a 1.x superblock written by %s has no logical_block_size", img.Kernel))
			}
			c.Assert(strings.TrimRight(got, "\n"), qt.Equals, strings.TrimRight(want, "\n"))
		})
	}
	if n == 0 {
		superblocktest.Missing(t, "no fixtures with captured mdadm --examine output")
	}
}

func TestExamineUtilLinux(t *testing.T) {
	c := qt.New(t)
	v090 := imageFile(t, "util-linux/mdraid")
	v12 := imageFile(t, "util-linux/mdraid-1")

	// Empty roots: the 0.90 table's device column names the node of the
	// recorded major:minor on this machine, as mdadm's does; none here.
	out, stderr, code := mdctl(t, "--sysfs", t.TempDir(), "--dev", t.TempDir(), "examine", v090, v12)
	c.Assert(code, qt.Equals, 0, qt.Commentf("stderr: %s", stderr))
	c.Assert(stderr, qt.Equals, "")
	for _, want := range []string{
		v090 + ":\n",
		"        Version : 0.90.00\n",
		"           UUID : 37c76b91:011a05c5:d30c1fd4:c5c3dbbc\n",
		"       Checksum : f1752eb - correct\n",
		"         Events : 4\n",
		"this     0       7        0        0      active sync\n",
		"\n" + v12 + ":\n",
		"        Version : 1.2\n",
		"     Array UUID : 77e61baf:c0b5d7d0:39cf575b:64d4878c\n",
		"           Name : troy.t-8ch.de:0\n",
		"    Device UUID : 379f6ef9:e75a12c1:11f1d883:ff168e1d\n",
		" Avail Dev Size : 16384 sectors (8.00 MiB 8.39 MB)\n",
		"    Data Offset : 4096 sectors\n",
		"   Unused Space : before=4016 sectors, after=0 sectors\n",
		"  Bad Block Log : 512 entries available at offset 8 sectors\n",
		"       Checksum : 49255b39 - correct\n",
		"   Device Role : Active device 0\n",
		"   Array State : A ('A' == active, '.' == missing, 'R' == replacing)\n",
	} {
		c.Check(out, qt.Contains, want)
	}
}

func TestExamineJSON(t *testing.T) {
	c := qt.New(t)
	v12 := imageFile(t, "util-linux/mdraid-1")
	out, _, code := mdctl(t, "examine", "--json", v12, filepath.Join(t.TempDir(), "missing"))
	c.Assert(code, qt.Equals, 3)
	var reps []jsonReport
	c.Assert(json.Unmarshal([]byte(out), &reps), qt.IsNil)
	c.Assert(reps, qt.HasLen, 2)
	r := reps[0]
	c.Check(r.Status, qt.Equals, "ok")
	c.Check(r.Candidates, qt.DeepEquals, []jsonCandidate{{Version: "1.2", OffsetBytes: 4096, Chosen: true}})
	sb := r.Superblock
	c.Assert(sb, qt.IsNotNil)
	c.Check(sb.Version, qt.Equals, "1.2")
	c.Check(sb.ArrayUUID, qt.Equals, "77e61baf-c0b5-d7d0-39cf-575b64d4878c")
	c.Check(sb.Name, qt.Equals, "0")
	c.Check(sb.Homehost, qt.Equals, "troy.t-8ch.de")
	c.Check(sb.CreationTime, qt.Equals, "2022-09-11T14:52:11Z")
	c.Check(sb.LevelName, qt.Equals, "raid0")
	c.Check(sb.ChunkBytes, qt.Equals, uint64(512<<10))
	c.Check(sb.Checksum, qt.DeepEquals, jsonChecksum{Stored: 0x49255b39, Computed: 0x49255b39, Correct: true})
	c.Check(sb.Role.Kind, qt.Equals, "active")
	c.Check(*sb.Role.Slot, qt.Equals, 0)
	c.Assert(sb.V1, qt.IsNotNil)
	c.Check(sb.V1.DeviceUUID, qt.Equals, "379f6ef9-e75a-12c1-11f1-d883ff168e1d")
	c.Check(sb.V1.DataOffsetSectors, qt.Equals, uint64(4096))
	c.Check(sb.V1.AvailDevSizeSectors, qt.Equals, uint64(16384))
	c.Check(sb.V1.MaxDev, qt.Equals, 128)
	c.Check(sb.V1.UnusedSpace, qt.DeepEquals, &jsonUnused{BeforeSectors: 4016, AfterSectors: 0})
	c.Check(sb.V1.ArrayState, qt.Equals, "A")
	c.Check(reps[1].Status, qt.Equals, "unreadable")
	c.Check(reps[1].ExitCode, qt.Equals, 3)
	c.Check(reps[1].Superblock, qt.IsNil)
}

func TestExamineErrors(t *testing.T) {
	dir := t.TempDir()
	blank := filepath.Join(dir, "blank")
	qt.Assert(t, os.WriteFile(blank, make([]byte, 1<<20), 0o644), qt.IsNil)

	t.Run("missing file", func(t *testing.T) {
		c := qt.New(t)
		out, stderr, code := mdctl(t, "examine", filepath.Join(dir, "nope"))
		c.Check(code, qt.Equals, 3)
		c.Check(out, qt.Equals, "")
		c.Check(stderr, qt.Equals, "mdctl: "+filepath.Join(dir, "nope")+": cannot read: open "+filepath.Join(dir, "nope")+": no such file or directory\n")
	})
	// Neither a block device nor an image: one line saying what it is,
	// exit 3, and nothing opened (a FIFO would block).
	fifo := filepath.Join(dir, "fifo")
	qt.Assert(t, syscall.Mkfifo(fifo, 0o644), qt.IsNil)
	for _, tt := range []struct{ path, what string }{
		{dir, "a directory"},
		{"/dev/null", "a character device"},
		{fifo, "a FIFO"},
	} {
		t.Run(tt.what, func(t *testing.T) {
			c := qt.New(t)
			out, stderr, code := mdctl(t, "examine", tt.path)
			c.Check(code, qt.Equals, 3)
			c.Check(out, qt.Equals, "")
			c.Check(stderr, qt.Equals, "mdctl: "+tt.path+": is "+tt.what+", not a block device or an image file\n")
		})
	}
	t.Run("no superblock", func(t *testing.T) {
		c := qt.New(t)
		out, stderr, code := mdctl(t, "examine", blank)
		c.Check(code, qt.Equals, 2)
		c.Check(out, qt.Equals, "")
		c.Check(stderr, qt.Equals, "mdctl: "+blank+": no md superblock detected\n")
	})
	t.Run("bad checksum", func(t *testing.T) {
		c := qt.New(t)
		path := imageFile(t, "util-linux/mdraid-1")
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		c.Assert(err, qt.IsNil)
		_, err = f.WriteAt([]byte{'T'}, 4096+32) // the name's first byte
		c.Assert(err, qt.IsNil)
		c.Assert(f.Close(), qt.IsNil)
		out, stderr, code := mdctl(t, "examine", path)
		c.Check(code, qt.Equals, 1)
		c.Check(out, qt.Contains, "           Name : Troy.t-8ch.de:0\n")
		c.Check(out, qt.Matches, `(?s).*       Checksum : 49255b39 - expected [0-9a-f]+\n.*`)
		c.Check(out, qt.Contains, "   Array State : A ")
		c.Check(stderr, qt.Contains, "checksum")
	})
	t.Run("worst of several", func(t *testing.T) {
		c := qt.New(t)
		v12 := imageFile(t, "util-linux/mdraid-1")
		out, stderr, code := mdctl(t, "examine", blank, v12)
		c.Check(code, qt.Equals, 2)
		c.Check(out, qt.Contains, v12+":\n")
		c.Check(stderr, qt.Contains, "1 of 2 devices have problems")
	})
	t.Run("stale superblock noted", func(t *testing.T) {
		c := qt.New(t)
		v090 := superblocktest.ByName(t, "util-linux/mdraid")
		v12 := superblocktest.ByName(t, "util-linux/mdraid-1")
		dev := v12.Bytes(t)
		off, err := superblock.Version090.Offset(int64(len(dev)))
		c.Assert(err, qt.IsNil)
		copy(dev[off:off+superblock.Size090], v090.Bytes(t)[off:])
		path := filepath.Join(t.TempDir(), "both")
		c.Assert(os.WriteFile(path, dev, 0o644), qt.IsNil)
		out, stderr, code := mdctl(t, "examine", path)
		c.Check(code, qt.Equals, 0)
		c.Check(out, qt.Contains, "        Version : 1.2\n")
		c.Check(stderr, qt.Contains, "note: another 0.90 superblock at byte")
	})
	t.Run("usage", func(t *testing.T) {
		c := qt.New(t)
		_, stderr, code := mdctl(t, "examine")
		c.Check(code, qt.Equals, 80)
		c.Check(stderr, qt.Contains, "expected \"<device> ...\"")
	})
}

// TestExamineLocalTime: examine prints times in the local zone as mdadm
// does (ctime()), TZ honoured, and --json keeps RFC 3339 in UTC.
func TestExamineLocalTime(t *testing.T) {
	c := qt.New(t)
	path := imageFile(t, "fixtures/raid1-v1.2/vda")
	created := regexp.MustCompile(`(?m)^  Creation Time : (.*)$`)
	const layout = "Mon Jan _2 15:04:05 2006"

	utc, _, code := mdctl(t, "examine", path)
	c.Assert(code, qt.Equals, 0)
	m := created.FindStringSubmatch(utc)
	c.Assert(m, qt.IsNotNil)
	at, err := time.ParseInLocation(layout, m[1], time.UTC)
	c.Assert(err, qt.IsNil)

	// In process: the zone of the clock.
	zone := time.FixedZone("X", -(5*3600 + 30*60))
	var out, errb bytes.Buffer
	code = runAt([]string{"examine", path}, &out, &errb, func(int) {}, func() time.Time { return time.Now().In(zone) })
	c.Assert(code, qt.Equals, 0, qt.Commentf("%s", errb.String()))
	c.Assert(out.String(), qt.Contains, "  Creation Time : "+at.In(zone).Format(layout)+"\n")

	var js bytes.Buffer
	code = runAt([]string{"examine", "--json", path}, &js, &errb, func(int) {}, func() time.Time { return time.Now().In(zone) })
	c.Assert(code, qt.Equals, 0)
	c.Assert(js.String(), qt.Contains, `"`+at.UTC().Format(time.RFC3339)+`"`)

	// The binary: TZ from the environment.
	if testing.Short() {
		t.Skip("builds the command")
	}
	tokyo, err := time.LoadLocation("Asia/Tokyo")
	if err != nil {
		t.Skipf("no time zone database: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "mdctl")
	b, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	c.Assert(err, qt.IsNil, qt.Commentf("%s", b))
	cmd := exec.Command(bin, "examine", path)
	cmd.Env = append(os.Environ(), "TZ=Asia/Tokyo")
	b, err = cmd.Output()
	c.Assert(err, qt.IsNil)
	c.Assert(string(b), qt.Contains, "  Creation Time : "+at.In(tokyo).Format(layout)+"\n")
}

// TestExamine090DeviceColumn: on the system of the capture (its sysfs and
// /dev), the 0.90 device table names each member's node as mdadm does.
func TestExamine090DeviceColumn(t *testing.T) {
	c := qt.New(t)
	flags, fc := goldenCase(t, "raid1-v0.90")
	for _, m := range fc.Members {
		out, stderr, code := mdctl(t, append([]string{"examine", filepath.Join("dev", m.Name)}, flags...)...)
		c.Assert(code, qt.Equals, 0, qt.Commentf("stderr: %s", stderr))
		c.Assert(out, qt.Contains, "active sync   dev/vda\n")
		want := localTo.ReplaceAllString(m.Examine, "")
		want = strings.ReplaceAll(want, "   /dev/", "   dev/")
		want = want[strings.Index(want, "\n")+1:]
		got := out[strings.Index(out, "\n")+1:]
		c.Assert(strings.TrimRight(got, "\n"), qt.Equals, strings.TrimRight(want, "\n"))
	}
}

// neverWritten matches examine output of a superblock the kernel has not
// written since mdadm created it (events 0).
var neverWritten = regexp.MustCompile(`(?m)^\s*Events : 0$`)
