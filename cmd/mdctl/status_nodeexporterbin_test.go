package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	qt "github.com/frankban/quicktest"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/go-mdraid/mdraid/internal/fixture"
)

// nodeExporterBinary is Debian's prometheus-node-exporter, which
// scripts/ci-deps installs; "" when the host lacks it.
func nodeExporterBinary() string {
	for _, name := range []string{"prometheus-node-exporter", "node_exporter"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// mdFamilies is the node_md_* families of a scrape, for one device: name -> HELP and
// TYPE, and each series (its labels other than device) -> value.
type mdFamily struct {
	help, typ string
	series    map[string]float64
}

func mdFamilies(t *testing.T, text, device string) map[string]mdFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
	out := map[string]mdFamily{}
	for name, mf := range mfs {
		if !strings.HasPrefix(name, "node_md_") {
			continue
		}
		f := mdFamily{help: mf.GetHelp(), typ: mf.GetType().String(), series: map[string]float64{}}
	metrics:
		for _, m := range mf.GetMetric() {
			var ls []string
			for _, l := range m.GetLabel() {
				if l.GetName() == "device" && l.GetValue() != device {
					continue metrics
				}
				ls = append(ls, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			sort.Strings(ls)
			f.series["{"+strings.Join(ls, ",")+"}"] = value(m)
		}
		if len(f.series) > 0 {
			out[name] = f
		}
	}
	return out
}

func value(m *dto.Metric) float64 {
	if g := m.GetGauge(); g != nil {
		return g.GetValue()
	}
	return m.GetCounter().GetValue()
}

// scrapeNodeExporter runs node_exporter with only its md collector on the
// given procfs and sysfs roots and returns one scrape of /metrics.
func scrapeNodeExporter(t *testing.T, bin, proc, sys string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "--collector.disable-defaults", "--collector.mdadm",
		"--path.procfs="+proc, "--path.sysfs="+sys, "--web.listen-address="+addr)
	var logs strings.Builder
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); cmd.Wait() }()
	// The server answers once it listens: ask until it does.
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get("http://" + addr + "/metrics")
		if err == nil {
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			return string(b)
		}
		if time.Now().After(deadline) {
			t.Fatalf("node_exporter did not answer on %s: %v\n%s", addr, err, logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// nodeExporterVersionDifferences are the differences that come from the
// version of Debian's node_exporter (1.5.0 in bookworm), not from a
// kernel state: it predates node_md_raid_disks and node_md_degraded
// (read from sysfs since 1.8), which mdctl prints.
var nodeExporterVersionDifferences = map[string]bool{"node_md_raid_disks": true, "node_md_degraded": true}

// TestNodeExporterBinaryOnCaptures: Debian's prometheus-node-exporter,
// run with its md collector on each real capture's /proc/mdstat and
// sysfs tree, and mdctl status --format=prometheus on the same capture
// print node_md_* families identical in name, HELP, TYPE, labels and
// value, apart from the listed differences (nodeExporterDifferences,
// documented in package md/metrics, and the families its version lacks).
func TestNodeExporterBinaryOnCaptures(t *testing.T) {
	bin := nodeExporterBinary()
	if bin == "" {
		t.Skip("prometheus-node-exporter is not installed (scripts/ci-deps installs it)")
	}
	for _, fc := range fixture.All(t) {
		if filepath.Base(filepath.Dir(fc.Dir)) == "bench" {
			continue
		}
		t.Run(filepath.Base(fc.Dir), func(t *testing.T) {
			c := qt.New(t)
			sys, dev := fc.System(t)
			proc := t.TempDir()
			c.Assert(os.WriteFile(filepath.Join(proc, "mdstat"), []byte(fc.Texts["mdstat.txt"]), 0o644), qt.IsNil)
			theirs := mdFamilies(t, scrapeNodeExporter(t, bin, proc, sys), fc.Info.Array)
			_, out, _ := runCLI(t, "status", "--format=prometheus", "--sysfs", sys, "--dev", dev)
			ours := mdFamilies(t, out, fc.Info.Array)
			differs := nodeExporterDifferences[filepath.Base(fc.Dir)]
			for name, of := range ours {
				tf, ok := theirs[name]
				if !ok {
					c.Check(nodeExporterVersionDifferences[name], qt.IsTrue, qt.Commentf("%s: node_exporter has no such family", name))
					continue
				}
				c.Check(of.help, qt.Equals, tf.help, qt.Commentf("HELP of %s", name))
				c.Check(of.typ, qt.Equals, tf.typ, qt.Commentf("TYPE of %s", name))
				c.Check(len(of.series), qt.Equals, len(tf.series), qt.Commentf("series of %s: mdctl %v, node_exporter %v", name, of.series, tf.series))
				for k, v := range tf.series {
					key := name
					if s := strings.TrimPrefix(strings.TrimSuffix(k, "}"), "{"); strings.Contains(s, "state=") {
						key += "{" + s[strings.Index(s, "state="):] + "}"
					}
					if differs[key] {
						continue
					}
					g, ok := of.series[k]
					c.Check(ok, qt.IsTrue, qt.Commentf("%s%s: mdctl lacks it", name, k))
					c.Check(g, qt.Equals, v, qt.Commentf("%s%s: mdctl %v, node_exporter %v", name, k, g, v))
				}
			}
			for name := range theirs {
				_, ok := ours[name]
				c.Check(ok, qt.IsTrue, qt.Commentf("%s: mdctl lacks the family", name))
			}
		})
	}
}
