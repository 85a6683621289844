package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	qt "github.com/frankban/quicktest"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/go-mdraid/mdraid/md"
	"github.com/go-mdraid/mdraid/md/metrics/promtext"
	"github.com/go-mdraid/mdraid/md/store"
)

// TestListenMetrics: a bare :PORT listens on loopback only, on both
// families where the host has them, with one port; a host given is used
// as given; an ADDR without a port is refused.
func TestListenMetrics(t *testing.T) {
	c := qt.New(t)
	ls, err := listenMetrics(":0")
	c.Assert(err, qt.IsNil)
	c.Assert(len(ls) >= 1 && len(ls) <= 2, qt.IsTrue, qt.Commentf("%d listeners", len(ls)))
	port := ls[0].Addr().(*net.TCPAddr).Port
	c.Check(ls[0].Addr().(*net.TCPAddr).IP.Equal(net.IPv4(127, 0, 0, 1)), qt.IsTrue, qt.Commentf("%s", ls[0].Addr()))
	if len(ls) == 2 {
		c.Check(ls[1].Addr().(*net.TCPAddr).IP.Equal(net.IPv6loopback), qt.IsTrue, qt.Commentf("%s", ls[1].Addr()))
		c.Check(ls[1].Addr().(*net.TCPAddr).Port, qt.Equals, port)
	}
	// The port is taken now: a second listen on it fails and leaves
	// nothing open.
	_, err = listenMetrics(fmt.Sprintf(":%d", port))
	c.Check(err, qt.ErrorIs, syscall.EADDRINUSE)
	for _, l := range ls {
		c.Check(l.Close(), qt.IsNil)
	}

	ls, err = listenMetrics("127.0.0.1:0")
	c.Assert(err, qt.IsNil)
	c.Assert(ls, qt.HasLen, 1)
	c.Check(ls[0].Addr().(*net.TCPAddr).IP.Equal(net.IPv4(127, 0, 0, 1)), qt.IsTrue)
	ls[0].Close()

	for _, bad := range []string{"9110", "", "127.0.0.1", "127.0.0.1:", ":"} {
		_, err := listenMetrics(bad)
		c.Check(err, qt.ErrorMatches, `--metrics-listen ".*": want HOST:PORT, or :PORT for loopback only \(127.0.0.1 and ::1\)`, qt.Commentf("%q", bad))
	}
}

// discard is a logger for tests.
var discard = slog.New(slog.DiscardHandler)

// startMetrics serves the metrics of l on a loopback port until the test
// ends and returns the URL of /metrics.
func startMetrics(t *testing.T, l *promtext.Latest) (url string, stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	h := metricsHandler(l)
	ls, err := listenMetrics("127.0.0.1:0")
	qt.Assert(t, err, qt.IsNil)
	done := serveMetrics(ctx, ls, h, discard, func(err error) { t.Errorf("serve: %v", err) })
	stop = func() { cancel(); <-done }
	t.Cleanup(stop)
	return "http://" + ls[0].Addr().String() + "/metrics", stop
}

// fixtureReport discovers the named real capture.
func fixtureReport(t *testing.T, name string) *md.Report {
	t.Helper()
	flags, dev := materialize(t, name)
	m, err := md.Open(&md.Config{SysRoot: flags[1], DevRoot: dev})
	qt.Assert(t, err, qt.IsNil)
	r, err := m.Discover(context.Background())
	qt.Assert(t, err, qt.IsNil)
	return r
}

func get(t *testing.T, client *http.Client, method, url string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	qt.Assert(t, err, qt.IsNil)
	resp, err := client.Do(req)
	qt.Assert(t, err, qt.IsNil)
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	qt.Assert(t, err, qt.IsNil)
	return resp, string(b)
}

// parseMetrics parses a scrape with the official parser.
func parseMetrics(body string) error {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	_, err := parser.TextToMetricFamilies(strings.NewReader(body))
	return err
}

