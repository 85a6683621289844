package metrics

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	qt "github.com/frankban/quicktest"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/go-mdraid/mdraid/internal/craft"
	"github.com/go-mdraid/mdraid/internal/fixture"
	"github.com/go-mdraid/mdraid/md"
	"github.com/go-mdraid/mdraid/superblock"
	"github.com/go-mdraid/mdraid/sysfs"
)

// hostileManager is the real eight-array capture with md4's members
// renamed to a set name that is not UTF-8 and vda (in md0) given a serial
// with an invalid byte and an ESC, as SCSI firmware can report in
// vpd_pg80.
func hostileManager(t *testing.T) *md.Manager {
	t.Helper()
	sys, dev := fixture.Named(t, "eight-arrays").System(t)
	m, err := md.Open(&md.Config{SysRoot: sys, DevRoot: dev})
	qt.Assert(t, err, qt.IsNil)
	a, err := m.Status(context.Background(), "md4")
	qt.Assert(t, err, qt.IsNil)
	for _, s := range a.Slots {
		qt.Assert(t, craft.Superblock(filepath.Join(dev, s.Member.Device), func(sb *superblock.Superblock) {
			qt.Assert(t, sb.SetFullName("vmtest:a7\xff"), qt.IsNil)
		}), qt.IsNil)
	}
	qt.Assert(t, os.WriteFile(m.FS().Path("block", "vda", "serial"), []byte("S\xff\x1b[2J"), 0o644), qt.IsNil)
	return m
}

// TestHostileLabels: a name and a serial that are not UTF-8 no longer
// blank the scrape (HTTP 500 from promhttp before): every array is
// there, every label is valid UTF-8, and the text parses.
func TestHostileLabels(t *testing.T) {
	c := qt.New(t)
	m := hostileManager(t)
	reg := prometheus.NewPedanticRegistry()
	c.Assert(reg.Register(NewCollector(context.Background(), m)), qt.IsNil)
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	c.Assert(err, qt.IsNil)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	c.Assert(err, qt.IsNil)
	c.Assert(resp.StatusCode, qt.Equals, http.StatusOK, qt.Commentf("%s", body))

	parser := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := parser.TextToMetricFamilies(strings.NewReader(string(body)))
	c.Assert(err, qt.IsNil, qt.Commentf("%s", body))
	devices := map[string]bool{}
	for _, mf := range mfs {
		for _, mt := range mf.GetMetric() {
			for _, l := range mt.GetLabel() {
				c.Check(utf8.ValidString(l.GetValue()), qt.IsTrue, qt.Commentf("%s %s=%q", mf.GetName(), l.GetName(), l.GetValue()))
				if mf.GetName() == "node_md_state" && l.GetName() == "device" {
					devices[l.GetValue()] = true
				}
			}
		}
	}
	c.Check(devices, qt.HasLen, 8)
	c.Check(mfs["mdraid_collect_errors"].GetMetric()[0].GetGauge().GetValue(), qt.Equals, 0.0)
	for _, want := range []string{`name="a7\\xff"`, `serial="S\\xff\\x1b[2J"`} {
		c.Check(strings.Contains(string(body), want), qt.IsTrue, qt.Commentf("no %s", want))
	}
}

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
