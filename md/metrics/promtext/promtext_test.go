package promtext_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"io/fs"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	qt "github.com/frankban/quicktest"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/go-mdraid/mdraid/internal/craft"
	"github.com/go-mdraid/mdraid/internal/fixture"
	"github.com/go-mdraid/mdraid/internal/mdadmtext"
	"github.com/go-mdraid/mdraid/md"
	"github.com/go-mdraid/mdraid/md/metrics"
	"github.com/go-mdraid/mdraid/md/metrics/promtext"
	"github.com/go-mdraid/mdraid/superblock"
	"github.com/go-mdraid/mdraid/sysfs"
)

// fixed serves one report, or an error.
type fixed struct {
	r   *md.Report
	err error
}

func (s fixed) Discover(context.Context) (*md.Report, error) { return s.r, s.err }

// viaClient is what the Prometheus client writes for src: md/metrics'
// Collector in a pedantic registry, gathered and encoded by expfmt.
func viaClient(t *testing.T, src promtext.Source) string {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	qt.Assert(t, reg.Register(metrics.NewCollector(context.Background(), src)), qt.IsNil)
	return gather(t, reg)
}

func gather(t *testing.T, reg *prometheus.Registry) string {
	t.Helper()
	mfs, err := reg.Gather()
	qt.Assert(t, err, qt.IsNil)
	var buf bytes.Buffer
	enc := expfmt.NewEncoder(&buf, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		qt.Assert(t, enc.Encode(mf), qt.IsNil)
	}
	return buf.String()
}

// write is promtext's text for src.
func write(t *testing.T, src promtext.Source) string {
	t.Helper()
	r, err := src.Discover(context.Background())
	var buf bytes.Buffer
	qt.Assert(t, promtext.Write(&buf, promtext.Collect(r, err)), qt.IsNil)
	return buf.String()
}

// parse checks text with the official parser.
func parse(t *testing.T, text string) map[string]bool {
	t.Helper()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := parser.TextToMetricFamilies(strings.NewReader(text))
	qt.Assert(t, err, qt.IsNil, qt.Commentf("%s", text))
	names := map[string]bool{}
	for n := range mfs {
		names[n] = true
	}
	return names
}

func discover(t *testing.T, m *md.Manager) *md.Report {
	t.Helper()
	r, err := m.Discover(context.Background())
	qt.Assert(t, err, qt.IsNil)
	return r
}

// TestSameAsClient: for every real capture, the eight-array one and a
// hostile one, promtext writes byte for byte what the client library
// writes for md/metrics' Collector, and the official parser reads it.
func TestSameAsClient(t *testing.T) {
	cases := map[string]*fixture.Case{"eight-arrays": fixture.Named(t, "eight-arrays")}
	for _, c := range fixture.All(t) {
		cases[filepath.Base(c.Dir)] = c
	}
	for name, fc := range cases {
		t.Run(name, func(t *testing.T) {
			sys, dev := fc.System(t)
			m, err := md.Open(&md.Config{SysRoot: sys, DevRoot: dev})
			qt.Assert(t, err, qt.IsNil)
			src := fixed{r: discover(t, m)}
			got := write(t, src)
			qt.Check(t, got, qt.Equals, viaClient(t, src))
			qt.Check(t, parse(t, got)["mdraid_member_info"], qt.IsTrue)
		})
	}
	t.Run("hostile", func(t *testing.T) {
		sys, dev := fixture.Named(t, "eight-arrays").System(t)
		m, err := md.Open(&md.Config{SysRoot: sys, DevRoot: dev})
		qt.Assert(t, err, qt.IsNil)
		a, err := m.Status(context.Background(), "md4")
		qt.Assert(t, err, qt.IsNil)
		for _, s := range a.Slots {
			qt.Assert(t, craft.Superblock(filepath.Join(dev, s.Member.Device), func(sb *superblock.Superblock) {
				qt.Assert(t, sb.SetFullName("vm\"test\\:a7\n\xff"), qt.IsNil)
			}), qt.IsNil)
		}
		qt.Assert(t, os.WriteFile(m.FS().Path("block", "vda", "serial"), []byte("S\"\\\xff\x1b[2J"), 0o644), qt.IsNil)
		src := fixed{r: discover(t, m)}
		got := write(t, src)
		qt.Check(t, got, qt.Equals, viaClient(t, src))
		parse(t, got)
		qt.Check(t, got, qt.Contains, `serial="S\"\\\\\\xff\\x1b[2J"`)
		qt.Check(t, got, qt.Contains, `homehost="vm\"test\\\\",level="raid1",metadata="1.2",name="a7\\x0a\\xff"`)
		// One hostile member blinds no array: all eight are there, and
		// nothing was left out.
		qt.Check(t, strings.Count(got, "\nnode_md_degraded{"), qt.Equals, 8)
		qt.Check(t, got, qt.Contains, "\nmdraid_collect_errors 0\n")
	})
	t.Run("no report", func(t *testing.T) {
		src := fixed{err: errors.New("reading /sys/block: permission denied")}
		got := write(t, src)
		qt.Check(t, got, qt.Equals, viaClient(t, src))
		qt.Check(t, got, qt.Equals, "# HELP mdraid_collect_errors Number of metrics of this scrape left out because they could not be built.\n"+
			"# TYPE mdraid_collect_errors gauge\nmdraid_collect_errors 0\n"+
			"# HELP mdraid_scrape_error 1 when the list of md arrays could not be read.\n"+
			"# TYPE mdraid_scrape_error gauge\nmdraid_scrape_error 1\n")
	})
}

