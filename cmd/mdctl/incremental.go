package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/alecthomas/kong"

	"github.com/go-mdraid/mdraid/internal/escape"
	"github.com/go-mdraid/mdraid/md"
)

// IncrementalCmd is `mdctl incremental`.
type IncrementalCmd struct {
	Device    string `arg:"" help:"The block device to add (what udev found): a kernel name (sdb1) or a path."`
	Start     bool   `name:"run" help:"Start the array as soon as enough members are present (read-auto), without waiting for the rest."`
	AddSpares bool   `name:"add-spares" help:"Hot-add the device to its running array when its superblock makes it a spare, as mdadm does (default: refused, since a degraded array rebuilds onto it at once)."`
	Export    bool   `help:"Print the udev keys of mdadm --incremental --export (MD_DEVICE, MD_DEVNAME, MD_FOREIGN, MD_STARTED) instead of text."`
	DryRun    bool   `name:"dry-run" help:"Decide as the real call does (same refusals and exit codes), print what would be done with every write it would make, change nothing (not even the map file's lock)."`
	JSON      bool   `name:"json" help:"Print the outcome as JSON: {\"dry_run\", \"devices\": [{device, result, array, path, uuid, started, present, expected, writes, error, ...}]}; the exit code is the same."`
}

// Validate refuses --export with --json: one output.
func (c *IncrementalCmd) Validate() error {
	if c.Export && c.JSON {
		return errors.New("--export and --json are two outputs: give one")
	}
	return nil
}

// Run adds the device to the array its superblock names (creating it for
// the first member) and starts the array once every member it expects is
// there, as mdadm --incremental does for udev.
func (c *IncrementalCmd) Run(ctx context.Context, k *kong.Context, m *md.Manager) error {
	r, err := m.Incremental(ctx, md.IncrementalRequest{Device: c.Device, Run: c.Start, AddSpares: c.AddSpares, DryRun: c.DryRun})
	if c.JSON {
		d := deviceReportOf(c.Device, r, err)
		d.DryRun = c.DryRun
		if perr := printDevices(k.Stdout, c.DryRun, []deviceReport{d}, nil); perr != nil {
			return perr
		}
	}
	if err != nil {
		return assemblyError(err, r)
	}
	if c.JSON {
		return nil
	}
	if c.Export {
		printIncrementalExport(k.Stdout, r)
		return nil
	}
	fmt.Fprintln(k.Stdout, incrementalLine(r))
	if c.DryRun {
		fmt.Fprintln(k.Stdout, "mdctl: nothing written (dry run).")
	}
	return nil
}

// assemblyError maps an Incremental or Assemble error to its exit code:
// 2 for a refusal (nothing changed), 3 when something was changed (the
// message lists it), 1 otherwise.
func assemblyError(err error, r *md.IncrementalResult) error {
	if errors.Is(err, md.ErrRefused) {
		return &exitError{code: exitRefused, msg: err.Error()}
	}
	if r != nil && len(r.Writes) > 0 {
		return &exitError{code: exitPartial, msg: fmt.Sprintf("%v (changed: %s)", err, strings.Join(r.Writes, ", "))}
	}
	return &exitError{code: exitFailure, msg: err.Error()}
}

// printIncrementalExport prints mdadm's keys. Every value is made here or
// is a name md made safe (md.SafeName), never raw disk bytes.
func printIncrementalExport(w io.Writer, r *md.IncrementalResult) {
	foreign := "no"
	if r.Foreign {
		foreign = "yes"
	}
	fmt.Fprintf(w, "MD_DEVICE=%s\nMD_DEVNAME=%s\nMD_FOREIGN=%s\nMD_STARTED=%s\n",
		escape.Text(r.Array), escape.Text(r.DevName()), foreign, r.Started)
}

// incrementalLine says what became of the device and its array.
func incrementalLine(r *md.IncrementalResult) string {
	var b strings.Builder
	verb, start := "added", "started"
	if r.DryRun {
		verb, start = "would be added", "would start"
	}
	fmt.Fprintf(&b, "%s: %s to %s (%s, %d of %d members)", r.Device, verb, r.Array, r.Path, r.Present, r.Expected)
	switch r.Started {
	case md.StartYes:
		if r.ReadAuto {
			fmt.Fprintf(&b, ": %s read-auto", start)
		} else {
			fmt.Fprintf(&b, ": %s", start)
		}
	case md.StartAlready:
		b.WriteString(": the array was running")
	case md.StartUnsafe:
		fmt.Fprintf(&b, ": enough to start, waiting for the rest (mdctl run %s starts it now)", r.Array)
	case md.StartNo:
		if r.Held != "" {
			fmt.Fprintf(&b, ": not started: %s", r.Held)
		} else {
			b.WriteString(": not enough members to start yet")
		}
	}
	detached := "detached"
	if r.DryRun {
		detached = "would detach"
	}
	for _, k := range r.Kicked {
		fmt.Fprintf(&b, "; %s %s (the freshest member says it failed)", detached, k)
	}
	for _, lb := range r.LeftBehind {
		fmt.Fprintf(&b, "; %s left behind (events %d, the array's %d)", lb.Device, lb.Events, lb.Want)
	}
	if r.DryRun && len(r.Writes) > 0 {
		fmt.Fprintf(&b, "; would write: %s", strings.Join(r.Writes, ", "))
	}
	return escape.Text(b.String()) + "."
}

// Help is the command's long help: what it decides, and its exit codes.
func (c *IncrementalCmd) Help() string {
	return `Adds one device to the array its superblock names, as udev's mdadm
--incremental does, with mdadm's rules and no mdadm.conf: an array is
local when its name starts with the homehost (--homehost, default the
host name) and is started with RUN_ARRAY once every member it expects
is present; a foreign array, or one started with --run one member short,
starts read-auto. Names and numbers are mdadm's (/dev/md/NAME, md127
downwards; a local 0.90 array gets its preferred minor), and mdadm's map
file (--map-dir) is kept so that mdadm sees the same arrays. Without
udev (or with MDADM_NO_UDEV=1) /dev/mdN and /dev/md/NAME are made here.
The device is never written: the kernel reads its superblock.

` + exitHelp("incremental")
}
