package main

// Golden files pin mdctl's output byte for byte: the JSON schemas
// (STATUS-JSON.md, EXAMINE-JSON.md, heal --json), the metrics of status
// --format=prometheus, and the text of status, examine, replace
// --dry-run, heal and the refusals, over the real captures in
// testdata/fixtures. A refactor that changes one byte of what
// a user or a script sees fails here. To accept an intended change:
//
//	go test ./cmd/mdctl -run Golden -update
//
// and review git diff cmd/mdctl/testdata/golden.
//
// The host-dependent parts are fixed through the roots the CLI already
// takes: each test changes into a fresh directory and passes --sysfs sys
// --dev dev (relative), so every device path reads dev/vda whatever the
// temporary directory is (examine's arguments dev/vda are paths by the
// device argument rule, taken as given; an absolute one would be made
// relative by the replacement). The report
// time of a whole-system status comes from the clock, which the test
// pins (md.Config.Now); status with named arrays shows the zero time.

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	qt "github.com/frankban/quicktest"

	"github.com/go-mdraid/mdraid/internal/fixture"
	"github.com/go-mdraid/mdraid/internal/golden"
	"github.com/go-mdraid/mdraid/md"
)

// goldenDir is testdata/golden as an absolute path, taken before a test
// changes directory.
func goldenDir(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("testdata", "golden"))
	qt.Assert(t, err, qt.IsNil)
	return dir
}

// goldenCase materializes the capture called name (see fixture.Named) in a
// fresh directory and changes into it, so that the roots are "sys" and
// "dev". It returns the root flags and the case.
func goldenCase(t *testing.T, name string) ([]string, *fixture.Case) {
	t.Helper()
	fc := fixture.Named(t, name)
	tmp := t.TempDir()
	fc.SystemIn(t, tmp)
	t.Chdir(tmp)
	return []string{"--sysfs", "sys", "--dev", "dev"}, fc
}

// goldenRun runs mdctl and checks stdout against <base><ext> and stderr
// against <base><ext>.stderr (absent when stderr is empty), both after
// fix.
// The exit code is pinned in the stderr file's last line when it is not
// zero, so that a change of exit code is a golden change too.
func goldenRun(t *testing.T, base, ext string, fix func(string) string, args ...string) {
	t.Helper()
	goldenRunAt(t, base, ext, fix, goldenNow, args...)
}

// goldenNow is the clock of every golden run: reports carry its time, in
// UTC (it is not in UTC itself, so a report that forgot to convert shows).
// Its zone (CET, UTC+1) is the local zone examine prints times in, as
// mdadm prints them under TZ=CET-1.
func goldenNow() time.Time { return time.Date(2026, 1, 2, 4, 4, 5, 0, time.FixedZone("CET", 3600)) }

// goldenRunAt is goldenRun with the clock that dates reports.
func goldenRunAt(t *testing.T, base, ext string, fix func(string) string, now func() time.Time, args ...string) {
	t.Helper()
	var out, errb bytes.Buffer
	exited := -1
	code := runAt(args, &out, &errb, func(c int) {
		if exited < 0 {
			exited = c
		}
	}, now)
	if exited >= 0 {
		code = exited
	}
	stdout, stderr := out.String(), errb.String()
	if fix != nil {
		stdout, stderr = fix(stdout), fix(stderr)
	}
	if code != 0 {
		stderr += fmt.Sprintf("[exit status %d]\n", code)
	}
	golden.Check(t, base+ext, []byte(stdout))
	golden.Check(t, base+ext+".stderr", []byte(stderr))
}

