package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	qt "github.com/frankban/quicktest"

	"github.com/go-mdraid/mdraid/md"
	"github.com/go-mdraid/mdraid/md/store"
)

// degradedStore records the raid1-degraded-missing capture as it was
// while healthy: vda in port 00:10.0 and a disk in 00:11.0.
func degradedStore(t *testing.T, flags []string) string {
	t.Helper()
	m, err := md.Open(&md.Config{SysRoot: flags[1], DevRoot: flags[3]})
	qt.Assert(t, err, qt.IsNil)
	r, err := m.Discover(t.Context())
	qt.Assert(t, err, qt.IsNil)
	a := r.Arrays[0]
	a.Availability, a.Degraded = md.Online, 0
	m1 := *a.Slots[0].Member
	m1.Device, m1.ByPath, m1.Slot, m1.DeviceUUID = "vdb", "pci-0000:00:11.0", 1, ""
	a.Slots[1] = md.Slot{Slot: 1, State: md.SlotActive, Member: &m1}
	rec, err := md.NewRecord(a, r.Time)
	qt.Assert(t, err, qt.IsNil)
	path := filepath.Join(t.TempDir(), "slots.json")
	qt.Assert(t, store.NewFile(path).Save(t.Context(), &md.Records{Arrays: []md.Record{rec}}), qt.IsNil)
	return path
}

func TestHealCLI(t *testing.T) {
	c := qt.New(t)
	flags, _ := materialize(t, "raid1-degraded-missing")
	store := degradedStore(t, flags)
	run := t.TempDir()

	// A refused slot is a refusal: exit 2, after every decision.
	code, out, errOut := runCLI(t, append(flags, "heal", "--store", store, "--run-dir", run)...)
	c.Assert(code, qt.Equals, exitRefused, qt.Commentf("stderr: %s", errOut))
	c.Assert(errOut, qt.Contains, "1 of 1 decisions refused (nothing written for them)")
	c.Assert(out, qt.Equals, "md0 slot 1 (pci-0000:00:11.0): refused: md: no disk in the recorded port: nothing in pci-0000:00:11.0\n")

	code, out, _ = runCLI(t, append(flags, "heal", "--store", store, "--run-dir", run, "--json", "--dry-run", "--array", "md0")...)
	c.Assert(code, qt.Equals, exitRefused)
	var ds []map[string]any
	c.Assert(json.Unmarshal([]byte(out), &ds), qt.IsNil)
	c.Assert(ds, qt.HasLen, 1)
	c.Assert(ds[0]["outcome"], qt.Equals, "refused")
	c.Assert(ds[0]["slot"], qt.Equals, float64(1))
	c.Assert(ds[0]["by_path"], qt.Equals, "pci-0000:00:11.0")

	code, _, errOut = runCLI(t, append(flags, "heal", "--store", store, "--array", "nope")...)
	c.Assert(code, qt.Equals, exitRefused)
	c.Assert(errOut, qt.Contains, "no such array: nope")

	// A missing store: no records yet, nothing to heal, said so (exit 0).
	code, _, errOut = runCLI(t, append(flags, "heal", "--store", store+".missing")...)
	c.Assert(code, qt.Equals, exitOK)
	c.Assert(errOut, qt.Contains, "no slot records yet in "+store+".missing: nothing to heal (mdctl record --store")
	// A damaged store: refused, nothing done.
	b, err := os.ReadFile(store)
	c.Assert(err, qt.IsNil)
	c.Assert(os.WriteFile(store, []byte(strings.Replace(string(b), `"version": 1`, `"version": 7`, 1)), 0o644), qt.IsNil)
	code, out, errOut = runCLI(t, append(flags, "heal", "--store", store)...)
	c.Assert(code, qt.Equals, exitRefused)
	c.Assert(out, qt.Equals, "")
	c.Assert(errOut, qt.Contains, "md: slot records have an unsupported format version in "+store+": version 7, this program reads versions 1 to 3 (nothing was done)")
}
