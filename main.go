// Command looprig is a terminal UI session manager with a durable session
// runtime underneath. Everything lives in package cli; see README.md.
package main

import (
	"os"

	"looprig/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
