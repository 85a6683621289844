package main

import (
	"bytes"
	"testing"

	qt "github.com/frankban/quicktest"

	"github.com/alecthomas/kong"
)

func TestCommandName(t *testing.T) {
	c := qt.New(t)
	for _, tt := range []struct {
		args []string
		want string
	}{
		{nil, ""},
		{[]string{"status"}, "status"},
		{[]string{"status", "md0"}, "status"},
		{[]string{"--sysfs", "/s", "--dev", "/d", "status"}, "status"},
		{[]string{"--sysfs=/s", "examine", "x"}, "examine"},
		{[]string{"-V"}, "--version"},
		{[]string{"-V", "status"}, "status"},
		{[]string{"--sysfs", "/s", "--version"}, "--version"},
		{[]string{"--help"}, ""},
		{[]string{"--bogus", "status"}, ""},
		{[]string{"--", "status"}, ""},
		{[]string{"--homehost", "status", "stop"}, "stop"},
	} {
		c.Check(commandName(tt.args), qt.Equals, tt.want, qt.Commentf("%q", tt.args))
	}
}

// TestParserForOneCommandIsTheSame: the parser built for one command
// gives that command the help, flags and errors the whole tree gives it.
func TestParserForOneCommandIsTheSame(t *testing.T) {
	c := qt.New(t)
	parse := func(whole bool, args ...string) (string, int) {
		var cli CLI
		var out bytes.Buffer
		code := -1
		opts := []kong.Option{kong.Writers(&out, &out), kong.Exit(func(n int) { code = n; panic(exitPanic{}) })}
		var p *kong.Kong
		var err error
		if whole {
			p, err = newParser(&cli, opts...)
		} else {
			p, err = parserFor(&cli, args, opts...)
		}
		c.Assert(err, qt.IsNil)
		func() {
			defer func() {
				if r := recover(); r != nil {
					if _, ok := r.(exitPanic); !ok {
						panic(r)
					}
				}
			}()
			if _, err := p.Parse(args); err != nil {
				out.WriteString("error: " + err.Error())
			}
		}()
		return out.String(), code
	}
	cmds := commandsOf(&CLI{})
	c.Assert(len(cmds) > 10, qt.IsTrue)
	for _, cmd := range cmds {
		for _, args := range [][]string{{cmd.name, "--help"}, {cmd.name, "--no-such-flag"}} {
			whole, wc := parse(true, args...)
			one, oc := parse(false, args...)
			c.Check(one, qt.Equals, whole, qt.Commentf("%q", args))
			c.Check(oc, qt.Equals, wc, qt.Commentf("%q", args))
		}
	}
}

type exitPanic struct{}