// constCollector gives ms to the client as constant metrics.
type constCollector []promtext.Metric

func (c constCollector) Describe(ch chan<- *prometheus.Desc) { prometheus.DescribeByCollect(c, ch) }

func (c constCollector) Collect(ch chan<- prometheus.Metric) {
	for _, m := range c {
		t := prometheus.GaugeValue
		if m.Family.Type == promtext.Counter {
			t = prometheus.CounterValue
		}
		ch <- prometheus.MustNewConstMetric(prometheus.NewDesc(m.Family.Name, m.Family.Help, m.Family.Labels, nil), t, m.Value, m.Values...)
	}
}

// TestValues: the numbers the text format spells in its own way (1, 0,
// -1, NaN, infinities) and the ones Go spells (fractions, exponents),
// label names out of order, label values that sort in an order other
// than the one they were built in, and help and values with the
// characters the format escapes, come out as the client writes them.
func TestValues(t *testing.T) {
	g := &promtext.Family{Name: "test_gauge", Help: "A help with \\ a backslash,\na newline and \"quotes\".", Labels: []string{"zeta", "alpha", "mid"}}
	c := &promtext.Family{Name: "test_total", Help: "", Type: promtext.Counter}
	var ms []promtext.Metric
	for i, v := range []float64{1, 0, -1, math.NaN(), math.Inf(1), math.Inf(-1), 0.25, 1e-7, 123456789012345678, 1.5e300, 1.0 / 3, math.Copysign(0, -1), 5e-324} {
		z := []string{"md9", "md10", "md1", "md0", "md100", "a", "Z", "", "md-", "md\"", "md\\", "new\nline", "é"}[i]
		ms = append(ms, promtext.Metric{Family: g, Values: []string{z, "x", string(rune('a' + i%3))}, Value: v})
	}
	ms = append(ms, promtext.Metric{Family: c, Value: 42})
	var buf bytes.Buffer
	qt.Assert(t, promtext.Write(&buf, ms), qt.IsNil)
	got := buf.String()
	reg := prometheus.NewPedanticRegistry()
	qt.Assert(t, reg.Register(constCollector(ms)), qt.IsNil)
	qt.Check(t, got, qt.Equals, gather(t, reg))
	parse(t, got)
	for _, want := range []string{
		"# HELP test_gauge A help with \\\\ a backslash,\\na newline and \"quotes\".\n",
		`test_gauge{alpha="x",mid="a",zeta="md0"} NaN`,
		`test_gauge{alpha="x",mid="b",zeta="md100"} +Inf`,
		`test_gauge{alpha="x",mid="c",zeta="a"} -Inf`,
		`test_gauge{alpha="x",mid="c",zeta="md1"} -1`,
		`test_gauge{alpha="x",mid="a",zeta="md9"} 1`,
		`test_gauge{alpha="x",mid="c",zeta="md-"} 1.2345678901234568e+17`,
		`test_gauge{alpha="x",mid="a",zeta="md\""} 1.5e+300`,
		`test_gauge{alpha="x",mid="b",zeta="md\\"} 0.3333333333333333`,
		`test_gauge{alpha="x",mid="c",zeta="new\nline"} 0`,
		`test_gauge{alpha="x",mid="a",zeta="é"} 5e-324`,
		"# TYPE test_total counter\ntest_total 42\n",
	} {
		qt.Check(t, got, qt.Contains, want)
	}
}

