// Command looprig is a terminal UI session manager with a durable session
// runtime underneath. Everything lives in package cli; see README.md.

// GOMAXPROCS is set once at start (from the CPU limit then): Go's
// periodic update would wake every idle background host once a second to
// read its cgroup's CPU limit (issue 37: an idle host costs no CPU).
//
//go:debug updatemaxprocs=0
package main

import (
	"os"

	"looprig/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
