package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	qt "github.com/frankban/quicktest"

	"github.com/go-mdraid/mdraid/internal/fixture"
)

// gPanel is what the test reads of a Grafana panel.
type gPanel struct {
	Type    string   `json:"type"`
	Title   string   `json:"title"`
	Repeat  string   `json:"repeat"`
	Panels  []gPanel `json:"panels"`
	Targets []struct {
		Expr         string `json:"expr"`
		LegendFormat string `json:"legendFormat"`
	} `json:"targets"`
}

type gDashboard struct {
	Panels     []gPanel `json:"panels"`
	Templating struct {
		List []struct {
			Name       string `json:"name"`
			Type       string `json:"type"`
			Definition string `json:"definition"`
		} `json:"list"`
	} `json:"templating"`
}

// printedSeries returns the families mdctl status --format=prometheus
// prints over every capture (and one with a store, for the families that
// need one), each with its label names and the labels a scrape adds.
func printedSeries(t *testing.T) map[string][]string {
	fams := map[string][]string{}
	steps := []ruleStep{{capture: "raid1-removed-spare", records: true, checkAt: 1}}
	for _, fc := range fixture.All(t) {
		steps = append(steps, ruleStep{capture: fc.Info.Name})
	}
	for _, st := range steps {
		series, _ := statusSeries(t, st)
		for k := range series {
			name, labels, _ := strings.Cut(k, "{")
			for _, m := range regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)="`).FindAllStringSubmatch(labels, -1) {
				if !slices.Contains(fams[name], m[1]) {
					fams[name] = append(fams[name], m[1])
				}
			}
		}
	}
	return fams
}

// promqlWords are the PromQL functions, keywords and aggregation words
// the dashboard may use; any other word that is not a metric of mdctl's,
// a label, a number or a duration fails the test.
var promqlWords = []string{"max", "min", "count", "sum", "time", "increase", "rate", "by", "on", "group_left", "and", "or", "unless", "label_values"}

