package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	qt "github.com/frankban/quicktest"

	"github.com/go-mdraid/mdraid/md"
	"github.com/go-mdraid/mdraid/md/store"
)

// TestStatusStoreLastCheck: with --store, status shows the last
// completed check (text, JSON, Prometheus) from the check records; a
// damaged store is a warning and the health report is unchanged.
func TestStatusStoreLastCheck(t *testing.T) {
	c := qt.New(t)
	flags, _ := materialize(t, "boot-mirror")
	path := filepath.Join(t.TempDir(), "records.json")
	const uuid = "8e6788b8-45c6-2e85-8e39-bc2e99106387"
	finished := time.Date(2026, 3, 1, 2, 3, 4, 0, time.UTC)
	rs := &md.Records{Checks: []md.CheckRecord{{UUID: uuid, LastAction: "check", LastFinished: finished, LastMismatches: 256,
		Action: "check", Cursor: 4096, PassStarted: finished.Add(time.Hour)}}}
	c.Assert(store.NewFile(path).Save(t.Context(), rs), qt.IsNil)

	_, plain, _ := runCLI(t, append(flags, "status", "md127")...)
	c.Check(plain, qt.Not(qt.Contains), "last completed")

	code, out, errOut := runCLI(t, append(flags, "status", "--store", path, "md127")...)
	c.Assert(code, qt.Equals, 0, qt.Commentf("%s", errOut))
	c.Check(out, qt.Contains, "  last completed check: 2026-03-01T02:03:04Z, 256 mismatched sectors; unfinished check resumes at sector 4096\n")

	_, out, _ = runCLI(t, append(flags, "status", "--json", "--store", path, "md127")...)
	c.Check(out, qt.Contains, `"last_check": {
        "finished": "2026-03-01T02:03:04Z",
        "action": "check",
        "mismatch_sectors": 256,
        "pending_action": "check",
        "cursor_sectors": 4096
      }`)

	_, out, _ = runCLI(t, append(flags, "status", "--format=prometheus", "--store", path, "md127")...)
	c.Check(out, qt.Contains, `mdraid_array_last_check_finish_time_seconds{action="check",device="md127"} 1.772330584e+09`)

	b, err := os.ReadFile(path)
	c.Assert(err, qt.IsNil)
	c.Assert(os.WriteFile(path, []byte(strings.Replace(string(b), "256", "257", 1)), 0o644), qt.IsNil)
	code, out, errOut = runCLI(t, append(flags, "status", "--store", path, "md127")...)
	c.Check(code, qt.Equals, 0)
	c.Check(errOut, qt.Contains, "warning: no check results shown: md: slot records are corrupt")
	c.Check(out, qt.Equals, plain)
}

// TestStatusStoreRecordedSlot: with --store, a missing slot shows the
// port and disk recorded for it (what heal looks for), in text and JSON;
// without the store it is a bare "-".
func TestStatusStoreRecordedSlot(t *testing.T) {
	c := qt.New(t)
	flags, _ := materialize(t, "raid1-degraded-missing")
	path := filepath.Join(t.TempDir(), "records.json")
	const uuid = "1f10be8e-3830-51da-26e5-c724eef424f0"
	rs := &md.Records{Arrays: []md.Record{{UUID: uuid, Name: "0", Metadata: "1.2", Level: "raid1", RaidDisks: 2,
		Slots: []md.SlotRecord{{Slot: 0, ByPath: "pci-0000:00:10.0", Device: "vda", Serial: "mdtest-0", LastHealthy: time.Unix(1e9, 0)},
			{Slot: 1, ByPath: "pci-0000:00:11.0", Device: "vdb", Serial: "mdtest-\x1b[31m1", LastHealthy: time.Unix(1e9, 0)}}}}}
	c.Assert(store.NewFile(path).Save(t.Context(), rs), qt.IsNil)

	_, plain, _ := runCLI(t, append(flags, "status", "md0")...)
	c.Check(plain, qt.Contains, "  1     missing  -\n")
	code, out, errOut := runCLI(t, append(flags, "status", "--store", path, "md0")...)
	c.Assert(code, qt.Equals, 1, qt.Commentf("%s", errOut))
	c.Check(out, qt.Matches, `(?s).*\n  1     missing  \(recorded serial mdtest-\\x1b\[31m1\) +pci-0000:00:11.0\n`)
	c.Check(out, qt.Not(qt.Contains), "\x1b")
	_, out, _ = runCLI(t, append(flags, "status", "--json", "--store", path, "md0")...)
	c.Check(out, qt.Contains, `"recorded": {
            "slot": 1,
            "by_path": "pci-0000:00:11.0",`)
}
