package main

import (
	"errors"
	"fmt"
	"testing"

	qt "github.com/frankban/quicktest"

	"github.com/go-mdraid/mdraid/internal/fixture"
	"github.com/go-mdraid/mdraid/md"
)

// TestAssembleErrorSaysWhatChanged: the error of an assembly that
// stopped (a fatal failure) lists every change made, each device's by
// name, the failed devices' too; with none it is a failure (1), or for a
// refusal 2.
func TestAssembleErrorSaysWhatChanged(t *testing.T) {
	boom := errors.New("md: adding vda to md126: input/output error")
	vdb := &md.IncrementalResult{Device: "vdb", Writes: []string{"new_array md127", "ADD_NEW_DISK 254:16"}}
	vda := &md.IncrementalResult{Device: "vda", Writes: []string{"new_array md126", "SET_ARRAY_INFO 1.2", "STOP_ARRAY md126"}}
	for _, tt := range []struct {
		name string
		err  error
		res  *md.AssembleResult
		code int
		msg  string
	}{
		{"failed device only", boom, &md.AssembleResult{Failed: []md.Failure{{Device: "/dev/vda", Result: vda, Err: boom}}}, exitPartial,
			boom.Error() + " (changed: vda: new_array md126, SET_ARRAY_INFO 1.2, STOP_ARRAY md126)"},
		{"added and failed", boom, &md.AssembleResult{Added: []*md.IncrementalResult{vdb}, Failed: []md.Failure{{Device: "/dev/vda", Result: vda, Err: boom}}}, exitPartial,
			boom.Error() + " (changed: vdb: new_array md127, ADD_NEW_DISK 254:16; vda: new_array md126, SET_ARRAY_INFO 1.2, STOP_ARRAY md126)"},
		{"nothing changed for the failed device", boom, &md.AssembleResult{Added: []*md.IncrementalResult{vdb}, Failed: []md.Failure{{Device: "/dev/vda", Result: &md.IncrementalResult{Device: "vda"}, Err: boom}}}, exitPartial,
			boom.Error() + " (changed: vdb: new_array md127, ADD_NEW_DISK 254:16)"},
		{"another array failed too", boom, &md.AssembleResult{Failed: []md.Failure{{Device: "/dev/vda", Result: vda, Err: boom}, {Device: "/dev/vdc", Result: &md.IncrementalResult{Device: "vdc", Writes: []string{"new_array md125", "STOP_ARRAY md125"}}, Err: boom}}}, exitPartial,
			boom.Error() + " (changed: vda: new_array md126, SET_ARRAY_INFO 1.2, STOP_ARRAY md126; vdc: new_array md125, STOP_ARRAY md125)"},
		{"nothing changed", boom, &md.AssembleResult{Failed: []md.Failure{{Device: "/dev/vda", Err: boom}}}, exitFailure, boom.Error()},
		{"no result", boom, nil, exitFailure, boom.Error()},
		{"refused", fmt.Errorf("%w: locked", md.ErrRefused), &md.AssembleResult{}, exitRefused, "md: refused: locked"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := qt.New(t)
			var ee *exitError
			c.Assert(errors.As(assembleError(tt.err, tt.res), &ee), qt.IsTrue)
			c.Check(ee.code, qt.Equals, tt.code)
			c.Check(ee.msg, qt.Equals, tt.msg)
		})
	}
}

// TestFailureText: each failure's line says its error and every change
// made and undone, or that nothing was changed.
func TestFailureText(t *testing.T) {
	c := qt.New(t)
	boom := errors.New("md: adding vdh to md127: invalid argument")
	c.Check(failureText(md.Failure{Device: "/dev/vdh", Err: boom}), qt.Equals, boom.Error()+" (nothing changed)")
	c.Check(failureText(md.Failure{Device: "/dev/vdh", Err: boom, Result: &md.IncrementalResult{Device: "vdh", Writes: []string{"new_array md127", "SET_ARRAY_INFO 1.0", "STOP_ARRAY md127"}}}),
		qt.Equals, boom.Error()+" (changed: new_array md127, SET_ARRAY_INFO 1.0, STOP_ARRAY md127)")
}

// TestRunScan: run --scan tries every inactive array and only those (the
// dry run on the inactive raid5 capture, one short: it can serve its
// data), and says so for none on a healthy capture.
func TestRunScan(t *testing.T) {
	c := qt.New(t)
	for _, tt := range []struct {
		fixture, want string
	}{
		{"raid5-inactive", "md127: would start md127 (array_state=read-auto); nothing written (dry run).\n"},
		{"raid1-v1.2", ""},
	} {
		sys, dev := fixture.Named(t, tt.fixture).System(t)
		code, out, errOut := runCLI(t, "run", "--scan", "--dry-run", "--sysfs", sys, "--dev", dev)
		c.Check(code, qt.Equals, exitOK, qt.Commentf("%s: %s", tt.fixture, errOut))
		c.Check(out, qt.Equals, tt.want)
	}
}

// TestScanFlagsAreExclusive: run and stop take arrays or --scan;
// assemble's --uuid and --name narrow --scan.
func TestScanFlagsAreExclusive(t *testing.T) {
	c := qt.New(t)
	for _, args := range [][]string{
		{"run"}, {"run", "--scan", "md0"}, {"run", "--scan", "--unfinished"}, {"stop"}, {"stop", "--scan", "md0"},
		{"assemble", "--uuid", "5fe640e0:eaa47937:773defef:ccd4a3ca", "md0"},
	} {
		code, _, _ := runCLI(t, args...)
		c.Check(code, qt.Equals, exitUsage, qt.Commentf("%q", args))
	}
}
