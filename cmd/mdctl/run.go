package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/alecthomas/kong"

	"github.com/go-mdraid/mdraid/internal/escape"
	"github.com/go-mdraid/mdraid/md"
)

// RunCmd is `mdctl run`.
type RunCmd struct {
	Scan   bool   `help:"Start every assembled, inactive array that can serve its data (the last resort over all arrays); those that cannot are named and left inactive."`
	Array  string `arg:"" optional:"" predictor:"array" help:"The assembled, inactive array to start."`
	DryRun bool   `name:"dry-run" help:"Check as the real run does (same refusals and exit codes), print what would be done, write nothing."`
}

// Validate insists on an array or --scan, not both.
func (c *RunCmd) Validate() error {
	if c.Scan == (c.Array != "") {
		return errors.New("name the array to start, or give --scan for every inactive array")
	}
	return nil
}

// Run starts an inactive array with the members it has (read-auto, as
// mdadm --run), the last resort for an array assembled one member short.
// It refuses (exit 2) a running array or one with too few members. With
// --scan it tries every inactive array, each on a line of its own, and
// the exit code is the worst.
func (c *RunCmd) Run(ctx context.Context, k *kong.Context, m *md.Manager) error {
	if !c.Scan {
		ch := c.change()
		return c.runOne(k, m.Run(ctx, c.Array, ch), ch, c.Array)
	}
	rep, err := m.Discover(ctx)
	if err != nil {
		return &exitError{code: exitFailure, msg: err.Error()}
	}
	worst := exitOK
	var last error
	for _, a := range rep.Arrays {
		if a.Availability != md.Inactive {
			continue
		}
		ch := c.change()
		err := c.runOne(k, m.Run(ctx, a.Device, ch), ch, a.Device)
		var ee *exitError
		if errors.As(err, &ee) {
			if last != nil {
				printLine(k.Stderr, "mdctl: error: %s", last.(*exitError).msg)
			}
			last = ee
			if stopWorse(ee.code, worst) {
				worst = ee.code
			}
		}
	}
	if last == nil {
		return nil
	}
	return &exitError{code: worst, msg: last.(*exitError).msg}
}

// change is the Change of one run.
func (c *RunCmd) change() *md.Change { return &md.Change{DryRun: c.DryRun} }

// runOne reports one array's run.
func (c *RunCmd) runOne(k *kong.Context, err error, ch *md.Change, array string) error {
	if err != nil {
		return primitiveError(err)
	}
	if c.DryRun {
		printDryRun(k, ch, "start "+ch.Array)
		return nil
	}
	fmt.Fprintf(k.Stdout, "%s: started.\n", escape.Text(array))
	return nil
}
