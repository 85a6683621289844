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

// AssembleCmd is `mdctl assemble`.
type AssembleCmd struct {
	Scan           bool     `help:"Assemble every array found on the machine's block devices."`
	Start          bool     `name:"run" help:"Start arrays that have enough members but not all (read-auto), rather than leaving them to wait."`
	AddSpares      bool     `name:"add-spares" help:"Hot-add a spare of an array that is already running, as mdadm does (default: refused, since a degraded array rebuilds onto it at once)."`
	PickDuplicates bool     `name:"pick-duplicates" help:"When two devices claim one slot and the other members cannot tell which is current, use the one with the most events, as mdadm does (default: that array is not assembled)."`
	UUIDs          []string `name:"uuid" sep:"," help:"With --scan, only the arrays with these UUIDs (either form; the initramfs's rd.md.uuid)."`
	Names          []string `name:"name" sep:"," help:"With --scan, only the arrays with these names."`
	Verbose        bool     `short:"v" help:"Also list the devices passed over (no superblock, in use)."`
	DryRun         bool     `name:"dry-run" help:"Decide as the real assembly does (same refusals and exit codes), print what would be done with every write it would make, change nothing (not even the map file's lock)."`
	JSON           bool     `name:"json" help:"Print the outcome as JSON: {\"dry_run\", \"devices\": [{device, result, array, path, uuid, started, present, expected, writes, error, ...}], \"not_found\"}; the exit code is the same."`
	Array          string   `arg:"" optional:"" predictor:"array" help:"Only this array: its UUID (either form) or name."`
	Devices        []string `arg:"" optional:"" help:"Only these devices, kernel names (sdb1) or paths (default: every block device)."`
}

// Validate insists on --scan or an array.
func (c *AssembleCmd) Validate() error {
	if !c.Scan && c.Array == "" {
		return errors.New("name an array (UUID or name) or give --scan")
	}
	if c.Scan && c.Array != "" {
		return errors.New("--scan assembles every array: give it no array (--uuid or --name narrow it)")
	}
	if !c.Scan && len(c.UUIDs)+len(c.Names) > 0 {
		return errors.New("--uuid and --name narrow --scan: give --scan too")
	}
	return nil
}

// Run assembles: the end state udev's incremental pass over every device
// leaves. Every array is reported on its own: one failure never hides
// the others.
func (c *AssembleCmd) Run(ctx context.Context, k *kong.Context, m *md.Manager) error {
	res, err := m.Assemble(ctx, md.AssembleRequest{Devices: c.Devices, Array: c.Array, Arrays: append(slices.Clone(c.UUIDs), c.Names...), Run: c.Start, AddSpares: c.AddSpares, PickDuplicates: c.PickDuplicates, DryRun: c.DryRun})
	if c.JSON {
		var nf []string
		if res != nil {
			nf = res.NotFound
		}
		if perr := printDevices(k.Stdout, c.DryRun, assembleReports(res), nf); perr != nil {
			return perr
		}
	} else if res != nil {
		for _, r := range res.Added {
			fmt.Fprintln(k.Stdout, incrementalLine(r))
		}
	}
	if err != nil {
		return assembleError(err, res)
	}
	refused := 0
	for _, s := range res.Skipped {
		quiet := errors.Is(s.Reason, md.ErrInUse)
		if !quiet && !errors.Is(s.Reason, md.ErrLeftBehind) && !errors.Is(s.Reason, md.ErrLeftOut) && !errors.Is(s.Reason, md.ErrSpareNotAdded) {
			refused++
		}
		if c.JSON || (quiet && !c.Verbose) {
			continue
		}
		fmt.Fprintf(k.Stderr, "mdctl: %s: not added: %s\n", escape.Text(s.Device), escape.Text(s.Reason.Error()))
	}
	for _, f := range res.Failed {
		if !c.JSON {
			fmt.Fprintf(k.Stderr, "mdctl: %s: failed: %s\n", escape.Text(f.Device), escape.Text(failureText(f)))
		}
	}
	if len(res.Failed) > 0 {
		return &exitError{code: exitPartial, msg: fmt.Sprintf("%d device(s) failed (each named above); every other array is assembled", len(res.Failed))}
	}
	if c.Array != "" && len(res.Added) == 0 {
		return &exitError{code: exitRefused, msg: fmt.Sprintf("no device of array %s found", escape.Text(c.Array))}
	}
	if missing := res.NotFound; len(c.UUIDs)+len(c.Names) > 0 && len(missing) > 0 {
		return &exitError{code: exitRefused, msg: fmt.Sprintf("no device of array %s found", escape.Text(strings.Join(missing, ", ")))}
	}
	if refused > 0 {
		return &exitError{code: exitRefused, msg: fmt.Sprintf("%d device(s) refused; the others are assembled", refused)}
	}
	if c.DryRun && !c.JSON {
		fmt.Fprintln(k.Stdout, "mdctl: nothing written (dry run).")
	}
	return nil
}

// failureText is one failure's error with every change made for it.
func failureText(f md.Failure) string {
	if f.Result == nil || len(f.Result.Writes) == 0 {
		return f.Err.Error() + " (nothing changed)"
	}
	return fmt.Sprintf("%v (changed: %s)", f.Err, strings.Join(f.Result.Writes, ", "))
}

// Help is the command's long help: what it decides, and its exit codes.
func (c *AssembleCmd) Help() string {
	return `Assembles arrays from their superblocks with no configuration: the
end state of mdctl incremental over every block device in the kernel's
order, which is what udev leaves at boot. Unlike mdadm --assemble --scan
it assembles foreign arrays too and does not give up at an out-of-date
member of a running array (it names it and goes on). Arrays that have
enough members but not all wait, as under udev, unless --run starts them
(read-auto).

One bad device never stops the other arrays: a device the kernel refuses,
or an array that does not start, is named on a line of its own, and an
array this command created that did not start is stopped again and
gives back its name. Stricter than mdadm: a spare of a running array is
not hot-added (--add-spares), and a slot claimed by two devices that the
other members cannot tell apart leaves that array unassembled
(--pick-duplicates).

` + exitHelp("assemble")
}

// assembleError maps an error that stopped Assemble to its exit code as
// assemblyError does, with every change Assemble made before it stopped:
// the writes of each device added and of the devices that failed, each
// named. 3 when anything was changed, else 2 for a refusal and 1.
func assembleError(err error, res *md.AssembleResult) error {
	var changed []string
	if res != nil {
		rs := res.Added
		for _, f := range res.Failed {
			if f.Result != nil {
				rs = append(rs[:len(rs):len(rs)], f.Result)
			}
		}
		for _, r := range rs {
			if len(r.Writes) > 0 {
				changed = append(changed, escape.Text(r.Device+": "+strings.Join(r.Writes, ", ")))
			}
		}
	}
	if len(changed) == 0 {
		return assemblyError(err, nil)
	}
	return &exitError{code: exitPartial, msg: fmt.Sprintf("%v (changed: %s)", err, strings.Join(changed, "; "))}
}
