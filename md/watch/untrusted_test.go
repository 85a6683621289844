package watch

import (
	"testing"

	qt "github.com/frankban/quicktest"

	"github.com/go-mdraid/mdraid/internal/escape"
)

// TestEventEscapes: what --exec gets (arguments and environment) and an
// event's text form carry a hostile name escaped, one line each.
func TestEventEscapes(t *testing.T) {
	c := qt.New(t)
	hostile := "h:\n  health: ONLINE\x1b[8m$(reboot)\xff"
	e := Event{Type: HealRefused, Time: t0, Array: "md127", ArrayPath: "/dev/md127", Name: hostile,
		MemberPath: "/dev/vdb\x1b[2J", Reason: "disk of " + hostile + " is not blank"}
	env := e.Env()
	c.Check(env, qt.Contains, `MDRAID_ARRAY_NAME=h:\x0a  health: ONLINE\x1b[8m$(reboot)\xff`)
	for _, kv := range append(append(env, e.Args()...), e.String()) {
		c.Check(escape.Safe(kv), qt.IsTrue, qt.Commentf("%q is not escaped", kv))
	}
	c.Check(e.String(), qt.Contains, `is not blank`)
	c.Check(e.String(), qt.Not(qt.Contains), "\n")
}
