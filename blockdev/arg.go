package blockdev

import (
	"path/filepath"
	"strings"
)

// ArgPath is the one rule for a device named on a command line or in a
// request, used by every mdctl command and md entry point that takes
// one:
//
//   - a name without a slash ("vda", "sdb1", "md0") is a kernel name: the
//     node of that name under devRoot ("/dev/vda");
//   - anything with a slash is a path, taken as given: "/dev/vda",
//     "/dev/disk/by-id/…", "/dev/disk/by-path/…" (links are followed when
//     the device is opened), or a path relative to the current directory,
//     which must then contain a slash ("./disk.img", "images/disk.img").
//
// So "vda" never names a file vda in the current directory, as it would
// for open(2); "./vda" does. The empty string is returned unchanged (the
// caller reports it missing).
func ArgPath(devRoot, arg string) string {
	if arg == "" || strings.Contains(arg, "/") {
		return arg
	}
	return filepath.Join(devRoot, arg)
}
