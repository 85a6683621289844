package md

import (
	"context"
	"os"
	"testing"

	qt "github.com/frankban/quicktest"

	"github.com/go-mdraid/mdraid/internal/fixture"
)

// TestStopOrder: on the eight-array capture with md0 stacked on a
// partition of md5 and md5 on md2, an array comes before every array it
// is stacked on; the others by name.
func TestStopOrder(t *testing.T) {
	c := qt.New(t)
	m := fixtureManager(t, fixture.Named(t, "eight-arrays"))
	order, err := m.StopOrder(context.Background())
	c.Assert(err, qt.IsNil)
	c.Check(order, qt.DeepEquals, []string{"md0", "md1", "md2", "md3", "md4", "md5", "md6", "md7"})
	for _, st := range [][2]string{{"md0", "md5p1"}, {"md5", "md2"}} {
		c.Assert(os.Mkdir(sysPath(t, m, "block", st[0], "md")+"/dev-"+st[1], 0o755), qt.IsNil)
	}
	order, err = m.StopOrder(context.Background())
	c.Assert(err, qt.IsNil)
	c.Check(order, qt.DeepEquals, []string{"md0", "md1", "md3", "md4", "md5", "md6", "md7", "md2"})
}