// TestDuplicates: a member listed twice (garbage in sysfs) gives its
// series once, and the repeats are counted; the client, given the same
// report through md/metrics, agrees and gathers without an error.
func TestDuplicates(t *testing.T) {
	twice := md.Member{Device: "vda", Slot: -1, Flags: sysfs.MemberState{"spare", "spare"}}
	src := fixed{r: &md.Report{Arrays: []md.Array{{Device: "md0", Availability: md.Online, Redundancy: md.Full,
		Spares: []md.Member{twice, twice}}}}}
	got := write(t, src)
	qt.Check(t, got, qt.Equals, viaClient(t, src))
	qt.Check(t, strings.Count(got, `mdraid_member_state{by_path="",device="md0",member="vda",slot="none",state="spare"} 1`), qt.Equals, 1)
	// info, state, read errors and bad blocks of the second listing.
	qt.Check(t, got, qt.Contains, "\nmdraid_collect_errors 4\n")
}

// TestFamilies: every family Collect gives is described, once, with the
// help and labels the client is given.
func TestFamilies(t *testing.T) {
	fams := promtext.Families()
	byName := map[string]*promtext.Family{}
	for _, f := range fams {
		qt.Check(t, byName[f.Name], qt.IsNil, qt.Commentf("%s twice", f.Name))
		byName[f.Name] = f
	}
	qt.Check(t, fams, qt.HasLen, 27)
	// A family changed by one caller is not changed for the next.
	fams[0].Labels[0] = "changed"
	qt.Check(t, promtext.Families()[0].Labels[0], qt.Equals, "device")
	sys, dev := fixture.Named(t, "eight-arrays").System(t)
	m, err := md.Open(&md.Config{SysRoot: sys, DevRoot: dev})
	qt.Assert(t, err, qt.IsNil)
	for _, mt := range promtext.Collect(discover(t, m), nil) {
		f := byName[mt.Family.Name]
		qt.Assert(t, f, qt.IsNotNil, qt.Commentf("%s", mt.Family.Name))
		qt.Check(t, mt.Family.Help, qt.Equals, f.Help)
		qt.Check(t, mt.Values, qt.HasLen, len(f.Labels))
	}
}

// TestWriteError: a failing writer's error is returned.
func TestWriteError(t *testing.T) {
	boom := errors.New("disk full")
	err := promtext.Write(failWriter{boom}, promtext.Collect(nil, boom))
	qt.Check(t, err, qt.ErrorIs, boom)
}

type failWriter struct{ err error }

func (w failWriter) Write([]byte) (int, error) { return 0, w.err }