var (
	reWord     = regexp.MustCompile(`[a-zA-Z_][a-zA-Z0-9_:]*`)
	reSelector = regexp.MustCompile(`([a-zA-Z_:][a-zA-Z0-9_:]*)\s*\{([^}]*)\}`)
	reMatcher  = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)\s*"(?:[^"\\]|\\.)*"`)
	reGrouping = regexp.MustCompile(`\b(?:by|on|group_left|without|ignoring)\s*\(([^)]*)\)`)
	reLegend   = regexp.MustCompile(`\{\{\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\}\}`)
	reStrings  = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|\[[0-9]+[smhdwy]\]|\b[0-9.e+]+\b`)
)

// checkQuery checks that every metric expr names is one mdctl prints
// (and the metrics doc lists), every label it matches, groups by or
// shows in legend is one of those metrics', and no other word is there.
func checkQuery(c *qt.C, where, expr, legend string, fams map[string][]string, doc string) {
	c.Helper()
	var used []string
	labels := []string{"instance", "job"}
	rest := reStrings.ReplaceAllString(reSelector.ReplaceAllStringFunc(expr, func(s string) string {
		return s[:strings.IndexByte(s, '{')]
	}), " ")
	for _, w := range reWord.FindAllString(rest, -1) {
		if (strings.HasPrefix(w, "mdraid_") || strings.HasPrefix(w, "node_md_")) && !slices.Contains(used, w) {
			used = append(used, w)
		}
	}
	c.Check(used, qt.Not(qt.HasLen), 0, qt.Commentf("%s: %q uses no md metric", where, expr))
	for _, name := range used {
		got, ok := fams[name]
		if !ok {
			c.Errorf("%s: %q uses %s, which mdctl status --format=prometheus does not print", where, expr, name)
			continue
		}
		if !strings.Contains(doc, "//\t"+name) {
			c.Errorf("%s: %s is not in the metrics doc (md/metrics)", where, name)
		}
		labels = append(labels, got...)
	}
	for _, m := range reSelector.FindAllStringSubmatch(expr, -1) {
		for _, mm := range reMatcher.FindAllStringSubmatch(m[2], -1) {
			if !slices.Contains(append([]string{"instance", "job"}, fams[m[1]]...), mm[1]) {
				c.Errorf("%s: %q matches label %s, which %s does not have", where, expr, mm[1], m[1])
			}
		}
	}
	var grouped []string
	for _, m := range reGrouping.FindAllStringSubmatch(expr, -1) {
		for _, l := range strings.Split(m[1], ",") {
			grouped = append(grouped, strings.TrimSpace(l))
		}
	}
	for _, m := range reLegend.FindAllStringSubmatch(legend, -1) {
		grouped = append(grouped, m[1])
	}
	for _, l := range grouped {
		if l != "" && !slices.Contains(labels, l) {
			c.Errorf("%s: %q (legend %q) uses label %s, which none of %v has", where, expr, legend, l, used)
		}
	}
	for _, w := range reWord.FindAllString(reGrouping.ReplaceAllString(rest, " "), -1) {
		if !slices.Contains(promqlWords, w) && !slices.Contains(used, w) && !strings.HasPrefix(w, "$") {
			c.Errorf("%s: %q: unknown word %q", where, expr, w)
		}
	}
}

// TestGrafanaDashboard parses contrib/grafana/mdraid-dashboard.json and
// checks every query in it, and in its variables, against the series
// mdctl prints for the real captures and the metrics doc; it has a row
// repeated per array, and, with promtool, every query parses.
func TestGrafanaDashboard(t *testing.T) {
	c := qt.New(t)
	root := fixture.Root(t)
	b, err := os.ReadFile(filepath.Join(root, "contrib", "grafana", "mdraid-dashboard.json"))
	c.Assert(err, qt.IsNil)
	var d gDashboard
	c.Assert(json.Unmarshal(b, &d), qt.IsNil)
	docb, err := os.ReadFile(filepath.Join(root, "md", "metrics", "metrics.go"))
	c.Assert(err, qt.IsNil)
	doc := string(docb)
	fams := printedSeries(t)

	var exprs []string
	var walk func(ps []gPanel)
	repeated := false
	walk = func(ps []gPanel) {
		for _, p := range ps {
			if p.Type == "row" && p.Repeat == "device" {
				repeated = true
			}
			for i, tg := range p.Targets {
				checkQuery(c, fmt.Sprintf("panel %q target %d", p.Title, i), tg.Expr, tg.LegendFormat, fams, doc)
				exprs = append(exprs, tg.Expr)
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	c.Check(repeated, qt.IsTrue, qt.Commentf("no row repeated by the device variable"))
	c.Check(len(exprs) >= 10, qt.IsTrue, qt.Commentf("%d queries", len(exprs)))
	vars := map[string]bool{}
	for _, v := range d.Templating.List {
		vars[v.Name] = true
		if v.Type != "query" {
			continue
		}
		m := regexp.MustCompile(`^label_values\((.*), *([a-z_]+)\)$`).FindStringSubmatch(v.Definition)
		c.Assert(m, qt.Not(qt.IsNil), qt.Commentf("variable %s: %q", v.Name, v.Definition))
		checkQuery(c, "variable "+v.Name, m[1], "{{"+m[2]+"}}", fams, doc)
	}
	c.Check(vars, qt.DeepEquals, map[string]bool{"datasource": true, "instance": true, "device": true})

	promtool, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("promtool not found (CI=true): scripts/ci-deps installs Debian's prometheus package")
		}
		t.Skip("promtool not found: the queries' syntax is not checked (scripts/ci-deps installs it)")
	}
	// Every query as a recording rule: promtool check rules parses it.
	var rules strings.Builder
	rules.WriteString("groups:\n  - name: dashboard\n    rules:\n")
	r := strings.NewReplacer("$instance", ".*", "$device", "md0")
	for i, e := range exprs {
		fmt.Fprintf(&rules, "      - record: dashboard:query_%d\n        expr: %s\n", i, yq(r.Replace(e)))
	}
	p := filepath.Join(t.TempDir(), "dashboard-rules.yml")
	c.Assert(os.WriteFile(p, []byte(rules.String()), 0o644), qt.IsNil)
	out, err := exec.Command(promtool, "check", "rules", p).CombinedOutput()
	c.Assert(err, qt.IsNil, qt.Commentf("%s", out))
}
