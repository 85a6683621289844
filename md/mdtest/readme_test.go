package mdtest_test

import (
	"testing"

	"github.com/go-mdraid/mdraid/md"
	"github.com/go-mdraid/mdraid/md/mdtest"
)

// TestDegraded is the README's example of testing with mdtest, as it
// stands there ("Testing your controller with mdtest").
func TestDegraded(t *testing.T) {
	sys := mdtest.Capture(t, "boot-mirror-k7.2") // removed when the test ends
	m, err := md.Open(sys.Config())
	if err != nil {
		t.Fatal(err)
	}
	sys.Fail("vdb")
	a, err := m.Status(t.Context(), "boot")
	if err != nil || a.Availability != md.Degraded {
		t.Fatalf("%v %v", a.Availability, err)
	}
}
