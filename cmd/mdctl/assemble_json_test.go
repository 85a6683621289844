package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	qt "github.com/frankban/quicktest"

	"github.com/go-mdraid/mdraid/internal/fixture"
	"github.com/go-mdraid/mdraid/md"
)

// TestAssemblyDryRunText: a dry run's line says what would happen and
// every write it would make; the real run's line says what happened.
func TestAssemblyDryRunText(t *testing.T) {
	c := qt.New(t)
	r := &md.IncrementalResult{Device: "vdb", Array: "md127", Path: "/dev/md/boot", Started: md.StartYes, Present: 2, Expected: 2,
		Writes: []string{"ADD_NEW_DISK 254:16", "RUN_ARRAY"}, Kicked: []string{"vdc"}}
	c.Check(incrementalLine(r), qt.Equals, "vdb: added to md127 (/dev/md/boot, 2 of 2 members): started; detached vdc (the freshest member says it failed).")
	r.DryRun = true
	c.Check(incrementalLine(r), qt.Equals, "vdb: would be added to md127 (/dev/md/boot, 2 of 2 members): would start; would detach vdc (the freshest member says it failed); would write: ADD_NEW_DISK 254:16, RUN_ARRAY.")
	r.ReadAuto, r.Writes, r.Kicked = true, []string{"ADD_NEW_DISK 254:16", "array_state=read-auto\x1b[2J"}, nil
	c.Check(incrementalLine(r), qt.Equals, `vdb: would be added to md127 (/dev/md/boot, 2 of 2 members): would start read-auto; would write: ADD_NEW_DISK 254:16, array_state=read-auto\x1b[2J.`)
}

// TestHeldText: an array held back as an unfinished create says why,
// in its line, in --json, and in status's hint for the inactive array
// (escaped: the reason carries nothing from a disk, but the rule holds).
func TestHeldText(t *testing.T) {
	c := qt.New(t)
	why := "no running array has updated its superblocks (events 0), and they name 2 members, 1 of them here (slot 1 missing): a create that did not finish leaves this, so it is not started with members missing (mdctl run --unfinished starts it so)"
	r := &md.IncrementalResult{Device: "vda", Array: "md127", Path: "/dev/md/killed", Started: md.StartNo, Present: 1, Expected: 2, Held: why}
	c.Check(incrementalLine(r), qt.Equals, "vda: added to md127 (/dev/md/killed, 1 of 2 members): not started: "+why+".")
	d := deviceReportOf("/dev/vda", r, nil)
	c.Check(d.Held, qt.Equals, why)
	c.Check(d.Started, qt.Equals, "no")
	a := &md.Array{Device: "md127", RaidDisks: 2, Run: &md.RunOutlook{Slots: 1, Redundancy: md.NoRedundancy, Unfinished: why + "\x1b"}}
	c.Check(runHint(a), qt.Equals, "  hint: inactive: assembled, not started, and it serves nothing: "+why+`\x1b`)
}

// TestAssembleReports: --json reports every device, added (or would be,
// in a dry run), skipped with its refusal, or failed with its changes.
func TestAssembleReports(t *testing.T) {
	c := qt.New(t)
	refused := fmt.Errorf("%w: %w: vdc is held by md0", md.ErrRefused, md.ErrInUse)
	boom := errors.New("md: md126 did not start")
	res := &md.AssembleResult{
		DryRun:   true,
		Added:    []*md.IncrementalResult{{Device: "vdb", Array: "md127", Path: "/dev/md/boot", UUID: "u", Started: md.StartUnsafe, Present: 1, Expected: 2, Writes: []string{"new_array md127"}, DryRun: true}},
		Skipped:  []md.Skipped{{Device: "/dev/vdc", Reason: refused}},
		Failed:   []md.Failure{{Device: "/dev/vdd", Result: &md.IncrementalResult{Device: "vdd", Writes: []string{"new_array md126", "STOP_ARRAY md126"}, DryRun: true}, Err: boom}},
		NotFound: []string{"data"},
	}
	var b []byte
	w := &sliceWriter{&b}
	c.Assert(printDevices(w, res.DryRun, assembleReports(res), res.NotFound), qt.IsNil)
	var got struct {
		DryRun  bool `json:"dry_run"`
		Devices []struct {
			Device, Result, Array, Path, Started, Error string
			DryRun                                      bool `json:"dry_run"`
			Writes                                      []string
		}
		NotFound []string `json:"not_found"`
	}
	c.Assert(json.Unmarshal(b, &got), qt.IsNil, qt.Commentf("%s", b))
	c.Check(got.DryRun, qt.IsTrue)
	c.Check(got.NotFound, qt.DeepEquals, []string{"data"})
	c.Assert(got.Devices, qt.HasLen, 3)
	c.Check(got.Devices[0].Result, qt.Equals, "would")
	c.Check(got.Devices[0].Started, qt.Equals, "unsafe")
	c.Check(got.Devices[0].Path, qt.Equals, "/dev/md/boot")
	c.Check(got.Devices[1].Device, qt.Equals, "vdc")
	c.Check(got.Devices[1].Result, qt.Equals, "skipped")
	c.Check(got.Devices[1].Error, qt.Equals, refused.Error())
	c.Check(got.Devices[1].DryRun, qt.IsTrue)
	c.Check(got.Devices[2].Result, qt.Equals, "failed")
	c.Check(got.Devices[2].Writes, qt.DeepEquals, []string{"new_array md126", "STOP_ARRAY md126"})
	for _, d := range got.Devices {
		c.Check(d.DryRun, qt.IsTrue)
	}
}

type sliceWriter struct{ b *[]byte }

func (w *sliceWriter) Write(p []byte) (int, error) { *w.b = append(*w.b, p...); return len(p), nil }

// TestAssembleDryRunJSON: assemble --scan --dry-run --json on a captured
// system (its devices are image files, not block devices) prints one JSON
// object with every device refused, and exits as the real run does;
// --export and --json of incremental are refused together.
func TestAssembleDryRunJSON(t *testing.T) {
	c := qt.New(t)
	sys, dev := fixture.Named(t, "raid1-v1.2").System(t)
	type report struct {
		DryRun  bool `json:"dry_run"`
		Devices []struct{ Device, Result, Error string }
	}
	run := func(dry bool) (int, report, string) {
		args := []string{"assemble", "--scan", "--json", "--sysfs", sys, "--dev", dev, "--map-dir", t.TempDir()}
		if dry {
			args = append(args, "--dry-run")
		}
		code, out, errOut := runCLI(t, args...)
		var got report
		c.Assert(json.Unmarshal([]byte(out), &got), qt.IsNil, qt.Commentf("%s", out))
		return code, got, errOut
	}
	code, got, errOut := run(true)
	c.Check(got.DryRun, qt.IsTrue)
	c.Check(got.Devices, qt.HasLen, 2)
	for _, d := range got.Devices {
		c.Check(d.Result, qt.Equals, "skipped", qt.Commentf("%+v", d))
		c.Check(d.Error, qt.Matches, `md: .*/dev/vd[ab] is not a block device`)
	}
	c.Check(errOut, qt.Equals, "mdctl: error: 2 device(s) refused; the others are assembled\n")
	realCode, real, _ := run(false)
	c.Check(code, qt.Equals, realCode)
	c.Check(real.DryRun, qt.IsFalse)
	c.Check(len(real.Devices), qt.Equals, len(got.Devices))

	code, _, errOut = runCLI(t, "incremental", "--export", "--json", "vda")
	c.Check(code, qt.Not(qt.Equals), exitOK)
	c.Check(errOut, qt.Contains, "--export and --json")
}
