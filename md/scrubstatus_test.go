package md

import (
	"context"
	"os"
	"strconv"
	"testing"

	qt "github.com/frankban/quicktest"

	"github.com/go-mdraid/mdraid/internal/fixture"
	"github.com/go-mdraid/mdraid/sysfs"
)

func u64p(v uint64) *uint64 { return &v }

// TestStatusMismatchAndLastSyncAction reads mismatch_cnt and
// last_sync_action from the real captures: present on running redundant
// arrays, absent (nil, "") on raid0, linear and inactive arrays without an
// error, and 6.1's "recovery" and "none" in today's words.
func TestStatusMismatchAndLastSyncAction(t *testing.T) {
	tests := []struct {
		name     string
		mismatch *uint64
		last     sysfs.SyncAction
	}{
		{"raid1-v1.2", u64p(0), sysfs.ActionResync},
		{"raid1-v1.2-k7.2", u64p(0), sysfs.ActionResync},
		{"raid1-degraded-missing", u64p(0), sysfs.ActionIdle}, // 6.1 reads "none"
		{"raid1-recovering", u64p(0), sysfs.ActionRecover},    // 6.1 reads "recovery"
		{"raid5", u64p(0), sysfs.ActionRecover},               // 6.1 reads "recovery"
		{"raid5-k7.2", u64p(0), sysfs.ActionRecover},          // 7.2 reads "recover"
		{"raid0", nil, ""},
		{"linear", nil, ""},
		{"raid5-inactive", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := qt.New(t)
			a := fixtureArray(t, tt.name)
			c.Check(a.MismatchSectors, qt.DeepEquals, tt.mismatch)
			c.Check(a.LastSyncAction, qt.Equals, tt.last)
			for _, e := range a.Errors {
				c.Check(e, qt.Not(qt.Contains), "mismatch_cnt")
				c.Check(e, qt.Not(qt.Contains), "last_sync_action")
			}
		})
	}
}

// TestLastSyncActionWords pins the translation of last_sync_action.
func TestLastSyncActionWords(t *testing.T) {
	for raw, want := range map[sysfs.SyncAction]sysfs.SyncAction{
		"recovery": sysfs.ActionRecover, // 6.1
		"none":     sysfs.ActionIdle,    // 6.1, before the first sync
		"recover":  sysfs.ActionRecover,
		"idle":     sysfs.ActionIdle,
		"check":    sysfs.ActionCheck,
		"repair":   sysfs.ActionRepair,
		"resync":   sysfs.ActionResync,
		"reshape":  sysfs.ActionReshape,
		"future":   "future", // kept as read
	} {
		qt.Check(t, lastSyncAction(raw), qt.Equals, want, qt.Commentf("%q", raw))
	}
}

// setAttrs overwrites md/ attributes of the array of a materialized
// capture.
func setAttrs(t *testing.T, m *Manager, array string, attrs map[string]string) {
	t.Helper()
	for k, v := range attrs {
		qt.Assert(t, os.WriteFile(m.fs.Path("block", array, "md", k), []byte(v+"\n"), 0o644), qt.IsNil)
	}
}

// TestStatusWhileChecking: the captures hold no running check, so these
// are real captures (a clean raid1 and raid5 on 6.1) with sync_action,
// sync_completed, sync_speed, last_sync_action and mismatch_cnt changed
// to what the kernel shows while a check or repair runs. A running check
// is activity: the array stays online with full redundancy, and progress
// and ETA come from sync_completed and sync_speed as for a rebuild.
func TestStatusWhileChecking(t *testing.T) {
	tests := []struct {
		fixture, action string
		mismatch        uint64
	}{
		{"raid1-v1.2", "check", 256},
		{"raid5", "repair", 16},
	}
	for _, tt := range tests {
		t.Run(tt.fixture, func(t *testing.T) {
			c := qt.New(t)
			fc := fixture.Named(t, tt.fixture)
			m := fixtureManager(t, fc)
			setAttrs(t, m, fc.Info.Array, map[string]string{
				"sync_action":      tt.action,
				"last_sync_action": tt.action,
				"sync_completed":   "32768 / 129024",
				"sync_speed":       "1000",
				"mismatch_cnt":     strconv.FormatUint(tt.mismatch, 10),
			})
			a, err := m.Status(context.Background(), fc.Info.Array)
			c.Assert(err, qt.IsNil)
			c.Check(a.Errors, qt.HasLen, 0)
			c.Check(a.Availability, qt.Equals, Online)
			c.Check(a.Redundancy, qt.Equals, Full)
			c.Check(a.Activity, qt.DeepEquals, Activity{
				Kind:         sysfs.SyncAction(tt.action),
				DoneSectors:  32768,
				TotalSectors: 129024,
				Percent:      32768 * 100 / 129024.0,
				SpeedKiBs:    1000,
				ETASeconds:   (129024 - 32768) / 2 / 1000, // KiB left at KiB/s
			})
			c.Check(a.MismatchSectors, qt.DeepEquals, u64p(tt.mismatch))
			c.Check(a.LastSyncAction, qt.Equals, sysfs.SyncAction(tt.action))
		})
	}
}

// TestStatusMismatchGarbage: a mismatch_cnt that is not a number is an
// error of the array, not a count and not a blind report: the health is
// still decided, and the report counts as not fully readable.
func TestStatusMismatchGarbage(t *testing.T) {
	c := qt.New(t)
	fc := fixture.Named(t, "raid1-v1.2")
	m := fixtureManager(t, fc)
	setAttrs(t, m, fc.Info.Array, map[string]string{"mismatch_cnt": "12x\x1b[31m"})
	a, err := m.Status(context.Background(), fc.Info.Array)
	c.Assert(err, qt.IsNil)
	c.Check(a.MismatchSectors, qt.IsNil)
	c.Assert(a.Errors, qt.HasLen, 1)
	c.Check(a.Errors[0], qt.Matches, `mismatch_cnt: .*mismatch_cnt.*`)
	c.Check(a.Availability, qt.Equals, Online)
	c.Check(a.Readable(), qt.IsFalse)
}

func TestMismatchMeaning(t *testing.T) {
	tests := []struct {
		level  string
		action sysfs.SyncAction
		n      uint64
		want   string // a part of the phrase; "" for none
	}{
		{"raid1", sysfs.ActionCheck, 0, ""},
		{"raid5", sysfs.ActionCheck, 0, ""},
		{"raid1", sysfs.ActionCheck, 128, "can be harmless"},
		{"raid10", sysfs.ActionResync, 128, "can be harmless"},
		{"raid5", sysfs.ActionCheck, 8, "real inconsistency"},
		{"raid6", sysfs.ActionResync, 8, "real inconsistency"},
		{"raid4", sysfs.ActionCheck, 8, "real inconsistency"},
		{"raid1", sysfs.ActionRepair, 128, "copies agree again"},
		{"raid5", sysfs.ActionRepair, 8, "parity was recomputed"},
		{"raid5", sysfs.ActionRecover, 8, "earlier check"},
		{"raid0", sysfs.ActionCheck, 8, ""},
		{"linear", sysfs.ActionCheck, 8, ""},
	}
	for _, tt := range tests {
		got := MismatchMeaning(tt.level, tt.action, tt.n)
		if tt.want == "" {
			qt.Check(t, got, qt.Equals, "", qt.Commentf("%s %s %d", tt.level, tt.action, tt.n))
			continue
		}
		qt.Check(t, got, qt.Contains, tt.want, qt.Commentf("%s %s %d", tt.level, tt.action, tt.n))
	}
}