// TestGoldenStatus pins status --json, status text and the Prometheus
// text format for every capture.
func TestGoldenStatus(t *testing.T) {
	gd := filepath.Join(goldenDir(t), "status")
	for _, fc := range fixture.All(t) {
		name := filepath.Base(fc.Dir)
		t.Run(name, func(t *testing.T) {
			flags, fc := goldenCase(t, name)
			base := filepath.Join(gd, name)
			goldenRun(t, base, ".json", nil, append([]string{"status", "--json", fc.Info.Array}, flags...)...)
			goldenRun(t, base, ".txt", nil, append([]string{"status"}, flags...)...)
			goldenRun(t, base, ".prom", nil, append([]string{"status", "--format=prometheus", fc.Info.Array}, flags...)...)
			// mdadm --detail --scan's ARRAY line, named from the map file
			// mdadm kept on that system.
			captureMap(t, fc, "mdadm-run")
			goldenRun(t, base, ".brief", nil, append([]string{"status", "--brief", "--map-dir", "mdadm-run"}, flags...)...)
		})
	}
}

// TestGoldenStatusDiscover pins a whole-system status (eight arrays, one
// report) in both formats, at a pinned report time.
func TestGoldenStatusDiscover(t *testing.T) {
	gd := filepath.Join(goldenDir(t), "status")
	flags, _ := goldenCase(t, "eight-arrays")
	now := goldenNow
	base := filepath.Join(gd, "eight-arrays")
	goldenRunAt(t, base, ".json", nil, now, append([]string{"status", "--json"}, flags...)...)
	goldenRunAt(t, base, ".txt", nil, now, append([]string{"status"}, flags...)...)
}

// TestGoldenExamine pins examine --json and examine text over every
// member of every capture, one invocation per capture.
func TestGoldenExamine(t *testing.T) {
	gd := filepath.Join(goldenDir(t), "examine")
	for _, fc := range fixture.All(t) {
		name := filepath.Base(fc.Dir)
		t.Run(name, func(t *testing.T) {
			flags, fc := goldenCase(t, name)
			wd, err := os.Getwd()
			qt.Assert(t, err, qt.IsNil)
			// Paths printed absolute are made relative to the working directory.
			fix := func(s string) string { return strings.ReplaceAll(s, wd+string(filepath.Separator), "") }
			// The capture's roots: 0.90 rows name the nodes of its system.
			args := append([]string{"examine"}, flags...)
			for _, m := range fc.Members {
				args = append(args, filepath.Join("dev", m.Name))
			}
			base := filepath.Join(gd, name)
			goldenRun(t, base, ".txt", fix, args...)
			goldenRun(t, base, ".json", fix, append([]string{"examine", "--json"}, args[1:]...)...)
		})
	}
}

// TestGoldenReplaceDryRun pins replace's plan text and refusal lines. A
// regular file is never a block device, so every plan here ends in that
// refusal or an earlier one: the checks before it are what is pinned.
func TestGoldenReplaceDryRun(t *testing.T) {
	gd := filepath.Join(goldenDir(t), "replace")
	tests := []struct {
		name    string
		fixture string
		args    []string
	}{
		{"raid1-failed-member", "raid1-failed", []string{"md0", "--with", "dev/vdz", "--member", "vdb", "--dry-run"}},
		{"raid1-degraded-missing", "raid1-degraded-missing", []string{"md0", "--with", "dev/vdz", "--dry-run"}},
		{"raid1-healthy", "raid1-v1.2", []string{"md0", "--with", "dev/vdz", "--dry-run"}},
		{"raid1-hot", "raid1-v1.2", []string{"md0", "--with", "dev/vdz", "--member", "vda", "--hot", "--dry-run"}},
		{"raid1-hot-no-member", "raid1-v1.2", []string{"md0", "--with", "dev/vdz", "--hot", "--dry-run"}},
		{"raid5-degraded", "raid5-degraded", []string{"md0", "--with", "dev/vdz", "--dry-run"}},
		{"raid5-slot-out-of-range", "raid5-degraded", []string{"md0", "--with", "dev/vdz", "--slot", "9", "--dry-run"}},
		{"raid5-negative-slot", "raid5-degraded", []string{"md0", "--with", "dev/vdz", "--slot=-1", "--dry-run"}},
		{"raid5-inactive", "raid5-inactive", []string{"md127", "--with", "dev/vdz", "--dry-run"}},
		{"raid1-removed-spare", "raid1-removed-spare", []string{"md0", "--with", "dev/vdz", "--dry-run"}},
		{"no-such-array", "raid1-v1.2", []string{"md9", "--with", "dev/vdz", "--dry-run"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			flags, _ := goldenCase(t, tt.fixture)
			qt.Assert(t, os.WriteFile(filepath.Join("dev", "vdz"), make([]byte, 1<<20), 0o644), qt.IsNil)
			args := append(append(append([]string{"replace"}, tt.args...), "--run-dir", "run"), flags...)
			goldenRun(t, filepath.Join(gd, tt.name), ".txt", nil, args...)
		})
	}
}