// TestMetricsServer: /metrics serves what status --format=prometheus
// prints for the same snapshot, byte for byte; 503 (not ready) before
// the first snapshot, a scrape error after a failed one; GET and HEAD only; 404 for
// every other path.
func TestMetricsServer(t *testing.T) {
	c := qt.New(t)
	var l promtext.Latest
	url, _ := startMetrics(t, &l)
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()

	// Before the first snapshot: not ready, and no scrape error.
	req, err := http.NewRequest("GET", url, nil)
	c.Assert(err, qt.IsNil)
	req.Header.Set("X-Prometheus-Scrape-Timeout-Seconds", "0.01")
	resp, err := client.Do(req)
	c.Assert(err, qt.IsNil)
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	c.Assert(err, qt.IsNil)
	c.Check(resp.StatusCode, qt.Equals, http.StatusServiceUnavailable)
	c.Check(string(b), qt.Contains, "not ready")
	c.Check(string(b), qt.Not(qt.Contains), "mdraid_scrape_error")
	var body string

	r := fixtureReport(t, "eight-arrays")
	l.Set(r, nil)
	var want bytes.Buffer
	c.Assert(renderPrometheus(&want, r), qt.IsNil)
	resp, body = get(t, client, "GET", url)
	c.Assert(resp.StatusCode, qt.Equals, http.StatusOK)
	c.Check(resp.Header.Get("Content-Type"), qt.Contains, "text/plain")
	c.Check(parseMetrics(body), qt.IsNil)
	c.Check(body, qt.Equals, want.String())
	c.Check(body, qt.Contains, "\nmdraid_scrape_error 0\n")

	l.Set(nil, errors.New("reading /sys/block: permission denied"))
	_, body = get(t, client, "GET", url)
	c.Check(body, qt.Contains, "\nmdraid_scrape_error 1\n")
	c.Check(body, qt.Not(qt.Contains), "node_md_state")

	resp, body = get(t, client, "HEAD", url)
	c.Check(resp.StatusCode, qt.Equals, http.StatusOK)
	c.Check(body, qt.Equals, "")
	for _, m := range []string{"POST", "PUT", "DELETE", "OPTIONS"} {
		resp, _ = get(t, client, m, url)
		c.Check(resp.StatusCode, qt.Equals, http.StatusMethodNotAllowed, qt.Commentf("%s", m))
		c.Check(resp.Header.Get("Allow"), qt.Equals, "GET, HEAD", qt.Commentf("%s", m))
	}
	base := strings.TrimSuffix(url, "/metrics")
	for _, p := range []string{"/", "/metrics/", "/metricsx", "/debug/pprof/", "/favicon.ico"} {
		resp, _ = get(t, client, "GET", base+p)
		c.Check(resp.StatusCode, qt.Equals, http.StatusNotFound, qt.Commentf("%s", p))
	}
}

