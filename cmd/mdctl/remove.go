package main

import (
	"context"
	"fmt"

	"github.com/alecthomas/kong"

	"github.com/go-mdraid/mdraid/internal/escape"
	"github.com/go-mdraid/mdraid/md"
)

// RemoveCmd is `mdctl remove`.
type RemoveCmd struct {
	Array  string `arg:"" predictor:"array" help:"The array."`
	Member string `arg:"" help:"The faulty member or spare to remove (sdb or /dev/sdb)."`
	DryRun bool   `name:"dry-run" help:"Check as the real run does (same refusals and exit codes), print what would be done, write nothing."`
	JSON   bool   `name:"json" help:"Print the outcome as JSON: {\"arrays\": [{array, member, result, dry_run, write, error}]}; the exit code is the same."`
}

// Run removes the member. A member that still holds a slot is refused
// (exit 2): fail it first.
func (c *RemoveCmd) Run(ctx context.Context, k *kong.Context, m *md.Manager) error {
	ch := md.Change{DryRun: c.DryRun}
	err := m.Remove(ctx, c.Array, c.Member, &ch)
	if c.JSON {
		if perr := printChanges(k.Stdout, []changeReport{changeReportOf(c.Array, c.Member, &ch, err)}); perr != nil {
			return perr
		}
	}
	if err != nil {
		return primitiveError(err)
	}
	if c.JSON {
		return nil
	}
	if c.DryRun {
		printDryRun(k, &ch, "remove "+ch.Member)
		return nil
	}
	fmt.Fprintf(k.Stdout, "%s: %s removed.\n", escape.Text(c.Array), escape.Text(c.Member))
	return nil
}
