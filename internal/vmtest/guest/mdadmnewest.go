package guest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// NewestMdadm is the newest Debian release's mdadm, which the rig shares
// into the guest (scripts/vm-deps fetches it) as a second fixture tool
// beside the guest's own mdadm (the host's, Debian bookworm's).
type NewestMdadm struct {
	root    string
	Version string // Debian's version, such as 4.4-11+deb13u1
}

// FindNewestMdadm returns the shared newest mdadm. Without it the test is
// skipped, and fails under CI=true.
func FindNewestMdadm(t testing.TB) *NewestMdadm {
	t.Helper()
	root := os.Getenv("MDRAID_VM_MDADM_NEWEST")
	if root == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("the newest Debian mdadm is not shared into the guest (scripts/vm-deps fetches it)")
		}
		t.Skip("!!! SKIPPED: no newest Debian mdadm in the guest (scripts/vm-deps fetches it)")
	}
	return &NewestMdadm{root: root, Version: os.Getenv("MDRAID_VM_MDADM_NEWEST_VERSION")}
}

// Run runs it (through its own loader and libraries: its libc is newer
// than the guest's) and returns its combined output.
func (m *NewestMdadm) Run(args ...string) (string, error) {
	lib := filepath.Join(m.root, "usr/lib/x86_64-linux-gnu")
	argv := append([]string{"--library-path", lib, filepath.Join(m.root, "usr/sbin/mdadm")}, args...)
	cmd := exec.Command(filepath.Join(lib, "ld-linux-x86-64.so.2"), argv...)
	cmd.Env = append(os.Environ(), "MDADM_NO_UDEV=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("mdadm %s (%s): %w\n%s", strings.Join(args, " "), m.Version, err, out)
	}
	return string(out), nil
}

// Mdadm runs it and fails the test, with its output, if it fails.
func (m *NewestMdadm) Mdadm(t testing.TB, args ...string) string {
	t.Helper()
	out, err := m.Run(args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
