package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/alecthomas/kong"

	"github.com/go-mdraid/mdraid/md"
)

// WaitCmd is `mdctl wait`.
type WaitCmd struct {
	Arrays  []string      `arg:"" optional:"" predictor:"array" help:"The arrays to wait for (md127, /dev/md/boot, boot, or a UUID)."`
	Scan    bool          `help:"Wait for every array."`
	Clean   bool          `name:"clean" help:"Make the arrays clean now, for a shutdown (as mdadm --wait-clean): lower safe_mode_delay, wait for array_state clean and clean superblocks, write the delay back."`
	DryRun  bool          `name:"dry-run" help:"With --clean: check as the real run does, print what would be written, write nothing."`
	Timeout time.Duration `name:"timeout" placeholder:"D" help:"Give up after D (default: as long as it takes; 5s with --clean)."`
	JSON    bool          `name:"json" help:"Print the results as JSON."`
}

// Validate insists on arrays or --scan, not both.
func (c *WaitCmd) Validate() error {
	if c.Scan == (len(c.Arrays) > 0) {
		return errors.New("name the arrays to wait for, or give --scan for every array")
	}
	if c.DryRun && !c.Clean {
		return errors.New("--dry-run goes with --clean (wait alone writes nothing)")
	}
	if c.Timeout < 0 {
		return errors.New("--timeout must not be negative")
	}
	return nil
}

// Help is the command's exit codes, shown by --help.
func (c *WaitCmd) Help() string {
	return `Waits, as mdadm -W does, until no resync, recovery, reshape, check or repair runs on the arrays, following the kernel's notifications of sync_action. A read-auto array's pending resync starts only at its first write: it is reported, not waited for.

With --clean, makes every active array clean now (before a shutdown or a power cut): it lowers safe_mode_delay to 1 ms, waits until array_state reads clean and the in-sync members' superblocks say clean, and writes the delay it found back. Arrays already clean, inactive or read-only, and those with external metadata, are left alone; nothing is refused.

` + exitHelp("wait")
}

// Run waits (md.Manager.Wait) and reports per array; the exit code is
// the worst of the table's.
func (c *WaitCmd) Run(ctx context.Context, k *kong.Context, m *md.Manager) error {
	if c.Clean {
		return c.runClean(ctx, k, m)
	}
	res, err := m.Wait(ctx, md.SyncWaitRequest{Arrays: c.Arrays, Scan: c.Scan, Timeout: c.Timeout})
	if err != nil {
		return &exitError{code: exitFailure, msg: err.Error()}
	}
	if c.JSON {
		if err := printChanges(k.Stdout, res); err != nil {
			return err
		}
	}
	code := exitOK
	for _, r := range res {
		if !c.JSON {
			printWait(k.Stdout, k.Stderr, r)
		}
		code = worseWait(code, waitCode(r, c.Scan))
	}
	if code != exitOK {
		return &quietExit{code: code}
	}
	return nil
}

// Exit codes of mdctl wait.
const (
	exitWaitNothing = 1 // nothing ran on a named array (mdadm -W's failure)
	exitWaitNoArray = 2
	exitWaitFailed  = 3
	exitWaitTimeout = 4
)

// waitCode is the exit code of one array's result. With --scan an array
// with nothing to wait for is no failure.
func waitCode(r md.WaitResult, scan bool) int {
	switch r.Result {
	case md.WaitNothing, md.WaitFrozen:
		if scan {
			return exitOK
		}
		return exitWaitNothing
	case md.WaitTimedOut:
		return exitWaitTimeout
	case md.WaitFailed:
		if errors.Is(r.Err, md.ErrNoArray) || errors.Is(r.Err, md.ErrAmbiguous) {
			return exitWaitNoArray
		}
		return exitWaitFailed
	}
	return exitOK
}

// worseWait is the worse of two exit codes of wait: failed over timed
// out over no such array over nothing to wait for.
func worseWait(a, b int) int {
	rank := map[int]int{exitOK: 0, exitWaitNothing: 1, exitWaitNoArray: 2, exitWaitTimeout: 3, exitWaitFailed: 4}
	if rank[b] > rank[a] {
		return b
	}
	return a
}

