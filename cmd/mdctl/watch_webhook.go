package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-mdraid/mdraid/internal/escape"
	"github.com/go-mdraid/mdraid/md/watch"
)

// Limits of the --webhook sender. A POST that fails is tried again after
// webhookBackoff, doubling, at most webhookAttempts times in all; the
// queue holds webhookQueue events, and when it is full the oldest is
// dropped (and counted), so that event handling never waits for a slow
// or dead receiver.
const (
	webhookQueue        = 256
	webhookAttempts     = 4
	webhookBackoff      = time.Second
	webhookTimeout      = 10 * time.Second
	webhookFlushTimeout = 10 * time.Second
)

// The formats of --webhook-format.
const (
	webhookJSON         = "json"
	webhookAlertmanager = "alertmanager"
)

// webhook POSTs watch events to a URL from a goroutine of its own: Send
// never blocks, Close delivers what is queued (within webhookFlushTimeout)
// and says what was lost.
type webhook struct {
	url     string
	format  string
	client  *http.Client
	log     *slog.Logger
	backoff time.Duration // before the second attempt; doubles

	q       chan watch.Event
	ctx     context.Context // aborts deliveries once Close gives up
	cancel  context.CancelFunc
	done    chan struct{}
	dropped atomic.Int64 // events dropped from a full queue
	failed  atomic.Int64 // events given up after every attempt
	sent    atomic.Int64
}

// parseWebhookURL checks a --webhook URL: absolute http or https.
func parseWebhookURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("--webhook %q: want an http:// or https:// URL", s)
	}
	return nil
}

// newWebhook starts the sender of events to rawURL in format.
func newWebhook(rawURL, format string, log *slog.Logger) *webhook {
	ctx, cancel := context.WithCancel(context.Background())
	w := &webhook{
		url: rawURL, format: format, log: log, backoff: webhookBackoff,
		client: &http.Client{Timeout: webhookTimeout},
		q:      make(chan watch.Event, webhookQueue),
		ctx:    ctx, cancel: cancel, done: make(chan struct{}),
	}
	return w
}

// start runs the delivery goroutine; it ends when Close is called.
func (w *webhook) start() *webhook {
	go w.run()
	return w
}

// Send queues e without waiting: when the queue is full, the oldest
// queued event is dropped and counted. Send must not be called
// concurrently or after Close.
func (w *webhook) Send(e watch.Event) {
	for {
		select {
		case w.q <- e:
			return
		default:
		}
		select {
		case old := <-w.q:
			n := w.dropped.Add(1)
			w.log.Warn("webhook queue full, dropped the oldest event", "url", w.url, "event", string(old.Type), "array", old.Array, "dropped", n)
		default:
		}
	}
}

// Close stops taking events, waits up to webhookFlushTimeout for the
// queued ones to be delivered, and returns an error that says how many
// were dropped or could not be delivered (nil when none).
func (w *webhook) Close() error {
	close(w.q)
	t := time.NewTimer(webhookFlushTimeout)
	defer t.Stop()
	select {
	case <-w.done:
	case <-t.C:
		w.cancel()
		<-w.done
	}
	w.cancel()
	left := int64(0)
	for range w.q { // what the aborted run left queued
		left++
	}
	d, f := w.dropped.Load(), w.failed.Load()+left
	if d == 0 && f == 0 {
		return nil
	}
	return fmt.Errorf("webhook %s: %d event(s) delivered, %d not delivered, %d dropped from a full queue", w.url, w.sent.Load(), f, d)
}

func (w *webhook) run() {
	defer close(w.done)
	for e := range w.q {
		if w.ctx.Err() != nil {
			w.failed.Add(1)
			continue
		}
		if err := w.deliver(e); err != nil {
			w.failed.Add(1)
			w.log.Error("webhook", "url", w.url, "event", string(e.Type), "array", e.Array, "err", err)
		} else {
			w.sent.Add(1)
		}
	}
}

// permanentError is a delivery the receiver refused (a 4xx other than 408
// and 429): trying again would not help.
type permanentError struct{ error }

// deliver POSTs e, trying again after failures and 5xx, 408 and 429
// responses.
func (w *webhook) deliver(e watch.Event) error {
	body, err := webhookBody(w.format, e)
	if err != nil {
		return err
	}
	wait := w.backoff
	for attempt := 1; ; attempt++ {
		err = w.post(body)
		var perm permanentError
		if err == nil || errors.As(err, &perm) || attempt == webhookAttempts {
			return err
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-w.ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (given up at shutdown after %d attempts)", err, attempt)
		}
		wait *= 2
	}
}

func (w *webhook) post(body []byte) error {
	req, err := http.NewRequestWithContext(w.ctx, http.MethodPost, w.url, bytes.NewReader(body))
	if err != nil {
		return permanentError{err}
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := w.client.Do(req)
	if err != nil {
		return err
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	switch c := resp.StatusCode; {
	case c >= 200 && c < 300:
		return nil
	case c >= 400 && c < 500 && c != http.StatusRequestTimeout && c != http.StatusTooManyRequests:
		return permanentError{fmt.Errorf("POST %s: %s", w.url, resp.Status)}
	default:
		return fmt.Errorf("POST %s: %s", w.url, resp.Status)
	}
}

// amAlert is one alert of Alertmanager's POST /api/v2/alerts.
type amAlert struct {
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
	StartsAt    time.Time         `json:"startsAt"`
}

// eventSeverity is the severity label an event gets in Alertmanager.
func eventSeverity(t watch.EventType) string {
	switch t {
	case watch.Fail, watch.FailSpare, watch.DegradedArray, watch.DeviceDisappeared, watch.HealFailed, watch.LastResortRefused:
		return "critical"
	case watch.SparesMissing, watch.HealRefused, watch.LastResortStarted:
		return "warning"
	}
	return "info"
}

// webhookBody is the body POSTed for e: the event's JSON (as watch --json
// prints it) for "json"; for "alertmanager", a list of one alert in the
// shape of Alertmanager's POST /api/v2/alerts, with the labels alertname
// MdraidEvent, event, device, uuid, name, member, slot, by_path (those
// that apply) and severity, the annotation summary (the event's line of
// text output), and startsAt the event's time. No endsAt: Alertmanager
// resolves the alert after its resolve_timeout. The values are escaped
// as in text output (Event.String), so they are valid UTF-8.
func webhookBody(format string, e watch.Event) ([]byte, error) {
	if format != webhookAlertmanager {
		return json.Marshal(e)
	}
	l := map[string]string{"alertname": "MdraidEvent", "event": string(e.Type), "device": e.Array, "severity": eventSeverity(e.Type)}
	add := func(k, v string) {
		if v != "" {
			l[k] = v
		}
	}
	add("uuid", e.UUID)
	add("name", e.Name)
	add("member", e.Member)
	add("by_path", e.ByPath)
	if e.Slot != nil {
		l["slot"] = strconv.Itoa(*e.Slot)
	}
	for k, v := range l {
		l[k] = escape.Text(v)
	}
	return json.Marshal([]amAlert{{Labels: l, Annotations: map[string]string{"summary": e.String()}, StartsAt: e.Time}})
}

// webhooks fans events out to several senders.
type webhooks []*webhook

func (ws webhooks) Send(e watch.Event) {
	for _, w := range ws {
		w.Send(e)
	}
}

// Close closes every sender at the same time and joins their errors.
func (ws webhooks) Close() error {
	errs := make([]error, len(ws))
	var wg sync.WaitGroup
	for i, w := range ws {
		wg.Go(func() { errs[i] = w.Close() })
	}
	wg.Wait()
	return errors.Join(errs...)
}
