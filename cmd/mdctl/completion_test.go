package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	qt "github.com/frankban/quicktest"
)

// TestCompletion builds mdctl and asks it for completions the way bash
// and zsh (through bashcompinit) do: COMP_LINE and COMP_POINT in the
// environment, the candidates on standard output.
func TestCompletion(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command")
	}
	bin := filepath.Join(t.TempDir(), "mdctl")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	qt.Assert(t, err, qt.IsNil, qt.Commentf("%s", out))
	tests := []struct{ line, want string }{
		{"mdctl sta", "status"},
		{"mdctl status --for", "--format"},
		{"mdctl exa", "examine"},
		{"mdctl status --format ", "prometheus"},
	}
	for _, tt := range tests {
		t.Run(tt.line, func(t *testing.T) {
			cmd := exec.Command(bin)
			cmd.Env = append(os.Environ(), "COMP_LINE="+tt.line, "COMP_POINT="+strconv.Itoa(len(tt.line)))
			out, err := cmd.Output()
			qt.Assert(t, err, qt.IsNil)
			qt.Assert(t, strings.Fields(string(out)), qt.Contains, tt.want)
		})
	}
	out2, _, code := mdctl(t, "completion", "zsh")
	qt.Assert(t, code, qt.Equals, 0)
	qt.Assert(t, out2, qt.Contains, "bashcompinit")
	qt.Assert(t, out2, qt.Contains, "complete -o default -C mdctl mdctl")
}
