package md

import (
	"os"
	"testing"
)

// needMknod skips a test that needs block device nodes when err says
// they cannot be made here (mknod needs CAP_MKNOD: a non-root developer),
// and fails it under CI=true, where a skip would hide what the test
// holds (README, "Running the tests").
func needMknod(t testing.TB, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("cannot make a device node, which this test needs (CI=true: not skipped): %v", err)
	}
	t.Skipf("cannot make a device node here (run as root to run this test): %v", err)
}
