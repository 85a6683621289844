package md

import (
	"testing"

	qt "github.com/frankban/quicktest"
)

func slots(s string) []bool {
	out := make([]bool, len(s))
	for i, c := range s {
		out[i] = c == 'U'
	}
	return out
}

func TestSurvivesAndRedundancy(t *testing.T) {
	const near2 = 0x102     // near=2
	const far2 = 0x201      // far=2
	const near3 = 0x103     // near=3
	const offset2 = 0x10201 // offset=2
	tests := []struct {
		level   string
		layout  int64
		slots   string // U in sync, _ not (as /proc/mdstat)
		survive bool
		red     Redundancy
	}{
		{"raid1", 0, "UU", true, Full},
		{"raid1", 0, "U_", true, NoRedundancy},
		{"raid1", 0, "__", false, NoRedundancy},
		{"raid1", 0, "UU_", true, Reduced},
		{"raid1", 0, "U__", true, NoRedundancy},
		{"raid0", 0, "UU", true, NoRedundancy},
		{"raid0", 0, "U_", false, NoRedundancy},
		{"linear", 0, "UUU", true, NoRedundancy},
		{"raid5", 2, "UUUU", true, Full},
		{"raid5", 2, "UU_U", true, NoRedundancy},
		{"raid5", 2, "U__U", false, NoRedundancy},
		{"raid4", 0, "UUU", true, Full},
		{"raid6", 2, "UUUU", true, Full},
		{"raid6", 2, "U_UU", true, Reduced},
		{"raid6", 2, "U__U", true, NoRedundancy},
		{"raid6", 2, "___U", false, NoRedundancy},
		{"raid10", near2, "UUUU", true, Full},
		{"raid10", near2, "_UUU", true, NoRedundancy},
		{"raid10", near2, "_U_U", true, NoRedundancy},
		{"raid10", near2, "__UU", false, NoRedundancy},
		{"raid10", near2, "UU__", false, NoRedundancy},
		{"raid10", near2, "U_U_", true, NoRedundancy},
		{"raid10", near3, "UUU", true, Full},
		{"raid10", near3, "U__", true, NoRedundancy},
		{"raid10", near3, "UU_", true, Reduced},
		{"raid10", far2, "UUUU", true, Full},
		{"raid10", far2, "_U_U", true, NoRedundancy}, // far copy of slot i sits on slot i+1
		{"raid10", far2, "__UU", false, NoRedundancy},
		{"raid10", offset2, "_U_U", true, NoRedundancy},
		{"raid10", offset2, "_UU_", false, NoRedundancy},
		{"raid10", near2, "UUU", true, Full},
		{"raid10", near2, "_UU", true, NoRedundancy},
		{"raid10", near2, "_U_", false, NoRedundancy},
	}
	for _, tt := range tests {
		t.Run(tt.level+"/"+tt.slots, func(t *testing.T) {
			in := slots(tt.slots)
			qt.Assert(t, survives(tt.level, tt.layout, in), qt.Equals, tt.survive)
			if tt.survive {
				qt.Assert(t, redundancy(tt.level, tt.layout, in), qt.Equals, tt.red)
			}
		})
	}
}
