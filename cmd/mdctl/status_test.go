package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	qt "github.com/frankban/quicktest"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/go-mdraid/mdraid/internal/fixture"
	"github.com/go-mdraid/mdraid/internal/mdadmtext"
	"github.com/go-mdraid/mdraid/md"
	"github.com/go-mdraid/mdraid/sysfs"
)

// runCLI is mdctl with the exit code first.
func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	stdout, stderr, code = mdctl(t, args...)
	return code, stdout, stderr
}

func TestStatusOnRealCaptures(t *testing.T) {
	for _, fc := range fixture.All(t) {
		t.Run(filepath.Base(fc.Dir), func(t *testing.T) {
			c := qt.New(t)
			sys, dev := fc.System(t)
			roots := []string{"--sysfs", sys, "--dev", dev}
			want := mdadmtext.ParseDetail(fc.Texts["detail.txt"]).TestExit()

			code, out, errOut := runCLI(t, append([]string{"status"}, roots...)...)
			c.Check(code, qt.Equals, want, qt.Commentf("stdout:\n%s\nstderr:\n%s", out, errOut))
			c.Check(out, qt.Contains, "/dev/"+fc.Info.Array)
			c.Check(out, qt.Contains, "SLOT")

			code, out, _ = runCLI(t, append([]string{"status", "--json"}, roots...)...)
			c.Check(code, qt.Equals, want)
			var r md.Report
			c.Assert(json.Unmarshal([]byte(out), &r), qt.IsNil)
			c.Assert(r.Arrays, qt.HasLen, 1)
			c.Check(r.Version, qt.Equals, md.SchemaVersion)

			// Metrics exit 0 once printed: a textfile collector's
			// file keeps being replaced while an array is degraded.
			code, out, _ = runCLI(t, append([]string{"status", "--format=prometheus", fc.Info.Array}, roots...)...)
			c.Check(code, qt.Equals, exitHealthy)
			p := expfmt.NewTextParser(model.UTF8Validation)
			mfs, err := p.TextToMetricFamilies(strings.NewReader(out))
			c.Assert(err, qt.IsNil, qt.Commentf("%s", out))
			for _, name := range []string{"node_md_state", "node_md_disks", "node_md_disks_required", "mdraid_array_availability", "mdraid_member_info"} {
				c.Check(mfs[name], qt.Not(qt.IsNil), qt.Commentf("metric %s", name))
			}
			var active float64 = -1
			for _, m := range mfs["node_md_disks"].GetMetric() {
				for _, l := range m.GetLabel() {
					if l.GetName() == "state" && l.GetValue() == "active" {
						active = m.GetGauge().GetValue()
					}
				}
			}
			c.Check(active, qt.Equals, float64(r.Arrays[0].Counts.Active))
		})
	}
}

func TestStatusExitCodes(t *testing.T) {
	rep := func(avs ...md.Availability) *md.Report {
		r := &md.Report{}
		for _, a := range avs {
			r.Arrays = append(r.Arrays, md.Array{State: "clean", Availability: a})
		}
		return r
	}
	tests := []struct {
		name string
		r    *md.Report
		want int
	}{
		{"none", rep(), 0},
		{"online", rep(md.Online, md.ReadOnly), 0},
		{"degraded", rep(md.Online, md.Degraded), 1},
		{"failed beats degraded", rep(md.Degraded, md.Failed), 2},
		{"inactive", rep(md.Inactive), 2},
		{"unreadable array", &md.Report{Arrays: []md.Array{{Errors: []string{"array_state: permission denied"}}}}, 4},
		{"no report", nil, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			qt.Assert(t, statusExitCode(tt.r, nil), qt.Equals, tt.want)
		})
	}
}

func TestStatusErrors(t *testing.T) {
	c := qt.New(t)
	code, _, errOut := runCLI(t, "status", "--sysfs", filepath.Join(t.TempDir(), "missing"), "--dev", t.TempDir())
	c.Check(code, qt.Equals, 4)
	c.Check(errOut, qt.Contains, "missing")

	sys, dev := fixture.Named(t, "raid1-v1.2").System(t)
	code, _, errOut = runCLI(t, "status", "--sysfs", sys, "--dev", dev, "md99")
	c.Check(code, qt.Equals, 4)
	c.Check(errOut, qt.Contains, "no such array")
}

