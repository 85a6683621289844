package store

import (
	"bytes"
	"context"
	"testing"
	"time"

	qt "github.com/frankban/quicktest"

	"github.com/go-mdraid/mdraid/md"
	"github.com/go-mdraid/mdraid/sysfs"
)

// withChecks is testRecords with a check record of each kind.
func withChecks(t testing.TB) *md.Records {
	rs := testRecords(t)
	rs.Checks = []md.CheckRecord{
		{UUID: "6a1c2f9e-0b7d-4c36-9d0e-51f2a3b4c5d6", Action: sysfs.ActionCheck, Cursor: 49152, Mismatches: 128,
			PassStarted: time.Date(2026, 3, 1, 1, 0, 0, 0, time.FixedZone("CET", 3600))},
		{UUID: "0b8e5f0c-3c1b-4f7e-9e0a-2d1f3c4b5a69", LastAction: sysfs.ActionRepair, LastFinished: t0, LastMismatches: 8},
	}
	return rs
}

// TestChecksRoundTrip: check records are stored (version 2, sorted, in
// UTC), read back equal, and covered by the checksum; a file without
// them stays version 1.
func TestChecksRoundTrip(t *testing.T) {
	c := qt.New(t)
	b, err := Encode(withChecks(t))
	c.Assert(err, qt.IsNil)
	c.Check(bytes.Contains(b, []byte(`"version": 2`)), qt.IsTrue)
	rs, err := Decode(b, "")
	c.Assert(err, qt.IsNil)
	c.Assert(rs.Checks, qt.HasLen, 2)
	c.Check(rs.Checks[0].UUID < rs.Checks[1].UUID, qt.IsTrue)
	got, ok := rs.Check("6a1c2f9e-0b7d-4c36-9d0e-51f2a3b4c5d6")
	c.Assert(ok, qt.IsTrue)
	c.Check(got.Cursor, qt.Equals, uint64(49152))
	c.Check(got.PassStarted.Equal(time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)), qt.IsTrue)
	c.Check(rs.Arrays, qt.DeepEquals, testRecords(t).Arrays)

	flipped := bytes.Replace(b, []byte(`"cursor": 49152`), []byte(`"cursor": 49160`), 1)
	c.Assert(bytes.Equal(flipped, b), qt.IsFalse)
	_, err = Decode(flipped, "")
	c.Check(err, qt.ErrorIs, ErrCorrupt)
	_, err = Decode(bytes.Replace(b, []byte(`"last_mismatches"`), []byte(`"last_mismatch"`), 1), "")
	c.Check(err, qt.ErrorIs, ErrCorrupt)

	plain, err := Encode(testRecords(t))
	c.Assert(err, qt.IsNil)
	c.Check(bytes.Contains(plain, []byte(`"version": 1`)), qt.IsTrue)
	c.Check(bytes.Contains(plain, []byte(`"checks":`)), qt.IsFalse)
}

// TestChecksInvalidRefused: Save refuses invalid check records, writing
// nothing.
func TestChecksInvalidRefused(t *testing.T) {
	c := qt.New(t)
	var s Memory
	rs := withChecks(t)
	rs.Checks[0].Cursor = 3
	c.Check(s.Save(context.Background(), rs), qt.IsNotNil)
	c.Check(s.Bytes(), qt.IsNil)
}
