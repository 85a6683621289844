// Command deps is the start-up floor of mdctl's dependencies in
// bench/statusvm: it links every module outside the standard library
// that mdctl links (their package initialisation runs, their code is
// mapped), uses none of them, and prints one line as `mdctl --version`
// does. The difference to mdctl's own start-up is mdctl's code.
package main

import (
	"os"

	_ "github.com/alecthomas/kong"
	_ "github.com/dsnet/golib/unitconv"
	_ "github.com/google/renameio/v2"
	_ "github.com/google/uuid"
	_ "github.com/posener/complete"
	_ "github.com/willabides/kongplete"
	_ "golang.org/x/sys/unix"
)

func main() { os.Stdout.WriteString("deps\n") }
