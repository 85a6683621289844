package vmtest

import (
	"context"
	"errors"
	"os"
	"sync"
	"testing"
)

var (
	rigOnce sync.Once
	rigVal  *Rig
	rigErr  error
)

// NewTestRig returns the rig for a host test. It skips the test unless
// MDRAID_VMTEST=1. If the rig cannot run here (no QEMU, kernel, mdadm or
// busybox-static), it fails the test when CI=true and skips loudly
// otherwise.
func NewTestRig(t testing.TB) *Rig {
	t.Helper()
	if os.Getenv(GuestEnv) == "1" {
		t.Skip("host-side test")
	}
	if !Enabled() {
		t.Skipf("VM test: set %s=1 to run (scripts/test does)", EnvEnable)
	}
	rigOnce.Do(func() { rigVal, rigErr = NewRig() })
	if rigErr != nil {
		if errors.Is(rigErr, ErrUnavailable) && os.Getenv("CI") != "true" {
			t.Skipf("!!! VM TEST SKIPPED, RIG UNAVAILABLE: %v", rigErr)
		}
		t.Fatalf("!!! VM RIG UNAVAILABLE: %v", rigErr)
	}
	return rigVal
}

// Run boots cfg for a test, streaming the guest console to the test log
// (prefixed "guest: ") unless cfg.Console is set. It returns Wait's result
// and error without failing the test, so tests can assert on failures.
func (r *Rig) RunTest(t testing.TB, cfg Config) (*Result, error) {
	t.Helper()
	if cfg.Console == nil {
		cfg.Console = func(line string) { t.Log("guest: " + line) }
	}
	ctx := context.Background()
	if d, ok := t.(interface{ Context() context.Context }); ok {
		ctx = d.Context()
	}
	return r.Run(ctx, cfg)
}

// TestDisks creates n sparse scratch images of size bytes in a test
// temporary directory, in slots 0..n-1.
func TestDisks(t testing.TB, n int, size int64) []Disk {
	t.Helper()
	d, err := ScratchDisks(t.TempDir(), n, size)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// SkipMissingPrefix starts the message of a test skipped because the
// kernel lacks a module it needs; scripts/test counts these per kernel.
const SkipMissingPrefix = "!!! SKIPPED ON THIS KERNEL:"

// RequireModules skips t, loudly, when the rig's kernel lacks one of the
// named md personality modules (for example "linear", which Debian's 6.12
// and newer kernels do not build). Such a test never passes on that
// kernel; scripts/test counts it in its summary.
func (r *Rig) RequireModules(t testing.TB, names ...string) {
	t.Helper()
	for _, n := range names {
		for _, m := range r.Missing {
			if modName(n) == modName(m) {
				t.Skipf("%s kernel %s has no module %s", SkipMissingPrefix, r.Kernel.Version, n)
			}
		}
	}
}
