package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/alecthomas/kong"

	"github.com/go-mdraid/mdraid/internal/escape"
	"github.com/go-mdraid/mdraid/md"
	"github.com/go-mdraid/mdraid/md/store"
)

// StatusCmd is `mdctl status`.
type StatusCmd struct {
	Arrays []string `arg:"" optional:"" name:"array" predictor:"array" help:"Arrays to show (md127, /dev/md127, /dev/md/boot or a name); all when none is given."`
	JSON   bool     `name:"json" help:"Same as --format=json."`
	Format string   `name:"format" enum:"text,json,prometheus" default:"text" help:"Output format: text, json (schema in STATUS-JSON.md) or prometheus."`
	Store  string   `name:"store" placeholder:"FILE" help:"The record file mdctl check keeps: show each array's last completed check from it."`
	// Export and NoDevices are mdadm --detail --export and --no-devices
	// (export.go).
	Export    bool `name:"export" help:"Print the KEY=VALUE lines of mdadm --detail --export for one ARRAY (MD_LEVEL, MD_DEVICES, MD_METADATA, MD_UUID, MD_DEVNAME, MD_RESHAPE_ACTIVE, MD_NAME, MD_DEVICE_*_ROLE and _DEV); exits 0 once they are printed."`
	NoDevices bool `name:"no-devices" help:"With --export, leave out the per-member MD_DEVICE_* keys."`
	Brief     bool `name:"brief" help:"Print one mdadm.conf ARRAY line per array, as mdadm --detail --scan does; exits as status does."`
}

// Run prints the status and exits as mdadm --detail --test does: 0 when
// every array is healthy, 1 when one is degraded, 2 when one is failed or
// cannot run, 4 when the status could not be read (exitTable). Machine
// output is always printed: --json prints a document with its error set
// when nothing could be read, and --format=prometheus the scrape-error
// series; --format=prometheus exits 0 whenever it printed metrics, so
// that a textfile collector's file keeps being replaced while an array
// is degraded.
func (c *StatusCmd) Run(ctx context.Context, k *kong.Context, open openFunc, now clock) error {
	if c.Export || c.NoDevices {
		switch {
		case !c.Export:
			return &exitError{code: exitUsage, msg: "--no-devices needs --export"}
		case len(c.Arrays) != 1:
			return &exitError{code: exitUsage, msg: "--export takes exactly one array"}
		case c.JSON || c.Format != "text" || c.Store != "":
			return &exitError{code: exitUsage, msg: "--export cannot be combined with --json, --format or --store"}
		}
		return exportStatus(ctx, k, open, c.Arrays[0], !c.NoDevices)
	}
	if c.Brief && (c.JSON || c.Format != "text" || c.Store != "") {
		return &exitError{code: exitUsage, msg: "--brief cannot be combined with --json, --format or --store"}
	}
	format := c.Format
	if c.JSON {
		format = "json"
	}
	var r *md.Report
	var missing []error // names that match no array, or several
	m, err := open()
	if err == nil {
		r, err = m.DiscoverNames(ctx, c.Arrays...)
		if err != nil && r != nil && len(r.Arrays) > 0 {
			// Every array that resolves is shown; each name that does
			// not gets an error line, as mdadm --detail does.
			missing, err = lookupErrors(err), nil
			r.Err = errors.Join(missing...)
			r.Error = escape.Lines(r.Err.Error())
		}
	}
	if err == nil && c.Store != "" {
		// The health report does not depend on the store: one that
		// cannot be read is said so, and the rest is shown.
		rs, err := store.NewFile(c.Store).Load(ctx)
		if err != nil {
			fmt.Fprintf(k.Stderr, "mdctl: warning: no check results shown: %s\n", escape.Lines(err.Error()))
		} else {
			r.AddChecks(rs)
		}
	}
	readErr := err
	err = nil
	if readErr != nil {
		if format == "text" {
			return &exitError{code: exitUnreadable, msg: readErr.Error()}
		}
		r = &md.Report{Version: md.SchemaVersion, Time: now().UTC(), Arrays: []md.Array{}, Error: escape.Lines(readErr.Error()), Err: readErr}
	}
	out := bufio.NewWriter(k.Stdout) // one write, not one per line
	var warn error
	switch format {
	case "json":
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		err = enc.Encode(r)
	case "prometheus":
		warn = renderMetrics(out, r, readErr)
	default:
		if c.Brief {
			err = renderBrief(ctx, out, k.Stderr, m, r)
		} else {
			err = renderText(out, r, useColor(k.Stdout))
		}
	}
	if err == nil {
		err = out.Flush()
	}
	if err != nil {
		return err
	}
	for _, e := range missing[:max(len(missing)-1, 0)] {
		fmt.Fprintf(k.Stderr, "mdctl: error: %s\n", escape.Lines(e.Error()))
	}
	if len(missing) > 0 && format != "prometheus" {
		// The worst exit code: an array that cannot be found is
		// unreadable (4), worse than failed (2) or degraded (1).
		return &exitError{code: exitUnreadable, msg: missing[len(missing)-1].Error()}
	}
	if len(missing) > 0 {
		fmt.Fprintf(k.Stderr, "mdctl: warning: %s\n", escape.Lines(missing[len(missing)-1].Error()))
	}
	switch {
	case format == "prometheus":
		// Printed: the metrics (mdraid_scrape_error among them) say
		// what is wrong.
		if readErr != nil {
			warn = readErr
		}
		if warn != nil {
			fmt.Fprintf(k.Stderr, "mdctl: warning: %s\n", escape.Lines(warn.Error()))
		}
		return nil
	case readErr != nil:
		return &exitError{code: exitUnreadable, msg: readErr.Error()}
	}
	if code := statusExitCode(r, nil); code != exitHealthy {
		return &quietExit{code}
	}
	return nil
}

// lookupErrors splits DiscoverNames' error into one per name.
func lookupErrors(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}
