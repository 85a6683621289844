package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/alecthomas/kong"

	"github.com/go-mdraid/mdraid/internal/escape"
	"github.com/go-mdraid/mdraid/md"
	"github.com/go-mdraid/mdraid/md/store"
)

// ReAddCmd is `mdctl re-add`.
type ReAddCmd struct {
	Array  string `arg:"" predictor:"array" help:"The array."`
	Device string `arg:"" help:"The former member to put back into its slot (sdb or /dev/sdb)."`
	Store  string `name:"store" placeholder:"FILE" help:"The slot record file (mdctl record --store): the device must then be the disk recorded for its slot, and heal's marks of the slot (not re-added again) are cleared."`
	DryRun bool   `name:"dry-run" help:"Check as the real re-add does (same refusals and exit codes), print what would be done, write nothing."`
	JSON   bool   `name:"json" help:"Print the outcome as JSON: {array, device, result, dry_run, plan, outcome, writes, sync_action, error}; the exit code is the same."`
}

// reAddReport is re-add's --json.
type reAddReport struct {
	Array  string `json:"array"`
	Device string `json:"device"`
	// Result is done, would (a dry run whose checks passed), refused
	// (nothing written) or failed.
	Result     string          `json:"result"`
	DryRun     bool            `json:"dry_run"`
	Plan       *md.ReAddPlan   `json:"plan,omitempty"`
	Outcome    md.ReAddOutcome `json:"outcome,omitempty"`
	Writes     []string        `json:"writes,omitempty"`
	SyncAction string          `json:"sync_action,omitempty"`
	Error      string          `json:"error,omitempty"`
}

// Run puts the former member back: the kernel re-adds it (with a
// bitmap, only what changed is copied) or, when its slot is the only
// free one, rebuilds it in full there.
func (c *ReAddCmd) Run(ctx context.Context, k *kong.Context, m *md.Manager) error {
	req := md.ReAddRequest{Array: c.Array, Device: c.Device}
	st := store.NewFile(c.Store)
	if c.Store != "" {
		rs, err := st.Load(ctx)
		if errors.Is(err, fs.ErrNotExist) {
			return &exitError{code: exitRefused, msg: fmt.Sprintf("no slot records in %s (mdctl record --store %s records the slots of the healthy arrays); without --store the device's superblock alone ties it to its slot", escape.Text(c.Store), escape.Text(c.Store))}
		}
		if err != nil {
			return &exitError{code: exitFailure, msg: err.Error()}
		}
		req.Records = rs
	}
	rep := reAddReport{Array: c.Array, Device: c.Device, DryRun: c.DryRun}
	var err error
	if c.DryRun {
		rep.Plan, err = m.PlanReAdd(ctx, req)
	} else {
		var res *md.ReAddResult
		res, err = m.ReAdd(ctx, req)
		if res != nil {
			rep.Plan, rep.Outcome, rep.Writes, rep.SyncAction = res.Plan, res.Outcome, res.Writes, res.SyncAction
		}
		if err == nil && req.Records != nil && req.Records.ForgetReAdds(res.Plan.UUID, res.Plan.Slot) {
			// The operator's word: heal may re-add this slot's disk again.
			if serr := st.Save(ctx, req.Records); serr != nil {
				err = fmt.Errorf("md: re-added, but heal's marks of slot %d could not be cleared in %s: %w", res.Plan.Slot, c.Store, serr)
			}
		}
	}
	if rep.Plan != nil {
		rep.Array, rep.Device = rep.Plan.Array, rep.Plan.Device
	}
	rep.Result, rep.Error = resultWord(err, c.DryRun), errorText(err)
	if c.JSON {
		if perr := printJSON(k.Stdout, rep); perr != nil {
			return perr
		}
	}
	if err != nil {
		if errors.Is(err, md.ErrRefused) {
			return &exitError{code: exitRefused, msg: err.Error()}
		}
		if len(rep.Writes) > 0 {
			return &exitError{code: exitPartial, msg: err.Error()}
		}
		return &exitError{code: exitFailure, msg: err.Error()}
	}
	if c.JSON {
		return nil
	}
	p := rep.Plan
	if c.DryRun {
		fallback := "if md does not take it back as it was, nothing more is done (other slots are free)"
		if p.Fallback != "" {
			fallback = "if md does not take it back as it was: " + p.Fallback
		}
		fmt.Fprintf(k.Stdout, "%s: would re-add %s into slot %d (events %d, the array's %d; %s): %s; %s; nothing written (dry run).\n",
			escape.Text(p.Array), escape.Text(p.Device), p.Slot, p.Events, p.ArrayEvents, bitmapWord(p.Bitmap), escape.Text(p.Write), escape.Text(fallback))
		return nil
	}
	what := "md took it back as the member it was"
	switch {
	case rep.Outcome == md.ReAddedFull:
		what = "md did not take it back as it was (no bitmap covers the time it was gone); it was added as a spare and is rebuilt in full into its slot"
	case p.Bitmap:
		what += "; with the write-intent bitmap only what changed since it left is copied"
	default:
		what += "; the array has no write-intent bitmap, so it is copied in full"
	}
	fmt.Fprintf(k.Stdout, "%s: %s re-added into slot %d: %s (sync_action %s; writes: %s).\n",
		escape.Text(p.Array), escape.Text(p.Device), p.Slot, what, escape.Text(rep.SyncAction), escape.Text(strings.Join(rep.Writes, ", ")))
	return nil
}

func bitmapWord(b bool) string {
	if b {
		return "the array has a write-intent bitmap"
	}
	return "the array has no write-intent bitmap"
}

// Help is the command's long help.
func (c *ReAddCmd) Help() string {
	return `Puts a former member back into its own slot of a running array, as
mdadm --re-add: a disk that left (a link reset, a loose cable, a late
disk at boot) and comes back. Its md superblock must be the array's
(same UUID and geometry), name itself in a slot that is free, and not be
newer than the array (split brain: refused, both named). With --store
the disk must also be the one recorded for the slot. The kernel decides:
with a write-intent bitmap that covers the time it was gone it copies
only what changed; otherwise, when the slot is the only free one, the
disk is added as a spare and rebuilt in full into it. mdctl never
writes the disk itself.

` + exitHelp("re-add")
}
