// Command hello is the start-up floor of any Go command in
// bench/statusvm: a Go hello world, as `mdctl --version` prints one line.
package main

import "os"

func main() { os.Stdout.WriteString("hello\n") }
