package main

import (
	"bufio"
	"context"
	"encoding/json"

	"github.com/alecthomas/kong"

	"github.com/go-mdraid/mdraid/md"
)

// StatusCmd is `mdctl status`.
type StatusCmd struct {
	Arrays []string `arg:"" optional:"" name:"array" predictor:"array" help:"Arrays to show (md127, /dev/md127, /dev/md/boot or a name); all when none is given."`
	JSON   bool     `name:"json" help:"Same as --format=json."`
	Format string   `name:"format" enum:"text,json,prometheus" default:"text" help:"Output format: text, json (schema in STATUS-JSON.md) or prometheus."`
}

// Run prints the status and exits as mdadm --detail --test does: 0 when
// every array is healthy, 1 when one is degraded, 2 when one is failed or
// cannot run, 4 when the status could not be read.
func (c *StatusCmd) Run(ctx context.Context, k *kong.Context, m *md.Manager) error {
	r, err := m.DiscoverNames(ctx, c.Arrays...)
	if err != nil {
		return &exitError{code: exitUnreadable, msg: err.Error()}
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
