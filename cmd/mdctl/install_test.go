package main

import (
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	qt "github.com/frankban/quicktest"
)

// TestReadmeInstallIsStatic takes the install command from the README and
// checks that building mdctl the way it says (its environment, from this
// tree) gives a statically linked binary: no interpreter, no shared
// libraries.
func TestReadmeInstallIsStatic(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command")
	}
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	qt.Assert(t, err, qt.IsNil)
	m := regexp.MustCompile(`(?m)^((?:[A-Z_]+=\S+ )*)go install github\.com/go-mdraid/mdraid/cmd/mdctl@latest$`).FindSubmatch(readme)
	qt.Assert(t, m, qt.IsNotNil, qt.Commentf("README has no install command"))
	bin := filepath.Join(t.TempDir(), "mdctl")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Env = append(os.Environ(), strings.Fields(string(m[1]))...)
	out, err := cmd.CombinedOutput()
	qt.Assert(t, err, qt.IsNil, qt.Commentf("%s", out))
	f, err := elf.Open(bin)
	qt.Assert(t, err, qt.IsNil)
	defer f.Close()
	for _, p := range f.Progs {
		qt.Assert(t, p.Type, qt.Not(qt.Equals), elf.PT_INTERP, qt.Commentf("dynamically linked"))
	}
	libs, err := f.ImportedLibraries()
	qt.Assert(t, err, qt.IsNil)
	qt.Assert(t, libs, qt.HasLen, 0)
}