// TestStatusMachineOutputUnreadable: when nothing can be read, --json
// still prints a document with its error set (exit 4), and
// --format=prometheus the scrape-error series (exit 0: metrics printed).
func TestStatusMachineOutputUnreadable(t *testing.T) {
	flags, _ := materialize(t, "raid1-v1.2")
	empty := t.TempDir()
	tests := []struct {
		name string
		args []string
	}{
		{"no sysfs", []string{"--sysfs", filepath.Join(empty, "nonexistent"), "--dev", empty}},
		{"no arrays directory", []string{"--sysfs", empty, "--dev", empty}},
		{"no such array", append([]string{"nope"}, flags...)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := qt.New(t)
			code, out, errOut := runCLI(t, append([]string{"status", "--json"}, tt.args...)...)
			c.Check(code, qt.Equals, exitUnreadable)
			c.Check(errOut, qt.Contains, "mdctl: error: ")
			var r md.Report
			c.Assert(json.Unmarshal([]byte(out), &r), qt.IsNil, qt.Commentf("%q", out))
			c.Check(r.Version, qt.Equals, md.SchemaVersion)
			c.Check(r.Error, qt.Not(qt.Equals), "")
			c.Check(r.Arrays, qt.DeepEquals, []md.Array{})
			c.Check(out, qt.Contains, `"arrays": []`)

			code, out, errOut = runCLI(t, append([]string{"status", "--format=prometheus"}, tt.args...)...)
			c.Check(code, qt.Equals, exitHealthy)
			c.Check(errOut, qt.Contains, "mdctl: warning: ")
			p := expfmt.NewTextParser(model.UTF8Validation)
			mfs, err := p.TextToMetricFamilies(strings.NewReader(out))
			c.Assert(err, qt.IsNil, qt.Commentf("%s", out))
			c.Assert(mfs["mdraid_scrape_error"], qt.Not(qt.IsNil), qt.Commentf("%s", out))
			c.Check(mfs["mdraid_scrape_error"].GetMetric()[0].GetGauge().GetValue(), qt.Equals, float64(1))

			// Text says it on stderr only.
			code, out, _ = runCLI(t, append([]string{"status"}, tt.args...)...)
			c.Check(code, qt.Equals, exitUnreadable)
			c.Check(out, qt.Equals, "")
		})
	}
}

// TestStatusUnknownValues: a real capture with one sysfs attribute
// changed to a value mdctl does not know shows the array as unknown with
// a warning, escaped, and exits 4 (as unreadable), in every format but
// the metrics (exit 0 once printed).
func TestStatusUnknownValues(t *testing.T) {
	garbage := strings.Repeat("\x1b[31mX\x07", 375) // 3,000 bytes
	tests := []struct {
		name, fixture, attr, value string
	}{
		{"bananas", "raid1-v1.2", "array_state", "bananas"},
		{"garbage state", "raid1-v1.2", "array_state", garbage},
		{"raid_disks xyz", "raid1-v1.2", "raid_disks", "xyz"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := qt.New(t)
			fc := fixture.Named(t, tt.fixture)
			sys, dev := fc.System(t)
			path := filepath.Join(sys, "block", fc.Info.Array, "md", tt.attr)
			_, err := os.Stat(path)
			c.Assert(err, qt.IsNil)
			c.Assert(os.WriteFile(path, []byte(tt.value+"\n"), 0o644), qt.IsNil)
			roots := []string{"--sysfs", sys, "--dev", dev}

			code, out, errOut := runCLI(t, append([]string{"status"}, roots...)...)
			c.Check(code, qt.Equals, exitUnreadable, qt.Commentf("stdout:\n%s\nstderr:\n%s", out, errOut))
			c.Check(out, qt.Contains, "health: UNKNOWN")
			c.Check(out, qt.Not(qt.Contains), "ONLINE")
			c.Check(out, qt.Contains, "  error: "+tt.attr+": ")
			c.Check(strings.ContainsAny(out, "\x1b\x07"), qt.IsFalse)
			c.Check(len(out) < 2000, qt.IsTrue, qt.Commentf("%d bytes:\n%s", len(out), out))

			code, out, _ = runCLI(t, append([]string{"status", "--json"}, roots...)...)
			c.Check(code, qt.Equals, exitUnreadable)
			var r md.Report
			c.Assert(json.Unmarshal([]byte(out), &r), qt.IsNil)
			c.Check(r.Arrays[0].Availability, qt.Equals, md.Unknown)
			c.Check(r.Arrays[0].Readable(), qt.IsFalse)

			code, _, _ = runCLI(t, append([]string{"status", "--format=prometheus"}, roots...)...)
			c.Check(code, qt.Equals, exitHealthy)
		})
	}
}

