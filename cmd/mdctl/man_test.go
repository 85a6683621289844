package main

import (
	"bytes"
	"fmt"
	"io"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/alecthomas/kong"

	"github.com/go-mdraid/mdraid/internal/golden"
)

// TestManPage (issue 31) keeps docs/mdctl.8 generated from the command
// model that --help prints (newParser: the same commands, flags,
// arguments, help texts and exit-code tables), so the two cannot drift:
// it fails when the checked-in page differs from what the model gives.
// scripts/gen-man (go test -run TestManPage -update) rewrites it.
func TestManPage(t *testing.T) {
	var cli CLI
	app, err := newParser(&cli)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	writeMan(&b, app)
	golden.Check(t, filepath.Join("..", "..", "docs", "mdctl.8"), b.Bytes())

	// The help texts speak of the command line: no Go identifiers
	// (md.SafeName, watch.Event) and no "go doc" pointers.
	goIdent := regexp.MustCompile(`\b(md|watch|sysfs|store|metrics|superblock|blockdev|kong|ioctl)\.[A-Z][A-Za-z]+|go doc`)
	for i, l := range strings.Split(b.String(), "\n") {
		if m := goIdent.FindString(l); m != "" {
			t.Errorf("docs/mdctl.8:%d: help text names a Go identifier %q: %s", i+1, m, l)
		}
	}
}

// writeMan writes the man page of app's model in roff (man(7) macros).
func writeMan(w io.Writer, app *kong.Kong) {
	root := app.Model.Node
	fmt.Fprintf(w, ".\\\" Generated from mdctl's command model (the one --help prints) by\n")
	fmt.Fprintf(w, ".\\\" scripts/gen-man; do not edit: change the help texts in cmd/mdctl.\n")
	fmt.Fprintf(w, ".TH MDCTL 8 \"\" \"go-mdraid\" \"System Administration\"\n")
	fmt.Fprintf(w, ".SH NAME\nmdctl \\- %s\n", roff(strings.TrimSuffix(strings.ToLower(root.Help[:1])+root.Help[1:], ".")))
	fmt.Fprintf(w, ".SH SYNOPSIS\n.B mdctl\n[\\fIGLOBAL FLAGS\\fR] \\fICOMMAND\\fR [\\fIFLAGS\\fR] [\\fIARGUMENTS\\fR]\n")
	fmt.Fprintf(w, ".SH DESCRIPTION\n%s\n", roff(root.Help))
	fmt.Fprintf(w, ".PP\n%s\n", roff("mdctl reads md superblocks and drives sysfs and the md ioctls itself, without mdadm. "+
		"A command that changes something takes --dry-run (the same checks and exit codes, nothing written); "+
		"a usage error is one line on standard error and exit code 80."))
	fmt.Fprintf(w, ".PP\n%s\n", roff("Device arguments follow one rule in every command: a name without a slash is a kernel name, "+
		"the node of that name under --dev (vda is /dev/vda, never a file vda in the current directory); "+
		"anything with a slash is a path taken as given (/dev/vda, a /dev/disk/by-id or /dev/disk/by-path link, "+
		"./disk.img for an image file in the current directory)."))
	fmt.Fprintf(w, ".SH GLOBAL FLAGS\n")
	for _, f := range root.Flags {
		writeFlag(w, f)
	}
	fmt.Fprintf(w, ".SH COMMANDS\n")
	for _, n := range root.Children {
		if n.Hidden {
			continue
		}
		fmt.Fprintf(w, ".SS \"%s\"\n", roff("mdctl "+n.Name+" "+strings.TrimSpace(n.Summary()[len(n.Path()):])))
		fmt.Fprintf(w, "%s\n", roff(n.Help))
		if d := nodeDetail(n); d != "" {
			writeDetail(w, d)
		}
		for _, p := range n.Positional {
			fmt.Fprintf(w, ".TP\n.I %s\n%s\n", roff(p.Summary()), roff(p.Help))
		}
		for _, f := range n.Flags {
			writeFlag(w, f)
		}
	}
	fmt.Fprintf(w, ".SH EXIT CODES\n%s\n", roff("Each command lists its own above; every command exits 80 on a usage error. "+
		"A refusal (exit 2 for the commands that change something) wrote nothing."))
	fmt.Fprintf(w, ".SH SEE ALSO\n.BR mdadm (8),\n.BR md (4)\n")
}

// nodeDetail is a command's long help: its Help method, as --help
// prints it (kong.HelpProvider).
func nodeDetail(n *kong.Node) string {
	if n.Detail != "" {
		return n.Detail
	}
	if !n.Target.IsValid() {
		return ""
	}
	v := n.Target
	if v.Kind() != reflect.Pointer && v.CanAddr() {
		v = v.Addr()
	}
	if hp, ok := v.Interface().(kong.HelpProvider); ok {
		return hp.Help()
	}
	return ""
}

// writeDetail writes a long help text: paragraphs, and a paragraph of
// indented lines (an exit-code table) as one tagged paragraph per code.
func writeDetail(w io.Writer, d string) {
	for _, para := range strings.Split(strings.TrimSpace(d), "\n\n") {
		lines := strings.Split(para, "\n")
		fmt.Fprintf(w, ".PP\n")
		indented := len(lines) > 1
		for _, l := range lines[1:] {
			indented = indented && strings.HasPrefix(l, "  ")
		}
		if !indented {
			fmt.Fprintf(w, "%s\n", roff(strings.Join(lines, " ")))
			continue
		}
		// An exit-code table: "  CODE  meaning" lines.
		fmt.Fprintf(w, "%s\n.RS\n", roff(lines[0]))
		for _, l := range lines[1:] {
			code, meaning, _ := strings.Cut(strings.TrimSpace(l), " ")
			fmt.Fprintf(w, ".TP 5\n.B %s\n%s\n", roff(code), roff(strings.TrimSpace(meaning)))
		}
		fmt.Fprintf(w, ".RE\n")
	}
}

// writeFlag writes one flag as a tagged paragraph; --help is left out.
func writeFlag(w io.Writer, f *kong.Flag) {
	if f.Hidden || f.Name == "help" {
		return
	}
	tag := "--" + f.Name
	if f.Short != 0 {
		tag = "-" + string(f.Short) + ", " + tag
	}
	if !f.IsBool() && !f.IsCounter() {
		// As --help prints it, but an enum's values instead of its
		// quoted default.
		ph := f.FormatPlaceHolder()
		if f.Enum != "" {
			ph = strings.Join(f.EnumSlice(), "|")
		} else if u, err := strconv.Unquote(ph); err == nil {
			ph = u
		}
		tag += "=" + ph
	}
	help := f.Help
	if f.Default != "" && !f.IsBool() {
		help += " (default: " + f.Default + ")"
	}
	fmt.Fprintf(w, ".TP\n.B %s\n%s\n", roff(tag), roff(help))
}

// roff escapes text for a roff line: backslashes, hyphens of options and
// a leading dot or quote that roff would take for a request.
func roff(s string) string {
	s = strings.ReplaceAll(s, `\`, `\e`)
	s = strings.ReplaceAll(s, "-", `\-`)
	s = strings.ReplaceAll(s, "\n", " ")
	if strings.HasPrefix(s, ".") || strings.HasPrefix(s, "'") {
		s = `\&` + s
	}
	return s
}
