package md

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/go-mdraid/mdraid/internal/fixture"
)

// fixtureCases loads the real captures made by testdata/gen.
func fixtureCases(t testing.TB) []*fixture.Case {
	t.Helper()
	cases, err := fixture.LoadAll(filepath.Join("..", "testdata", "fixtures"))
	if err != nil {
		t.Fatalf("loading fixtures: %v", err)
	}
	if len(cases) == 0 {
		t.Fatal("no fixtures under testdata/fixtures")
	}
	return cases
}

// fixtureManager rebuilds a captured system: the sysfs tree from the
// manifest, and each member device as a sparse image under the dev root,
// so that Discover reads real superblocks.
func fixtureManager(t testing.TB, c *fixture.Case) *Manager {
	t.Helper()
	sys, dev, err := c.Materialize(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	m, err := Open(&Config{SysRoot: sys, DevRoot: dev})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// readImage returns the whole image.
func readImage(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func writeImage(t testing.TB, path string, off int64, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}

// checkStatus returns the status of the named check, or "" if absent.
func checkStatus(p *Plan, name string) CheckStatus {
	for _, ck := range p.Checks {
		if ck.Name == name {
			return ck.Status
		}
	}
	return ""
}
