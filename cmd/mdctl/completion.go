package main

import (
	"fmt"
	"strings"

	"github.com/alecthomas/kong"
	"github.com/posener/complete"
	"github.com/willabides/kongplete"

	"github.com/go-mdraid/mdraid/sysfs"
)

// CompletionCmd is `mdctl completion`. The completions themselves are
// answered by mdctl (through kongplete) when the shell calls it back.
type CompletionCmd struct {
	Shell string `arg:"" enum:"bash,zsh,fish" help:"bash, zsh or fish."`
}

// Run prints the code to evaluate in the shell's startup file, for example
// `eval "$(mdctl completion bash)"`, or for fish `mdctl completion fish |
// source` (or save it as ~/.config/fish/completions/mdctl.fish). Every
// shell calls mdctl back with COMP_LINE set; fish, which has no `complete
// -C`, does it through a function, as kongplete's own installer writes.
func (c *CompletionCmd) Run(k *kong.Context) error {
	switch c.Shell {
	case "fish":
		fmt.Fprint(k.Stdout, `function __complete_mdctl
    set -lx COMP_LINE (commandline -cp)
    test -z (commandline -ct)
    and set COMP_LINE "$COMP_LINE "
    mdctl
end
complete -f -c mdctl -a "(__complete_mdctl)"
`)
		return nil
	case "zsh":
		fmt.Fprintln(k.Stdout, "autoload -U +X bashcompinit && bashcompinit")
	}
	fmt.Fprintln(k.Stdout, "complete -o default -C mdctl mdctl")
	return nil
}

// completeLine answers the shell's completion request (COMP_LINE is set)
// as kongplete.Complete does, with array names completed and the
// global flags not counted as positional arguments.
func completeLine(parser *kong.Kong, line string, exit func(int)) {
	cmd, err := kongplete.Command(parser, kongplete.WithPredictor("array", arrayPredictor{root: sysfsRoot(line)}))
	if err != nil {
		parser.Errorf("error running command completion: %v", err)
		exit(1)
		return
	}
	wrapArgs(&cmd, globalFlags(parser.Model.Node))
	c := complete.New(parser.Model.Name, cmd)
	c.Out = parser.Stdout
	if c.Complete() {
		exit(0)
	}
}

// sysfsRoot is the --sysfs root given on the line being completed, or
// /sys.
func sysfsRoot(line string) string {
	root := sysfs.DefaultRoot
	words := strings.Fields(line)
	for i, w := range words {
		switch {
		case w == "--sysfs" && i+1 < len(words):
			root = words[i+1]
		case strings.HasPrefix(w, "--sysfs="):
			root = strings.TrimPrefix(w, "--sysfs=")
		}
	}
	return root
}

// globalFlags returns the flags of node (the application: the global
// flags), spelled as typed, each with whether it takes a value.
func globalFlags(node *kong.Node) map[string]bool {
	out := map[string]bool{}
	for _, f := range node.Flags {
		out["--"+f.Name] = !f.Value.IsBool()
		if f.Short != 0 {
			out["-"+string(f.Short)] = !f.Value.IsBool()
		}
	}
	return out
}

// wrapArgs makes the positional predictors of cmd's subcommands skip the
// global flags: kongplete v0.4.0 knows only a command's own flags, and
// counts "--sysfs DIR" before a command's argument as that argument.
func wrapArgs(cmd *complete.Command, globals map[string]bool) {
	for name, sub := range cmd.Sub {
		if sub.Args != nil {
			sub.Args = withoutGlobals{inner: sub.Args, globals: globals}
		}
		wrapArgs(&sub, globals)
		cmd.Sub[name] = sub
	}
}

// withoutGlobals is a positional predictor that does not see the global
// flags.
type withoutGlobals struct {
	inner   complete.Predictor
	globals map[string]bool // flag -> takes a value
}

// Predict implements complete.Predictor.
func (w withoutGlobals) Predict(a complete.Args) []string {
	a.All = w.strip(a.All)
	a.Completed = w.strip(a.Completed)
	return w.inner.Predict(a)
}

func (w withoutGlobals) strip(words []string) []string {
	var out []string
	for i := 0; i < len(words); i++ {
		name, _, hasValue := strings.Cut(words[i], "=")
		takes, ok := w.globals[name]
		switch {
		case !ok:
			out = append(out, words[i])
		case takes && !hasValue:
			i++ // and its value
		}
	}
	return out
}

// arrayPredictor completes array names (the `predictor:"array"` tag): the
// md arrays in sysfs below root.
type arrayPredictor struct{ root string }

// Predict implements complete.Predictor.
func (p arrayPredictor) Predict(complete.Args) []string {
	fsys, err := sysfs.NewFS(p.root)
	if err != nil {
		return nil
	}
	names, err := fsys.Arrays()
	if err != nil {
		return nil
	}
	return names
}
