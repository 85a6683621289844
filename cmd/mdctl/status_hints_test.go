package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	qt "github.com/frankban/quicktest"

	"github.com/go-mdraid/mdraid/internal/fixture"
	"github.com/go-mdraid/mdraid/md"
)

// TestStatusTextSaysWhatJSONHas: on the real captures from 6.1, 6.12 and
// 7.2, the plain text names a member's bad blocks (JSON bad_blocks), and
// for an inactive array says it is not running instead of a size of 0
// and what mdctl run would start it with (JSON run) and what that risks.
func TestStatusTextSaysWhatJSONHas(t *testing.T) {
	for _, k := range []string{"", "-k6.12", "-k7.2"} {
		t.Run("raid1-badblocks"+k, func(t *testing.T) {
			c := qt.New(t)
			sys, dev := fixture.Named(t, "raid1-badblocks"+k).System(t)
			roots := []string{"--sysfs", sys, "--dev", dev}
			_, out, _ := runCLI(t, append([]string{"status", "--json"}, roots...)...)
			var r md.Report
			c.Assert(json.Unmarshal([]byte(out), &r), qt.IsNil)
			c.Assert(r.Arrays, qt.HasLen, 1)
			var with []*md.Member
			for _, m := range r.Arrays[0].Members() {
				if m.BadBlocks > 0 {
					with = append(with, m)
				}
			}
			c.Assert(with, qt.HasLen, 1) // vdb: two ranges written to its log
			c.Check(with[0].Device, qt.Equals, "vdb")
			c.Check(with[0].BadBlocks, qt.Equals, 2)
			_, text, _ := runCLI(t, append([]string{"status"}, roots...)...)
			c.Check(text, qt.Contains, fmt.Sprintf("  bad blocks: %s 2 range(s) in the bad-block log", with[0].Path))
		})
		t.Run("raid5-inactive"+k, func(t *testing.T) {
			c := qt.New(t)
			fc := fixture.Named(t, "raid5-inactive"+k)
			sys, dev := fc.System(t)
			roots := []string{"--sysfs", sys, "--dev", dev}
			code, out, _ := runCLI(t, append([]string{"status", "--json"}, roots...)...)
			c.Check(code, qt.Equals, exitFailed)
			var r md.Report
			c.Assert(json.Unmarshal([]byte(out), &r), qt.IsNil)
			c.Assert(r.Arrays, qt.HasLen, 1)
			a := r.Arrays[0]
			c.Check(a.Availability, qt.Equals, md.Inactive)
			c.Check(a.Run, qt.DeepEquals, &md.RunOutlook{CanRun: true, Slots: 3, Redundancy: md.NoRedundancy})
			_, text, _ := runCLI(t, append([]string{"status"}, roots...)...)
			c.Check(text, qt.Contains, "size:   - (not running)")
			c.Check(text, qt.Not(qt.Contains), "0.00 B")
			c.Check(text, qt.Contains, fmt.Sprintf("mdctl run %s starts it with 3 of 4 slots, degraded with redundancy none", fc.Info.Array))
			c.Check(text, qt.Contains, "is stale and must be added back")
			// What the hint promises is what run does.
			code, out, errOut := runCLI(t, append([]string{"run", "--dry-run", fc.Info.Array}, roots...)...)
			c.Check(code, qt.Equals, 0, qt.Commentf("%s%s", out, errOut))
		})
	}
	// With too few members the hint says run refuses, and run does.
	t.Run("raid5-inactive with two members", func(t *testing.T) {
		c := qt.New(t)
		r := &md.Report{Arrays: []md.Array{{Device: "md127", Path: "/dev/md127", Level: "raid5", RaidDisks: 4,
			Availability: md.Inactive, Run: &md.RunOutlook{Slots: 2, Redundancy: md.NoRedundancy}}}}
		var b strings.Builder
		c.Assert(renderText(&b, r), qt.IsNil)
		c.Check(b.String(), qt.Contains, "with 2 of 4 slots it cannot serve its data (mdctl run refuses)")
	})
}
