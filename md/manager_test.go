package md

import (
	"testing"

	qt "github.com/frankban/quicktest"

	"github.com/go-mdraid/mdraid/internal/fixture"
)

// TestOpenNeedsDevRootBesideACapture: a sysfs root that is not /sys (a
// capture) without a device root is refused, as the CLI refuses
// --sysfs without --dev: the host's /dev would be read beside it.
func TestOpenNeedsDevRootBesideACapture(t *testing.T) {
	c := qt.New(t)
	sys, dev := fixture.Named(t, "raid1-v1.2").System(t)
	_, err := Open(&Config{SysRoot: sys})
	c.Check(err, qt.ErrorIs, ErrConfig)
	c.Check(err, qt.ErrorMatches, `.*DevRoot is not set.*`)
	m, err := Open(&Config{SysRoot: sys, DevRoot: dev})
	c.Assert(err, qt.IsNil)
	c.Check(m.devRoot, qt.Equals, dev)
}
