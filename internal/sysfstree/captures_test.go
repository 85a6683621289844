package sysfstree_test

import (
	"testing"

	qt "github.com/frankban/quicktest"

	"github.com/go-mdraid/mdraid/internal/fixture"
	"github.com/go-mdraid/mdraid/internal/sysfstree"
)

// TestContainedCaptures: every real capture satisfies the rule, so fuzz
// targets seeded from them start from trees they accept. (An external
// test: internal/fixture imports this package.)
func TestContainedCaptures(t *testing.T) {
	for _, fc := range fixture.All(t) {
		c := qt.New(t)
		entries, err := sysfstree.ParseFile(fc.Path("sysfs.txt"))
		c.Assert(err, qt.IsNil)
		c.Check(sysfstree.Contained(entries), qt.IsNil, qt.Commentf("%s", fc.Info.Name))
	}
}
