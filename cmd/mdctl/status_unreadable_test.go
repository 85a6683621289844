package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	qt "github.com/frankban/quicktest"

	"github.com/go-mdraid/mdraid/internal/fixture"
	"github.com/go-mdraid/mdraid/md"
)

// TestStatusMemberAttributeUnreadable: on real captures, one attribute of
// one member that cannot be read (replaced by a directory: the read fails
// with EISDIR; or gone while its directory and block link are still
// there, as when it vanishes during the read) does not make a clean
// array failed or degraded. A slot that cannot be read is taken from the
// array's rdN link, and the array stays online; a state that cannot be
// read makes the member's slot and the health unknown (exit 4), never
// missing or failed. node_md_degraded stays the kernel's 0.
func TestStatusMemberAttributeUnreadable(t *testing.T) {
	tests := []struct {
		name, fixture, attr string
		gone                bool // remove the attribute instead of making it a directory
		want                md.Availability
		slot                md.SlotState
	}{
		{"raid1 slot unreadable", "raid1-v1.2", "slot", false, md.Online, md.SlotActive},
		{"raid1 slot gone", "raid1-v1.2", "slot", true, md.Online, md.SlotActive},
		{"raid1 slot unreadable on 7.2", "raid1-v1.2-k7.2", "slot", false, md.Online, md.SlotActive},
		{"raid0 slot unreadable", "raid0", "slot", false, md.Online, md.SlotActive},
		{"raid5 slot gone", "raid5", "slot", true, md.Online, md.SlotActive},
		{"raid1 state unreadable", "raid1-v1.2", "state", false, md.Unknown, md.SlotUnknown},
		{"raid0 state gone", "raid0", "state", true, md.Unknown, md.SlotUnknown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := qt.New(t)
			fc := fixture.Named(t, tt.fixture)
			sys, dev := fc.System(t)
			victim := fc.Info.Members[1].Name
			p := filepath.Join(sys, "block", fc.Info.Array, "md", "dev-"+victim, tt.attr)
			_, err := os.Stat(p)
			c.Assert(err, qt.IsNil)
			c.Assert(os.Remove(p), qt.IsNil)
			if !tt.gone {
				c.Assert(os.Mkdir(p, 0o755), qt.IsNil)
			}
			roots := []string{"--sysfs", sys, "--dev", dev, fc.Info.Array}

			code, out, _ := runCLI(t, append([]string{"status", "--json"}, roots...)...)
			var r md.Report
			c.Assert(json.Unmarshal([]byte(out), &r), qt.IsNil)
			c.Assert(r.Arrays, qt.HasLen, 1)
			a := r.Arrays[0]
			c.Check(a.Availability, qt.Equals, tt.want)
			c.Check(a.Degraded, qt.Equals, 0)
			c.Check(a.Spares, qt.HasLen, 0)
			c.Assert(a.Slots, qt.HasLen, len(fc.Info.Members))
			for i, sl := range a.Slots {
				c.Assert(sl.Member, qt.Not(qt.IsNil), qt.Commentf("slot %d", i))
				want := md.SlotActive
				if sl.Member.Device == victim {
					want = tt.slot
					c.Check(sl.Member.Error, qt.Contains, tt.attr+": ")
				}
				c.Check(sl.State, qt.Equals, want, qt.Commentf("slot %d", i))
			}
			wantCode := exitHealthy
			if tt.want == md.Unknown {
				wantCode = exitUnreadable
			}
			c.Check(code, qt.Equals, wantCode)

			code, text, _ := runCLI(t, append([]string{"status"}, roots...)...)
			c.Check(code, qt.Equals, wantCode)
			c.Check(text, qt.Contains, "health: "+strings.ToUpper(string(tt.want)))
			c.Check(text, qt.Not(qt.Contains), "FAILED")
			c.Check(text, qt.Not(qt.Contains), "missing")

			_, prom, _ := runCLI(t, append([]string{"status", "--format=prometheus"}, roots...)...)
			got := mdctlMD(t, prom)
			c.Check(got["node_md_degraded"], qt.Equals, 0.0)
			c.Check(got[`node_md_disks{state="active"}`] >= float64(len(fc.Info.Members)-1), qt.IsTrue)
			c.Check(got[`node_md_disks{state="spare"}`], qt.Equals, 0.0)
		})
	}
}
