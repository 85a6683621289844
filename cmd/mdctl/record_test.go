package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	qt "github.com/frankban/quicktest"
)

func TestRecordCLI(t *testing.T) {
	c := qt.New(t)
	flags, _ := materialize(t, "boot-mirror")
	store := filepath.Join(t.TempDir(), "slots.json")

	code, out, errOut := runCLI(t, append(flags, "record", "--store", store)...)
	c.Assert(code, qt.Equals, 0, qt.Commentf("stderr: %s", errOut))
	c.Assert(out, qt.Contains, "md127: recorded boot (raid1, 2 slots, UUID 8e6788b8-45c6-2e85-8e39-bc2e99106387):")
	c.Assert(out, qt.Contains, "  slot 1: pci-0000:00:11.0 [vdb, mdtest-1, device UUID ")
	c.Assert(out, qt.Contains, "Saved 1 record(s) in "+store)
	first, err := os.ReadFile(store)
	c.Assert(err, qt.IsNil)
	c.Assert(string(first), qt.Contains, `"format": "go-mdraid-slot-records"`)

	// Naming it works too; a named degraded array is refused with exit 2.
	code, _, _ = runCLI(t, append(flags, "record", "--store", store, "/dev/md/boot")...)
	c.Assert(code, qt.Equals, 0)

	dflags, _ := materialize(t, "raid1-degraded-missing")
	code, out, errOut = runCLI(t, append(dflags, "record", "--store", store, "md0")...)
	c.Assert(code, qt.Equals, exitRefused)
	c.Assert(errOut, qt.Contains, "md0: skipped: it is degraded")
	c.Assert(out, qt.Not(qt.Contains), "Saved")
	// Without names it is skipped and the others are kept.
	code, _, errOut = runCLI(t, append(dflags, "record", "--store", store)...)
	c.Assert(code, qt.Equals, 0)
	c.Assert(errOut, qt.Contains, "md0: skipped: it is degraded")
	after, err := os.ReadFile(store)
	c.Assert(err, qt.IsNil)
	c.Assert(after, qt.Not(qt.HasLen), 0)

	// A damaged store is not overwritten.
	bad := bytes.Replace(first, []byte("mdtest-1"), []byte("mdtest-9"), 1)
	c.Assert(os.WriteFile(store, bad, 0o644), qt.IsNil)
	code, _, errOut = runCLI(t, append(flags, "record", "--store", store)...)
	c.Assert(code, qt.Equals, exitRefused)
	c.Assert(errOut, qt.Contains, "md: slot records are corrupt in "+store+": checksum is")
	c.Assert(errOut, qt.Contains, "not overwritten")
	now, err := os.ReadFile(store)
	c.Assert(err, qt.IsNil)
	c.Assert(now, qt.DeepEquals, bad)
}

// TestRecordCLISaveFails: a save that fails prints no "recorded" line,
// and its error names the store, not a temporary file.
func TestRecordCLISaveFails(t *testing.T) {
	c := qt.New(t)
	flags, _ := materialize(t, "boot-mirror")
	store := filepath.Join(t.TempDir(), "missing", "slots.json")
	code, out, errOut := runCLI(t, append(flags, "record", "--store", store)...)
	c.Assert(code, qt.Equals, exitFailure)
	c.Assert(out, qt.Not(qt.Contains), "recorded")
	c.Assert(errOut, qt.Contains, "md: saving slot records: "+store+": ")
	c.Assert(errOut, qt.Not(qt.Contains), ".slots.json")
}

// TestRecordCLIKeepsMode: recording into a read-only (0444) store keeps
// it read-only.
func TestRecordCLIKeepsMode(t *testing.T) {
	c := qt.New(t)
	flags, _ := materialize(t, "boot-mirror")
	store := filepath.Join(t.TempDir(), "slots.json")
	code, _, errOut := runCLI(t, append(flags, "record", "--store", store)...)
	c.Assert(code, qt.Equals, 0, qt.Commentf("stderr: %s", errOut))
	c.Assert(os.Chmod(store, 0o444), qt.IsNil)
	code, out, errOut := runCLI(t, append(flags, "record", "--store", store)...)
	c.Assert(code, qt.Equals, 0, qt.Commentf("stderr: %s", errOut))
	c.Assert(out, qt.Contains, "Saved 1 record(s)")
	fi, err := os.Stat(store)
	c.Assert(err, qt.IsNil)
	c.Assert(fi.Mode().Perm(), qt.Equals, os.FileMode(0o444))
}

