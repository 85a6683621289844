package guest

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// FlushBuffers drops a block device's page cache (ioctl BLKFLSBUF). md
// writes superblocks with bios that bypass that cache, so pages cached by
// an earlier read (mdadm --examine, a previous Open) can be stale.
func FlushBuffers(dev string) error {
	f, err := os.Open(dev)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := unix.IoctlSetInt(int(f.Fd()), unix.BLKFLSBUF, 0); err != nil {
		return fmt.Errorf("BLKFLSBUF %s: %w", dev, err)
	}
	return nil
}