// TestStatusByUUID: status takes one array by device, name or UUID, in
// mdadm's 8:8:8:8 form as well as the canonical one.
func TestStatusByUUID(t *testing.T) {
	flags, _ := materialize(t, "raid1-v1.2")
	for _, name := range []string{"md0", "vmtest:0", "0", "a0916a09:5d11e029:f9a1a21c:8170c28d", "a0916a09-5d11-e029-f9a1-a21c8170c28d", "A0916A09:5D11E029:F9A1A21C:8170C28D"} {
		code, out, errOut := runCLI(t, append([]string{"status", "--json", name}, flags...)...)
		qt.Check(t, code, qt.Equals, exitHealthy, qt.Commentf("%s: %s", name, errOut))
		var r md.Report
		qt.Assert(t, json.Unmarshal([]byte(out), &r), qt.IsNil)
		qt.Check(t, r.Arrays, qt.HasLen, 1)
		qt.Check(t, r.Arrays[0].Device, qt.Equals, "md0", qt.Commentf("%s", name))
	}
}

// TestStatusTextColor: the health word is coloured only when asked
// (a terminal without NO_COLOR), and the rest of the text is unchanged.
func TestStatusTextColor(t *testing.T) {
	c := qt.New(t)
	r := &md.Report{Arrays: []md.Array{{Device: "md0", Path: "/dev/md0", Availability: md.Degraded}}}
	var plain, color strings.Builder
	c.Assert(renderText(&plain, r), qt.IsNil)
	c.Assert(renderText(&color, r, true), qt.IsNil)
	c.Check(plain.String(), qt.Not(qt.Contains), "\x1b")
	c.Check(color.String(), qt.Contains, "  health: \x1b[33mDEGRADED\x1b[0m")
	c.Check(strings.ReplaceAll(strings.ReplaceAll(color.String(), "\x1b[33m", ""), "\x1b[0m", ""), qt.Equals, plain.String())
	t.Setenv("NO_COLOR", "1")
	c.Check(useColor(os.Stdout), qt.IsFalse)
	t.Setenv("NO_COLOR", "")
	f, err := os.Create(filepath.Join(t.TempDir(), "out"))
	c.Assert(err, qt.IsNil)
	defer f.Close()
	c.Check(useColor(f), qt.IsFalse) // not a terminal
}

// TestStatusTextColorHostileName: a name that reads like the health line
// is not what gets coloured.
func TestStatusTextColorHostileName(t *testing.T) {
	c := qt.New(t)
	r := &md.Report{Arrays: []md.Array{{Device: "md0", Path: "/dev/md0", Name: "\n  health: ONLINE", Availability: md.Online}}}
	var b strings.Builder
	c.Assert(renderText(&b, r, true), qt.IsNil)
	lines := strings.Split(b.String(), "\n")
	c.Check(lines[0], qt.Not(qt.Contains), "\x1b")
	c.Check(lines[2], qt.Matches, `  health: \x1b\[32mONLINE\x1b\[0m +redundancy .*`)
}

// TestStatusTextPermissionHint: members unreadable for lack of
// permission give one hint, not an error in every row; other errors stay
// in their row.
func TestStatusTextPermissionHint(t *testing.T) {
	c := qt.New(t)
	denied := "superblock: open /dev/vda: permission denied"
	r := &md.Report{Arrays: []md.Array{{Device: "md0", Path: "/dev/md0", UUID: "u", RaidDisks: 2, Slots: []md.Slot{
		{Slot: 0, State: md.SlotActive, Member: &md.Member{Device: "vda", Path: "/dev/vda", Error: denied}},
		{Slot: 1, State: md.SlotActive, Member: &md.Member{Device: "vdb", Path: "/dev/vdb", Error: "superblock: read /dev/vdb: input/output error"}},
	}}}}
	var b strings.Builder
	c.Assert(renderText(&b, r), qt.IsNil)
	out := b.String()
	c.Check(strings.Count(out, "permission denied"), qt.Equals, 0)
	c.Check(strings.Count(out, "hint: the members' superblocks"), qt.Equals, 1)
	c.Check(out, qt.Contains, "error: superblock: read /dev/vdb: input/output error")
}

