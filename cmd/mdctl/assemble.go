package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/alecthomas/kong"

	"github.com/go-mdraid/mdraid/internal/escape"
	"github.com/go-mdraid/mdraid/md"
)

// AssembleCmd is `mdctl assemble`.
type AssembleCmd struct {
	Scan    bool     `help:"Assemble every array found on the machine's block devices."`
	Start   bool     `name:"run" help:"Start arrays that have enough members but not all (read-auto), rather than leaving them to wait."`
	Verbose bool     `short:"v" help:"Also list the devices passed over (no superblock, in use)."`
	Array   string   `arg:"" optional:"" predictor:"array" help:"Only this array: its UUID (either form) or name."`
	Devices []string `arg:"" optional:"" type:"path" help:"Only these devices (default: every block device)."`
}

// Validate insists on --scan or an array.
func (c *AssembleCmd) Validate() error {
	if !c.Scan && c.Array == "" {
		return errors.New("name an array (UUID or name) or give --scan")
	}
	if c.Scan && c.Array != "" {
		return errors.New("--scan assembles every array: give it no array")
	}
	return nil
}

// Run assembles: the end state udev's incremental pass over every device
// leaves.
func (c *AssembleCmd) Run(ctx context.Context, k *kong.Context, m *md.Manager) error {
	res, err := m.Assemble(ctx, md.AssembleRequest{Devices: c.Devices, Array: c.Array, Run: c.Start})
	if res != nil {
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
		if quiet && !c.Verbose {
			continue
		}
		if !quiet && !errors.Is(s.Reason, md.ErrLeftBehind) {
			refused++
		}
		fmt.Fprintf(k.Stderr, "mdctl: %s: not added: %s\n", escape.Text(s.Device), escape.Text(s.Reason.Error()))
	}
	if c.Array != "" && len(res.Added) == 0 {
		return &exitError{code: exitRefused, msg: fmt.Sprintf("no device of array %s found", escape.Text(c.Array))}
	}
	if refused > 0 {
		return &exitError{code: exitRefused, msg: fmt.Sprintf("%d device(s) refused; the others are assembled", refused)}
	}
	return nil
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

` + exitHelp("assemble")
}

// assembleError maps an Assemble error to its exit code as assemblyError
// does, with every change Assemble made before it stopped: the writes of
// each device added and of the devices that failed (res.Failed and
// res.AlsoFailed), each named. 3 when anything was changed, else 2 for a refusal and 1.
func assembleError(err error, res *md.AssembleResult) error {
	var changed []string
	if res != nil {
		rs := res.Added
		if res.Failed != nil {
			rs = append(rs[:len(rs):len(rs)], res.Failed)
		}
		rs = append(rs[:len(rs):len(rs)], res.AlsoFailed...)
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
