package main

import (
	"bufio"
	"context"
	"encoding/json"
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
}

// Run prints the status and exits as mdadm --detail --test does: 0 when
// every array is healthy, 1 when one is degraded, 2 when one is failed or
// cannot run, 4 when the status could not be read.
func (c *StatusCmd) Run(ctx context.Context, k *kong.Context, m *md.Manager) error {
	r, err := m.DiscoverNames(ctx, c.Arrays...)
	if err != nil {
		return &exitError{code: exitUnreadable, msg: err.Error()}
	}
	if c.Store != "" {
		// The health report does not depend on the store: one that
		// cannot be read is said so, and the rest is shown.
		rs, err := store.NewFile(c.Store).Load(ctx)
		if err != nil {
			fmt.Fprintf(k.Stderr, "mdctl: warning: no check results shown: %s\n", escape.Lines(err.Error()))
		} else {
			r.AddChecks(rs)
		}
	}
	format := c.Format
	if c.JSON {
		format = "json"
	}
	out := bufio.NewWriter(k.Stdout) // one write, not one per line
	switch format {
	case "json":
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		err = enc.Encode(r)
	case "prometheus":
		err = renderPrometheus(out, r)
	default:
		err = renderText(out, r)
	}
	if err == nil {
		err = out.Flush()
	}
	if err != nil {
		return err
	}
	if code := statusExitCode(r, nil); code != exitHealthy {
		return &quietExit{code}
	}
	return nil
}
