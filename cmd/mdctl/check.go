package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/alecthomas/kong"

	"github.com/go-mdraid/mdraid/internal/escape"
	"github.com/go-mdraid/mdraid/md"
	"github.com/go-mdraid/mdraid/md/store"
)

// CheckCmd is `mdctl check`.
type CheckCmd struct {
	Arrays   []string      `arg:"" optional:"" help:"Arrays to check (md127, /dev/md/boot, a name)."`
	All      bool          `name:"all" help:"Check every array that can be checked; the others are named as skipped, with why (no redundancy, not running, read-only, degraded, a sync running). Only an array that should be checkable and is not (unreadable, frozen, sync_max set) is refused."`
	Repair   bool          `name:"repair" help:"Repair: rewrite what disagrees (raid1/10 from the first copy, raid5/6 by recomputing parity)."`
	Duration time.Duration `name:"duration" placeholder:"D" help:"Time box: stay until the check finishes or D passes, then stop it and (with --store) save where it got to; the next run resumes there."`
	Store    string        `name:"store" placeholder:"FILE" help:"The record file (the slot records' file may be the same) that keeps cursors and results."`
	Wait     bool          `name:"wait" help:"Follow the check to the end (Ctrl-C stops waiting, not the check)."`
	Cancel   bool          `name:"cancel" help:"Stop a running check or repair (with --store, save its cursor)."`
	Continue bool          `name:"continue" help:"Only resume the passes with a cursor in --store (like mdcheck --continue); other arrays are skipped."`
	DryRun   bool          `name:"dry-run" help:"Plan as the real run does (same refusals, skips and exit codes) and print per array what would be started, stopped or skipped and why; write nothing, to the arrays or the store."`
	JSON     bool          `name:"json" help:"Print the results as JSON."`
}

// Help is the command's exit codes, shown by --help.
func (c *CheckCmd) Help() string {
	return exitHelp("check") + `

Mismatches are counted in 512-byte sectors of the regions that differ. On raid1/raid10 they can be harmless (swap, writes in flight); on raid5/raid6 they are a real inconsistency to investigate.`
}

// Run checks the arrays and reports per array; the exit code is the
// worst: 3 failed, 2 refused, 1 mismatches, 0 otherwise.
func (c *CheckCmd) Run(ctx context.Context, k *kong.Context, m *md.Manager) error {
	if c.All == (len(c.Arrays) > 0) {
		return &exitError{code: exitUsage, msg: "name the arrays to check, or --all"}
	}
	req := md.CheckRequest{Arrays: c.Arrays, All: c.All, Repair: c.Repair, Duration: c.Duration, Wait: c.Wait, Cancel: c.Cancel, Continue: c.Continue, DryRun: c.DryRun}
	if c.Store != "" {
		req.Store = store.NewFile(c.Store)
	}
	if !c.JSON && !c.DryRun && (c.Wait || c.Duration > 0) {
		req.Progress = checkProgress(k.Stderr, isTerminal(k.Stderr))
	}
	res, err := m.Check(ctx, req)
	switch {
	case res == nil && (errors.Is(err, store.ErrCorrupt) || errors.Is(err, store.ErrVersion)):
		return &exitError{code: exitRefused, msg: err.Error() + " (nothing was written; the file is not overwritten: move it away to start afresh)"}
	case res == nil && err != nil:
		return &exitError{code: exitFailure, msg: err.Error()}
	}
	if req.Progress != nil && isTerminal(k.Stderr) {
		fmt.Fprintln(k.Stderr)
	}
	if c.JSON {
		if err := printChanges(k.Stdout, res); err != nil {
			return err
		}
	} else {
		for _, r := range res {
			if r.Result == md.CheckStarted && (c.Wait || c.Duration > 0) {
				// Ctrl-C: the waiting stopped, the check did not.
				printLine(k.Stdout, "%s: stopped waiting; the %s continues in the kernel (mdctl check --cancel %s stops it).", r.Array, r.Action, r.Array)
				continue
			}
			printCheck(k.Stdout, r)
		}
		if c.DryRun {
			fmt.Fprintln(k.Stdout, "Dry run: nothing was written.")
		}
	}
	code := exitOK
	for _, r := range res {
		switch {
		case r.Result == md.CheckFailed:
			code = max(code, exitPartial)
		case r.Result == md.CheckRefused:
			code = max(code, exitRefused)
		case r.Action != "repair" && r.MismatchSectors > 0:
			code = max(code, exitMismatches)
		}
	}
	if code != exitOK {
		return &quietExit{code: code}
	}
	return nil
}

