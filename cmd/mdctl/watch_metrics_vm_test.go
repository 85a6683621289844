//go:build vmtest

package main

import (
	"io"
	"net"
	"net/http"
	"os"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	qt "github.com/frankban/quicktest"

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
