package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/alecthomas/kong"

	"github.com/go-mdraid/mdraid/internal/escape"
	"github.com/go-mdraid/mdraid/md"
)

// ZeroCmd is `mdctl zero-superblock`.
type ZeroCmd struct {
	Devices []string `arg:"" help:"The devices (sdb or /dev/sdb)."`
	DryRun  bool     `name:"dry-run" help:"Check as the real run does (same refusals and exit codes), print which bytes of each device would be erased, write nothing."`
	JSON    bool     `name:"json" help:"Print the outcome as JSON: {result, dry_run, devices, zeroed, error}; the exit code is the same."`
}

// zeroReport is zero-superblock's --json.
type zeroReport struct {
	// Result is done, would (a dry run whose checks passed), refused
	// (nothing written) or failed.
	Result  string          `json:"result"`
	DryRun  bool            `json:"dry_run"`
	Devices []md.ZeroDevice `json:"devices"`
	Zeroed  []string        `json:"zeroed"`
	Error   string          `json:"error,omitempty"`
}

// Run erases the superblocks, or says which bytes it would.
func (c *ZeroCmd) Run(ctx context.Context, k *kong.Context, m *md.Manager) error {
	req := md.ZeroRequest{Devices: c.Devices}
	rep := zeroReport{DryRun: c.DryRun, Devices: []md.ZeroDevice{}, Zeroed: []string{}}
	var plan *md.ZeroPlan
	var err error
	if c.DryRun {
		plan, err = m.PlanZeroSuperblock(ctx, req)
	} else {
		var res *md.ZeroResult
		res, err = m.ZeroSuperblock(ctx, req)
		if res != nil {
			plan, rep.Zeroed = res.Plan, res.Zeroed
		}
	}
	if plan != nil {
		rep.Devices = plan.Devices
	}
	rep.Result, rep.Error = resultWord(err, c.DryRun), errorText(err)
	if c.JSON {
		if perr := printJSON(k.Stdout, rep); perr != nil {
			return perr
		}
	}
	if !c.JSON {
		for _, d := range rep.Devices {
			if !c.DryRun && !slices.Contains(rep.Zeroed, d.Path) {
				continue
			}
			verb := "erased"
			if c.DryRun {
				verb = "would erase"
			}
			for _, z := range d.Superblocks {
				var areas []string
				for _, a := range z.Areas {
					areas = append(areas, fmt.Sprintf("%s (%d bytes at byte %d)", a.What, a.Bytes, a.Offset))
				}
				name := ""
				if z.Name != "" {
					name = fmt.Sprintf(", name %s", escape.Text(z.Name))
				}
				fmt.Fprintf(k.Stdout, "%s: %s the md superblock %s of array %s%s: %s.\n",
					escape.Text(d.Path), verb, z.Version, z.ArrayUUID, name, strings.Join(areas, ", "))
			}
		}
		if c.DryRun && err == nil {
			fmt.Fprintln(k.Stdout, "Nothing written (dry run).")
		}
	}
	switch {
	case err == nil:
		return nil
	case errors.Is(err, md.ErrRefused):
		return &exitError{code: exitRefused, msg: err.Error()}
	}
	if ze := (*md.ZeroError)(nil); errors.As(err, &ze) && (!ze.NothingWritten || len(ze.Zeroed) > 0) {
		return &exitError{code: exitPartial, msg: err.Error()}
	}
	return &exitError{code: exitFailure, msg: err.Error()}
}

// Help is the command's long help.
func (c *ZeroCmd) Help() string {
	return `Erases the md superblock of each device, as mdadm --zero-superblock:
the superblock itself and what belongs to it (its write-intent bitmap,
bad-block log and partial parity log), computed from the superblock and
written with zeros; nothing else. Every superblock found on a device is
erased (a disk can carry stale ones of several versions). Refused, with
nothing written to any device named: a device with no md superblock, a
damaged one (what belongs to it cannot be told), a member of an array
(also an inactive one), a device held, mounted or open exclusively (each
named), and a disk that holds a signature or partition table outside its
array's data (it was used again after the array). The last check runs on
the exclusive descriptor that writes.

` + exitHelp("zero-superblock")
}
