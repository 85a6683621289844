package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/alecthomas/kong"

	"github.com/go-mdraid/mdraid/internal/escape"
	"github.com/go-mdraid/mdraid/md"
)

// FailCmd is `mdctl fail`.
type FailCmd struct {
	Array  string `arg:"" predictor:"array" help:"The array."`
	Member string `arg:"" help:"The member to mark faulty (sdb or /dev/sdb)."`
	DryRun bool   `name:"dry-run" help:"Check as the real run does (same refusals and exit codes), print what would be done, write nothing."`
	JSON   bool   `name:"json" help:"Print the outcome as JSON: {\"arrays\": [{array, member, result, dry_run, write, error}]}; the exit code is the same."`
}

// Run marks the member faulty. It refuses (exit 2) when the array would
// not survive without it.
func (c *FailCmd) Run(ctx context.Context, k *kong.Context, m *md.Manager) error {
	ch := md.Change{DryRun: c.DryRun}
	err := m.Fail(ctx, c.Array, c.Member, &ch)
	if c.JSON {
		if perr := printChanges(k.Stdout, []changeReport{changeReportOf(c.Array, c.Member, &ch, err)}); perr != nil {
			return perr
		}
	}
	if err != nil {
		return primitiveError(err)
	}
	switch {
	case c.JSON:
	case ch.Write == "":
		fmt.Fprintf(k.Stdout, "%s: %s is already faulty; nothing written.\n", escape.Text(c.Array), escape.Text(c.Member))
	case c.DryRun:
		printDryRun(k, &ch, fmt.Sprintf("mark %s faulty", ch.Member))
	default:
		fmt.Fprintf(k.Stdout, "%s: %s marked faulty.\n", escape.Text(c.Array), escape.Text(c.Member))
	}
	return nil
}

// printDryRun prints what a dry run of fail, remove or run would do.
func printDryRun(k *kong.Context, ch *md.Change, what string) {
	fmt.Fprintf(k.Stdout, "%s: would %s (%s); nothing written (dry run).\n", escape.Text(ch.Array), escape.Text(what), escape.Text(ch.Write))
}

// primitiveError maps fail/remove/run errors to exit codes: refusals
// (md.ErrRefused: nothing written) exit 2.
func primitiveError(err error) error {
	if errors.Is(err, md.ErrRefused) {
		return &exitError{code: exitRefused, msg: err.Error()}
	}
	return &exitError{code: exitFailure, msg: err.Error()}
}