// TestGoldenRefusals pins the error lines of fail, remove, run and status
// when they refuse or find nothing.
func TestGoldenRefusals(t *testing.T) {
	gd := filepath.Join(goldenDir(t), "refusals")
	tests := []struct {
		name    string
		fixture string
		args    []string
	}{
		{"fail-last-copy", "raid1-degraded-missing", []string{"fail", "md0", "vda"}},
		{"fail-no-member", "raid1-v1.2", []string{"fail", "md0", "vdq"}},
		{"remove-active", "raid1-v1.2", []string{"remove", "md0", "dev/vda"}},
		{"run-running", "raid1-v1.2", []string{"run", "md0"}},
		{"status-no-array", "raid1-v1.2", []string{"status", "md99"}},
		{"status-json-no-array", "raid1-v1.2", []string{"status", "--json", "md99"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			flags, _ := goldenCase(t, tt.fixture)
			goldenRun(t, filepath.Join(gd, tt.name), ".txt", nil, append(tt.args, flags...)...)
		})
	}
}

// TestGoldenHeal pins heal's text and JSON (a dry run and a real pass
// that refuses: the recorded port is empty) and its refusals of a
// missing or unreadable store.
func TestGoldenHeal(t *testing.T) {
	gd := filepath.Join(goldenDir(t), "heal")
	flags, _ := goldenCase(t, "raid1-degraded-missing")
	abs, err := filepath.Abs(".")
	qt.Assert(t, err, qt.IsNil)
	store := degradedStore(t, []string{"--sysfs", filepath.Join(abs, "sys"), "--dev", filepath.Join(abs, "dev")})
	qt.Assert(t, os.Rename(store, "slots.json"), qt.IsNil)
	heal := func(args ...string) []string {
		return append(append([]string{"heal", "--run-dir", "run"}, args...), flags...)
	}

	goldenRun(t, filepath.Join(gd, "dry-run"), ".txt", nil, heal("--store", "slots.json", "--dry-run")...)
	goldenRun(t, filepath.Join(gd, "dry-run"), ".json", nil, heal("--store", "slots.json", "--dry-run", "--json")...)
	goldenRun(t, filepath.Join(gd, "pass"), ".txt", nil, heal("--store", "slots.json")...)
	goldenRun(t, filepath.Join(gd, "pass"), ".json", nil, heal("--store", "slots.json", "--json")...)
	goldenRun(t, filepath.Join(gd, "no-such-array"), ".txt", nil, heal("--store", "slots.json", "--array", "nope")...)
	goldenRun(t, filepath.Join(gd, "missing-store"), ".txt", nil, heal("--store", "missing.json")...)
	qt.Assert(t, os.WriteFile("corrupt.json", []byte("{\"version\": 1, \"arrays\": ["), 0o644), qt.IsNil)
	goldenRun(t, filepath.Join(gd, "corrupt-store"), ".txt", nil, heal("--store", "corrupt.json")...)
	b, err := os.ReadFile("slots.json")
	qt.Assert(t, err, qt.IsNil)
	qt.Assert(t, os.WriteFile("v7.json", []byte(strings.Replace(string(b), `"version": 1`, `"version": 7`, 1)), 0o644), qt.IsNil)
	goldenRun(t, filepath.Join(gd, "newer-store"), ".txt", nil, heal("--store", "v7.json")...)
}

