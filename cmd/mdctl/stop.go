package main

import (
	"context"
	"errors"
	"io"
	"strings"

	"github.com/alecthomas/kong"

	"github.com/go-mdraid/mdraid/md"
)

// StopCmd is `mdctl stop`.
type StopCmd struct {
	Scan   bool     `help:"Stop every array that can be stopped, arrays stacked on others first (as mdadm --stop --scan); those in use are named and left running."`
	Arrays []string `arg:"" optional:"" predictor:"array" help:"The arrays to stop (md127, /dev/md/boot, boot, or a UUID)."`
	DryRun bool     `name:"dry-run" help:"Check as the real stop does (same refusals and exit codes), print what would be done, write nothing."`
	JSON   bool     `name:"json" help:"Print the outcome as JSON: {\"arrays\": [{array, result, dry_run, write, removed, error}]}, one entry per array; the exit code is the same."`
}

// Validate insists on arrays or --scan, not both.
func (c *StopCmd) Validate() error {
	if c.Scan == (len(c.Arrays) > 0) {
		return errors.New("name the arrays to stop, or give --scan for every array")
	}
	return nil
}

// Help is the command's exit codes, shown by --help.
func (c *StopCmd) Help() string { return exitHelp("stop") }

// Run stops each array in turn (md.Manager.Stop), as mdadm --stop does.
// It refuses (exit 2) an array that is mounted, held, used as swap or
// open by a process, naming who. With several arrays, each is tried and
// the exit code is the worst: 3 (stopped, cleanup failed) over 1
// (failed) over 2 (refused).
func (c *StopCmd) Run(ctx context.Context, k *kong.Context, m *md.Manager) error {
	var errs perArray
	var reports []changeReport
	arrays := c.Arrays
	if c.Scan {
		var err error
		if arrays, err = m.StopOrder(ctx); err != nil {
			return &exitError{code: exitFailure, msg: err.Error()}
		}
	}
	for _, a := range arrays {
		label := a
		if st, err := m.Status(ctx, a); err == nil {
			label = st.Device
			if st.Name != "" {
				label += " (" + st.Name + ")"
			}
		}
		ch := md.Change{DryRun: c.DryRun}
		err := m.Stop(ctx, a, &ch)
		reports = append(reports, changeReportOf(a, "", &ch, err))
		if err != nil {
			errs.add(stopCode(err), err.Error())
			continue
		}
		if c.JSON {
			continue
		}
		if c.DryRun {
			what := "STOP_ARRAY"
			if len(ch.Removed) > 0 {
				what += ", then remove " + strings.Join(ch.Removed, ", ")
			}
			printLine(k.Stdout, "mdctl: would stop %s (%s); nothing written (dry run)", label, what)
			continue
		}
		printLine(k.Stdout, "mdctl: stopped %s", label)
		for _, r := range ch.Removed {
			printLine(k.Stdout, "mdctl: removed %s", r)
		}
	}
	if c.JSON {
		if err := printChanges(k.Stdout, reports); err != nil {
			return err
		}
	}
	return errs.result(k.Stderr)
}

// stopCode is the exit code of a Stop error.
func stopCode(err error) int {
	switch {
	case errors.Is(err, md.ErrStopIncomplete):
		return exitPartial
	case errors.Is(err, md.ErrRefused):
		return exitRefused
	}
	return exitFailure
}

// perArray collects the errors of a command over several arrays, each
// tried whatever became of the others: one line each on stderr and the
// worst exit code, something changed and failed (3) over failed (1) over
// refused (2).
type perArray struct {
	worst int
	msgs  []string
}

// add records one array's error with its exit code.
func (e *perArray) add(code int, msg string) {
	rank := func(c int) int {
		return map[int]int{exitOK: 0, exitRefused: 1, exitFailure: 2, exitPartial: 3}[c]
	}
	if rank(code) > rank(e.worst) {
		e.worst = code
	}
	e.msgs = append(e.msgs, msg)
}

// result prints every error but the last on stderr (main prints the last,
// escaped) and returns the last with the worst code, or nil for none.
func (e *perArray) result(stderr io.Writer) error {
	if len(e.msgs) == 0 {
		return nil
	}
	for _, msg := range e.msgs[:len(e.msgs)-1] {
		printLine(stderr, "mdctl: error: %s", msg)
	}
	return &exitError{code: e.worst, msg: e.msgs[len(e.msgs)-1]}
}
