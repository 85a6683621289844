package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"time"

	"github.com/alecthomas/kong"

	"github.com/go-mdraid/mdraid/md"
	"github.com/go-mdraid/mdraid/md/metrics/promtext"
	"github.com/go-mdraid/mdraid/md/store"
	"github.com/go-mdraid/mdraid/md/watch"
)

// WatchCmd is `mdctl watch`.
type WatchCmd struct {
	JSON   bool           `name:"json" help:"Print one JSON object per event and line: event, time, array, array_path, and as the event has them uuid, name, member, member_path, slot, by_path, action, percent, spares, expected, reason."`
	Store  string         `name:"store" placeholder:"FILE" help:"Record healthy arrays in this slot record file (SlotRecorded)."`
	Heal   bool           `name:"heal" help:"Heal degraded arrays from the records in --store: a blank disk in a failed member's recorded port is added to its slot."`
	ReAdd  bool           `name:"re-add" help:"With --heal, also re-add a former member that comes back in its recorded port (mdadm's POLICY action=re-add); each re-add is remembered in --store, and a member that goes missing again, or that the kernel failed with read errors, is not re-added again until mdctl re-add --store."`
	Exec   string         `name:"exec" placeholder:"PROGRAM" help:"Run PROGRAM for each event with the arguments EVENT ARRAY [MEMBER] (as mdadm --program) and the event in MDRAID_* environment variables (MDRAID_EVENT_JSON holds all of it). Values such as the array name come from disks and are untrusted: they are escaped as in text output, and must never reach a shell unquoted."`
	Rescan time.Duration  `name:"rescan" default:"1m" help:"Interval of the full rescan behind the kernel's notifications."`
	Spares map[string]int `name:"spares" placeholder:"UUID=N" help:"Report SparesMissing when the array has fewer than N spares."`

	LastResort time.Duration `name:"last-resort" placeholder:"D" help:"Start an array that stays inactive for D (since the watch first saw it so) with the members it has, when they can serve its data, as mdctl run does (LastResortStarted); one that cannot is never started (LastResortRefused, once). The last-resort timer of contrib/systemd, for systems without systemd. Off by default."`

	Test          bool     `name:"test" help:"Send one TestMessage event per array through every output (stdout, --exec, --webhook), then exit, as mdadm --monitor --test: 0 when every output took every event, 1 otherwise."`
	Webhook       []string `name:"webhook" placeholder:"URL" help:"POST each event to URL (repeatable), from a queue that never holds up the watch: a failed POST is tried 4 times in all, waiting 1 s, then 2 s, then 4 s; when 256 events wait, the oldest is dropped and logged."`
	WebhookFormat string   `name:"webhook-format" enum:"json,alertmanager" default:"json" help:"Body of a --webhook POST: json (the event as --json prints it) or alertmanager (a list of one alert for Alertmanager's /api/v2/alerts, alertname MdraidEvent)."`

	MetricsListen string `name:"metrics-listen" placeholder:"ADDR" help:"Serve the metrics of status --format=prometheus at http://ADDR/metrics, from the watcher's own snapshots. ADDR is HOST:PORT; a bare :PORT listens on loopback only (127.0.0.1 and ::1); 0.0.0.0:PORT or [::]:PORT listens on every address. With --store, the metrics add the store's records as status --store does (mdraid_slot_recorded_info, the last check)."`
}

// execTimeout bounds one run of the --exec program.
const execTimeout = time.Minute

