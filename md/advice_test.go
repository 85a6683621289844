package md

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	qt "github.com/frankban/quicktest"
	"golang.org/x/sys/unix"

	"github.com/go-mdraid/mdraid/sysfs"
)

// TestWriteDeviceNothingWritten checks that WriteDevice says when it
// wrote nothing: a path that does not name the planned device is refused
// before any write, and the file is byte-identical afterwards.
func TestWriteDeviceNothingWritten(t *testing.T) {
	c := qt.New(t)
	path := filepath.Join(t.TempDir(), "other")
	orig := bytes.Repeat([]byte{0xa5}, 64<<10)
	c.Assert(os.WriteFile(path, orig, 0o644), qt.IsNil)
	err := sysKernel{}.WriteDevice(deviceWrite{Path: path, Dev: sysfs.DevNum{Major: 253, Minor: 32}, Size: 64 << 10, LBS: 512, MaxLBS: 512, Regions: []region{{What: "superblock", Off: 4096, Data: make([]byte, 512)}}})
	c.Assert(err, qt.ErrorIs, ErrPlanChanged)
	c.Assert(nothingWritten(err), qt.IsTrue)
	got, rerr := os.ReadFile(path)
	c.Assert(rerr, qt.IsNil)
	c.Assert(bytes.Equal(got, orig), qt.IsTrue)

	err = sysKernel{}.WriteDevice(deviceWrite{Path: filepath.Join(t.TempDir(), "gone"), LBS: 512, MaxLBS: 512})
	c.Assert(err, qt.ErrorIs, os.ErrNotExist)
	c.Assert(nothingWritten(err), qt.IsTrue)
}

// TestWriteFailureAdvice (issue 10 item 8): when the write step fails
// before writing (the path now names another disk, or O_EXCL got EBUSY),
// the message says that nothing was written there, says what was changed
// (the remove step may have run), never advises wiping that disk, and
// NothingChanged is set only when nothing stays changed.
func TestWriteFailureAdvice(t *testing.T) {
	changed := &notWrittenError{fmt.Errorf("%w: /dev/vdz is now device 8:0, the plan was made for 253:32", ErrPlanChanged)}
	busy := &notWrittenError{&os.PathError{Op: "open", Path: "/dev/vdz", Err: unix.EBUSY}}
	tests := []struct {
		name           string
		fixture        string
		member         string
		err            error
		is             error
		wantState      string
		nothingChanged bool
	}{
		{name: "path re-pointed after the remove", fixture: "raid1-failed", member: "vdb", err: changed, is: ErrPlanChanged,
			wantState: `nothing was written to .*/vdz\. vdb was removed from md0\. Recovery was unfrozen\.`},
		{name: "EBUSY after the remove", fixture: "raid1-failed", member: "vdb", err: busy, is: unix.EBUSY,
			wantState: `nothing was written to .*/vdz\. vdb was removed from md0\. Recovery was unfrozen\.`},
		{name: "EBUSY, nothing removed", fixture: "raid1-degraded-missing", err: busy, is: unix.EBUSY,
			wantState: `nothing was written to .*/vdz\. Nothing else was changed\. Recovery was unfrozen\.`, nothingChanged: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := qt.New(t)
			r, path := replaceOn(t, tt.fixture)
			r.k.fail = map[string]error{"WriteDevice": tt.err}
			_, err := r.m.Replace(context.Background(), ReplaceRequest{Array: r.name, With: path, Member: tt.member, AllowImageFile: true})
			c.Assert(err, qt.ErrorIs, tt.is)
			var ee *ExecError
			c.Assert(errors.As(err, &ee), qt.IsTrue)
			c.Check(ee.Step, qt.Equals, StepWriteSuperblock)
			c.Check(ee.State, qt.Matches, tt.wantState)
			c.Check(ee.State, qt.Not(qt.Contains), "zero-superblock")
			c.Check(ee.State, qt.Not(qt.Contains), "wipe")
			c.Check(ee.State, qt.Not(qt.Contains), "Wipe")
			c.Check(ee.State, qt.Not(qt.Contains), "partial")
			c.Check(ee.NothingChanged, qt.Equals, tt.nothingChanged)
		})
	}
}

// TestWritePartialAdvice: a write that failed after it started may have
// left part of our superblock; the advice names the disk by its device
// number as well, and NothingChanged is false.
func TestWritePartialAdvice(t *testing.T) {
	c := qt.New(t)
	r, path := replaceOn(t, "raid1-degraded-missing")
	r.k.fail = map[string]error{"WriteDevice": &os.PathError{Op: "write", Path: path, Err: unix.EIO}}
	_, err := r.m.Replace(context.Background(), ReplaceRequest{Array: r.name, With: path, AllowImageFile: true})
	var ee *ExecError
	c.Assert(errors.As(err, &ee), qt.IsTrue)
	c.Check(ee.State, qt.Matches, `the superblock write on .* failed and may be partial; .*`)
	c.Check(ee.NothingChanged, qt.IsFalse)
}
