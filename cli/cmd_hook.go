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
		fs.StringVar(&o.hookSocket, "socket", "", "the turn's hook socket (the turn's settings name it)")
		fs.StringVar(&o.hookTokenFile, "token-file", "", "the file that holds the turn's token (the turn's settings name it)")
	},
	run: runHook,
}

func runHook(c *call) int {
	target := engine.HookTarget{Socket: c.hookSocket, TokenFile: c.hookTokenFile}
	if target.Socket == "" && target.TokenFile == "" {
		// A turn an earlier looprig started named them in the agent's
		// environment.
		target = engine.HookTargetFromEnv(os.Getenv)
	}
	out, err := engine.RunHook(c.ctx, c.stdin, target, c.hookWait)
	if err != nil {
		fmt.Fprintf(c.stderr, "looprig hook: %s\n", textsafe.Line(err.Error()))
	}
	if out != "" {
		fmt.Fprintln(c.stdout, out)
	}
	return exitOK
}

const helpHook = `Usage: looprig hook [--wait D] --socket PATH --token-file PATH

Run by an agent session's agent (engine = "claude"), never by hand: the
agent's hooks call it with the hook's input on stdin. It forwards the input
to the session's holder over the turn's private socket and prints the
holder's answer. The turn's settings name the socket and the file that
holds the turn's token on this command line: neither is in the agent's
environment, nor in its tools'. A tool the agent wants to use is allowed
only when the holder allows it: when the holder cannot be reached or does
not answer within --wait, the answer is deny. The holder takes only the
hook events the turn asked for (see README: Agent sessions).

Flags:
  --wait D            how long to wait for the holder's answer (default 10m0s)
  --socket PATH       the turn's hook socket
  --token-file PATH   the file that holds the turn's token
`
