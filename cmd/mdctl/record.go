package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/alecthomas/kong"

	"github.com/go-mdraid/mdraid/internal/escape"
	"github.com/go-mdraid/mdraid/md"
	"github.com/go-mdraid/mdraid/md/store"
)

// RecordCmd is `mdctl record`.
type RecordCmd struct {
	Arrays []string `arg:"" optional:"" predictor:"array" help:"Arrays to record (md127, /dev/md/boot, a name); default every array."`
	Store  string   `name:"store" required:"" placeholder:"FILE" help:"The slot record file (created if missing, replaced atomically)."`
	DryRun bool     `name:"dry-run" help:"Decide as the real run does (same skips and exit codes) and print what would be recorded; write nothing."`
	JSON   bool     `name:"json" help:"Print the outcome as JSON: {\"arrays\": [{array, result (recorded or skipped), reason, record}], \"saved\", \"dry_run\"}; the exit code is the same."`
}

// recordJSON is what record --json prints.
type recordJSON struct {
	Arrays []recordArrayJSON `json:"arrays"`
	Saved  bool              `json:"saved"`
	DryRun bool              `json:"dry_run"`
}

// recordArrayJSON is one array of record --json.
type recordArrayJSON struct {
	Array  string     `json:"array"`
	Result string     `json:"result"`
	Reason string     `json:"reason,omitempty"`
	Record *md.Record `json:"record,omitempty"`
}

// Run records the slots of every healthy array (or the named ones) in the
// store. Arrays that are not fully healthy are skipped with the reason;
// if one of the named arrays is skipped the exit status is 2. A store that
// exists but cannot be trusted is not overwritten (exit 2).
func (c *RecordCmd) Run(ctx context.Context, k *kong.Context, m *md.Manager) error {
	res, err := m.Record(ctx, md.RecordOptions{Store: store.NewFile(c.Store), Arrays: c.Arrays, DryRun: c.DryRun})
	if c.JSON {
		out := recordJSON{Arrays: []recordArrayJSON{}, Saved: res.Saved, DryRun: c.DryRun}
		for _, ra := range res.Arrays {
			j := recordArrayJSON{Array: ra.Array.Device, Result: "recorded", Record: ra.Record}
			if ra.Err != nil {
				j.Result, j.Reason, j.Record = "skipped", ra.Err.Error(), nil
				if ra.Reason != "" {
					j.Reason = ra.Reason
				}
			}
			out.Arrays = append(out.Arrays, j)
		}
		b, merr := json.MarshalIndent(out, "", "  ")
		if merr != nil {
			return merr
		}
		fmt.Fprintf(k.Stdout, "%s\n", b)
	}
	skipped := 0
	// What was recorded is printed once the store is saved: a failed
	// save recorded nothing.
	var recorded strings.Builder
	for _, ra := range res.Arrays {
		a, rec := ra.Array, ra.Record
		if ra.Err != nil {
			reason := ra.Err.Error()
			if ra.Reason != "" {
				reason = ra.Reason
			}
			fmt.Fprintf(k.Stderr, "%s: skipped: %s\n", escape.Text(a.Device), escape.Text(reason))
			skipped++
			continue
		}
		fmt.Fprintf(&recorded, "%s: recorded %s (%s, %d slots, UUID %s):\n", escape.Text(a.Device), displayName(a), escape.Text(rec.Level), rec.RaidDisks, escape.Text(rec.UUID))
		for _, s := range rec.Slots {
			fmt.Fprintf(&recorded, "  slot %d: %s\n", s.Slot, describeSlot(s))
		}
	}
	switch {
	case res.Records == nil && (errors.Is(err, store.ErrCorrupt) || errors.Is(err, store.ErrVersion)):
		return &exitError{code: exitRefused, msg: err.Error() + " (not overwritten; move it away to start afresh)"}
	case errors.Is(err, md.ErrNoArray) || errors.Is(err, md.ErrAmbiguous):
		// As every command that names an array: a refusal.
		return &exitError{code: exitRefused, msg: err.Error() + " (nothing recorded)"}
	case err != nil:
		return &exitError{code: exitFailure, msg: err.Error()}
	}
	if !c.JSON {
		fmt.Fprint(k.Stdout, recorded.String())
		switch {
		case res.Saved:
			fmt.Fprintf(k.Stdout, "Saved %d record(s) in %s.\n", len(res.Records.Arrays), escape.Text(c.Store))
		case c.DryRun:
			fmt.Fprintf(k.Stdout, "Dry run: nothing was written (%s would hold %d record(s)).\n", escape.Text(c.Store), len(res.Records.Arrays))
		}
	}
	if skipped > 0 && len(c.Arrays) > 0 {
		return &exitError{code: exitRefused, msg: fmt.Sprintf("%d of the named arrays not recorded", skipped)}
	}
	if recorded.Len() == 0 && (res.Records == nil || len(res.Records.Arrays) == 0) {
		// Nothing to heal from: say so, rather than exit 0 with no
		// store for heal to read. (Records kept from earlier passes
		// are something.)
		why := "no md array found"
		if skipped > 0 {
			why = fmt.Sprintf("every array (%d) was skipped: only a healthy array's slots are recorded; record it once it is whole again", skipped)
		}
		return &exitError{code: exitRefused, msg: "nothing recorded in " + c.Store + ": " + why}
	}
	return nil
}

// displayName is the array's name, or its device when it has none,
// escaped for text output.
func displayName(a md.Array) string {
	if a.Name == "" {
		return escape.Text(a.Path)
	}
	return escape.Text(a.Name)
}

// describeSlot is one slot record for people, escaped for text output.
func describeSlot(s md.SlotRecord) string {
	port := s.ByPath
	if port == "" {
		port = "(no by-path identity: never healed)"
	}
	var id []string
	for _, v := range []string{s.Device, s.Serial, s.WWN} {
		if v != "" {
			id = append(id, v)
		}
	}
	if s.DeviceUUID != "" {
		id = append(id, "device UUID "+s.DeviceUUID)
	}
	return escape.Text(port + " [" + strings.Join(id, ", ") + "]")
}
