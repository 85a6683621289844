package mdadmtext

import (
	"testing"

	qt "github.com/frankban/quicktest"

	"github.com/go-mdraid/mdraid/internal/fixture"
)

func TestParseDetailOnCaptures(t *testing.T) {
	c := qt.New(t)
	fc := fixture.Named(t, "raid1-failed")
	d := ParseDetail(fc.Texts["detail.txt"])
	c.Check(d.Int("Raid Devices"), qt.Equals, 2)
	c.Check(d.Int("Failed Devices"), qt.Equals, 1)
	c.Check(d.Int("No Such Field"), qt.Equals, -1)
	c.Check(d.UUID(), qt.Equals, "6cc39dcd3d2d7b68a5ec898ccdfd6840")
	c.Check(d.Health(), qt.Equals, "degraded")
	c.Check(d.TestExit(), qt.Equals, 1)
	c.Check(d.Rows, qt.DeepEquals, []Row{
		{Slot: "0", State: "active sync", Dev: "/dev/vda"},
		{Slot: "1", State: "removed"},
		{Slot: "-", State: "faulty", Dev: "/dev/vdb"},
	})

	row, ok := d.Row("/dev/vdb")
	c.Check(ok, qt.IsTrue)
	c.Check(row, qt.DeepEquals, Row{Slot: "-", State: "faulty", Dev: "/dev/vdb"})
	_, ok = d.Row("/dev/vdz")
	c.Check(ok, qt.IsFalse)

	fc = fixture.Named(t, "raid5-inactive")
	d = ParseDetail(fc.Texts["detail.txt"])
	c.Check(d.Health(), qt.Equals, "inactive")
	c.Check(d.TestExit(), qt.Equals, 2)
}
