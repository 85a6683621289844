package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/alecthomas/kong"

	"github.com/go-mdraid/mdraid/internal/escape"
	"github.com/go-mdraid/mdraid/md"
)

// FailCmd is `mdctl fail`.
type FailCmd struct {
	Array  string `arg:"" help:"The array."`
	Member string `arg:"" help:"The member to mark faulty (sdb or /dev/sdb)."`
}

// Run marks the member faulty. It refuses (exit 2) when the array would
// not survive without it.
func (c *FailCmd) Run(ctx context.Context, k *kong.Context, m *md.Manager) error {
	if err := m.Fail(ctx, c.Array, c.Member); err != nil {
		return primitiveError(err)
	}
	fmt.Fprintf(k.Stdout, "%s: %s marked faulty.\n", escape.Text(c.Array), escape.Text(c.Member))
	return nil
}

// primitiveError maps fail/remove/run errors to exit codes: refusals
// (md.ErrRefused: nothing written) exit 2.
func primitiveError(err error) error {
	if errors.Is(err, md.ErrRefused) {
		return &exitError{code: exitRefused, msg: err.Error()}
	}
	return &exitError{code: exitFailure, msg: err.Error()}
}
