package store

import (
	"bytes"
	"context"
	"testing"
	"time"

	qt "github.com/frankban/quicktest"

	"github.com/go-mdraid/mdraid/md"
)

// withReAdds is testRecords with two re-add marks, out of order.
func withReAdds(t testing.TB) *md.Records {
	rs := testRecords(t)
	rs.ReAdds = []md.ReAddMark{
		{UUID: "6a1c2f9e-0b7d-4c36-9d0e-51f2a3b4c5d6", Slot: 1, DeviceUUID: "0b7ee3c6-4a6e-4a3b-9b44-7d5d2c0c9f10", Device: "vdb",
			Time: time.Date(2026, 12, 5, 17, 0, 0, 0, time.FixedZone("CET", 3600)), Blocked: true, Reason: "heal re-added it and it went missing again"},
		{UUID: "0b8e5f0c-3c1b-4f7e-9e0a-2d1f3c4b5a69", Slot: 0, DeviceUUID: "1b7ee3c6-4a6e-4a3b-9b44-7d5d2c0c9f10", Time: t0, Reason: "re-added by heal: re-added"},
	}
	return rs
}

// TestReAddsRoundTrip (issue 33): heal's re-add marks are stored
// (version 3, sorted, in UTC), read back equal, covered by the checksum,
// and kept beside check records; a file without them keeps version 1 or
// 2, and a version 1 or 2 file with marks is corrupt. A File that saves
// and loads them keeps them: heal's memory survives a restart.
func TestReAddsRoundTrip(t *testing.T) {
	c := qt.New(t)
	b, err := Encode(withReAdds(t))
	c.Assert(err, qt.IsNil)
	c.Check(bytes.Contains(b, []byte(`"version": 3`)), qt.IsTrue)
	rs, err := Decode(b, "")
	c.Assert(err, qt.IsNil)
	c.Assert(rs.ReAdds, qt.HasLen, 2)
	c.Check(rs.ReAdds[0].UUID < rs.ReAdds[1].UUID, qt.IsTrue)
	c.Check(rs.ReAdds[1].Blocked, qt.IsTrue)
	c.Check(rs.ReAdds[1].Time.Equal(time.Date(2026, 12, 5, 16, 0, 0, 0, time.UTC)), qt.IsTrue)
	c.Check(rs.ReAdds[1].Time.Location(), qt.Equals, time.UTC)

	_, err = Decode(bytes.Replace(b, []byte(`"blocked": true`), []byte(`"blocked": false`), 1), "")
	c.Check(err, qt.ErrorIs, ErrCorrupt, qt.Commentf("a mark unblocked by hand passed the checksum"))
	_, err = Decode(bytes.Replace(b, []byte(`"version": 3`), []byte(`"version": 1`), 1), "")
	c.Check(err, qt.ErrorIs, ErrCorrupt)
	_, err = Decode(bytes.Replace(b, []byte(`"version": 3`), []byte(`"version": 4`), 1), "")
	c.Check(err, qt.ErrorIs, ErrVersion)

	both := withReAdds(t)
	both.Checks = withChecks(t).Checks
	b, err = Encode(both)
	c.Assert(err, qt.IsNil)
	c.Check(bytes.Contains(b, []byte(`"version": 3`)), qt.IsTrue)
	rs, err = Decode(b, "")
	c.Assert(err, qt.IsNil)
	c.Check(rs.Checks, qt.HasLen, 2)
	c.Check(rs.ReAdds, qt.HasLen, 2)

	f := NewFile(t.TempDir() + "/slots.json")
	ctx := context.Background()
	c.Assert(f.Save(ctx, withReAdds(t)), qt.IsNil)
	back, err := f.Load(ctx)
	c.Assert(err, qt.IsNil)
	c.Check(back.ReAdds, qt.HasLen, 2)
	c.Check(back.ForgetReAdds("6a1c2f9e-0b7d-4c36-9d0e-51f2a3b4c5d6", 1), qt.IsTrue)
	c.Assert(f.Save(ctx, back), qt.IsNil)
	back, err = f.Load(ctx)
	c.Assert(err, qt.IsNil)
	c.Check(back.ReAdds, qt.HasLen, 1)

	bad := withReAdds(t)
	bad.ReAdds[0].DeviceUUID = "nope"
	_, err = Encode(bad)
	c.Check(err, qt.ErrorMatches, `md: refusing to store invalid records: .*device UUID "nope".*`)
}