// TestHandler: the handler serves Write's text with the text format's
// content type, gzip-compressed only when the request accepts gzip, no
// body to HEAD, and a scrape error (status 200) while the source fails.
func TestHandler(t *testing.T) {
	var l promtext.Latest
	srv := httptest.NewServer(promtext.Handler(&l))
	defer srv.Close()
	client := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	defer client.CloseIdleConnections()
	do := func(method, acceptEncoding string) (*http.Response, string) {
		t.Helper()
		req, err := http.NewRequest(method, srv.URL, nil)
		qt.Assert(t, err, qt.IsNil)
		if acceptEncoding != "" {
			req.Header.Set("Accept-Encoding", acceptEncoding)
		}
		resp, err := client.Do(req)
		qt.Assert(t, err, qt.IsNil)
		defer resp.Body.Close()
		var body io.Reader = resp.Body
		if resp.Header.Get("Content-Encoding") == "gzip" && method != "HEAD" {
			zr, err := gzip.NewReader(resp.Body)
			qt.Assert(t, err, qt.IsNil)
			body = zr
		}
		b, err := io.ReadAll(body)
		qt.Assert(t, err, qt.IsNil)
		return resp, string(b)
	}

	l.Set(nil, errors.New("listing /sys/block: permission denied"))
	resp, body := do("GET", "")
	qt.Check(t, resp.StatusCode, qt.Equals, http.StatusOK)
	qt.Check(t, body, qt.Contains, "\nmdraid_scrape_error 1\n")

	sys, dev := fixture.Named(t, "eight-arrays").System(t)
	m, err := md.Open(&md.Config{SysRoot: sys, DevRoot: dev})
	qt.Assert(t, err, qt.IsNil)
	r := discover(t, m)
	l.Set(r, nil)
	want := write(t, fixed{r: r})
	for _, ae := range []string{"", "identity", "gzip;q=0", "gzip;q=0, *", "br", "*;q=0"} {
		resp, body = do("GET", ae)
		qt.Check(t, resp.StatusCode, qt.Equals, http.StatusOK)
		qt.Check(t, resp.Header.Get("Content-Type"), qt.Equals, "text/plain; version=0.0.4; charset=utf-8; escaping=underscores")
		qt.Check(t, resp.Header.Get("Content-Encoding"), qt.Equals, "", qt.Commentf("%q", ae))
		qt.Check(t, body, qt.Equals, want, qt.Commentf("%q", ae))
	}
	for _, ae := range []string{"gzip", "deflate, gzip;q=1.0, *;q=0.5", "x-gzip", "GZIP", "*", "br, *;q=0.1"} {
		resp, body = do("GET", ae)
		qt.Check(t, resp.Header.Get("Content-Encoding"), qt.Equals, "gzip", qt.Commentf("%q", ae))
		qt.Check(t, body, qt.Equals, want, qt.Commentf("%q", ae))
	}
	// The client's own negotiation: Go's transport asks for gzip and
	// unpacks it.
	plain, err := http.Get(srv.URL)
	qt.Assert(t, err, qt.IsNil)
	b, err := io.ReadAll(plain.Body)
	plain.Body.Close()
	qt.Assert(t, err, qt.IsNil)
	qt.Check(t, string(b), qt.Equals, want)

	resp, body = do("HEAD", "")
	qt.Check(t, resp.StatusCode, qt.Equals, http.StatusOK)
	qt.Check(t, body, qt.Equals, "")
	qt.Check(t, resp.ContentLength, qt.Equals, int64(len(want)))

	l.Set(nil, errors.New("boom"))
	_, body = do("GET", "gzip")
	qt.Check(t, body, qt.Contains, "\nmdraid_scrape_error 1\n")
	qt.Check(t, body, qt.Not(qt.Contains), "node_md_state")
}

// TestSlotRecorded: a missing slot that a store has a record of carries
// its recorded port and disk in mdraid_slot_recorded_info, after the
// failed member was removed (raid1-removed-spare: vdc failed and
// removed from slot 2), and the client writes the same.
func TestSlotRecorded(t *testing.T) {
	c := qt.New(t)
	sys, dev := fixture.Named(t, "raid1-removed-spare").System(t)
	m, err := md.Open(&md.Config{SysRoot: sys, DevRoot: dev})
	c.Assert(err, qt.IsNil)
	r, err := m.Discover(context.Background())
	c.Assert(err, qt.IsNil)
	var got bytes.Buffer
	c.Assert(promtext.Write(&got, promtext.Collect(r, nil)), qt.IsNil)
	c.Check(got.String(), qt.Not(qt.Contains), "mdraid_slot_recorded_info")

	a := r.Arrays[0]
	rs := &md.Records{Arrays: []md.Record{{UUID: a.UUID, Metadata: a.Metadata, Level: a.Level, RaidDisks: 3, Slots: []md.SlotRecord{
		{Slot: 0, ByPath: "pci-0000:00:10.0"}, {Slot: 1, ByPath: "pci-0000:00:11.0"}, {Slot: 2, ByPath: "pci-0000:00:12.0", Serial: "mdtest-2"},
	}}}}
	r.AddRecords(rs)
	got.Reset()
	c.Assert(promtext.Write(&got, promtext.Collect(r, nil)), qt.IsNil)
	c.Check(got.String(), qt.Contains, `mdraid_slot_missing{device="md0",slot="2"} 1`+"\n")
	c.Check(got.String(), qt.Contains, `mdraid_slot_recorded_info{by_path="pci-0000:00:12.0",device="md0",serial="mdtest-2",slot="2",wwn=""} 1`+"\n")
	c.Check(strings.Count(got.String(), "mdraid_slot_recorded_info{"), qt.Equals, 1)
	c.Check(got.String(), qt.Equals, viaClient(t, fixed{r: r}))
}