// TestGoldenReplacePlan pins the text of a plan that passes, with its
// steps and writes, which mdctl itself only reaches with a real block
// device: the plan is made with md's AllowImageFile (for tests) on a
// 64 MiB image, an empty mount table, and printed by printPlan as replace
// --dry-run prints it.
func TestGoldenReplacePlan(t *testing.T) {
	gd := filepath.Join(goldenDir(t), "replace")
	tests := []struct {
		name    string
		fixture string
		req     md.ReplaceRequest
	}{
		{"plan-raid1-failed-member", "raid1-failed", md.ReplaceRequest{Array: "md0", Member: "vdb"}},
		{"plan-raid1-degraded-missing", "raid1-degraded-missing", md.ReplaceRequest{Array: "md0"}},
		{"plan-raid5-degraded", "raid5-degraded", md.ReplaceRequest{Array: "md0"}},
		{"plan-raid1-hot", "raid1-v1.2", md.ReplaceRequest{Array: "md0", Member: "vda", Hot: true}},
		{"plan-raid1-bitmap-hot", "raid1-bitmap", md.ReplaceRequest{Array: "md0", Member: "vdb", Hot: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := qt.New(t)
			_, fc := goldenCase(t, tt.fixture)
			// The captures predate recording the array's queue/; every
			// array of the suite has 512-byte logical blocks.
			q := filepath.Join("sys", "block", fc.Info.Array, "queue")
			c.Assert(os.MkdirAll(q, 0o755), qt.IsNil)
			c.Assert(os.WriteFile(filepath.Join(q, "logical_block_size"), []byte("512\n"), 0o644), qt.IsNil)
			c.Assert(os.WriteFile("mountinfo", nil, 0o644), qt.IsNil)
			f, err := os.Create(filepath.Join("dev", "vdz"))
			c.Assert(err, qt.IsNil)
			c.Assert(f.Truncate(64<<20), qt.IsNil)
			c.Assert(f.Close(), qt.IsNil)

			m, err := md.Open(&md.Config{SysRoot: "sys", DevRoot: "dev", RunDir: "run", MountInfo: "mountinfo"})
			c.Assert(err, qt.IsNil)
			req := tt.req
			req.With, req.AllowImageFile = filepath.Join("dev", "vdz"), true
			p, err := m.PlanReplace(t.Context(), req)
			var out strings.Builder
			if p != nil {
				printPlan(&out, p)
			}
			if err != nil {
				fmt.Fprintf(&out, "error: %v\n", err)
			}
			golden.Check(t, filepath.Join(gd, tt.name+".txt"), []byte(out.String()))
		})
	}
}

// TestGoldenPrimitivesDryRun pins fail, remove and run with --dry-run
// (what they would do, or the same refusal and exit code as the real
// run), and fail of a member that is faulty already; none of them
// changes a byte of the capture's sysfs or /dev.
func TestGoldenPrimitivesDryRun(t *testing.T) {
	gd := filepath.Join(goldenDir(t), "primitives")
	tests := []struct {
		name    string
		fixture string
		args    []string
	}{
		{"fail-dry-run", "raid1-v1.2", []string{"fail", "md0", "vdb", "--dry-run"}},
		{"fail-last-copy-dry-run", "raid1-degraded-missing", []string{"fail", "md0", "vda", "--dry-run"}},
		{"fail-already-faulty", "raid1-failed", []string{"fail", "md0", "vdb"}},
		{"fail-already-faulty-dry-run", "raid1-failed", []string{"fail", "md0", "vdb", "--dry-run"}},
		{"remove-dry-run", "raid1-failed", []string{"remove", "md0", "dev/vdb", "--dry-run"}},
		{"remove-active-dry-run", "raid1-v1.2", []string{"remove", "md0", "vda", "--dry-run"}},
		{"run-dry-run", "raid5-inactive", []string{"run", "md127", "--dry-run"}},
		{"run-running-dry-run", "raid1-v1.2", []string{"run", "md0", "--dry-run"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			flags, _ := goldenCase(t, tt.fixture)
			before := treeBytes(t, ".")
			goldenRun(t, filepath.Join(gd, tt.name), ".txt", nil, append(append(tt.args, "--run-dir", "run"), flags...)...)
			qt.Assert(t, treeBytes(t, "."), qt.DeepEquals, before)
		})
	}
}

