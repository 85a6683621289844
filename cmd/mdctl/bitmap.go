package main

import (
	"context"
	"fmt"

	"github.com/alecthomas/kong"

	"github.com/go-mdraid/mdraid/internal/escape"
	"github.com/go-mdraid/mdraid/md"
)

// BitmapCmd is `mdctl bitmap`.
type BitmapCmd struct {
	Array  string `arg:"" predictor:"array" help:"The array."`
	Kind   string `arg:"" enum:"internal,none" help:"internal (add the write-intent bitmap) or none (remove it)."`
	Chunk  uint64 `name:"chunk" placeholder:"KiB" help:"Bitmap chunk in KiB (a power of two, at least 4); default mdadm's: 64 MiB, or more when the room needs it."`
	DryRun bool   `name:"dry-run" help:"Check as the real change does (same refusals and exit codes), print what would be written, write nothing."`
	JSON   bool   `name:"json" help:"Print the outcome as JSON: {array, result, dry_run, plan, written, location, error}; the exit code is the same."`
}

// bitmapReport is bitmap's --json.
type bitmapReport struct {
	Array    string         `json:"array"`
	Result   string         `json:"result"`
	DryRun   bool           `json:"dry_run"`
	Plan     *md.BitmapPlan `json:"plan,omitempty"`
	Written  []string       `json:"written"`
	Location string         `json:"location,omitempty"`
	Error    string         `json:"error,omitempty"`
}

// Run adds or removes the bitmap.
func (c *BitmapCmd) Run(ctx context.Context, k *kong.Context, m *md.Manager) error {
	if c.Kind == "none" && c.Chunk != 0 {
		return &exitError{code: exitUsage, msg: "--chunk is for adding a bitmap (internal)"}
	}
	req := md.BitmapRequest{Array: c.Array, Internal: c.Kind == "internal", ChunkKiB: c.Chunk}
	rep := bitmapReport{Array: c.Array, DryRun: c.DryRun, Written: []string{}}
	var err error
	if c.DryRun {
		rep.Plan, err = m.PlanBitmap(ctx, req)
	} else {
		var res *md.BitmapResult
		res, err = m.SetBitmap(ctx, req)
		if res != nil {
			rep.Plan, rep.Written, rep.Location = res.Plan, res.Written, res.Location
		}
	}
	if rep.Plan != nil {
		rep.Array = rep.Plan.Array
	}
	rep.Result, rep.Error = resultWord(err, c.DryRun), errorText(err)
	if done, exit := changeOutcome(k.Stdout, c.JSON, rep, err, len(rep.Written) > 0); done {
		return exit
	}
	p := rep.Plan
	array := escape.Text(p.Array)
	switch {
	case !p.Add && c.DryRun:
		fmt.Fprintf(k.Stdout, "%s: would remove the bitmap (bitmap/location=none); nothing written (dry run).\n", array)
	case !p.Add:
		fmt.Fprintf(k.Stdout, "%s: bitmap removed (bitmap/location reads %s).\n", array, escape.Text(rep.Location))
	default:
		verb := "wrote"
		if c.DryRun {
			verb = "would write"
		}
		for _, w := range p.Members {
			fmt.Fprintf(k.Stdout, "%s: %s the bitmap to %s: %d bytes at byte %d.\n", array, verb, escape.Text(w.Device), w.Bytes, w.Offset)
		}
		if c.DryRun {
			fmt.Fprintf(k.Stdout, "%s: would set bitmap/location=%s (chunk %d KiB, %d sectors); nothing written (dry run).\n", array, p.Location, p.ChunkBytes/1024, p.SyncSectors)
		} else {
			fmt.Fprintf(k.Stdout, "%s: internal bitmap added at %s sectors from the superblock, chunk %d KiB.\n", array, escape.Text(rep.Location), p.ChunkBytes/1024)
		}
	}
	return nil
}

// Help is the command's long help.
func (c *BitmapCmd) Help() string {
	return `Adds or removes the internal write-intent bitmap of a running array, as
mdadm --grow --bitmap=internal|none. With a bitmap md copies only what
changed when a member comes back (mdctl re-add). Adding writes the
bitmap, every bit set, to each in-sync member where mdadm puts it
(between the superblock and the data for 1.1 and 1.2, before the
bad-block log at the end for 1.0), then its offset to bitmap/location:
md loads it, records it in the superblocks and, the array being in
sync, clears the bits without a resync. Removing writes none there.
Refused, nothing written: while a resync, recovery, reshape or check
runs, an array that is not running, not redundant, not 1.x or with a
partial parity log, one that has a bitmap (add) or none (remove), and a
member whose bitmap area holds anything but zeros or an old bitmap of
this array.

` + exitHelp("bitmap")
}
