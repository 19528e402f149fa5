package cli

import (
	"flag"
	"fmt"
	"os"

	"looprig/internal/textsafe"
	"looprig/rig/engine"
)

// cmdHook is what an agent turn's hooks run (engine.RunHook): the agent
// calls it with the hook's input on stdin, and it prints the answer the
// session's holder gives.
var cmdHook = &command{
	name: "hook", brief: "used by an agent session's hooks, not by hand", help: helpHook,
	args: noArgs,
	flags: func(fs *flag.FlagSet, o *opts) {
		fs.DurationVar(&o.hookWait, "wait", engine.DefaultAgentGateTimeout, "how long to wait for the holder's answer")
	},
	run: runHook,
}

func runHook(c *call) int {
	out, err := engine.RunHook(c.ctx, c.stdin, os.Getenv, c.hookWait)
	if err != nil {
		fmt.Fprintf(c.stderr, "looprig hook: %s\n", textsafe.Line(err.Error()))
	}
	if out != "" {
		fmt.Fprintln(c.stdout, out)
	}
	return exitOK
}

const helpHook = `Usage: looprig hook [--wait D]

Run by an agent session's agent (engine = "claude"), never by hand: the
agent's hooks call it with the hook's input on stdin. It forwards the input
to the session's holder over the turn's private socket (its path and token
are in the agent's environment) and prints the holder's answer. A tool the
agent wants to use is allowed only when the holder allows it: when the
holder cannot be reached or does not answer within --wait, the answer is
deny.

Flags:
  --wait D   how long to wait for the holder's answer (default 10m0s)
`
