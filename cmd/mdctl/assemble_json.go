package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/go-mdraid/mdraid/md"
)

// deviceReport is one device's outcome of assemble or incremental, as
// their --json prints it.
type deviceReport struct {
	// Device is the device's kernel name (as given, for one that was
	// not added).
	Device string `json:"device"`
	// Result is added, would (a dry run: it would be added), skipped
	// (refused: nothing written for it), or failed.
	Result string `json:"result"`
	DryRun bool   `json:"dry_run"`
	// The array it joined (or would): kernel name, path, UUID.
	Array string `json:"array,omitempty"`
	Path  string `json:"path,omitempty"`
	UUID  string `json:"uuid,omitempty"`
	// Foreign is true for an array of another host.
	Foreign bool `json:"foreign,omitempty"`
	// Started is what became of the array: yes, unsafe (enough members
	// but not all: it waits), no, already (it was running).
	Started  string `json:"started,omitempty"`
	ReadAuto bool   `json:"read_auto,omitempty"`
	// Held says why an array with enough members was not started: the
	// create that wrote it did not finish.
	Held string `json:"held,omitempty"`
	// Present and Expected count the array's members.
	Present  int `json:"present,omitempty"`
	Expected int `json:"expected,omitempty"`
	// Writes is every change made (due, in a dry run), in order.
	Writes []string `json:"writes,omitempty"`
	// Kicked and LeftBehind are members the start detached, and members
	// too far behind to count.
	Kicked     []string         `json:"kicked,omitempty"`
	LeftBehind []leftBehindJSON `json:"left_behind,omitempty"`
	Error      string           `json:"error,omitempty"`
}

type leftBehindJSON struct {
	Device string `json:"device"`
	Events uint64 `json:"events"`
	Want   uint64 `json:"want"`
}

// deviceReportOf is the report of one device: r what was done (nil for
// nothing), err why it was refused or failed.
func deviceReportOf(device string, r *md.IncrementalResult, err error) deviceReport {
	d := deviceReport{Device: filepath.Base(device)}
	if r != nil {
		d.DryRun = r.DryRun
		if r.Device != "" {
			d.Device = r.Device
		}
		d.Array, d.Path, d.UUID, d.Foreign = r.Array, r.Path, r.UUID, r.Foreign
		d.Started, d.ReadAuto, d.Present, d.Expected = string(r.Started), r.ReadAuto, r.Present, r.Expected
		d.Writes, d.Kicked, d.Held = r.Writes, r.Kicked, r.Held
		for _, lb := range r.LeftBehind {
			d.LeftBehind = append(d.LeftBehind, leftBehindJSON{lb.Device, lb.Events, lb.Want})
		}
	}
	switch {
	case errors.Is(err, md.ErrRefused):
		d.Result = "skipped"
	case err != nil:
		d.Result = "failed"
	case d.DryRun:
		d.Result = "would"
	default:
		d.Result = "added"
	}
	if err != nil {
		d.Error = err.Error()
	}
	return d
}

// assembleReports is an Assemble result as reports, in the order added,
// skipped, failed.
func assembleReports(res *md.AssembleResult) []deviceReport {
	var out []deviceReport
	if res == nil {
		return out
	}
	for _, r := range res.Added {
		out = append(out, deviceReportOf(r.Device, r, nil))
	}
	for _, s := range res.Skipped {
		d := deviceReportOf(s.Device, nil, s.Reason)
		d.DryRun = res.DryRun
		out = append(out, d)
	}
	for _, f := range res.Failed {
		d := deviceReportOf(f.Device, f.Result, f.Err)
		d.DryRun = res.DryRun
		out = append(out, d)
	}
	return out
}

// printDevices prints the reports as one JSON object, {"devices": [...],
// "not_found": [...]}, with dry_run at the top as well.
func printDevices(w io.Writer, dryRun bool, rs []deviceReport, notFound []string) error {
	if rs == nil {
		rs = []deviceReport{}
	}
	b, err := json.MarshalIndent(struct {
		DryRun   bool           `json:"dry_run"`
		Devices  []deviceReport `json:"devices"`
		NotFound []string       `json:"not_found,omitempty"`
	}{dryRun, rs, notFound}, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}