// TestStatusGarbageAttributes audits every attribute status reads: a
// value that does not parse (or a hostile one) is reported in an error
// line, escaped and cut short, never reaches the terminal raw, and makes
// the status unreadable (exit 4).
func TestStatusGarbageAttributes(t *testing.T) {
	garbage := strings.Repeat("\x1b[31mX\x07", 375)
	for _, attr := range []string{"level", "raid_disks", "layout", "chunk_size", "component_size", "degraded",
		"sync_action", "sync_completed", "sync_speed", "mismatch_cnt", "last_sync_action", "metadata_version",
		"dev-vda/state", "dev-vda/slot", "../size", "../dev"} {
		for _, value := range []string{"xyz", garbage} {
			t.Run(attr+"/"+value[:3], func(t *testing.T) {
				c := qt.New(t)
				fc := fixture.Named(t, "raid1-v1.2")
				sys, dev := fc.System(t)
				path := filepath.Join(sys, "block", fc.Info.Array, "md", attr)
				if _, err := os.Stat(path); err != nil {
					t.Skipf("%s: not in this capture", attr)
				}
				c.Assert(os.WriteFile(path, []byte(value+"\n"), 0o644), qt.IsNil)
				if attr == "sync_completed" || attr == "sync_speed" {
					// Read only while a sync runs (idle: "none").
					c.Assert(os.WriteFile(filepath.Join(filepath.Dir(path), "sync_action"), []byte("check\n"), 0o644), qt.IsNil)
				}
				roots := []string{"--sysfs", sys, "--dev", dev}
				code, out, errOut := runCLI(t, append([]string{"status"}, roots...)...)
				c.Check(code, qt.Equals, exitUnreadable, qt.Commentf("stdout:\n%s\nstderr:\n%s", out, errOut))
				c.Check(out+errOut, qt.Contains, "error: ")
				c.Check(strings.ContainsAny(out+errOut, "\x1b\x07"), qt.IsFalse)
				c.Check(len(out) < 2500, qt.IsTrue, qt.Commentf("%d bytes:\n%s", len(out), out))
				code, _, _ = runCLI(t, append([]string{"status", "--json"}, roots...)...)
				c.Check(code, qt.Equals, exitUnreadable)
			})
		}
	}
}

// TestStatusTextUnrecordedBadBlocks: a member that shows "faulty" beside
// "in_sync" (bad blocks not yet recorded) gets one hint that it has not
// failed; a failed member gets none.
func TestStatusTextUnrecordedBadBlocks(t *testing.T) {
	c := qt.New(t)
	r := &md.Report{Arrays: []md.Array{{Device: "md0", Path: "/dev/md0", UUID: "u", RaidDisks: 2, Availability: md.Online, Slots: []md.Slot{
		{Slot: 0, State: md.SlotActive, Member: &md.Member{Device: "vda", Path: "/dev/vda", Flags: sysfs.ParseMemberState("faulty,in_sync,blocked")}},
		{Slot: 1, State: md.SlotFaulty, Member: &md.Member{Device: "vdb", Path: "/dev/vdb", Flags: sysfs.ParseMemberState("faulty")}},
	}}}}
	var b strings.Builder
	c.Assert(renderText(&b, r), qt.IsNil)
	out := b.String()
	c.Check(strings.Count(out, "hint: "), qt.Equals, 1)
	c.Check(out, qt.Contains, "hint: /dev/vda shows faulty beside in_sync or spare")
	c.Check(out, qt.Not(qt.Contains), "hint: /dev/vdb")
}

// TestStatusShowsEveryArrayFound: status NAME... shows every array that
// resolves and one error line for each name that does not, with the
// worst exit code (4), as mdadm --detail does; JSON carries the arrays
// found and the error.
func TestStatusShowsEveryArrayFound(t *testing.T) {
	c := qt.New(t)
	flags, _ := materialize(t, "raid1-v1.2")
	code, out, errOut := runCLI(t, append([]string{"status", "nosuch", "md0", "nope"}, flags...)...)
	c.Check(code, qt.Equals, exitUnreadable)
	c.Check(out, qt.Contains, "/md0")
	c.Check(errOut, qt.Equals, "mdctl: error: md: no such array: nosuch\nmdctl: error: md: no such array: nope\n")

	code, out, _ = runCLI(t, append([]string{"status", "--json", "md0", "nosuch"}, flags...)...)
	c.Check(code, qt.Equals, exitUnreadable)
	var r md.Report
	c.Assert(json.Unmarshal([]byte(out), &r), qt.IsNil)
	c.Check(r.Arrays, qt.HasLen, 1)
	c.Check(r.Error, qt.Equals, "md: no such array: nosuch")
}
