package main

import (
	"fmt"

	"github.com/alecthomas/kong"
)

// HelpCmd is `mdctl help [COMMAND]`, the same as `mdctl [COMMAND] --help`.
type HelpCmd struct {
	Command []string `arg:"" optional:"" help:"The command to explain."`
}

// Run prints the help of the named command (of mdctl without one).
func (c *HelpCmd) Run(k *kong.Context) error {
	args := append(append([]string{}, c.Command...), "--help")
	_, err := k.Kong.Parse(args)
	return err
}

// VersionCmd is `mdctl version`, the same as `mdctl --version`.
type VersionCmd struct{}

// Run prints the version.
func (c *VersionCmd) Run(k *kong.Context) error {
	fmt.Fprintln(k.Stdout, version())
	return nil
}
