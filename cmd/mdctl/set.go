package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/alecthomas/kong"

	"github.com/go-mdraid/mdraid/internal/escape"
	"github.com/go-mdraid/mdraid/md"
	"github.com/go-mdraid/mdraid/sysfs"
)

// SetCmd is `mdctl set`.
type SetCmd struct {
	Array         string `arg:"" predictor:"array" help:"The array."`
	Member        string `arg:"" help:"The member (sdb or /dev/sdb)."`
	WriteMostly   bool   `name:"write-mostly" help:"Mark the member write-mostly: raid1 reads from the other mirrors while they can serve (a slow disk, or one across a slow link)."`
	NoWriteMostly bool   `name:"no-write-mostly" help:"Clear write-mostly (mdadm --readwrite)."`
	FailFast      bool   `name:"failfast" help:"Mark the member failfast: raid1 and raid10 fail it after fewer retries (a disk on a path that fails over)."`
	NoFailFast    bool   `name:"no-failfast" help:"Clear failfast."`
	DryRun        bool   `name:"dry-run" help:"Check as the real run does (same refusals and exit codes), print what would be done, write nothing."`
	JSON          bool   `name:"json" help:"Print the outcome as JSON: {\"arrays\": [{array, member, result, dry_run, write, error}]}, one entry per flag; the exit code is the same."`
}

// Validate insists on one change per flag.
func (c *SetCmd) Validate() error {
	switch {
	case c.WriteMostly && c.NoWriteMostly:
		return errors.New("--write-mostly and --no-write-mostly contradict each other")
	case c.FailFast && c.NoFailFast:
		return errors.New("--failfast and --no-failfast contradict each other")
	case !c.WriteMostly && !c.NoWriteMostly && !c.FailFast && !c.NoFailFast:
		return errors.New("give a flag to change: --write-mostly, --no-write-mostly, --failfast or --no-failfast")
	}
	return nil
}

// Run changes each flag asked for, in turn; the first refusal or failure
// stops it (the flags before it stay changed, and say so).
func (c *SetCmd) Run(ctx context.Context, k *kong.Context, m *md.Manager) error {
	type change struct {
		flag sysfs.MemberFlag
		on   bool
		word string
	}
	var todo []change
	switch {
	case c.WriteMostly:
		todo = append(todo, change{sysfs.FlagWriteMostly, true, "write-mostly"})
	case c.NoWriteMostly:
		todo = append(todo, change{sysfs.FlagWriteMostly, false, "not write-mostly"})
	}
	switch {
	case c.FailFast:
		todo = append(todo, change{sysfs.FlagFailFast, true, "failfast"})
	case c.NoFailFast:
		todo = append(todo, change{sysfs.FlagFailFast, false, "not failfast"})
	}
	var reports []changeReport
	defer func() {
		if c.JSON {
			_ = printChanges(k.Stdout, reports)
		}
	}()
	var written []string
	for _, t := range todo {
		ch := md.Change{DryRun: c.DryRun}
		err := m.SetMemberFlag(ctx, c.Array, c.Member, t.flag, t.on, &ch)
		reports = append(reports, changeReportOf(c.Array, c.Member, &ch, err))
		if err != nil {
			if len(written) > 0 && !c.DryRun {
				return &exitError{code: exitPartial, msg: fmt.Sprintf("%v (changed before: %s)", err, escape.Text(fmt.Sprint(written)))}
			}
			return primitiveError(err)
		}
		if ch.Write != "" {
			written = append(written, ch.Write)
		}
		switch {
		case c.JSON:
		case ch.Write == "":
			fmt.Fprintf(k.Stdout, "%s: %s is %s already; nothing written.\n", escape.Text(ch.Array), escape.Text(ch.Member), t.word)
		case c.DryRun:
			printDryRun(k, &ch, fmt.Sprintf("make %s %s", ch.Member, t.word))
		default:
			fmt.Fprintf(k.Stdout, "%s: %s is %s (%s; md keeps it in the superblock).\n", escape.Text(ch.Array), escape.Text(ch.Member), t.word, escape.Text(ch.Write))
		}
	}
	return nil
}

// Help is the command's long help.
func (c *SetCmd) Help() string {
	return `Sets or clears a member's write-mostly or failfast flag, as mdadm
--manage --writemostly/--readwrite and --failfast/--nofailfast: one write
to the member's md state, which md keeps in its superblock across a
restart (status shows the flags). Write-mostly applies to raid1 only,
failfast to raid1 and raid10; other levels are refused.

` + exitHelp("set")
}
