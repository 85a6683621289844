package md

import (
	"testing"

	qt "github.com/frankban/quicktest"
)

func TestArrayMembers(t *testing.T) {
	c := qt.New(t)
	a := Array{
		Slots: []Slot{
			{Slot: 0, Member: &Member{Device: "vda"}, Replacement: &Member{Device: "vdd"}},
			{Slot: 1},
			{Slot: 2, Member: &Member{Device: "vdb"}},
		},
		Spares: []Member{{Device: "vde"}},
		Faulty: []Member{{Device: "vdc"}},
	}
	var got []string
	for _, m := range a.Members() {
		got = append(got, m.Device)
	}
	c.Assert(got, qt.DeepEquals, []string{"vda", "vdd", "vdb", "vde", "vdc"})
	// Pointers into a, not copies.
	a.Members()[3].Device = "vdf"
	c.Assert(a.Spares[0].Device, qt.Equals, "vdf")
	c.Assert((&Array{}).Members(), qt.HasLen, 0)
}
