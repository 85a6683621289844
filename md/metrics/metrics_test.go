package metrics

import (
	"context"
	"testing"

	qt "github.com/frankban/quicktest"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/go-mdraid/mdraid/md"
	"github.com/go-mdraid/mdraid/sysfs"
)

// fixedSource serves one report.
type fixedSource struct{ r *md.Report }

func (s fixedSource) Discover(context.Context) (*md.Report, error) { return s.r, nil }

// TestDuplicateFlag: garbage in a member's state (a flag listed twice)
// does not make a duplicate series, which would fail the whole scrape.
func TestDuplicateFlag(t *testing.T) {
	c := qt.New(t)
	r := &md.Report{Arrays: []md.Array{{Device: "md0", Availability: md.Online, Redundancy: md.Full,
		Spares: []md.Member{{Device: "vda", Slot: -1, Flags: sysfs.MemberState{"spare", "spare"}}}}}}
	reg := prometheus.NewPedanticRegistry()
	c.Assert(reg.Register(NewCollector(context.Background(), fixedSource{r})), qt.IsNil)
	_, err := reg.Gather()
	c.Assert(err, qt.IsNil)
}
