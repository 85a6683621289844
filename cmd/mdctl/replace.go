package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/alecthomas/kong"

	"github.com/go-mdraid/mdraid/internal/escape"
	"github.com/go-mdraid/mdraid/md"
	"github.com/go-mdraid/mdraid/sysfs"
)

// ReplaceCmd is `mdctl replace`.
type ReplaceCmd struct {
	Array  string `arg:"" predictor:"array" help:"The array (md127, /dev/md127, /dev/md/boot or a name)."`
	With   string `name:"with" required:"" placeholder:"NEWDEV" help:"The new, blank disk: a kernel name (sdc, that is /dev/sdc) or a path (/dev/disk/by-id/...)."`
	Slot   *int   `name:"slot" placeholder:"N" help:"The slot to fill; needed when several slots are empty."`
	Member string `name:"member" placeholder:"OLD" help:"The old member: a faulty member to remove first, or with --hot the live member to replace."`
	DryRun bool   `name:"dry-run" help:"Print the plan and every check; write nothing."`
	Wait   bool   `name:"wait" help:"Follow the rebuild until the new member is in sync (Ctrl-C stops waiting, not the rebuild)."`
	Hot    bool   `name:"hot" help:"Replace a live member (--member) while it stays in service; it is removed once the copy is complete (with --wait)."`
	JSON   bool   `name:"json" help:"Print the plan with every check, and the outcome, as one JSON object (result would, done, refused or failed); the exit code is the same."`
}

// replaceJSON is what replace --json prints.
type replaceJSON struct {
	// Result is would (a dry run whose checks passed), done, refused
	// (nothing written) or failed (Error says what was changed).
	Result string `json:"result"`
	DryRun bool   `json:"dry_run"`
	// Plan is the plan and every check (absent when the array could not
	// be read at all).
	Plan *md.Plan `json:"plan,omitempty"`
	// Done is the outcome of the replace that was carried out.
	Done  *md.ReplaceResult `json:"done,omitempty"`
	Error string            `json:"error,omitempty"`
}

// printReplaceJSON prints the object for plan p, result res and err.
func printReplaceJSON(w io.Writer, dry bool, p *md.Plan, res *md.ReplaceResult, err error) error {
	out := replaceJSON{DryRun: dry, Plan: p, Done: res}
	switch {
	case err != nil:
		out.Error = err.Error()
		out.Result = "failed"
		var ee *md.ExecError
		if (errors.As(err, &ee) && ee.NothingChanged) || (!errors.As(err, &ee) && errors.Is(err, md.ErrRefused)) {
			out.Result = "refused"
		}
	case dry:
		out.Result = "would"
	default:
		out.Result = "done"
	}
	if res != nil {
		out.Plan = nil // in Done
	}
	b, merr := json.MarshalIndent(out, "", "  ")
	if merr != nil {
		return merr
	}
	_, merr = fmt.Fprintf(w, "%s\n", b)
	return merr
}

// Run plans the replace, prints the plan on --dry-run or on refusal, and
// otherwise carries it out. Exit codes: 0 done, 1 error, 2 refused
// (nothing written), 3 failed after a change (the message says what was
// left).
func (c *ReplaceCmd) Run(ctx context.Context, k *kong.Context, m *md.Manager) error {
	req := md.ReplaceRequest{Array: c.Array, With: c.With, Slot: c.Slot, Member: c.Member, Hot: c.Hot}
	p, err := m.PlanReplace(ctx, req)
	if c.JSON && (c.DryRun || err != nil) {
		if perr := printReplaceJSON(k.Stdout, c.DryRun, p, nil, err); perr != nil {
			return perr
		}
	}
	if p != nil && !c.JSON && (c.DryRun || err != nil) {
		printPlan(k.Stdout, p)
	}
	if err != nil {
		return replaceError(err)
	}
	if c.DryRun {
		if !c.JSON {
			fmt.Fprintln(k.Stdout, "Dry run: nothing was written.")
		}
		return nil
	}
	res, err := m.ExecuteReplace(ctx, p)
	if c.JSON {
		if perr := printReplaceJSON(k.Stdout, false, p, res, err); perr != nil {
			return perr
		}
	}
	if err != nil {
		return replaceError(err)
	}
	if c.JSON {
		if !c.Wait {
			return nil
		}
		w := md.WaitRequest{Array: res.Plan.Array, Member: res.Member, Progress: progressPrinter(k.Stderr)}
		if c.Hot {
			w.Replaced = res.Plan.Replace.Device
		}
		return waitAndReport(ctx, k, k.Stderr, m, w) // stdout holds the JSON
	}
	printLine(k.Stdout, "%s: %s now holds slot %d (sync_action %s) after %v.",
		res.Plan.Array, res.Plan.Candidate.Path, res.Slot, res.SyncAction, res.Duration.Round(time.Microsecond))
	if !c.Wait {
		return nil
	}
	w := md.WaitRequest{Array: res.Plan.Array, Member: res.Member, Progress: progressPrinter(k.Stderr)}
	if c.Hot {
		w.Replaced = res.Plan.Replace.Device
	}
	return waitAndReport(ctx, k, k.Stdout, m, w)
}

