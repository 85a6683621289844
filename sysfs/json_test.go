package sysfs

import (
	"encoding/json"
	"testing"

	qt "github.com/frankban/quicktest"
)

// TestJSONForms pins how the typed values appear in JSON (md's status
// model holds them): as sysfs shows them, unknown words included.
func TestJSONForms(t *testing.T) {
	c := qt.New(t)
	type model struct {
		Dev    DevNum      `json:"dev,omitzero"`
		Flags  MemberState `json:"flags"`
		Action SyncAction  `json:"action"`
	}
	b, err := json.Marshal(model{
		Dev:    DevNum{Major: 254, Minor: 16},
		Flags:  MemberState{FlagInSync, "quantum"},
		Action: "warp",
	})
	c.Assert(err, qt.IsNil)
	c.Assert(string(b), qt.Equals, `{"dev":"254:16","flags":["in_sync","quantum"],"action":"warp"}`)

	var back model
	c.Assert(json.Unmarshal(b, &back), qt.IsNil)
	c.Assert(back, qt.DeepEquals, model{Dev: DevNum{Major: 254, Minor: 16}, Flags: MemberState{"in_sync", "quantum"}, Action: "warp"})

	// A number that could not be read is left out; an empty list stays
	// a list.
	b, err = json.Marshal(model{Flags: MemberState{}})
	c.Assert(err, qt.IsNil)
	c.Assert(string(b), qt.Equals, `{"flags":[],"action":""}`)

	c.Assert(json.Unmarshal([]byte(`{"dev":"254"}`), &back), qt.ErrorIs, ErrFormat)
	c.Assert(json.Unmarshal([]byte(`{"dev":"1:-1"}`), &back), qt.ErrorIs, ErrFormat)
}