// TestHandlerBeforeTheFirstSnapshot: a scrape that comes before a
// daemon's first snapshot is no scrape error: it waits for the snapshot
// for most of the scrape's timeout and serves it, or answers 503 (not
// ready) with the reason when it does not come in time.
func TestHandlerBeforeTheFirstSnapshot(t *testing.T) {
	c := qt.New(t)
	var l promtext.Latest
	h := promtext.Handler(&l)
	scrape := func(timeout string) *httptest.ResponseRecorder {
		req := httptest.NewRequest("GET", "/metrics", nil)
		req.Header.Set("X-Prometheus-Scrape-Timeout-Seconds", timeout)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		return w
	}
	w := scrape("0.01")
	c.Check(w.Code, qt.Equals, http.StatusServiceUnavailable)
	c.Check(w.Body.String(), qt.Contains, "not ready")
	c.Check(w.Body.String(), qt.Not(qt.Contains), "mdraid_scrape_error")

	got := make(chan *httptest.ResponseRecorder)
	go func() { got <- scrape("60") }()
	l.Set(&md.Report{Arrays: []md.Array{{Device: "md0", Availability: md.Online, Redundancy: md.Full}}}, nil)
	w = <-got
	c.Check(w.Code, qt.Equals, http.StatusOK)
	c.Check(w.Body.String(), qt.Contains, "mdraid_scrape_error 0\n")
	c.Check(w.Body.String(), qt.Contains, `node_md_state{device="md0",state="active"} 1`)
}