// replaceError maps the library's errors to exit codes.
func replaceError(err error) error {
	var ee *md.ExecError
	switch {
	case errors.As(err, &ee):
		// Its message says exactly what was changed; the cause may
		// itself be ErrPlanChanged (the path now names another disk)
		// after the remove step ran.
		if ee.NothingChanged {
			return &exitError{code: exitRefused, msg: err.Error()}
		}
		return &exitError{code: exitPartial, msg: err.Error()}
	case errors.Is(err, md.ErrRefused):
		return &exitError{code: exitRefused, msg: err.Error() + " (nothing was written)"}
	}
	return &exitError{code: exitFailure, msg: err.Error()}
}

// printPlan prints the plan and every check, each line escaped (reasons
// can quote names from disks).
func printPlan(w io.Writer, p *md.Plan) {
	kind := "Replace"
	if p.Hot {
		kind = "Hot replace"
	}
	printLine(w, "%s in %s (%s, metadata %s, %d slots, UUID %s)", kind, p.Array, p.Level, p.Metadata, p.RaidDisks, p.UUID)
	if p.Resume != md.ResumeNone {
		printLine(w, "Resuming an interrupted replace (%s).", p.Resume)
	}
	fmt.Fprintln(w, "Checks:")
	for _, ck := range p.Checks {
		printLine(w, "  [%s] %s: %s", ck.Status, ck.Name, ck.Reason)
	}
	if len(p.Steps) > 0 {
		fmt.Fprintln(w, "Steps:")
		for i, st := range p.Steps {
			printLine(w, "  %d. %s", i+1, st.Detail)
		}
	}
	if len(p.Writes) > 0 {
		printLine(w, "Writes on %s:", p.Candidate.Path)
		for _, wr := range p.Writes {
			printLine(w, "  %s: %d bytes at byte %d", wr.What, wr.Length, wr.Offset)
		}
	}
}

// progressPrinter draws a one-line progress bar on w.
func progressPrinter(w io.Writer) func(md.Array) {
	return func(a md.Array) {
		act := a.Activity
		if act.Kind == sysfs.ActionIdle || act.TotalSectors == 0 {
			return
		}
		const width = 30
		n := int(act.Percent / 100 * width)
		bar := strings.Repeat("=", n) + strings.Repeat(" ", width-n)
		eta := "-"
		if act.ETASeconds > 0 {
			eta = (time.Duration(act.ETASeconds) * time.Second).String()
		}
		fmt.Fprintf(w, "\r%s %s [%s] %5.1f%% %d KiB/s ETA %s ", escape.Text(a.Device), escape.Text(string(act.Kind)), bar, act.Percent, act.SpeedKiBs, eta)
	}
}

// waitAndReport follows the rebuild and checks the array's health after.
// Ctrl-C stops the waiting only. Its lines go to out.
func waitAndReport(ctx context.Context, k *kong.Context, out io.Writer, m *md.Manager, w md.WaitRequest) error {
	a, err := m.WaitReplace(ctx, w)
	fmt.Fprintln(k.Stderr)
	if errors.Is(err, context.Canceled) {
		printLine(out, "Stopped waiting; the rebuild of %s continues in the kernel (mdctl status %s).", w.Member, w.Array)
		return nil
	}
	if err != nil {
		return &exitError{code: exitPartial, msg: err.Error()}
	}
	printLine(out, "%s: %s is in sync; the array is %s with %s redundancy.", a.Device, w.Member, a.Availability, a.Redundancy)
	if a.Availability != md.Online {
		return &exitError{code: exitPartial, msg: fmt.Sprintf("%s is %s after the rebuild", a.Device, a.Availability)}
	}
	return nil
}
