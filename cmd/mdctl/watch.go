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
	JSON   bool           `name:"json" help:"Print one JSON object per event and line (schema: go doc watch.Event)."`
	Store  string         `name:"store" placeholder:"FILE" help:"Record healthy arrays in this slot record file (SlotRecorded)."`
	Heal   bool           `name:"heal" help:"Heal degraded arrays from the records in --store: a blank disk in a failed member's recorded port is added to its slot."`
	Exec   string         `name:"exec" placeholder:"PROGRAM" help:"Run PROGRAM for each event with the arguments EVENT ARRAY [MEMBER] (as mdadm --program) and the event in MDRAID_* environment variables (MDRAID_EVENT_JSON holds all of it). Values such as the array name come from disks and are untrusted: they are escaped as in text output, and must never reach a shell unquoted."`
	Rescan time.Duration  `name:"rescan" default:"1m" help:"Interval of the full rescan behind the kernel's notifications."`
	Spares map[string]int `name:"spares" placeholder:"UUID=N" help:"Report SparesMissing when the array has fewer than N spares."`

	MetricsListen string `name:"metrics-listen" placeholder:"ADDR" help:"Serve the metrics of status --format=prometheus at http://ADDR/metrics, from the watcher's own snapshots. ADDR is HOST:PORT; a bare :PORT listens on loopback only (127.0.0.1 and ::1); 0.0.0.0:PORT or [::]:PORT listens on every address."`
}

// execTimeout bounds one run of the --exec program.
const execTimeout = time.Minute

// Run reports events until SIGINT or SIGTERM. Events go to stdout, one
// per line; the watcher's log (decisions, errors) goes to stderr.
func (c *WatchCmd) Run(ctx context.Context, k *kong.Context, m *md.Manager) error {
	if c.Heal && c.Store == "" {
		return &exitError{code: exitUsage, msg: "--heal needs --store"}
	}
	var logger *slog.Logger
	if c.JSON {
		logger = slog.New(slog.NewJSONHandler(k.Stderr, nil))
	} else {
		logger = slog.New(slog.NewTextHandler(k.Stderr, nil))
	}
	opts := &watch.Options{Rescan: c.Rescan, Heal: c.Heal, Spares: c.Spares, Logger: logger}
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
	enc := json.NewEncoder(k.Stdout)
	for e := range events {
		if c.JSON {
			if err := enc.Encode(e); err != nil {
				return &exitError{code: exitFailure, msg: err.Error()}
			}
		} else {
			// Event.String escapes what comes from disks.
			fmt.Fprintf(k.Stdout, "%s %s\n", e.Time.Local().Format(time.RFC3339), e)
		}
		if c.Exec != "" {
			runProgram(ctx, c.Exec, e, k.Stderr, logger)
		}
	}
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return &exitError{code: exitFailure, msg: err.Error()}
	}
	return nil
}

// runProgram runs the --exec program for one event and waits for it, so
// that programs see events in order.
func runProgram(ctx context.Context, prog string, e watch.Event, out io.Writer, log *slog.Logger) {
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
	}
}
