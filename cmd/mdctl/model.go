package main

import (
	"reflect"
	"strings"

	"github.com/alecthomas/kong"
)

// A command line names one command, and kong's model of all sixteen
// (every flag of every command, built by reflection) costs more start-up
// time than a status report of a small system under emulation. So the
// parser is built for the command the arguments name, with the global
// flags, and for every command only when it needs them all: no command or
// one that is not known (kong's usage and its "did you mean"), help and
// completion (they show or walk the whole tree).

// command is one command of CLI: its name on the command line, its help,
// and the field that holds its flags.
type command struct {
	name, help string
	value      any // pointer to the CLI field
}

// commandsOf lists cli's commands in the order CLI declares them.
func commandsOf(cli *CLI) []command {
	v := reflect.ValueOf(cli).Elem()
	t := v.Type()
	var cmds []command
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if _, ok := f.Tag.Lookup("cmd"); !ok {
			continue
		}
		name := f.Tag.Get("name")
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		cmds = append(cmds, command{name: name, help: f.Tag.Get("help"), value: v.Field(i).Addr().Interface()})
	}
	return cmds
}

// wholeTree reports whether the parser for command name needs every
// command.
func wholeTree(name string) bool { return name == "help" || name == "completion" }

// commandName returns the command args name: the first argument that is
// neither a global flag nor the value of one. It returns "" when there is
// none, or when a flag before it is not a global one (the usage kong then
// prints lists every command).
func commandName(args []string) string {
	valued, known := map[string]bool{}, map[string]bool{"--help": true, "-h": true}
	t := reflect.TypeOf(Globals{})
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		known["--"+f.Tag.Get("name")] = true
		if s := f.Tag.Get("short"); s != "" {
			known["-"+s] = true
		}
		if f.Type.Kind() == reflect.String {
			valued["--"+f.Tag.Get("name")] = true
		}
	}
	version := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		flag, _, withValue := strings.Cut(a, "=")
		switch {
		case a == "--":
			return ""
		case a == "--version" || a == "-V":
			version = true
		case strings.HasPrefix(a, "-"):
			if !known[flag] {
				return ""
			}
			if valued[flag] && !withValue {
				i++ // --sysfs DIR
			}
		default:
			return a
		}
	}
	if version {
		// Alone, kong prints the version and exits before it looks
		// for a command: no command is needed.
		return "--version"
	}
	return ""
}

// parserFor builds the parser for args: with only the command they name
// when that is enough (see above), else with all.
func parserFor(cli *CLI, args []string, options ...kong.Option) (*kong.Kong, error) {
	name := commandName(args)
	cmds := commandsOf(cli)
	var only []command
	if !wholeTree(name) {
		for _, c := range cmds {
			if c.name == name {
				only = []command{c}
			}
		}
	}
	switch {
	case name == "--version":
		only = nil // no command is parsed
	case only == nil:
		only = cmds
	}
	for _, c := range only {
		options = append(options, kong.DynamicCommand(c.name, c.help, "", c.value))
	}
	return newRoot(&cli.Globals, options...)
}

// newParser builds the parser with every command; tests add kong.Writers
// and kong.Exit.
func newParser(cli *CLI, options ...kong.Option) (*kong.Kong, error) {
	return parserFor(cli, nil, options...)
}

// newRoot builds a parser whose root holds the global flags.
func newRoot(g *Globals, options ...kong.Option) (*kong.Kong, error) {
	opts := append([]kong.Option{
		kong.Name("mdctl"),
		kong.Description("Inspect and manage Linux MD software RAID."),
	}, options...)
	return kong.New(g, opts...)
}
