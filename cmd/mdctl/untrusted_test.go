package main

// Tests of issue 15 through the CLI: members crafted from the real
// eight-array capture with the project's encoder.

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	qt "github.com/frankban/quicktest"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/go-mdraid/mdraid/internal/craft"
	"github.com/go-mdraid/mdraid/internal/escape"
	"github.com/go-mdraid/mdraid/internal/fixture"
	"github.com/go-mdraid/mdraid/md"
	"github.com/go-mdraid/mdraid/superblock"
)

// Members of the eight-array capture (see testdata/bench/eight-arrays).
var eightMembers = map[string][]string{"md0": {"vda", "vdb"}, "md3": {"vdg", "vdh"}, "md4": {"vdi", "vdj"}}

// eight materializes the eight-array capture and returns the root flags
// and roots.
func eight(t testing.TB) (flags []string, sys, dev string) {
	t.Helper()
	sys, dev = fixture.Named(t, "eight-arrays").System(t)
	return []string{"--sysfs", sys, "--dev", dev}, sys, dev
}

// rename gives every member of array the set name full.
func rename(t testing.TB, dev, array, full string) {
	t.Helper()
	for _, m := range eightMembers[array] {
		qt.Assert(t, craft.Superblock(filepath.Join(dev, m), func(sb *superblock.Superblock) {
			qt.Assert(t, sb.SetFullName(full), qt.IsNil)
		}), qt.IsNil)
	}
}

// checkSafeText checks that every line of text output is escaped.
func checkSafeText(c *qt.C, what, out string) {
	c.Helper()
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		c.Check(escape.Safe(l), qt.IsTrue, qt.Commentf("%s line %q", what, l))
	}
}

const forger = "h:\n  health: ONLINE\x1b[8m"

// TestStatusTextEscapes: a name that would forge a health line and hide
// the rest on a terminal is printed escaped, on the array's own title.
func TestStatusTextEscapes(t *testing.T) {
	c := qt.New(t)
	flags, sys, dev := eight(t)
	rename(t, dev, "md4", forger)
	c.Assert(os.WriteFile(filepath.Join(sys, "block", "vda", "serial"), []byte("S\xff\x1b[2J"), 0o644), qt.IsNil)

	code, out, errOut := runCLI(t, append(flags, "status")...)
	c.Check(code, qt.Equals, 0, qt.Commentf("%s", errOut))
	checkSafeText(c, "status", out)
	c.Check(out, qt.Contains, `/md4  (name \x0a  health: ONLINE\x1b[8m, homehost h)`)
	c.Check(strings.Count(out, "\n  health:"), qt.Equals, 8)

	code, out, _ = runCLI(t, append(flags, "status", "--json")...)
	c.Check(code, qt.Equals, 0)
	var r md.Report
	c.Assert(json.Unmarshal([]byte(out), &r), qt.IsNil)
	c.Check(r.Arrays, qt.HasLen, 8)

	code, out, errOut = runCLI(t, append(flags, "status", "--format=prometheus")...)
	c.Check(code, qt.Equals, 0, qt.Commentf("%s", errOut))
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(strings.NewReader(out))
	c.Assert(err, qt.IsNil)
	c.Check(mfs["node_md_state"].GetMetric(), qt.HasLen, 8*5)
}

// TestStatusPrometheusInvalidUTF8: a name that is not UTF-8 used to blank
// the metrics of every array and exit 1.
func TestStatusPrometheusInvalidUTF8(t *testing.T) {
	c := qt.New(t)
	flags, _, dev := eight(t)
	rename(t, dev, "md4", "vmtest:a7\xff")
	code, out, errOut := runCLI(t, append(flags, "status", "--format=prometheus")...)
	c.Assert(code, qt.Equals, 0, qt.Commentf("%s", errOut))
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(strings.NewReader(out))
	c.Assert(err, qt.IsNil)
	c.Check(mfs["mdraid_array_info"].GetMetric(), qt.HasLen, 8)
}

