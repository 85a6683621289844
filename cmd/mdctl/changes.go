package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/go-mdraid/mdraid/md"
)

// changeReport is one array's outcome of fail, remove, run or stop, as
// their --json prints it.
type changeReport struct {
	// Array is the array's kernel name (as given when it did not
	// resolve); Member the member's, for fail and remove.
	Array  string `json:"array"`
	Member string `json:"member,omitempty"`
	// Result is done, would (a dry run whose checks passed),
	// nothing-to-do (already so), refused (nothing written), failed, or
	// incomplete (stop: stopped, but a link or the map entry stayed).
	Result string `json:"result"`
	DryRun bool   `json:"dry_run"`
	// Write is the write made (due, in a dry run; tried, on failure):
	// "SET_DISK_FAULTY 8:16", "HOT_REMOVE_DISK 8:16", "RUN_ARRAY",
	// "STOP_ARRAY".
	Write string `json:"write,omitempty"`
	// Removed is what stop removed after stopping (due, in a dry run).
	Removed []string `json:"removed,omitempty"`
	Error   string   `json:"error,omitempty"`
}

// changeReportOf is the report of one call that filled ch and returned
// err; array and member are as named on the command line (member empty
// for run and stop), reported when the call did not get to resolve them.
func changeReportOf(array, member string, ch *md.Change, err error) changeReport {
	r := changeReport{Array: ch.Array, Member: ch.Member, DryRun: ch.DryRun, Write: ch.Write, Removed: ch.Removed}
	if r.Array == "" {
		r.Array = array
	}
	if r.Member == "" {
		r.Member = member
	}
	switch {
	case errors.Is(err, md.ErrStopIncomplete):
		r.Result = "incomplete"
	case errors.Is(err, md.ErrRefused):
		r.Result = "refused"
	case err != nil:
		r.Result = "failed"
	case ch.Write == "":
		r.Result = "nothing-to-do"
	case ch.DryRun:
		r.Result = "would"
	default:
		r.Result = "done"
	}
	if err != nil {
		r.Error = err.Error()
	}
	return r
}

// printChanges prints the per-array reports of a command as one JSON
// object, {"arrays": [...]}; no reports print an empty list.
func printChanges[T any](w io.Writer, rs []T) error {
	if rs == nil {
		rs = []T{}
	}
	b, err := json.MarshalIndent(struct {
		Arrays []T `json:"arrays"`
	}{rs}, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}