// printWait prints one array's result, escaped: errors on stderr.
func printWait(stdout, stderr io.Writer, r md.WaitResult) {
	acts := make([]string, len(r.Waited))
	for i, a := range r.Waited {
		acts[i] = string(a)
	}
	note := ""
	if r.Note != "" {
		note = " (" + r.Note + ")"
	}
	switch r.Result {
	case md.WaitFinished:
		printLine(stdout, "%s: %s finished%s.", r.Array, strings.Join(acts, ", then "), note)
	case md.WaitNothing:
		printLine(stdout, "%s: nothing to wait for%s.", r.Array, note)
	case md.WaitFrozen:
		printLine(stdout, "%s: not waited for: %s.", r.Array, r.Note)
	case md.WaitTimedOut:
		at := ""
		if r.TotalSectors > 0 {
			at = fmt.Sprintf(" at sector %d of %d (%.1f%%)", r.DoneSectors, r.TotalSectors, float64(r.DoneSectors)*100/float64(r.TotalSectors))
		}
		printLine(stdout, "%s: timed out: the %s still runs%s.", r.Array, r.Running, at)
	case md.WaitFailed:
		printLine(stderr, "mdctl: error: %s: %s", r.Array, r.Error)
	}
}

// runClean is wait --clean (md.Manager.WaitClean).
func (c *WaitCmd) runClean(ctx context.Context, k *kong.Context, m *md.Manager) error {
	res, err := m.WaitClean(ctx, md.SyncWaitRequest{Arrays: c.Arrays, Scan: c.Scan, Timeout: c.Timeout, DryRun: c.DryRun})
	if err != nil {
		return &exitError{code: exitFailure, msg: err.Error()}
	}
	if c.JSON {
		if err := printChanges(k.Stdout, res); err != nil {
			return err
		}
	}
	code := exitOK
	for _, r := range res {
		if !c.JSON {
			printClean(k.Stdout, k.Stderr, r)
		}
		rc := exitOK
		switch r.Result {
		case md.CleanTimedOut:
			rc = exitWaitTimeout
		case md.CleanFailed:
			rc = exitWaitFailed
			if errors.Is(r.Err, md.ErrNoArray) || errors.Is(r.Err, md.ErrAmbiguous) {
				rc = exitWaitNoArray
			}
		}
		code = worseWait(code, rc)
	}
	if code != exitOK {
		return &quietExit{code: code}
	}
	return nil
}

// printClean prints one array's wait --clean result, escaped: errors on
// stderr.
func printClean(stdout, stderr io.Writer, r md.CleanResult) {
	note := ""
	if r.Note != "" {
		note = "; " + r.Note
	}
	switch r.Result {
	case md.CleanAlready:
		printLine(stdout, "%s: already %s; nothing written%s.", r.Array, r.Before, note)
	case md.CleanSkipped:
		printLine(stdout, "%s: skipped: %s; nothing written.", r.Array, r.Note)
	case md.CleanMade:
		sbs := "no superblock read"
		if len(r.Superblocks) > 0 {
			sbs = "the superblocks of " + strings.Join(r.Superblocks, ", ") + " say clean"
		}
		printLine(stdout, "%s: %s, was %s (safe_mode_delay %s, written back); %s%s.", r.Array, r.After, r.Before, r.SafeModeDelay, sbs, note)
	case md.CleanWouldClean:
		printLine(stdout, "%s: %s: would write %s, wait for clean, then write %s; nothing written (dry run).", r.Array, r.Before,
			r.Writes[0], r.Writes[len(r.Writes)-1])
	case md.CleanTimedOut:
		printLine(stdout, "%s: not clean in time: %s (safe_mode_delay %s, written back).", r.Array, r.Note, r.SafeModeDelay)
	case md.CleanFailed:
		printLine(stderr, "mdctl: error: %s: %s", r.Array, r.Error)
	}
}