// TestValuesFromTheKernel checks the values of the node_md_* series and
// of mdraid_array_availability, for every real capture, against what the
// kernel and mdadm said on that system: mdadm --detail's device counts
// and "Raid Devices", sysfs degraded, /proc/mdstat's size in blocks and
// its read-only marks. TestSameAsClient proves the encoding only: both of
// its sides are built from the same values.
func TestValuesFromTheKernel(t *testing.T) {
	for _, fc := range fixture.All(t) {
		t.Run(filepath.Base(fc.Dir), func(t *testing.T) {
			c := qt.New(t)
			sys, dev := fc.System(t)
			m, err := md.Open(&md.Config{SysRoot: sys, DevRoot: dev})
			c.Assert(err, qt.IsNil)
			got := write(t, fixed{r: discover(t, m)})
			parser := expfmt.NewTextParser(model.UTF8Validation)
			mfs, err := parser.TextToMetricFamilies(strings.NewReader(got))
			c.Assert(err, qt.IsNil)
			value := func(name string, labels ...string) (float64, bool) {
				mf := mfs[name]
				if mf == nil {
					return 0, false
				}
			next:
				for _, mt := range mf.GetMetric() {
					have := map[string]string{}
					for _, l := range mt.GetLabel() {
						have[l.GetName()] = l.GetValue()
					}
					for i := 0; i+1 < len(labels); i += 2 {
						if have[labels[i]] != labels[i+1] {
							continue next
						}
					}
					return mt.GetGauge().GetValue(), true
				}
				return 0, false
			}
			array := fc.Info.Array
			check := func(want float64, name string, labels ...string) {
				t.Helper()
				v, ok := value(name, append([]string{"device", array}, labels...)...)
				if c.Check(ok, qt.IsTrue, qt.Commentf("no %s%q for %s", name, labels, array)) {
					c.Check(v, qt.Equals, want, qt.Commentf("%s%q", name, labels))
				}
			}
			d := mdadmtext.ParseDetail(fc.Texts["detail.txt"])
			mdstat := mdstatLine(fc.Texts["mdstat.txt"], array)
			health := d.Health()
			if health == "online" && (strings.Contains(mdstat, "(read-only)") || strings.Contains(mdstat, "(auto-read-only)")) {
				health = string(md.ReadOnly)
			}
			for _, v := range []md.Availability{md.Online, md.Degraded, md.Failed, md.Inactive, md.ReadOnly} {
				want := 0.0
				if string(v) == health {
					want = 1
				}
				check(want, "mdraid_array_availability", "availability", string(v))
			}
			if health == "inactive" {
				check(1, "node_md_state", "state", "inactive")
				return
			}
			for state, field := range map[string]string{"active": "Active Devices", "failed": "Failed Devices"} {
				check(atof(t, d.Fields[field]), "node_md_disks", "state", state)
			}
			// node_exporter's spares are the members mdstat marks (S);
			// mdadm's "Spare Devices" counts members being rebuilt too.
			check(float64(strings.Count(mdstat, "(S)")), "node_md_disks", "state", "spare")
			check(atof(t, d.Fields["Raid Devices"]), "node_md_disks_required")
			check(atof(t, d.Fields["Raid Devices"]), "node_md_raid_disks")
			// raid0 and linear have no degraded attribute: 0.
			degraded := "0"
			if b, err := os.ReadFile(filepath.Join(sys, "block", array, "md", "degraded")); err == nil {
				degraded = strings.TrimSpace(string(b))
			} else {
				c.Assert(errors.Is(err, fs.ErrNotExist), qt.IsTrue, qt.Commentf("%v", err))
			}
			check(atof(t, degraded), "node_md_degraded")
			// "md0 : active raid1 vdb[1] vda[0]" is followed by
			// "      64512 blocks super 1.2 [2/2] [UU]".
			blocks, _, ok := strings.Cut(strings.TrimSpace(mdstatNext(fc.Texts["mdstat.txt"], array)), " blocks")
			c.Assert(ok, qt.IsTrue, qt.Commentf("mdstat: %s", fc.Texts["mdstat.txt"]))
			check(atof(t, blocks), "node_md_blocks")
		})
	}
}

// mdstatLine is /proc/mdstat's line of array dev, after "dev : ".
func mdstatLine(mdstat, dev string) string {
	for _, line := range strings.Split(mdstat, "\n") {
		if rest, ok := strings.CutPrefix(line, dev+" : "); ok {
			return rest
		}
	}
	return ""
}

// mdstatNext is the line after array dev's line in /proc/mdstat.
func mdstatNext(mdstat, dev string) string {
	lines := strings.Split(mdstat, "\n")
	for i, line := range lines {
		if strings.HasPrefix(line, dev+" : ") && i+1 < len(lines) {
			return lines[i+1]
		}
	}
	return ""
}

func atof(t *testing.T, s string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("not a number: %q", s)
	}
	return v
}

// TestNodeExporterFamilies: every node_md_* family is node_exporter's,
// byte for byte in name, HELP, TYPE and label names (collector/
// mdadm_linux.go, node_exporter 1.9), so that a registry that collects
// both does not refuse one family with two HELP strings.
func TestNodeExporterFamilies(t *testing.T) {
	c := qt.New(t)
	want := map[string]string{
		"node_md_state":          "Indicates the state of md-device.|device,state",
		"node_md_disks":          "Number of active/failed/spare disks of device.|device,state",
		"node_md_disks_required": "Total number of disks of device.|device",
		"node_md_raid_disks":     "Number of raid disks on device.|device",
		"node_md_degraded":       "Number of degraded disks on device.|device",
		"node_md_blocks":         "Total number of blocks on device.|device",
		"node_md_blocks_synced":  "Number of blocks synced on device.|device",
	}
	got := map[string]string{}
	for _, f := range promtext.Families() {
		if strings.HasPrefix(f.Name, "node_md_") {
			c.Check(f.Type, qt.Equals, promtext.Gauge, qt.Commentf(f.Name))
			got[f.Name] = f.Help + "|" + strings.Join(f.Labels, ",")
		}
	}
	c.Check(got, qt.DeepEquals, want)
}