// Run reports events until SIGINT or SIGTERM. Events go to stdout, one
// per line; the watcher's log (decisions, errors) goes to stderr.
func (c *WatchCmd) Run(ctx context.Context, k *kong.Context, m *md.Manager) error {
	if c.Heal && c.Store == "" {
		return &exitError{code: exitUsage, msg: "--heal needs --store"}
	}
	if c.ReAdd && !c.Heal {
		return &exitError{code: exitUsage, msg: "--re-add is part of --heal: give --heal too"}
	}
	if c.LastResort < 0 {
		return &exitError{code: exitUsage, msg: "--last-resort must not be negative"}
	}
	if c.Exec != "" {
		// A program that cannot run is found now, not at the first
		// failure.
		if _, err := exec.LookPath(c.Exec); err != nil {
			return &exitError{code: exitUsage, msg: fmt.Sprintf("--exec: %v", err)}
		}
	}
	for _, u := range c.Webhook {
		if err := parseWebhookURL(u); err != nil {
			return &exitError{code: exitUsage, msg: err.Error()}
		}
	}
	var logger *slog.Logger
	if c.JSON {
		logger = slog.New(slog.NewJSONHandler(k.Stderr, nil))
	} else {
		logger = slog.New(slog.NewTextHandler(k.Stderr, nil))
	}
	var hooks webhooks
	for _, u := range c.Webhook {
		hooks = append(hooks, newWebhook(u, c.WebhookFormat, logger).start())
	}
	enc := json.NewEncoder(k.Stdout)
	// emit gives e to every output and returns the error of stdout; the
	// program's are logged and kept in progErrs, webhooks report theirs
	// when closed.
	var progErrs []error
	emit := func(ctx context.Context, e watch.Event) error {
		var err error
		if c.JSON {
			err = enc.Encode(e)
		} else {
			// Event.String escapes what comes from disks.
			_, err = fmt.Fprintf(k.Stdout, "%s %s\n", e.Time.Local().Format(time.RFC3339), e)
		}
		if c.Exec != "" {
			if err := runProgram(ctx, c.Exec, e, k.Stderr, logger); err != nil && c.Test {
				progErrs = append(progErrs, err)
			}
		}
		hooks.Send(e)
		return err
	}
	if c.Test {
		err := c.test(ctx, m, emit, hooks)
		if err == nil && len(progErrs) > 0 {
			err = errors.Join(progErrs...)
		}
		if err != nil {
			return &exitError{code: exitFailure, msg: err.Error()}
		}
		return nil
	}
	defer func() {
		if err := hooks.Close(); err != nil {
			logger.Error("webhook", "err", err)
		}
	}()
	opts := &watch.Options{Rescan: c.Rescan, Heal: c.Heal, ReAdd: c.ReAdd, Spares: c.Spares, Logger: logger, LastResort: c.LastResort}
	if c.Store != "" {
		opts.Store = store.NewFile(c.Store)
	}
	// The watch and the metrics server end together: on a signal, or
	// when the server fails.
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if c.MetricsListen != "" {
		var latest promtext.Latest
		opts.Snapshot = latest.Set
		if c.Store != "" {
			// The metrics show the store's records as status --store
			// does: the recorded port of a missing slot, the last check.
			st := store.NewFile(c.Store)
			opts.Snapshot = func(r *md.Report, err error) {
				latest.Set(withRecords(ctx, r, st, logger), err)
			}
		}
		h := metricsHandler(&latest)
		ls, err := listenMetrics(c.MetricsListen)
		if err != nil {
			return &exitError{code: exitFailure, msg: err.Error()}
		}
		served := serveMetrics(ctx, ls, h, logger, cancel)
		defer func() { cancel(nil); <-served }()
	}
	events, err := watch.Start(ctx, m, opts)
	if err != nil {
		return &exitError{code: exitFailure, msg: err.Error()}
	}
	for e := range events {
		if err := emit(ctx, e); err != nil && c.JSON {
			return &exitError{code: exitFailure, msg: err.Error()}
		}
	}
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return &exitError{code: exitFailure, msg: err.Error()}
	}
	return nil
}

// test sends one TestMessage per array through every output (mdctl watch
// --test) and waits for the webhooks to deliver them.
func (c *WatchCmd) test(ctx context.Context, m *md.Manager, emit func(context.Context, watch.Event) error, hooks webhooks) error {
	r, err := m.Discover(ctx)
	if err != nil {
		hooks.Close()
		return err
	}
	var errs []error
	for _, e := range watch.TestEvents(r, time.Now()) {
		errs = append(errs, emit(ctx, e))
	}
	errs = append(errs, hooks.Close())
	return errors.Join(errs...)
}

// runProgram runs the --exec program for one event and waits for it, so
// that programs see events in order. Its failure is logged and returned.
func runProgram(ctx context.Context, prog string, e watch.Event, out io.Writer, log *slog.Logger) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), execTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, prog, e.Args()...)
	cmd.Env = append(os.Environ(), e.Env()...)
	if b, err := json.Marshal(e); err == nil {
		cmd.Env = append(cmd.Env, "MDRAID_EVENT_JSON="+string(b))
	}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Run(); err != nil {
		log.Error("exec", "program", prog, "event", string(e.Type), "array", e.Array, "err", err)
		return fmt.Errorf("--exec %s: %w", prog, err)
	}
	return nil
}
