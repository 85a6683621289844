package main

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/alecthomas/kong"

	"github.com/go-mdraid/mdraid/internal/escape"
	"github.com/go-mdraid/mdraid/md"
)

// GrowCmd is `mdctl grow`.
type GrowCmd struct {
	Array  string `arg:"" predictor:"array" help:"The array."`
	Size   string `name:"size" short:"z" required:"" placeholder:"max|KiB" help:"The space each member gives the array: max (all that every member has, after each was replaced by a bigger disk), or a size in KiB (suffixes K, M, G, T); never less than now."`
	DryRun bool   `name:"dry-run" help:"Check as the real change does (same refusals and exit codes), print what would be asked of md, write nothing."`
	JSON   bool   `name:"json" help:"Print the outcome as JSON: {array, result, dry_run, plan, resized, component_kib, array_kib, sync_action, error}; the exit code is the same."`
}

// growReport is grow's --json.
type growReport struct {
	Array        string       `json:"array"`
	Result       string       `json:"result"`
	DryRun       bool         `json:"dry_run"`
	Plan         *md.GrowPlan `json:"plan,omitempty"`
	Resized      []string     `json:"resized"`
	ComponentKiB uint64       `json:"component_kib,omitempty"`
	ArrayKiB     uint64       `json:"array_kib,omitempty"`
	SyncAction   string       `json:"sync_action,omitempty"`
	Error        string       `json:"error,omitempty"`
}

// parseGrowSize reads --size: "max" (0) or KiB with an optional K, M,
// G or T suffix, as mdadm's --size.
func parseGrowSize(s string) (uint64, error) {
	if strings.EqualFold(s, "max") {
		return 0, nil
	}
	shift := 0
	if n := len(s); n > 0 {
		switch s[n-1] {
		case 'K', 'k':
			shift = 0
		case 'M', 'm':
			shift = 10
		case 'G', 'g':
			shift = 20
		case 'T', 't':
			shift = 30
		}
		if strings.ContainsRune("KkMmGgTt", rune(s[n-1])) {
			s = s[:n-1]
		}
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil || v == 0 || v > (1<<63)>>shift {
		return 0, fmt.Errorf("--size: want max or a size in KiB (suffixes K, M, G, T), not %q", s)
	}
	return v << shift, nil
}

// Run changes the size.
func (c *GrowCmd) Run(ctx context.Context, k *kong.Context, m *md.Manager) error {
	kib, err := parseGrowSize(c.Size)
	if err != nil {
		return &exitError{code: exitUsage, msg: err.Error()}
	}
	req := md.GrowRequest{Array: c.Array, SizeKiB: kib}
	rep := growReport{Array: c.Array, DryRun: c.DryRun, Resized: []string{}}
	if c.DryRun {
		rep.Plan, err = m.PlanGrow(ctx, req)
	} else {
		var res *md.GrowResult
		res, err = m.Grow(ctx, req)
		if res != nil {
			rep.Plan, rep.Resized = res.Plan, res.Resized
			rep.ComponentKiB, rep.ArrayKiB, rep.SyncAction = res.ComponentKiB, res.ArrayKiB, res.SyncAction
		}
	}
	if rep.Plan != nil {
		rep.Array = rep.Plan.Array
	}
	rep.Result, rep.Error = resultWord(err, c.DryRun), errorText(err)
	if done, exit := changeOutcome(k.Stdout, c.JSON, rep, err, len(rep.Resized) > 0); done {
		return exit
	}
	p := rep.Plan
	array := escape.Text(p.Array)
	if p.Unchanged {
		fmt.Fprintf(k.Stdout, "%s: each member gives %d KiB already (the most: %d KiB); nothing written.\n", array, p.FromKiB, p.MaxKiB)
		return nil
	}
	verb := "asked"
	if c.DryRun {
		verb = "would ask"
	}
	for _, gm := range p.Members {
		if !slices.Contains(p.Resize, gm.Device) {
			continue
		}
		moved := ""
		if gm.NewSuperblockSector != gm.SuperblockSector {
			moved = fmt.Sprintf("; md writes its superblock at sector %d (was %d)", gm.NewSuperblockSector, gm.SuperblockSector)
		}
		fmt.Fprintf(k.Stdout, "%s: %s md to let %s give %d KiB (it gives %d)%s.\n", array, verb, escape.Text(gm.Device), p.ToKiB, gm.NowKiB, moved)
	}
	if c.DryRun {
		fmt.Fprintf(k.Stdout, "%s: would set component_size %d -> %d KiB; nothing written (dry run).\n", array, p.FromKiB, p.ToKiB)
		return nil
	}
	fmt.Fprintf(k.Stdout, "%s: component size %d -> %d KiB, array %d KiB.\n", array, p.FromKiB, rep.ComponentKiB, rep.ArrayKiB)
	if rep.SyncAction != "idle" {
		fmt.Fprintf(k.Stdout, "%s: md is syncing the new space (sync_action %s): mdctl wait %s\n", array, escape.Text(rep.SyncAction), array)
	}
	return nil
}

// Help is the command's long help.
func (c *GrowCmd) Help() string {
	return `Changes the space each member gives a running array, as mdadm --grow
--size: --size=max is the last step after each member was replaced by a
bigger disk (mdctl replace, one at a time, each rebuilt). Each member
that gives less than the new size is raised first (md/dev-N/size: md
records the new data size in its superblock and, for 0.90 and 1.0,
writes the superblock at the end of a device that grew), then the array
(md/component_size); md resizes the array and an internal bitmap and
resyncs the new space. The number of members never changes.
Refused, nothing written: a level md cannot resize (raid0, linear,
raid10 far), metadata not 0.90 or 1.x, an array that is not running,
read-only, degraded or with a faulty member listed, while a resync,
recovery, reshape or check runs (or recovery is frozen), a size smaller
than now (it would cut off the end of the data), larger than a member
can give by md's rule for its metadata, or not a multiple of the chunk,
and a 0.90 or 1.0 array with an internal bitmap whose members would
have to give more (md will not move the bitmap: remove it first).

` + exitHelp("grow")
}
