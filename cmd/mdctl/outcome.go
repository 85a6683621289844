package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/go-mdraid/mdraid/md"
)

// resultWord is the "result" of a writing command's --json: refused
// (nothing written), failed, would (a dry run whose checks passed) or
// done.
func resultWord(err error, dryRun bool) string {
	switch {
	case errors.Is(err, md.ErrRefused):
		return "refused"
	case err != nil:
		return "failed"
	case dryRun:
		return "would"
	}
	return "done"
}

// printJSON prints v as one indented JSON object and a newline.
func printJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return &exitError{code: exitFailure, msg: err.Error()}
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

// errorText is err's message, or "" for nil (the "error" of --json).
func errorText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// changeOutcome ends a one-array change (bitmap, grow) after its report
// is filled in: prints the report with --json, and maps err to the exit
// code (refused; failed after writing something when written; failed).
// done is true when the command has nothing more to print: an error, or
// --json.
func changeOutcome(w io.Writer, asJSON bool, rep any, err error, written bool) (done bool, exit error) {
	if asJSON {
		if perr := printJSON(w, rep); perr != nil {
			return true, perr
		}
	}
	switch {
	case errors.Is(err, md.ErrRefused):
		return true, &exitError{code: exitRefused, msg: err.Error()}
	case err != nil && written:
		return true, &exitError{code: exitPartial, msg: err.Error()}
	case err != nil:
		return true, &exitError{code: exitFailure, msg: err.Error()}
	}
	return asJSON, nil
}