// TestCheckAndRecordShareStore: one file holds slot records and check
// records; record keeps the checks, check keeps the slot records, and a
// damaged file is refused by check (exit 2) and not overwritten.
func TestCheckAndRecordShareStore(t *testing.T) {
	c := qt.New(t)
	flags, _ := materialize(t, "boot-mirror")
	store := filepath.Join(t.TempDir(), "slots.json")
	code, _, errOut := runCLI(t, append(flags, "record", "--store", store)...)
	c.Assert(code, qt.Equals, 0, qt.Commentf("stderr: %s", errOut))

	code, out, errOut := runCLI(t, append(flags, "check", "--store", store, "md127")...)
	c.Assert(code, qt.Equals, 0, qt.Commentf("stderr: %s", errOut))
	c.Assert(out, qt.Contains, "md127: check started")
	b, err := os.ReadFile(store)
	c.Assert(err, qt.IsNil)
	c.Check(string(b), qt.Contains, `"version": 2`)
	c.Check(string(b), qt.Contains, `"by_path": "pci-0000:00:11.0"`)
	c.Check(string(b), qt.Contains, `"action": "check"`)

	// record again (refresh): the check record stays.
	code, _, errOut = runCLI(t, append(flags, "record", "--store", store)...)
	c.Assert(code, qt.Equals, 0, qt.Commentf("stderr: %s", errOut))
	b, err = os.ReadFile(store)
	c.Assert(err, qt.IsNil)
	c.Check(string(b), qt.Contains, `"checks": [`)
	c.Check(string(b), qt.Contains, `"action": "check"`)

	bad := bytes.Replace(b, []byte(`"action": "check"`), []byte(`"action": "repair"`), 1)
	c.Assert(os.WriteFile(store, bad, 0o644), qt.IsNil)
	// The check is over (idle again): only the store stops the next one.
	syncAction := filepath.Join(flags[1], "block", "md127", "md", "sync_action")
	c.Assert(os.WriteFile(syncAction, []byte("idle\n"), 0o644), qt.IsNil)
	before, err := os.ReadFile(syncAction)
	c.Assert(err, qt.IsNil)
	code, _, errOut = runCLI(t, append(flags, "check", "--store", store, "md127")...)
	c.Check(code, qt.Equals, exitRefused)
	c.Check(errOut, qt.Contains, "not overwritten")
	now, err := os.ReadFile(store)
	c.Assert(err, qt.IsNil)
	c.Check(now, qt.DeepEquals, bad)
	after, err := os.ReadFile(syncAction)
	c.Assert(err, qt.IsNil)
	c.Check(after, qt.DeepEquals, before)
}

// TestRecordNothing: record where every array is skipped and no store
// holds a record exits 2 and says what to do, rather than exit 0 with no
// store for heal to read.
func TestRecordNothing(t *testing.T) {
	c := qt.New(t)
	dflags, _ := materialize(t, "raid1-degraded-missing")
	store := filepath.Join(t.TempDir(), "slots.json")
	code, _, errOut := runCLI(t, append(dflags, "record", "--store", store)...)
	c.Check(code, qt.Equals, exitRefused)
	c.Check(errOut, qt.Contains, "md0: skipped: it is degraded")
	c.Check(errOut, qt.Contains, "nothing recorded in "+store+": every array (1) was skipped: only a healthy array's slots are recorded")
}

// TestRecordDryRunAndJSON (issue 31): record --dry-run decides as the
// real run (the same records, skips and exit codes) and writes no store;
// --json prints one object with each array's result.
func TestRecordDryRunAndJSON(t *testing.T) {
	c := qt.New(t)
	flags, _ := materialize(t, "boot-mirror")
	store := filepath.Join(t.TempDir(), "slots.json")

	code, out, errOut := runCLI(t, append(flags, "record", "--store", store, "--dry-run")...)
	c.Assert(code, qt.Equals, 0, qt.Commentf("stderr: %s", errOut))
	c.Check(out, qt.Contains, "md127: recorded boot (raid1, 2 slots, UUID 8e6788b8-45c6-2e85-8e39-bc2e99106387):")
	c.Check(out, qt.Contains, "Dry run: nothing was written ("+store+" would hold 1 record(s)).")
	_, err := os.Stat(store)
	c.Check(os.IsNotExist(err), qt.IsTrue, qt.Commentf("the dry run wrote the store: %v", err))

	code, out, errOut = runCLI(t, append(flags, "record", "--store", store, "--dry-run", "--json")...)
	c.Assert(code, qt.Equals, 0, qt.Commentf("stderr: %s", errOut))
	var res struct {
		Arrays []struct {
			Array, Result, Reason string
			Record                *struct{ UUID string }
		}
		Saved  bool
		DryRun bool `json:"dry_run"`
	}
	c.Assert(json.Unmarshal([]byte(out), &res), qt.IsNil, qt.Commentf("%s", out))
	c.Check(res.Saved, qt.IsFalse)
	c.Check(res.DryRun, qt.IsTrue)
	c.Assert(res.Arrays, qt.HasLen, 1)
	c.Check(res.Arrays[0].Result, qt.Equals, "recorded")
	c.Assert(res.Arrays[0].Record, qt.IsNotNil)
	_, err = os.Stat(store)
	c.Check(os.IsNotExist(err), qt.IsTrue)

	// The real run with --json saves, and says so.
	code, out, errOut = runCLI(t, append(flags, "record", "--store", store, "--json")...)
	c.Assert(code, qt.Equals, 0, qt.Commentf("stderr: %s", errOut))
	c.Assert(json.Unmarshal([]byte(out), &res), qt.IsNil, qt.Commentf("%s", out))
	c.Check(res.Saved, qt.IsTrue)
	c.Check(res.DryRun, qt.IsFalse)

	// A named degraded array: skipped with its reason, exit 2, nothing written.
	dflags, _ := materialize(t, "raid1-degraded-missing")
	before, err := os.ReadFile(store)
	c.Assert(err, qt.IsNil)
	code, out, _ = runCLI(t, append(dflags, "record", "--store", store, "md0", "--json")...)
	c.Check(code, qt.Equals, exitRefused)
	c.Assert(json.Unmarshal([]byte(out), &res), qt.IsNil, qt.Commentf("%s", out))
	c.Assert(res.Arrays, qt.HasLen, 1)
	c.Check(res.Arrays[0].Result, qt.Equals, "skipped")
	c.Check(res.Arrays[0].Reason, qt.Contains, "degraded")
	after, err := os.ReadFile(store)
	c.Assert(err, qt.IsNil)
	c.Check(after, qt.DeepEquals, before)
}