// printCheck prints one result, escaped.
func printCheck(w io.Writer, r md.CheckResult) {
	pct := func(n uint64) float64 {
		if r.SizeSectors == 0 {
			return 0
		}
		return float64(n) * 100 / float64(r.SizeSectors)
	}
	switch r.Result {
	case md.CheckRefused:
		printLine(w, "%s: refused (nothing written): %s", r.Array, r.Error)
		return
	case md.CheckFailed:
		printLine(w, "%s: failed: %s", r.Array, r.Error)
		return
	case md.CheckSkipped:
		printLine(w, "%s: skipped: %s.", r.Array, r.Skipped)
		return
	case md.CheckWouldStart:
		from := "from the start"
		if r.ResumedFrom > 0 {
			from = fmt.Sprintf("resuming at sector %d (%.1f%%)", r.ResumedFrom, pct(r.ResumedFrom))
		}
		printLine(w, "%s: would start a %s %s.", r.Array, r.Action, from)
		return
	case md.CheckWouldStop:
		printLine(w, "%s: would stop the running %s at about sector %d of %d (%.1f%%).", r.Array, r.Action, r.PositionSectors, r.SizeSectors, pct(r.PositionSectors))
		return
	case md.CheckStarted:
		from := ""
		if r.ResumedFrom > 0 {
			from = fmt.Sprintf(", resuming at sector %d (%.1f%%)", r.ResumedFrom, pct(r.ResumedFrom))
		}
		printLine(w, "%s: %s started%s (mdctl status %s).", r.Array, r.Action, from, r.Array)
		return
	case md.CheckStopped:
		saved := "no store: the next check starts again from 0"
		if r.CursorSaved {
			saved = "cursor saved; the next run resumes there"
		}
		printLine(w, "%s: %s stopped at sector %d of %d (%.1f%%), %d mismatched sectors so far; %s.", r.Array, r.Action, r.PositionSectors, r.SizeSectors, pct(r.PositionSectors), r.MismatchSectors, saved)
	default:
		printLine(w, "%s: %s finished (%s): %d mismatched sectors.", r.Array, r.Action, r.Result, r.MismatchSectors)
	}
	if r.Meaning != "" {
		printLine(w, "  %s", r.Meaning)
	}
}

// checkProgress prints progress: a bar with ETA redrawn in place on a
// terminal, a plain line per minute otherwise.
func checkProgress(w io.Writer, tty bool) func(md.CheckProgress) {
	var last time.Time
	return func(p md.CheckProgress) {
		pct := 0.0
		if p.TotalSectors > 0 {
			pct = float64(p.DoneSectors) * 100 / float64(p.TotalSectors)
		}
		eta := "-"
		if p.ETA > 0 {
			eta = p.ETA.String()
		}
		if !tty {
			if time.Since(last) < time.Minute {
				return
			}
			last = time.Now()
			printLine(w, "%s: %s %.1f%% (%d/%d sectors) %d KiB/s ETA %s", p.Array, p.Action, pct, p.DoneSectors, p.TotalSectors, p.SpeedKiBs, eta)
			return
		}
		const width = 30
		n := min(int(pct/100*width), width)
		bar := strings.Repeat("=", n) + strings.Repeat(" ", width-n)
		fmt.Fprintf(w, "\r%s %s [%s] %5.1f%% %d KiB/s ETA %s ", escape.Text(p.Array), escape.Text(string(p.Action)), bar, pct, p.SpeedKiBs, eta)
	}
}

// isTerminal reports whether w is a terminal (a character device).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0 && fi.Mode()&os.ModeDevice != 0
}
