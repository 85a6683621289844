package md

import (
	"errors"
	"testing"
	"time"

	qt "github.com/frankban/quicktest"
)

func TestDiscoverNames(t *testing.T) {
	c := qt.New(t)
	now := recordTime.In(time.FixedZone("x", 3600))
	m := clockManager(t, "boot-mirror", &now)

	r, err := m.DiscoverNames(c.Context())
	c.Assert(err, qt.IsNil)
	c.Assert(r.Time, qt.Equals, recordTime, qt.Commentf("the clock, in UTC"))
	c.Assert(r.Arrays, qt.HasLen, 1)

	r, err = m.DiscoverNames(c.Context(), "boot", "/dev/md127")
	c.Assert(err, qt.IsNil)
	c.Assert(r.Time, qt.Equals, recordTime)
	c.Assert(r.Arrays, qt.HasLen, 2)
	c.Assert(r.Arrays[0].Device, qt.Equals, "md127")
	c.Assert(r.Arrays[1], qt.DeepEquals, r.Arrays[0])

	// A name that matches nothing is left out, its error beside the
	// others' report.
	r, err = m.DiscoverNames(c.Context(), "nope", "boot", "nope2")
	c.Assert(err, qt.ErrorIs, ErrNoArray)
	c.Check(err, qt.ErrorMatches, "md: no such array: nope\nmd: no such array: nope2")
	c.Assert(r.Arrays, qt.HasLen, 1)
	c.Check(r.Arrays[0].Device, qt.Equals, "md127")
}

func TestArrayReadable(t *testing.T) {
	c := qt.New(t)
	c.Assert((&Array{}).Readable(), qt.IsTrue)
	c.Assert((&Array{State: "clean", Errors: []string{"size: no answer"}}).Readable(), qt.IsFalse)
	c.Assert((&Array{Errors: []string{"array_state: permission denied"}}).Readable(), qt.IsFalse)

	// An array whose sysfs directory cannot be read.
	now := recordTime
	m := clockManager(t, "boot-mirror", &now)
	a := m.status(m.fs, "md9")
	c.Assert(a.Readable(), qt.IsFalse, qt.Commentf("%+v", a))
}

func TestRecord(t *testing.T) {
	c := qt.New(t)
	now := recordTime
	m := clockManager(t, "boot-mirror", &now)
	st := &memStore{}

	res, err := m.Record(c.Context(), RecordOptions{Store: st, Refresh: time.Hour})
	c.Assert(err, qt.IsNil)
	c.Assert(res.Saved, qt.IsTrue)
	c.Assert(res.Arrays, qt.HasLen, 1)
	ra := res.Arrays[0]
	c.Assert(ra.Err, qt.IsNil)
	c.Assert(ra.Changed, qt.IsTrue)
	c.Assert(ra.Array.Device, qt.Equals, "md127")
	c.Assert(ra.Record.Slots[0].LastHealthy, qt.Equals, recordTime, qt.Commentf("stamped with the report's time"))
	saved, err := st.Load(c.Context())
	c.Assert(err, qt.IsNil)
	c.Assert(saved, qt.DeepEquals, res.Records)

	// Unchanged and fresh: nothing to save. Due for a refresh: saved,
	// but no change.
	now = recordTime.Add(time.Minute)
	res, err = m.Record(c.Context(), RecordOptions{Store: st, Refresh: time.Hour})
	c.Assert(err, qt.IsNil)
	c.Assert(res.Saved, qt.IsFalse)
	c.Assert(res.Arrays[0].Changed, qt.IsFalse)
	res, err = m.Record(c.Context(), RecordOptions{Store: st, Arrays: []string{"boot"}})
	c.Assert(err, qt.IsNil)
	c.Assert(res.Saved, qt.IsTrue)
	c.Assert(res.Arrays[0].Changed, qt.IsFalse)
	saved, err = st.Load(c.Context())
	c.Assert(err, qt.IsNil)
	c.Assert(saved.Arrays[0].Slots[0].LastHealthy, qt.Equals, now)

	// A name that matches nothing records nothing.
	before := st.data
	_, err = m.Record(c.Context(), RecordOptions{Store: st, Arrays: []string{"nope"}})
	c.Assert(err, qt.ErrorIs, ErrNoArray)
	c.Assert(st.data, qt.DeepEquals, before)

	// A store that cannot be loaded is not overwritten.
	broken := errors.New("damaged")
	st.loadErr = broken
	res, err = m.Record(c.Context(), RecordOptions{Store: st})
	c.Assert(err, qt.ErrorIs, broken)
	c.Assert(res.Records, qt.IsNil)
	c.Assert(st.data, qt.DeepEquals, before)
	st.loadErr = nil

	// An array that is not healthy is reported, not recorded.
	dm := clockManager(t, "raid1-degraded-missing", &now)
	res, err = dm.Record(c.Context(), RecordOptions{Store: st})
	c.Assert(err, qt.IsNil)
	c.Assert(res.Saved, qt.IsFalse)
	c.Assert(res.Arrays[0].Err, qt.ErrorIs, errNotRecordable)
	c.Assert(res.Arrays[0].Record, qt.IsNil)
	c.Assert(st.data, qt.DeepEquals, before)

	// From a report already taken, limited by name.
	r, err := m.Discover(c.Context())
	c.Assert(err, qt.IsNil)
	_, err = m.Record(c.Context(), RecordOptions{Store: st, Report: r, Arrays: []string{"md127"}, Records: &Records{}})
	c.Assert(err, qt.IsNil)
	_, err = dm.Record(c.Context(), RecordOptions{Store: st, Report: r, Arrays: []string{"md0"}})
	c.Assert(err, qt.ErrorIs, ErrNoArray)

	_, err = m.Record(c.Context(), RecordOptions{})
	c.Assert(err, qt.IsNotNil)
}
