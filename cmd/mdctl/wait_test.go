package main

import (
	"os"
	"path/filepath"
	"testing"

	qt "github.com/frankban/quicktest"
)

// TestWaitCLI: what mdctl wait prints and how it exits, on captures whose
// state does not change (the real waiting is proven in the VM).
func TestWaitCLI(t *testing.T) {
	c := qt.New(t)
	flags, _ := materialize(t, "boot-mirror")

	code, out, errOut := runCLI(t, append([]string{"wait", "boot"}, flags...)...)
	c.Check(code, qt.Equals, exitWaitNothing, qt.Commentf("%s%s", out, errOut))
	c.Check(out, qt.Equals, "md127: nothing to wait for.\n")

	code, out, errOut = runCLI(t, append([]string{"wait", "--scan"}, flags...)...)
	c.Check(code, qt.Equals, exitOK, qt.Commentf("%s%s", out, errOut))
	c.Check(out, qt.Equals, "md127: nothing to wait for.\n")

	code, out, errOut = runCLI(t, append([]string{"wait", "nope", "md127"}, flags...)...)
	c.Check(code, qt.Equals, exitWaitNoArray)
	c.Check(out, qt.Equals, "md127: nothing to wait for.\n")
	c.Check(errOut, qt.Equals, "mdctl: error: nope: md: no such array: nope\n")

	code, _, errOut = runCLI(t, append([]string{"wait", "--scan", "md127"}, flags...)...)
	c.Check(code, qt.Equals, exitUsage, qt.Commentf("%s", errOut))

	// A recovery that does not end in a capture: the timeout.
	flags, _ = materialize(t, "raid1-recovering")
	sys := flags[1]
	code, out, errOut = runCLI(t, append([]string{"wait", "--timeout=1ms", "md0"}, flags...)...)
	c.Check(code, qt.Equals, exitWaitTimeout, qt.Commentf("%s%s", out, errOut))
	c.Check(out, qt.Equals, "md0: timed out: the recover still runs at sector 32768 of 129024 (25.4%).\n")

	code, out, _ = runCLI(t, append([]string{"wait", "--json", "--timeout=1ms", "md0"}, flags...)...)
	c.Check(code, qt.Equals, exitWaitTimeout)
	c.Check(out, qt.Equals, `{
  "arrays": [
    {
      "array": "md0",
      "result": "timeout",
      "waited": [
        "recover"
      ],
      "running": "recover",
      "done_sectors": 32768,
      "total_sectors": 129024
    }
  ]
}
`)

	// sync_action unreadable: failed.
	act := filepath.Join(sys, "block", "md0", "md", "sync_action")
	c.Assert(os.Remove(act), qt.IsNil)
	c.Assert(os.Mkdir(act, 0o755), qt.IsNil)
	code, _, errOut = runCLI(t, append([]string{"wait", "md0"}, flags...)...)
	c.Check(code, qt.Equals, exitWaitFailed)
	c.Check(errOut, qt.Matches, "mdctl: error: md0: md: reading sync_action of md0: .*\n")
}

// TestWaitCleanCLI: wait --clean on the boot mirror capture, clean and
// written to (array_state active, which no kernel behind the capture
// will change: the timeout, with safe_mode_delay written back).
func TestWaitCleanCLI(t *testing.T) {
	c := qt.New(t)
	flags, _ := materialize(t, "boot-mirror")
	state := filepath.Join(flags[1], "block", "md127", "md", "array_state")
	delay := filepath.Join(flags[1], "block", "md127", "md", "safe_mode_delay")

	code, out, errOut := runCLI(t, append([]string{"wait", "--clean", "--scan"}, flags...)...)
	c.Check(code, qt.Equals, exitOK, qt.Commentf("%s%s", out, errOut))
	c.Check(out, qt.Equals, "md127: already clean; nothing written.\n")

	c.Assert(os.WriteFile(state, []byte("active\n"), 0o644), qt.IsNil)
	code, out, errOut = runCLI(t, append([]string{"wait", "--clean", "--dry-run", "boot"}, flags...)...)
	c.Check(code, qt.Equals, exitOK, qt.Commentf("%s%s", out, errOut))
	c.Check(out, qt.Equals, "md127: active: would write safe_mode_delay=0.001, wait for clean, then write safe_mode_delay=0.204; nothing written (dry run).\n")
	b, err := os.ReadFile(delay)
	c.Assert(err, qt.IsNil)
	c.Check(string(b), qt.Equals, "0.204\n")
	code, _, _ = runCLI(t, append([]string{"wait", "--dry-run", "boot"}, flags...)...)
	c.Check(code, qt.Equals, exitUsage)

	code, out, errOut = runCLI(t, append([]string{"wait", "--clean", "--timeout=20ms", "boot"}, flags...)...)
	c.Check(code, qt.Equals, exitWaitTimeout, qt.Commentf("%s%s", out, errOut))
	c.Check(out, qt.Equals, "md127: not clean in time: writes kept it active (safe_mode_delay 0.204, written back).\n")
	b, err = os.ReadFile(delay)
	c.Assert(err, qt.IsNil)
	c.Check(string(b), qt.Equals, "0.204\n") // written over in place, as sysfs.writeAttr does

	code, _, errOut = runCLI(t, append([]string{"wait", "--clean", "nope"}, flags...)...)
	c.Check(code, qt.Equals, exitWaitNoArray)
	c.Check(errOut, qt.Equals, "mdctl: error: nope: md: no such array: nope\n")
}

// TestWatchLastResortFlag: a negative --last-resort is a usage error.
func TestWatchLastResortFlag(t *testing.T) {
	c := qt.New(t)
	flags, _ := materialize(t, "boot-mirror")
	code, out, errOut := runCLI(t, append([]string{"watch", "--last-resort=-1s"}, flags...)...)
	c.Check(code, qt.Equals, exitUsage)
	c.Check(out, qt.Equals, "")
	c.Check(errOut, qt.Contains, "--last-resort must not be negative")
}