// treeBytes returns every regular file below dir with its content.
func treeBytes(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		// A write-only attribute (mode 0200, bitmap_set_bits) is read
		// by root alone: make it readable for its owner first.
		if fi, err := d.Info(); err == nil && fi.Mode().Perm()&0o400 == 0 {
			if err := os.Chmod(p, fi.Mode().Perm()|0o400); err != nil {
				return err
			}
		}
		b, err := os.ReadFile(p)
		out[p] = string(b)
		return err
	})
	qt.Assert(t, err, qt.IsNil)
	return out
}

// TestGoldenCheck pins mdctl check's text and JSON: a started check and
// the refusals, on the real captures (the sysfs tree is files: the write
// lands in sync_action).
func TestGoldenCheck(t *testing.T) {
	gd := filepath.Join(goldenDir(t), "check")
	for _, name := range []string{"raid1-v1.2", "raid1-degraded-missing", "raid0", "raid1-recovering"} {
		for _, ext := range []string{".txt", ".json"} {
			t.Run(name+ext, func(t *testing.T) {
				flags, fc := goldenCase(t, name)
				args := []string{"check", fc.Info.Array}
				if ext == ".json" {
					args = append(args, "--json")
				}
				goldenRun(t, filepath.Join(gd, name), ext, nil, append(args, flags...)...)
			})
		}
	}
}

// TestGoldenCheckAll pins check --all over the eight-array capture: each
// array started or refused, in kernel-name order, and the exit code of
// the worst (2).
func TestGoldenCheckAll(t *testing.T) {
	gd := filepath.Join(goldenDir(t), "check")
	flags, _ := goldenCase(t, "eight-arrays")
	goldenRun(t, filepath.Join(gd, "eight-arrays"), ".json", nil, append([]string{"check", "--all", "--json"}, flags...)...)
}

// TestGoldenCheckResults pins the text of finished, stopped and
// mismatching results.
func TestGoldenCheckResults(t *testing.T) {
	var out bytes.Buffer
	for _, r := range []md.CheckResult{
		{Array: "md0", Level: "raid1", Action: "check", Result: md.CheckClean, SizeSectors: 129024, PositionSectors: 129024, Finished: true},
		{Array: "md1", Level: "raid1", Action: "check", Result: md.CheckMismatches, MismatchSectors: 256, SizeSectors: 129024, PositionSectors: 129024, Finished: true, Meaning: md.MismatchMeaning("raid1", "check", 256)},
		{Array: "md2", Level: "raid5", Action: "check", Result: md.CheckMismatches, MismatchSectors: 8, SizeSectors: 129024, PositionSectors: 129024, Finished: true, Meaning: md.MismatchMeaning("raid5", "check", 8)},
		{Array: "md3", Level: "raid6", Action: "check", Result: md.CheckStopped, MismatchSectors: 0, SizeSectors: 129024, PositionSectors: 49152, CursorSaved: true},
		{Array: "md4", Level: "raid1", Action: "repair", Result: md.CheckRepaired, MismatchSectors: 128, SizeSectors: 129024, PositionSectors: 129024, Finished: true, Meaning: md.MismatchMeaning("raid1", "repair", 128)},
		{Array: "md5", Level: "raid1", Result: md.CheckSkipped, Skipped: "no unfinished pass to continue"},
		{Array: "md6", Level: "raid0", Result: md.CheckSkipped, Skipped: "level raid0 has no redundancy to check"},
		{Array: "md7", Level: "raid1", Action: "check", Result: md.CheckWouldStart, SizeSectors: 129024, ResumedFrom: 49152},
		{Array: "md8", Level: "raid1", Action: "check", Result: md.CheckWouldStop, SizeSectors: 129024, PositionSectors: 1024},
	} {
		printCheck(&out, r)
	}
	golden.Check(t, filepath.Join(goldenDir(t), "check", "results.txt"), out.Bytes())
}
