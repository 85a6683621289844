//go:build !linux

package guest

import "errors"

// FlushBuffers is only implemented on Linux, where the guest runs.
func FlushBuffers(dev string) error { return errors.New("guest: FlushBuffers needs Linux") }
