package md

import (
	"testing"

	qt "github.com/frankban/quicktest"
)

// TestRecordCarriesHomehost: NewRecord keeps the homehost and SameSlots
// sees a change of it (md/store's TestRecordCarriesHomehost: the file
// round-trips it).
func TestRecordCarriesHomehost(t *testing.T) {
	c := qt.New(t)
	a := healthyArray(2)
	a.Homehost = "talos"
	rec, err := NewRecord(a, recordTime)
	c.Assert(err, qt.IsNil)
	c.Assert(rec.Homehost, qt.Equals, "talos")
	other := rec
	other.Homehost = "elsewhere"
	c.Assert(rec.SameSlots(other), qt.IsFalse)
}

// TestHealRefusesRecords (issue 10 item 11): a record whose array now
// names another homehost, and a port claimed by two slot records, are
// refused with the reason, and nothing is offered to the planner.
func TestHealRefusesRecords(t *testing.T) {
	missing := mirrorMissing() // slot 1 empty, recorded in byPathOf(1)
	ports := map[string][]string{byPathOf(1): {"vdc"}}
	homed := func(a Array, h string) Array { a.Homehost = h; return a }
	tests := []struct {
		name    string
		array   Array
		records func(t *testing.T) *Records
		want    error
		reason  string
	}{
		{name: "array moved to another host", array: homed(missing, "other"),
			records: func(t *testing.T) *Records { return recordsOf(t, homed(healthyArray(2), "talos")) },
			want:    errRecordHost, reason: `.*homehost is "other", its record says "talos".*`},
		{name: "homehost gone", array: missing,
			records: func(t *testing.T) *Records { return recordsOf(t, homed(healthyArray(2), "talos")) },
			want:    errRecordHost},
		{name: "port claimed by another array's record", array: missing,
			records: func(t *testing.T) *Records {
				b := healthyArray(2)
				b.UUID = "11111111-2222-4333-8444-555555555555"
				b.Slots[0].Member.ByPath = byPathOf(1) // the same port as our slot 1
				b.Slots[1].Member.ByPath = byPathOf(7)
				return recordsOf(t, healthyArray(2), b)
			},
			want: errPortClaimed, reason: `.*is recorded for array .* slot 1 and array 11111111-2222-4333-8444-555555555555 slot 0`},
		{name: "port claimed twice in one record", array: missing,
			records: func(t *testing.T) *Records {
				h := healthyArray(2)
				h.Slots[0].Member.ByPath = byPathOf(1)
				return recordsOf(t, h)
			},
			want: errPortClaimed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := qt.New(t)
			ds := decideHeal(report(tt.array), tt.records(t), ports, "/dev")
			c.Assert(ds, qt.HasLen, 1)
			d := ds[0]
			c.Check(d.Outcome, qt.Equals, OutcomeRefused)
			c.Check(d.Err, qt.ErrorIs, tt.want)
			if tt.reason != "" {
				c.Check(d.Reason, qt.Matches, tt.reason)
			}
		})
	}
	// The same records without the conflicts: slot 1 is offered.
	c := qt.New(t)
	ds := decideHeal(report(missing), recordsOf(t, healthyArray(2)), ports, "/dev")
	c.Assert(ds, qt.HasLen, 1)
	c.Check(ds[0].Outcome, qt.Equals, Outcome(""))
	c.Check(ds[0].Device, qt.Equals, "vdc")
}
