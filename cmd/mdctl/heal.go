package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"

	"github.com/alecthomas/kong"

	"github.com/go-mdraid/mdraid/internal/escape"
	"github.com/go-mdraid/mdraid/md"
	"github.com/go-mdraid/mdraid/md/store"
)

// HealCmd is `mdctl heal`.
type HealCmd struct {
	Store  string `name:"store" required:"" placeholder:"FILE" help:"The slot record file written by mdctl record or mdctl watch --store."`
	Array  string `name:"array" placeholder:"UUID" predictor:"array" help:"Only this array (UUID or kernel name)."`
	DryRun bool   `name:"dry-run" help:"Decide and plan, write nothing."`
	JSON   bool   `name:"json" help:"Print the decisions as a JSON array."`
	ReAdd  bool   `name:"re-add" help:"Also re-add a former member found in its slot's recorded port (mdadm's POLICY action=re-add); each re-add is remembered in --store, and a member that goes missing again, or that the kernel failed with read errors, is not re-added again until mdctl re-add --store."`
}

// Run makes one heal pass and prints every decision with its reason.
// Its exit codes are exitTable's "heal": a refused decision exits 2, as
// a refusal does everywhere, once every decision is printed.
func (c *HealCmd) Run(ctx context.Context, k *kong.Context, m *md.Manager) error {
	ds, err := m.Heal(ctx, md.HealOptions{
		Store:  store.NewFile(c.Store),
		Array:  c.Array,
		DryRun: c.DryRun,
		ReAdd:  c.ReAdd,
	})
	switch {
	case errors.Is(err, fs.ErrNotExist) && !errors.Is(err, md.ErrRefused):
		// No store yet: no records, so nothing to heal from.
		fmt.Fprintf(k.Stderr, "mdctl: no slot records yet in %s: nothing to heal (mdctl record --store %s records the slots of the healthy arrays)\n", escape.Text(c.Store), escape.Text(c.Store))
		return nil
	case errors.Is(err, md.ErrRefused), errors.Is(err, store.ErrCorrupt), errors.Is(err, store.ErrVersion):
		return &exitError{code: exitRefused, msg: err.Error() + " (nothing was done)"}
	case err != nil:
		return &exitError{code: exitFailure, msg: err.Error()}
	}
	if c.JSON {
		if ds == nil {
			ds = []md.Decision{}
		}
		enc := json.NewEncoder(k.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(ds); err != nil {
			return &exitError{code: exitFailure, msg: err.Error()}
		}
	} else {
		printDecisions(k.Stdout, ds)
	}
	refused := 0
	for _, d := range ds {
		switch d.Outcome {
		case md.OutcomeFailed:
			return &exitError{code: exitPartial, msg: fmt.Sprintf("%s: healing slot %d failed: %s", d.Array, d.Slot, d.Reason)}
		case md.OutcomeRefused:
			refused++
		}
	}
	if refused > 0 {
		return &exitError{code: exitRefused, msg: fmt.Sprintf("%d of %d decisions refused (nothing written for them)", refused, len(ds))}
	}
	return nil
}

// printDecisions prints one line per decision.
func printDecisions(w io.Writer, ds []md.Decision) {
	if len(ds) == 0 {
		fmt.Fprintln(w, "No arrays.")
	}
	for _, d := range ds {
		where := d.Array
		if d.Slot >= 0 {
			where += fmt.Sprintf(" slot %d", d.Slot)
		}
		if d.ByPath != "" {
			where += " (" + d.ByPath + ")"
		}
		// The reason can quote a name from a disk.
		fmt.Fprintln(w, escape.Text(fmt.Sprintf("%s: %s: %s", where, d.Outcome, d.Reason)))
	}
}
