package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	qt "github.com/frankban/quicktest"

	"github.com/go-mdraid/mdraid/internal/fixture"
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
	// Array names come from the sysfs tree named on the line.
	sys, _ := fixture.Named(t, "eight-arrays").System(t)
	one, _ := fixture.Named(t, "raid5-inactive").System(t)
	tests := []struct{ line, want string }{
		{"mdctl sta", "status"},
		{"mdctl status --for", "--format"},
		{"mdctl exa", "examine"},
		{"mdctl status --format ", "prometheus"},
		{"mdctl status --sysfs " + sys + " md", "md0"},
		{"mdctl status --sysfs=" + sys + " ", "md7"},
		{"mdctl --sysfs " + one + " run ", "md127"},
		{"mdctl fail --sysfs " + sys + " md1", "md1"},
		{"mdctl fail --dev /dev --sysfs " + sys + " md", "md2"},
		{"mdctl replace --sysfs=" + sys + " ", "md3"},
		{"mdctl remove --sysfs " + sys + " md", "md6"},
		{"mdctl heal --sysfs " + sys + " --array ", "md2"},
		{"mdctl record --sysfs " + sys + " md0 ", "md5"},
		{"mdctl completion ", "fish"},
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
	// The member of fail is no array: the global flags are not counted
	// as its array argument.
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "COMP_LINE=mdctl fail --sysfs "+sys+" md0 ")
	out, err = cmd.Output()
	qt.Assert(t, err, qt.IsNil)
	qt.Assert(t, strings.Fields(string(out)), qt.Not(qt.Contains), "md1")

	out2, _, code := mdctl(t, "completion", "zsh")
	qt.Assert(t, code, qt.Equals, 0)
	qt.Assert(t, out2, qt.Contains, "bashcompinit")
	qt.Assert(t, out2, qt.Contains, "complete -o default -C mdctl mdctl")

	// fish calls mdctl back with COMP_LINE (no COMP_POINT) from a
	// function: the script, and a call made as it makes it.
	out2, _, code = mdctl(t, "completion", "fish")
	qt.Assert(t, code, qt.Equals, 0)
	qt.Assert(t, out2, qt.Contains, "set -lx COMP_LINE (commandline -cp)")
	qt.Assert(t, out2, qt.Contains, `complete -f -c mdctl -a "(__complete_mdctl)"`)
	cmd = exec.Command(bin)
	cmd.Env = append(os.Environ(), "COMP_LINE=mdctl status --sysfs "+sys+" ")
	out, err = cmd.Output()
	qt.Assert(t, err, qt.IsNil)
	qt.Assert(t, strings.Fields(string(out)), qt.Contains, "md4")
}
