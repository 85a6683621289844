package main

import (
	"context"
	"fmt"

	"github.com/alecthomas/kong"

	"github.com/go-mdraid/mdraid/internal/escape"
	"github.com/go-mdraid/mdraid/md"
)

// RunCmd is `mdctl run`.
type RunCmd struct {
	Array  string `arg:"" predictor:"array" help:"The assembled, inactive array to start."`
	DryRun bool   `name:"dry-run" help:"Check as the real run does (same refusals and exit codes), print what would be done, write nothing."`
}

// Run starts an inactive array with the members it has (read-auto, as
// mdadm --run), the last resort for an array assembled one member short.
// It refuses (exit 2) a running array or one with too few members.
func (c *RunCmd) Run(ctx context.Context, k *kong.Context, m *md.Manager) error {
	ch := md.Change{DryRun: c.DryRun}
	if err := m.Run(ctx, c.Array, &ch); err != nil {
		return primitiveError(err)
	}
	if c.DryRun {
		printDryRun(k, &ch, "start "+ch.Array)
		return nil
	}
	fmt.Fprintf(k.Stdout, "%s: started.\n", escape.Text(c.Array))
	return nil
}
