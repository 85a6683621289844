package main

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	qt "github.com/frankban/quicktest"

	"github.com/go-mdraid/mdraid/md/watch"
)

// receiver is an httptest server on loopback that records the bodies
// POSTed to it and answers with the status codes of status in turn (200
// once they are used up).
type receiver struct {
	*httptest.Server
	mu      sync.Mutex
	bodies  []string
	ctypes  []string
	status  []int
	arrived chan struct{} // one value per request, when set
	release chan struct{} // when set, each request waits for a value
}

func newReceiver(t *testing.T, status ...int) *receiver {
	r := &receiver{status: status}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		if req.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		if r.arrived != nil {
			r.arrived <- struct{}{}
		}
		if r.release != nil {
			<-r.release
		}
		r.mu.Lock()
		r.bodies = append(r.bodies, string(b))
		r.ctypes = append(r.ctypes, req.Header.Get("Content-Type"))
		code := http.StatusOK
		if len(r.status) > 0 {
			code, r.status = r.status[0], r.status[1:]
		}
		r.mu.Unlock()
		w.WriteHeader(code)
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *receiver) got() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.bodies...)
}

func testEvent(i int) watch.Event {
	return watch.Event{Type: watch.Fail, Time: time.Date(2026, 12, 5, 3, 0, i, 0, time.UTC), Array: "md0", ArrayPath: "/dev/md0",
		UUID: "6cc39dcd-3d2d-7b68-a5ec-898ccdfd6840", Name: "boot", Member: "vdb", MemberPath: "/dev/vdb", ByPath: "pci-0000:00:11.0"}
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// TestWebhookDelivers: events arrive as their JSON, in order, with the
// JSON content type; Close reports nothing lost.
func TestWebhookDelivers(t *testing.T) {
	c := qt.New(t)
	rcv := newReceiver(t)
	w := newWebhook(rcv.URL, webhookJSON, quietLogger()).start()
	var want []string
	for i := range 3 {
		e := testEvent(i)
		b, err := json.Marshal(e)
		c.Assert(err, qt.IsNil)
		want = append(want, string(b))
		w.Send(e)
	}
	c.Assert(w.Close(), qt.IsNil)
	c.Check(rcv.got(), qt.DeepEquals, want)
	c.Check(rcv.ctypes, qt.DeepEquals, []string{"application/json", "application/json", "application/json"})
}

// TestWebhookRetries: a 503 and a 429 are tried again and the event
// arrives once; a 400 is not tried again and Close says it was not
// delivered; a receiver that keeps failing is given up after
// webhookAttempts tries.
func TestWebhookRetries(t *testing.T) {
	c := qt.New(t)
	rcv := newReceiver(t, http.StatusServiceUnavailable, http.StatusTooManyRequests)
	w := newWebhook(rcv.URL, webhookJSON, quietLogger())
	w.backoff = time.Millisecond
	w.start().Send(testEvent(0))
	c.Assert(w.Close(), qt.IsNil)
	c.Check(rcv.got(), qt.HasLen, 3)

	rcv = newReceiver(t, http.StatusBadRequest)
	w = newWebhook(rcv.URL, webhookJSON, quietLogger())
	w.backoff = time.Millisecond
	w.start().Send(testEvent(0))
	c.Check(w.Close(), qt.ErrorMatches, `webhook http://127\.0\.0\.1:[0-9]+: 0 event\(s\) delivered, 1 not delivered, 0 dropped from a full queue`)
	c.Check(rcv.got(), qt.HasLen, 1)

	rcv = newReceiver(t, 500, 500, 500, 500, 500)
	w = newWebhook(rcv.URL, webhookJSON, quietLogger())
	w.backoff = time.Millisecond
	w.start().Send(testEvent(0))
	c.Check(w.Close(), qt.ErrorMatches, `.* 1 not delivered, .*`)
	c.Check(rcv.got(), qt.HasLen, webhookAttempts)
}

// TestWebhookNeverBlocks: while the receiver holds the first POST, Send
// keeps returning; past webhookQueue waiting events the oldest are
// dropped and counted, and once the receiver answers the newest arrive.
func TestWebhookNeverBlocks(t *testing.T) {
	c := qt.New(t)
	rcv := newReceiver(t)
	rcv.arrived, rcv.release = make(chan struct{}, 1000), make(chan struct{})
	w := newWebhook(rcv.URL, webhookJSON, quietLogger()).start()
	w.Send(testEvent(0))
	<-rcv.arrived // the sender is in its first POST
	const more = webhookQueue + 44
	for i := 1; i <= more; i++ {
		w.Send(testEvent(i))
	}
	c.Check(w.dropped.Load(), qt.Equals, int64(44))
	close(rcv.release)
	c.Check(w.Close(), qt.ErrorMatches, `.*: 257 event\(s\) delivered, 0 not delivered, 44 dropped from a full queue`)
	got := rcv.got()
	c.Assert(got, qt.HasLen, 1+webhookQueue)
	var first, second, last watch.Event
	c.Assert(json.Unmarshal([]byte(got[0]), &first), qt.IsNil)
	c.Assert(json.Unmarshal([]byte(got[1]), &second), qt.IsNil)
	c.Assert(json.Unmarshal([]byte(got[len(got)-1]), &last), qt.IsNil)
	c.Check(first.Time, qt.Equals, testEvent(0).Time)
	c.Check(second.Time, qt.Equals, testEvent(45).Time) // 1..44 dropped
	c.Check(last.Time, qt.Equals, testEvent(more).Time)
}

// TestWebhookAlertmanager: the alertmanager format is a list of one
// alert as Alertmanager's POST /api/v2/alerts takes it.
func TestWebhookAlertmanager(t *testing.T) {
	c := qt.New(t)
	e := testEvent(0)
	e.Name = "bad\x1bname"
	slot := 1
	e.Slot = &slot
	b, err := webhookBody(webhookAlertmanager, e)
	c.Assert(err, qt.IsNil)
	var got []map[string]any
	c.Assert(json.Unmarshal(b, &got), qt.IsNil)
	c.Assert(got, qt.DeepEquals, []map[string]any{{
		"labels": map[string]any{"alertname": "MdraidEvent", "event": "Fail", "device": "md0", "uuid": "6cc39dcd-3d2d-7b68-a5ec-898ccdfd6840",
			"name": `bad\x1bname`, "member": "vdb", "slot": "1", "by_path": "pci-0000:00:11.0", "severity": "critical"},
		"annotations": map[string]any{"summary": "Fail /dev/md0 /dev/vdb slot 1 (pci-0000:00:11.0)"},
		"startsAt":    "2026-12-05T03:00:00Z",
	}})
}

// TestWatchTestCLI: mdctl watch --test sends one TestMessage per array
// to stdout, the --exec program and every --webhook, then exits 0.
func TestWatchTestCLI(t *testing.T) {
	c := qt.New(t)
	flags, _ := materialize(t, "eight-arrays")
	dir := t.TempDir()
	seen := filepath.Join(dir, "seen")
	prog := filepath.Join(dir, "prog")
	c.Assert(os.WriteFile(prog, []byte("#!/bin/sh\necho \"$1 $2\" >> "+seen+"\n"), 0o755), qt.IsNil)
	rcv, am := newReceiver(t), newReceiver(t)

	code, out, errOut := runCLI(t, append(flags, "watch", "--test", "--json", "--exec", prog, "--webhook", rcv.URL, "--webhook", am.URL+"/api/v2/alerts")...)
	c.Assert(code, qt.Equals, 0, qt.Commentf("stderr %q", errOut))
	lines := strings.Split(strings.TrimSpace(out), "\n")
	c.Assert(lines, qt.HasLen, 8)
	var arrays []string
	for _, l := range lines {
		var e watch.Event
		c.Assert(json.Unmarshal([]byte(l), &e), qt.IsNil)
		c.Check(e.Type, qt.Equals, watch.TestMessage)
		arrays = append(arrays, e.Array)
	}
	c.Check(rcv.got(), qt.DeepEquals, lines)
	c.Check(am.got(), qt.HasLen, 8)
	b, err := os.ReadFile(seen)
	c.Assert(err, qt.IsNil)
	c.Check(strings.Count(string(b), "TestMessage "), qt.Equals, 8)
	for _, a := range arrays {
		c.Check(string(b), qt.Contains, "TestMessage "+flags[3]+"/"+a+"\n")
	}

	// The text output, and a webhook that refuses: exit 1, saying so.
	bad := newReceiver(t, 403, 403, 403, 403, 403, 403, 403, 403)
	code, out, errOut = runCLI(t, append(flags, "watch", "--test", "--webhook", bad.URL)...)
	c.Check(code, qt.Equals, exitFailure)
	c.Check(strings.Count(out, " TestMessage "), qt.Equals, 8)
	c.Check(errOut, qt.Contains, "0 event(s) delivered, 8 not delivered")
}

// TestWatchCLIUsage: a --exec program that cannot run and a --webhook
// that is not an http URL are found before the watch starts.
func TestWatchCLIUsage(t *testing.T) {
	c := qt.New(t)
	flags, _ := materialize(t, "raid1-v1.2")
	code, out, errOut := runCLI(t, append(flags, "watch", "--exec", filepath.Join(t.TempDir(), "nothing"))...)
	c.Check(code, qt.Equals, exitUsage)
	c.Check(out, qt.Equals, "")
	c.Check(errOut, qt.Contains, "--exec: exec: ")
	for _, u := range []string{"ftp://host/x", "localhost:9093", "http://"} {
		code, _, errOut = runCLI(t, append(flags, "watch", "--webhook", u)...)
		c.Check(code, qt.Equals, exitUsage)
		c.Check(errOut, qt.Contains, "want an http:// or https:// URL")
	}
}
