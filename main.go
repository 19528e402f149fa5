// Command looprig is a terminal UI session manager with a durable session
// runtime underneath. This build carries the storage layer only; the
// subcommands and the UI arrive with the runtime, CLI and TUI work.
package main

import (
	"fmt"
	"os"
)

const usage = `looprig - durable, restorable terminal sessions

Usage:
  looprig [--help]

This build contains the storage layer (rig/storage, fsstore) only. The
session runtime, the headless subcommands (ls, new, run, restore, log,
lease break, demo) and the terminal UI are not built yet; see README.md.
`

func main() {
	for _, a := range os.Args[1:] {
		if a == "-h" || a == "--help" || a == "help" {
			fmt.Print(usage)
			return
		}
	}
	if len(os.Args) > 1 {
		fmt.Fprint(os.Stderr, usage)
		fmt.Fprintf(os.Stderr, "\nlooprig: unknown command %q\n", os.Args[1])
		os.Exit(2)
	}
	fmt.Print(usage)
}
