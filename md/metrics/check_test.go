package metrics

import (
	"bytes"
	"context"
	"strings"
	"testing"

	qt "github.com/frankban/quicktest"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/go-mdraid/mdraid/md"
	"github.com/go-mdraid/mdraid/sysfs"
)

// scrape collects r and returns the parsed text format: what a
// Prometheus server would read, validated by expfmt.
func scrape(t *testing.T, r *md.Report) map[string]map[string]float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	qt.Assert(t, reg.Register(NewCollector(context.Background(), fixedSource{r})), qt.IsNil)
	mfs, err := reg.Gather()
	qt.Assert(t, err, qt.IsNil)
	var buf bytes.Buffer
	enc := expfmt.NewEncoder(&buf, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		qt.Assert(t, enc.Encode(mf), qt.IsNil)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	parsed, err := parser.TextToMetricFamilies(strings.NewReader(buf.String()))
	qt.Assert(t, err, qt.IsNil, qt.Commentf("%s", buf.String()))
	out := map[string]map[string]float64{}
	for name, mf := range parsed {
		out[name] = map[string]float64{}
		for _, m := range mf.GetMetric() {
			var ls []string
			for _, l := range m.GetLabel() {
				ls = append(ls, l.GetName()+"="+l.GetValue())
			}
			out[name][strings.Join(ls, ",")] = m.GetGauge().GetValue()
		}
	}
	return out
}

func u64p(v uint64) *uint64 { return &v }

func TestCheckMetrics(t *testing.T) {
	checking := md.Array{Device: "md0", Level: "raid5", Availability: md.Online, Redundancy: md.Full,
		MismatchSectors: u64p(16), LastSyncAction: sysfs.ActionCheck,
		Activity: md.Activity{Kind: sysfs.ActionCheck, DoneSectors: 32768, TotalSectors: 131072, Percent: 25}}
	repairing := checking
	repairing.Device, repairing.LastSyncAction = "md1", sysfs.ActionRepair
	repairing.Activity.Kind = sysfs.ActionRepair
	resyncing := checking
	resyncing.Device, resyncing.LastSyncAction = "md2", sysfs.ActionResync
	resyncing.Activity.Kind = sysfs.ActionResync
	idle := md.Array{Device: "md3", Level: "raid1", Availability: md.Online, Redundancy: md.Full,
		MismatchSectors: u64p(0), LastSyncAction: sysfs.ActionIdle, Activity: md.Activity{Kind: sysfs.ActionIdle}}
	stripe := md.Array{Device: "md4", Level: "raid0", Availability: md.Online, Redundancy: md.NoRedundancy,
		Activity: md.Activity{Kind: sysfs.ActionIdle}}

	got := scrape(t, &md.Report{Arrays: []md.Array{checking, repairing, resyncing, idle, stripe}})
	c := qt.New(t)
	c.Check(got["mdraid_array_mismatch_sectors"], qt.DeepEquals, map[string]float64{
		"device=md0": 16, "device=md1": 16, "device=md2": 16, "device=md3": 0,
	})
	c.Check(got["mdraid_array_last_sync_action"], qt.DeepEquals, map[string]float64{
		"action=check,device=md0": 1, "action=repair,device=md1": 1,
		"action=resync,device=md2": 1, "action=idle,device=md3": 1,
	})
	// Only a check or a repair has a check position; a resync is not one.
	c.Check(got["mdraid_array_check_position_ratio"], qt.DeepEquals, map[string]float64{
		"action=check,device=md0": 0.25, "action=repair,device=md1": 0.25,
	})
	c.Check(got["mdraid_collect_errors"][""], qt.Equals, 0.0)
}
