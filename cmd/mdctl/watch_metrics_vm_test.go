//go:build vmtest

package main

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	qt "github.com/frankban/quicktest"

	"github.com/go-mdraid/mdraid/internal/fixture"
	"github.com/go-mdraid/mdraid/internal/vmtest/guest"
)

// TestVMWatchMetricsEndpoint: `mdctl watch --metrics-listen` on the real
// kernel serves /metrics from the watcher's own snapshots: the series of
// a healthy mirror, then, after a member is failed, the failed count,
// without a restart; the port closes when the watch ends.
func TestVMWatchMetricsEndpoint(t *testing.T) {
	c := qt.New(t)
	guest.Run(t, "ip", "link", "set", "lo", "up") // the guest's init leaves it down
	disks := guest.ScratchDisks(t, 2)
	md := vmCreate(c, "/dev/md/metrics", disks, "--level=1", "--metadata=1.2", "--name=metrics", "--raid-devices=2")
	defer guest.Mdadm(c, "--stop", "/dev/md/metrics")

	var out, errOut syncBuffer
	done := make(chan int)
	go func() {
		done <- run([]string{"watch", "--json", "--metrics-listen", "127.0.0.1:0"}, &out, &errOut, func(int) {})
	}()
	logged := regexp.MustCompile(`"msg":"serving metrics","addr":"(http://(127\.0\.0\.1:[0-9]+)/metrics)"`)
	deadline := time.Now().Add(30 * time.Second)
	var url, addr string
	for url == "" {
		if m := logged.FindStringSubmatch(errOut.String()); m != nil {
			url, addr = m[1], m[2]
		} else if time.Now().After(deadline) {
			t.Fatalf("no \"serving metrics\" line; stderr %q", errOut.String())
		} else {
			time.Sleep(20 * time.Millisecond)
		}
	}
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	// scrapeUntil polls /metrics (the watcher serves its latest
	// snapshot) until it holds want.
	scrapeUntil := func(want string) string {
		var body string
		for {
			if resp, err := client.Get(url); err == nil {
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if body = string(b); strings.Contains(body, want) {
					return body
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("no %q in the metrics; last %q; stderr %q", want, body, errOut.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	body := scrapeUntil(`node_md_disks{device="` + md + `",state="active"} 2`)
	c.Check(parseMetrics(body), qt.IsNil)
	c.Check(body, qt.Contains, "mdraid_scrape_error 0\n")
	c.Check(body, qt.Contains, `node_md_disks{device="`+md+`",state="failed"} 0`)

	guest.Mdadm(c, "/dev/md/metrics", "--fail", disks[1].Path)
	deadline = time.Now().Add(30 * time.Second)
	body = scrapeUntil(`node_md_disks{device="` + md + `",state="failed"} 1`)
	c.Check(parseMetrics(body), qt.IsNil)
	c.Check(body, qt.Contains, `node_md_disks{device="`+md+`",state="active"} 1`)

	client.CloseIdleConnections()
	c.Assert(syscall.Kill(os.Getpid(), syscall.SIGINT), qt.IsNil)
	select {
	case code := <-done:
		c.Assert(code, qt.Equals, 0, qt.Commentf("stderr %q", errOut.String()))
	case <-time.After(30 * time.Second):
		t.Fatal("watch did not stop on SIGINT")
	}
	if conn, err := net.Dial("tcp", addr); err == nil {
		conn.Close()
		c.Fatal("the metrics port is still open after the watch ended")
	}
}

// TestVMWatchMetricsAlerts: the alerting rules of contrib/prometheus on a
// real scrape. mdctl watch --store --metrics-listen watches a healthy
// mirror (and records its slots), a member is failed and removed, and
// the scrape that shows it, held for 30 minutes, is evaluated by promtool
// test rules (the host's promtool, shared into the guest): the degraded
// and missing-slot alerts fire with the array's kernel name, name and
// UUID (as mdadm --detail gives it), slot 1 and the port of the removed
// disk, and every other alert is silent.
func TestVMWatchMetricsAlerts(t *testing.T) {
	c := qt.New(t)
	promtool := os.Getenv("MDRAID_VM_PROMTOOL")
	if promtool == "" {
		t.Skip("no promtool on the host (scripts/ci-deps installs Debian's prometheus): the rules are not evaluated")
	}
	guest.Run(t, "ip", "link", "set", "lo", "up")
	disks := guest.ScratchDisks(t, 2)
	md := vmCreate(c, "/dev/md/alerts", disks, "--level=1", "--metadata=1.2", "--name=alerts", "--raid-devices=2")
	defer guest.Mdadm(c, "--stop", "/dev/md/alerts")
	store := filepath.Join(t.TempDir(), "slots.json")

	var out, errOut syncBuffer
	done := make(chan int)
	go func() {
		done <- run([]string{"watch", "--json", "--store", store, "--metrics-listen", "127.0.0.1:0"}, &out, &errOut, func(int) {})
	}()
	logged := regexp.MustCompile(`"msg":"serving metrics","addr":"(http://127\.0\.0\.1:[0-9]+/metrics)"`)
	deadline := time.Now().Add(30 * time.Second)
	var url string
	for url == "" || !strings.Contains(out.String(), `"event":"SlotRecorded"`) {
		if m := logged.FindStringSubmatch(errOut.String()); m != nil {
			url = m[1]
		}
		if time.Now().After(deadline) {
			t.Fatalf("no metrics address or SlotRecorded; stdout %q stderr %q", out.String(), errOut.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()

	guest.Mdadm(c, "/dev/md/alerts", "--fail", disks[1].Path, "--remove", disks[1].Path)
	missing := `mdraid_slot_missing{device="` + md + `",slot="1"} 1`
	var body string
	for deadline = time.Now().Add(30 * time.Second); !strings.Contains(body, missing) || strings.Contains(body, `member="`+disks[1].Name+`"`); {
		if time.Now().After(deadline) {
			t.Fatalf("no %q without %s in the metrics; last %q; stderr %q", missing, disks[1].Name, body, errOut.String())
		}
		time.Sleep(20 * time.Millisecond)
		if resp, err := client.Get(url); err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			body = string(b)
		}
	}
	c.Assert(parseMetrics(body), qt.IsNil)
	client.CloseIdleConnections()
	c.Assert(syscall.Kill(os.Getpid(), syscall.SIGINT), qt.IsNil)
	select {
	case code := <-done:
		c.Assert(code, qt.Equals, 0, qt.Commentf("stderr %q", errOut.String()))
	case <-time.After(30 * time.Second):
		t.Fatal("watch did not stop on SIGINT")
	}

	series, id := parseScrape(t, body)
	// The array as mdadm names it, not as mdctl does.
	var mdUUID string
	for _, l := range strings.Split(guest.Mdadm(c, "--detail", "--export", "/dev/md/alerts"), "\n") {
		if v, ok := strings.CutPrefix(l, "MD_UUID="); ok {
			h := strings.ReplaceAll(v, ":", "")
			mdUUID = h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
		}
	}
	c.Assert(id["uuid"], qt.Equals, mdUUID)
	c.Assert(id["device"], qt.Equals, md)
	c.Assert(id["name"], qt.Equals, "alerts")
	sc := ruleScenario{name: "a real scrape: " + md + " with slot 1 failed and removed", interval: time.Minute,
		steps: []ruleStep{{samples: 30}},
		evals: []ruleEval{{at: 10 * time.Minute, alerts: []ruleAlert{
			{name: "MdraidArrayDegraded", labels: map[string]string{}},
			{name: "MdraidSlotMissing", labels: map[string]string{"slot": "1", "by_path": disks[1].ByPath, "serial": disks[1].Serial}},
		}}}}
	var tests bytes.Buffer
	fmt.Fprintf(&tests, "rule_files:\n  - %s\nevaluation_interval: 1m\ntests:\n", filepath.Join(fixture.Root(t), "contrib", "prometheus", "mdraid-rules.yml"))
	writeRuleGroup(t, &tests, sc, []map[string]string{series}, []map[string]string{id})
	p := filepath.Join(t.TempDir(), "scrape.test.yml")
	c.Assert(os.WriteFile(p, tests.Bytes(), 0o644), qt.IsNil)
	res, err := exec.Command(promtool, "test", "rules", p).CombinedOutput()
	c.Assert(err, qt.IsNil, qt.Commentf("promtool test rules:\n%s\ntest file:\n%s", res, tests.String()))
	t.Logf("promtool test rules on the scrape:\n%s", res)
}

// TestVMStatusFailedAlert: a raid5 that lost two of its three members,
// as mdctl status --format=prometheus prints it on the real kernel,
// evaluated by promtool test rules: MdraidArrayFailed fires for it (no
// capture in testdata holds a failed array), and neither the degraded nor
// the inactive alert does.
func TestVMStatusFailedAlert(t *testing.T) {
	c := qt.New(t)
	promtool := os.Getenv("MDRAID_VM_PROMTOOL")
	if promtool == "" {
		t.Skip("no promtool on the host (scripts/ci-deps installs Debian's prometheus): the rules are not evaluated")
	}
	guest.RequireLevel(t, "--level=5")
	disks := guest.ScratchDisks(t, 3)
	md := vmCreate(c, "/dev/md/lost", disks, "--level=5", "--metadata=1.2", "--name=lost", "--raid-devices=3")
	defer guest.Mdadm(c, "--stop", "/dev/md/lost")
	guest.Mdadm(c, "/dev/md/lost", "--fail", disks[1].Path)
	// The second failure breaks the array: newer kernels mark it broken
	// and answer EBUSY (md: "Cannot continue operation (2/3 failed)").
	if out, err := guest.RunMdadm("/dev/md/lost", "--fail", disks[2].Path); err != nil {
		t.Logf("mdadm --fail %s: %v\n%s", disks[2].Path, err, out)
	}

	out, errOut, code := mdctl(t, "status", "--format=prometheus", md)
	c.Assert(code, qt.Equals, 0, qt.Commentf("stderr %q", errOut))
	c.Assert(parseMetrics(out), qt.IsNil)
	c.Assert(out, qt.Contains, `mdraid_array_availability{availability="failed",device="`+md+`"} 1`)
	series, id := parseScrape(t, out)
	c.Assert(id["device"], qt.Equals, md)
	c.Assert(id["level"], qt.Equals, "raid5")
	sc := ruleScenario{name: "a real scrape: raid5 " + md + " with two of three members failed", interval: time.Minute,
		steps: []ruleStep{{samples: 10}},
		evals: []ruleEval{{at: 5 * time.Minute, names: []string{"MdraidArrayFailed", "MdraidArrayDegraded", "MdraidArrayInactive"},
			alerts: []ruleAlert{{name: "MdraidArrayFailed", labels: map[string]string{}}}}}}
	var tests bytes.Buffer
	fmt.Fprintf(&tests, "rule_files:\n  - %s\nevaluation_interval: 1m\ntests:\n", filepath.Join(fixture.Root(t), "contrib", "prometheus", "mdraid-rules.yml"))
	writeRuleGroup(t, &tests, sc, []map[string]string{series}, []map[string]string{id})
	p := filepath.Join(t.TempDir(), "failed.test.yml")
	c.Assert(os.WriteFile(p, tests.Bytes(), 0o644), qt.IsNil)
	res, err := exec.Command(promtool, "test", "rules", p).CombinedOutput()
	c.Assert(err, qt.IsNil, qt.Commentf("promtool test rules:\n%s\ntest file:\n%s", res, tests.String()))
}
