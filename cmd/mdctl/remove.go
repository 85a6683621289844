package main

import (
	"context"
	"fmt"

	"github.com/alecthomas/kong"

	"github.com/go-mdraid/mdraid/internal/escape"
	"github.com/go-mdraid/mdraid/md"
)

// RemoveCmd is `mdctl remove`.
type RemoveCmd struct {
	Array  string `arg:"" help:"The array."`
	Member string `arg:"" help:"The faulty member or spare to remove (sdb or /dev/sdb)."`
}

// Run removes the member. A member that still holds a slot is refused
// (exit 2): fail it first.
func (c *RemoveCmd) Run(ctx context.Context, k *kong.Context, m *md.Manager) error {
	if err := m.Remove(ctx, c.Array, c.Member); err != nil {
		return primitiveError(err)
	}
	fmt.Fprintf(k.Stdout, "%s: %s removed.\n", escape.Text(c.Array), escape.Text(c.Member))
	return nil
}
