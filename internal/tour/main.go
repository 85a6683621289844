// Command tour prints the README's CLI tour again: it rebuilds real
// captures from testdata/fixtures under a root directory (default /tour)
// and runs the mdctl binary given with -mdctl on them, printing each
// command line and its output as the README shows them (scripts/tour).
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/go-mdraid/mdraid/internal/fixture"
)

// steps are the tour's commands; "$R" stands for the root directory.
// A step piped through grep keeps only the lines matching its pattern.
var steps = []struct {
	args []string
	grep string
}{
	{args: []string{"status", "--sysfs", "$R/raid1-recovering/sys", "--dev", "$R/raid1-recovering/dev"}},
	{args: []string{"status", "--sysfs", "$R/raid1-failed/sys", "--dev", "$R/raid1-failed/dev"}},
	{args: []string{"status", "--sysfs", "$R/raid1-failed/sys", "--dev", "$R/raid1-failed/dev", "--format=prometheus"},
		grep: "^(node_md_disks|mdraid_slot|mdraid_member_state)"},
	{args: []string{"examine", "$R/raid1-failed/dev/vdb"}},
	{args: []string{"status", "--sysfs", "$R/raid1-failed/sys", "--dev", "$R/raid1-failed/dev", "--map-dir", "$R/run-mdadm", "--export", "md0"}},
	{args: []string{"examine", "--export", "$R/raid1-failed/dev/vda"}},
	{args: []string{"examine", "$R/raid1-v1.2-k7.2/dev/vda"}},
}

func main() {
	mdctl := flag.String("mdctl", "mdctl", "the mdctl binary")
	root := flag.String("root", "/tour", "where to rebuild the captures")
	fixtures := flag.String("fixtures", "testdata/fixtures", "the fixture directory")
	flag.Parse()
	if err := run(os.Stdout, *mdctl, *root, *fixtures); err != nil {
		fmt.Fprintln(os.Stderr, "tour:", err)
		os.Exit(1)
	}
}

func run(w io.Writer, mdctl, root, fixtures string) error {
	for _, name := range []string{"raid1-recovering", "raid1-failed", "raid1-v1.2-k7.2"} {
		c, err := fixture.LoadCase(filepath.Join(fixtures, name))
		if err != nil {
			return err
		}
		dir := filepath.Join(root, name)
		if err := os.RemoveAll(dir); err != nil {
			return err
		}
		if _, _, err := c.Materialize(dir); err != nil {
			return err
		}
	}
	for _, st := range steps {
		args := make([]string, len(st.args))
		for i, a := range st.args {
			args[i] = strings.ReplaceAll(a, "$R", root)
		}
		line := "$ mdctl " + strings.Join(args, " ")
		if st.grep != "" {
			line += " | grep -E '" + st.grep + "'"
		}
		fmt.Fprintln(w, line)
		var out bytes.Buffer
		cmd := exec.Command(mdctl, args...)
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		text := out.String()
		if st.grep != "" {
			g := exec.Command("grep", "-E", st.grep)
			g.Stdin = strings.NewReader(text)
			b, _ := g.Output()
			text = string(b)
		}
		fmt.Fprint(w, text)
		var ee *exec.ExitError
		switch {
		case errors.As(err, &ee):
			fmt.Fprintf(w, "$ echo $?\n%d\n", ee.ExitCode())
		case err != nil:
			return err
		}
	}
	return nil
}
