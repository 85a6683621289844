package md

import (
	"os"
	"path/filepath"
	"testing"

	qt "github.com/frankban/quicktest"
)

// TestPersonalityName: md/level shows a running array's personality by
// name and an assembled one's level as a bare number; both map to the
// name /proc/mdstat lists.
func TestPersonalityName(t *testing.T) {
	c := qt.New(t)
	for level, want := range map[string]string{
		"1": "raid1", "raid1": "raid1", "0": "raid0", "5": "raid5", "6": "raid6", "4": "raid4",
		"10": "raid10", "raid10": "raid10", "-1": "linear", "linear": "linear",
		"": "", "container": "", "multipath": "", "7": "", "raid1\n": "",
	} {
		c.Check(personalityName(level), qt.Equals, want, qt.Commentf("level %q", level))
	}
}

// TestPersonalityListed reads the Personalities line as the kernels of
// the matrix write it (6.1 in load order, 7.2 sorted).
func TestPersonalityListed(t *testing.T) {
	c := qt.New(t)
	proc := t.TempDir()
	write := func(s string) {
		c.Assert(os.WriteFile(filepath.Join(proc, "mdstat"), []byte(s), 0o644), qt.IsNil)
	}
	c.Check(personalityListed(proc, "raid1"), qt.IsFalse) // no mdstat: md_mod not loaded
	write("Personalities : \nunused devices: <none>\n")
	c.Check(personalityListed(proc, "raid1"), qt.IsFalse)
	write("Personalities : [raid10] [raid1] [raid6] [raid5] [raid4] \nmd127 : active raid1 vdb[1] vda[0]\n      65472 blocks super 1.2 [2/2] [UU]\n\nunused devices: <none>\n")
	c.Check(personalityListed(proc, "raid1"), qt.IsTrue)
	c.Check(personalityListed(proc, "raid10"), qt.IsTrue)
	c.Check(personalityListed(proc, "raid0"), qt.IsFalse)
	c.Check(personalityListed(proc, "linear"), qt.IsFalse)
	// Only the Personalities line counts, not an array's line.
	write("Personalities : [raid5]\nmd127 : active raid1 vdb[1] vda[0] [raid1]\n")
	c.Check(personalityListed(proc, "raid1"), qt.IsFalse)
}