// TestMetricsConcurrentScrapes: many scrapes at once, while the watcher
// hands over new snapshots and failures, each get a whole, parseable
// answer (run with -race).
func TestMetricsConcurrentScrapes(t *testing.T) {
	c := qt.New(t)
	var l promtext.Latest
	r := fixtureReport(t, "eight-arrays")
	l.Set(r, nil)
	url, _ := startMetrics(t, &l)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	defer client.CloseIdleConnections()

	stop := make(chan struct{})
	var setter sync.WaitGroup
	setter.Go(func() {
		boom := errors.New("boom")
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if i%5 == 4 {
				l.Set(nil, boom)
			} else {
				l.Set(r, nil)
			}
		}
	})
	var wg sync.WaitGroup
	errs := make(chan error, 64*5)
	for range 64 {
		wg.Go(func() {
			for range 5 {
				resp, err := client.Get(url)
				if err != nil {
					errs <- err
					return
				}
				b, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				switch {
				case err != nil:
					errs <- err
				case resp.StatusCode != http.StatusOK:
					errs <- fmt.Errorf("status %d", resp.StatusCode)
				case parseMetrics(string(b)) != nil:
					errs <- parseMetrics(string(b))
				case !strings.Contains(string(b), "mdraid_scrape_error 0\n") && !strings.Contains(string(b), "mdraid_scrape_error 1\n"):
					errs <- fmt.Errorf("no mdraid_scrape_error in %q", b)
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	setter.Wait()
	close(errs)
	for err := range errs {
		c.Error(err)
	}
}

// TestMetricsServerNoLeak: once ctx is done, the server shuts down, its
// port is closed, and every goroutine it started (listeners, an idle
// keep-alive connection, a client stuck in its request header) is gone.
func TestMetricsServerNoLeak(t *testing.T) {
	c := qt.New(t)
	before := runtime.NumGoroutine()
	var l promtext.Latest
	l.Set(fixtureReport(t, "boot-mirror"), nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h := metricsHandler(&l)
	ls, err := listenMetrics(":0")
	c.Assert(err, qt.IsNil)
	done := serveMetrics(ctx, ls, h, discard, func(err error) { t.Errorf("serve: %v", err) })

	client := &http.Client{Transport: &http.Transport{}}
	for _, ln := range ls {
		resp, body := get(t, client, "GET", "http://"+ln.Addr().String()+"/metrics")
		c.Assert(resp.StatusCode, qt.Equals, http.StatusOK)
		c.Assert(body, qt.Contains, `node_md_state{device="md127"`)
	}
	// A client that sent half a request header and waits.
	slow, err := net.Dial("tcp", ls[0].Addr().String())
	c.Assert(err, qt.IsNil)
	defer slow.Close()
	_, err = slow.Write([]byte("GET /metrics HTTP/1.1\r\nHost: x\r\n"))
	c.Assert(err, qt.IsNil)

	cancel()
	select {
	case <-done:
	case <-time.After(metricsShutdownTimeout + metricsReadHeaderTimeout + 5*time.Second):
		c.Fatal("the metrics server did not shut down")
	}
	for _, ln := range ls {
		conn, err := net.Dial("tcp", ln.Addr().String())
		if err == nil {
			conn.Close()
			c.Errorf("%s still accepts connections", ln.Addr())
		}
	}
	// The server closed the slow client's connection.
	c.Assert(slow.SetReadDeadline(time.Now().Add(5*time.Second)), qt.IsNil)
	_, err = io.Copy(io.Discard, slow)
	c.Check(err, qt.IsNil) // EOF, not a timeout
	slow.Close()
	client.CloseIdleConnections()
	waitGoroutines(t, before)
}

// waitGoroutines waits until no more than n goroutines run, and fails
// with their stacks if that does not happen within 10s. Goroutines end
// asynchronously (a connection's goroutine returns after its close), so
// the count is polled, not compared once.
func waitGoroutines(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > n {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			buf = buf[:runtime.Stack(buf, true)]
			t.Fatalf("%d goroutines, want at most %d:\n%s", runtime.NumGoroutine(), n, buf)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestWatchCLIMetrics runs mdctl watch --metrics-listen on a captured
// system: the scrape shows its array from the watcher's snapshot; SIGINT
// ends the watch and closes the port.
func TestWatchCLIMetrics(t *testing.T) {
	c := qt.New(t)
	flags, _ := materialize(t, "boot-mirror")
	var out, errOut syncBuffer
	done := make(chan int)
	go func() {
		// Port 0: the kernel picks a free one, and the log line names it.
		done <- run(append(flags, "watch", "--json", "--rescan", "50ms", "--metrics-listen", "127.0.0.1:0"), &out, &errOut, func(int) {})
	}()
	logged := regexp.MustCompile(`"msg":"serving metrics","addr":"(http://(127\.0\.0\.1:[0-9]+)/metrics)"`)
	deadline := time.Now().Add(10 * time.Second)
	var url, addr string
	for {
		if m := logged.FindStringSubmatch(errOut.String()); m != nil {
			url, addr = m[1], m[2]
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no \"serving metrics\" line; stderr %q", errOut.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	var body string
	for {
		if resp, err := client.Get(url); err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if body = string(b); strings.Contains(body, "mdraid_scrape_error 0\n") {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no metrics; last %q; stderr %q", body, errOut.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	c.Check(parseMetrics(body), qt.IsNil)
	c.Check(body, qt.Contains, `mdraid_array_info{device="md127"`)
	client.CloseIdleConnections()
	c.Assert(syscall.Kill(os.Getpid(), syscall.SIGINT), qt.IsNil)
	select {
	case code := <-done:
		c.Assert(code, qt.Equals, 0, qt.Commentf("stderr %q", errOut.String()))
	case <-time.After(10 * time.Second):
		t.Fatal("watch did not stop on SIGINT")
	}
	if conn, err := net.Dial("tcp", addr); err == nil {
		conn.Close()
		c.Fatal("the metrics port is still open after the watch ended")
	}
}

// TestWatchCLIMetricsBadAddr: an ADDR that cannot be used fails at once,
// before any event.
func TestWatchCLIMetricsBadAddr(t *testing.T) {
	flags, _ := materialize(t, "boot-mirror")
	for _, addr := range []string{"9110", "192.0.2.1:0"} {
		code, out, errOut := runCLI(t, append(flags, "watch", "--metrics-listen", addr)...)
		qt.Check(t, code, qt.Equals, exitFailure, qt.Commentf("%s", addr))
		qt.Check(t, out, qt.Equals, "", qt.Commentf("%s", addr))
		qt.Check(t, errOut, qt.Contains, "--metrics-listen", qt.Commentf("%s", addr))
	}
}

// TestWithRecords: the metrics of watch --store carry the store's record
// of a missing slot (the port of a removed member) and the last check,
// from a copy: the watcher's snapshot is left as it was. Without a store
// file yet, the snapshot is served as it is.
func TestWithRecords(t *testing.T) {
	c := qt.New(t)
	r := fixtureReport(t, "raid1-removed-spare") // vdc failed and removed from slot 2
	a := r.Arrays[0]
	path := filepath.Join(t.TempDir(), "records.json")
	st := store.NewFile(path)
	c.Check(withRecords(context.Background(), r, st, discard), qt.Equals, r)

	healthy := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	rs := &md.Records{Arrays: []md.Record{{UUID: a.UUID, Metadata: a.Metadata, Level: a.Level, RaidDisks: 3, Slots: []md.SlotRecord{
		{Slot: 0, ByPath: "pci-0000:00:10.0", LastHealthy: healthy}, {Slot: 1, ByPath: "pci-0000:00:11.0", LastHealthy: healthy},
		{Slot: 2, ByPath: "pci-0000:00:12.0", Serial: "mdtest-2", LastHealthy: healthy},
	}}}}
	rs.PutCheck(md.CheckRecord{UUID: a.UUID, LastFinished: healthy, LastAction: "check"})
	c.Assert(st.Save(context.Background(), rs), qt.IsNil)
	got := withRecords(context.Background(), r, st, discard)
	c.Assert(got, qt.Not(qt.Equals), r)
	c.Check(r.Arrays[0].LastCheck, qt.IsNil)
	for _, s := range r.Arrays[0].Slots {
		c.Check(s.Recorded, qt.IsNil)
	}
	var out bytes.Buffer
	c.Assert(promtext.Write(&out, promtext.Collect(got, nil)), qt.IsNil)
	c.Check(out.String(), qt.Contains, `mdraid_slot_recorded_info{by_path="pci-0000:00:12.0",device="md0",serial="mdtest-2",slot="2",wwn=""} 1`)
	c.Check(out.String(), qt.Contains, `mdraid_array_last_check_finish_time_seconds{action="check",device="md0"} 1.7960832e+09`) // 2026-12-01
}
