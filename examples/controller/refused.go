package controller

import (
	"errors"

	"github.com/go-mdraid/mdraid/md"
)

// isRefused tells a refusal (md will not touch the disk or the array in
// its state; nothing was written) from a failure.
func isRefused(err error) bool { return errors.Is(err, md.ErrRefused) }
