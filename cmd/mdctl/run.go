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
	// Unfinished is Change.Unfinished.
	Unfinished bool `name:"unfinished" help:"Also start the array when no running array has updated its superblocks and a member they name is missing: what a create that did not finish leaves, refused without this flag (mdadm --run starts it). Only with a named array."`
	JSON       bool `name:"json" help:"Print the outcome as JSON: {\"arrays\": [{array, result, dry_run, write, error}]}, one entry per array tried; the exit code is the same."`

	reports []changeReport
}

// Validate insists on an array or --scan, not both.
func (c *RunCmd) Validate() error {
	if c.Scan == (c.Array != "") {
		return errors.New("name the array to start, or give --scan for every inactive array")
	}
	if c.Scan && c.Unfinished {
		return errors.New("--unfinished starts one named array, not --scan")
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
		err := c.runOne(ctx, k, m, c.Array)
		if c.JSON {
			if perr := printChanges(k.Stdout, c.reports); perr != nil {
				return perr
			}
		}
		return err
	}
	rep, err := m.Discover(ctx)
	if err != nil {
		return &exitError{code: exitFailure, msg: err.Error()}
	}
	if c.JSON {
		defer func() { _ = printChanges(k.Stdout, c.reports) }()
	}
	var errs perArray
	for _, a := range rep.Arrays {
		if a.Availability != md.Inactive {
			continue
		}
		var ee *exitError
		if errors.As(c.runOne(ctx, k, m, a.Device), &ee) {
			errs.add(ee.code, ee.msg)
		}
	}
	return errs.result(k.Stderr)
}

// runOne starts one array (or checks that it would) and reports it.
func (c *RunCmd) runOne(ctx context.Context, k *kong.Context, m *md.Manager, array string) error {
	ch := md.Change{DryRun: c.DryRun, Unfinished: c.Unfinished}
	err := m.Run(ctx, array, &ch)
	c.reports = append(c.reports, changeReportOf(array, "", &ch, err))
	if err != nil {
		return primitiveError(err)
	}
	if c.JSON {
		return nil
	}
	if c.DryRun {
		printDryRun(k, &ch, "start "+ch.Array)
		return nil
	}
	fmt.Fprintf(k.Stdout, "%s: started.\n", escape.Text(array))
	return nil
}