// TestExamineEscapes: examine prints the crafted name escaped.
func TestExamineEscapes(t *testing.T) {
	c := qt.New(t)
	_, _, dev := eight(t)
	rename(t, dev, "md4", forger)
	_, out, errOut := runCLI(t, "examine", filepath.Join(dev, "vdi"))
	checkSafeText(c, "examine", out)
	checkSafeText(c, "examine stderr", errOut)
	c.Check(out, qt.Contains, `Name : h:\x0a  health: ONLINE\x1b[8m`)
}

// TestRecordEscapesAndReloads: record prints a hostile name escaped, and
// the store it wrote loads again (it did not: "slot records are
// corrupt").
func TestRecordEscapesAndReloads(t *testing.T) {
	c := qt.New(t)
	flags, _, dev := eight(t)
	rename(t, dev, "md4", "vmtest:a7\xff\x1b[8m")
	store := filepath.Join(t.TempDir(), "slots.json")
	code, out, errOut := runCLI(t, append(flags, "record", "--store", store)...)
	c.Assert(code, qt.Equals, 0, qt.Commentf("%s", errOut))
	checkSafeText(c, "record", out)
	c.Check(out, qt.Contains, `md4: recorded a7\xff\x1b[8m`)
	c.Check(out, qt.Contains, "Saved 8 record(s)")
	code, out, errOut = runCLI(t, append(flags, "record", "--store", store)...)
	c.Check(code, qt.Equals, 0, qt.Commentf("%s", errOut))
	c.Check(errOut, qt.Not(qt.Contains), "corrupt")
	c.Check(out, qt.Contains, "Saved 8 record(s)")
}

// TestAmbiguousNameCLI: every command that takes an array refuses a name
// two arrays carry, and lists both.
func TestAmbiguousNameCLI(t *testing.T) {
	c := qt.New(t)
	flags, _, dev := eight(t)
	rename(t, dev, "md4", "vmtest:a0") // md0's name
	store := filepath.Join(t.TempDir(), "slots.json")
	for _, args := range [][]string{
		{"status", "a0"},
		{"fail", "a0", "vda"},
		{"remove", "a0", "vda"},
		{"run", "a0"},
		{"replace", "a0", "--with", filepath.Join(dev, "vdz")},
		{"record", "--store", store, "a0"},
		{"record", "--store", store, "vmtest:a0"},
	} {
		code, _, errOut := runCLI(t, append(flags, args...)...)
		c.Check(code, qt.Not(qt.Equals), 0, qt.Commentf("%v", args))
		c.Check(errOut, qt.Contains, "md0 and md4", qt.Commentf("%v", args))
	}
	_, err := os.Stat(store)
	c.Check(os.IsNotExist(err), qt.IsTrue, qt.Commentf("record wrote %s", store))
	code, out, _ := runCLI(t, append(flags, "status", "md0")...)
	c.Check(code, qt.Equals, 0)
	c.Check(out, qt.Contains, "/md0  (name a0,")
}

// TestHealTextEscapes: a heal decision's reason can quote a disk.
func TestHealTextEscapes(t *testing.T) {
	var b bytes.Buffer
	printDecisions(&b, []md.Decision{{Array: "md0", Slot: 1, ByPath: "pci-0000:00:11.0", Outcome: md.OutcomeRefused,
		Reason: "disk of " + forger + " is not blank"}})
	checkSafeText(qt.New(t), "heal", b.String())
}

// TestRefuseSetuid: mdctl does not run with a real uid (or gid) other
// than the effective one.
func TestRefuseSetuid(t *testing.T) {
	c := qt.New(t)
	c.Check(checkIDs(1000, 0, 1000, 1000), qt.ErrorMatches, `refusing to run set-user-ID.*real uid 1000, effective uid 0.*`)
	c.Check(checkIDs(1000, 1000, 1000, 0), qt.ErrorMatches, `refusing to run set-user-ID or set-group-ID.*`)
	c.Check(checkIDs(0, 0, 0, 0), qt.IsNil)
	c.Check(checkIDs(1000, 1000, 100, 100), qt.IsNil)
}
