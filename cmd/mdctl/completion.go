package main

import (
	"fmt"

	"github.com/alecthomas/kong"
)

// CompletionCmd is `mdctl completion`. The completions themselves are
// answered by mdctl (through kongplete) when the shell calls it back.
type CompletionCmd struct {
	Shell string `arg:"" enum:"bash,zsh" help:"bash or zsh."`
}

// Run prints the code to evaluate in the shell's startup file, for example
// `eval "$(mdctl completion bash)"`.
func (c *CompletionCmd) Run(k *kong.Context) error {
	switch c.Shell {
	case "zsh":
		fmt.Fprintln(k.Stdout, "autoload -U +X bashcompinit && bashcompinit")
	}
	fmt.Fprintln(k.Stdout, "complete -o default -C mdctl mdctl")
	return nil
}
