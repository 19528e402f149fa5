package cli

import (
	"flag"
	"fmt"
	"time"

	"looprig/internal/textsafe"
	"looprig/rig"
)

var cmdGate = &command{
	name: "gate", brief: "approve or deny the gate a live session waits at", help: helpGate,
	json: true, args: gateArgs, needs: needsStore, timeout: 15 * time.Second,
	flags: func(fs *flag.FlagSet, o *opts) {
		fs.StringVar(&o.gateID, "gate", "", "answer this gate only (its id, as `ls --json` or the TUI shows it): refused if another one is open")
	},
	run: runGate,
}

// gateArgs: gate ID approve|deny.
func gateArgs(c *call) error {
	switch {
	case len(c.args) < 2:
		return usageErr(c.cmd, "usage: looprig gate ID approve|deny")
	case len(c.args) > 2:
		return usageErr(c.cmd, fmt.Sprintf("unexpected argument %q", c.args[2]))
	case c.args[1] != "approve" && c.args[1] != "deny":
		return usageErr(c.cmd, fmt.Sprintf("the answer is approve or deny, not %q", c.args[1]))
	}
	return nil
}

// gateJSON is gate --json's output.
type gateJSON struct {
	ID      string `json:"id"`
	ShortID string `json:"short_id"`
	Gate    string `json:"gate"`
	Prompt  string `json:"prompt"`
	Approve bool   `json:"approve"`
}

func runGate(c *call) int {
	id, cl, err := c.connectArg()
	if err != nil {
		return c.fail(err)
	}
	defer cl.Close()
	st, err := cl.Status(c.ctx)
	if err != nil {
		return c.fail(err)
	}
	gateID, open := c.gateID, ""
	if st.Gate != nil {
		open = st.Gate.ID
	}
	if gateID == "" {
		gateID = open
	}
	if gateID == "" || gateID != open {
		return c.fail(&rig.NoGateError{GateID: gateID, Open: open})
	}
	approve := c.args[1] == "approve"
	if err := cl.RespondGate(c.ctx, gateID, approve, "cli"); err != nil {
		return c.fail(err)
	}
	out := gateJSON{ID: id.String(), ShortID: rig.ShortID(id.String()), Gate: gateID, Prompt: st.Gate.Prompt, Approve: approve}
	if c.json {
		c.writeJSON(out)
		return exitOK
	}
	verb := "denied"
	if approve {
		verb = "approved"
	}
	fmt.Fprintf(c.stdout, "%s gate %s of session %s: %s\n", verb, rig.ShortID(gateID), out.ShortID, textsafe.Line(out.Prompt))
	return exitOK
}

const helpGate = `Usage: looprig gate ID approve|deny [--gate GATE] [--json]

Answer the gate session ID waits at, as the TUI's a and d keys do: approve
lets the gated command (or the agent's tool call) run, deny refuses it.
Both answers are journaled with who gave them: "cli", this process's pid
and whether it had a terminal. The session must be live in a host (new
--detach, run --detach, restore --detach, or the TUI).

Only a person answers a gate: gate run by a process inside one of the
session's own turns (a command the turn or an agent's tool ran, which
carries its LOOPRIG_SESSION, or is in its process group) is refused
(from_turn, exit 1), and the attempt is journaled; the gate stays open.

Flags:
  --gate GATE   answer only this gate; refused when another one is open
                (a gate that opened after you looked is not answered by
                mistake)
  --json        print {"id","short_id","gate","prompt","approve"}

Examples:
  looprig gate 3f2a approve
  looprig gate 3f2a deny --gate 9c1e4b7a-...
`
