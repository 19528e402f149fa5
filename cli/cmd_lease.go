package cli

import (
	"flag"
	"fmt"
	"time"

	"looprig/host"
	"looprig/internal/textsafe"
	"looprig/rig"
	"looprig/rig/storage"
)

var cmdLease = &command{
	name: "lease", brief: "take a wedged holder's lease by force", help: helpLease,
	dispatch: dispatchLease,
}

// dispatchLease runs lease's one subcommand, lease break.
func dispatchLease(e *env, args []string) int {
	if len(args) == 0 {
		return e.fail(&UsageError{Cmd: "lease", Msg: "missing subcommand: the only one is 'lease break ID'", Hint: "see 'looprig lease break --help'"})
	}
	switch args[0] {
	case "break":
		return cmdLeaseBreak.invoke(e, args[1:])
	case "-h", "--help", "-help", "help":
		fmt.Fprint(e.stdout, helpLease)
		return exitOK
	}
	return e.fail(&UsageError{Cmd: "lease", Msg: fmt.Sprintf("unknown subcommand %q: the only one is 'lease break ID'", args[0])})
}

var cmdLeaseBreak = &command{
	name: "lease break", help: helpLease,
	json: true, args: oneID, needs: needsStore, timeout: 30 * time.Second,
	flags: func(fs *flag.FlagSet, o *opts) {
		fs.BoolVar(&o.yes, "yes", false, "really break the lease")
	},
	run: runLeaseBreak,
}

const breakConsequences = `What happens to the old holder: its lease is gone at once and looprig fences
the journal at a new epoch, so its next write is refused. A turn it was
running on this machine is stopped by the break itself before it returns
(SIGTERM to the turn's process group, SIGKILL 3 s later), whether that holder
runs or is stopped, and the journal records the turn as interrupted
(lease_lost). A holder that runs notices the loss within about a second and
shows LEASE LOST ('looprig run' then exits 125, 'looprig restore --hold'
exits 4). A holder on another machine (a NATS store) is not reached: its turn
stops when that holder notices the loss, at once if it runs, not while it is
stopped. Nothing journaled before the break is lost, and the next restore
works at once.`

func runLeaseBreak(c *call) int {
	id, _, err := c.findExisting(c.args[0])
	if err != nil {
		return c.fail(err)
	}
	short := rig.ShortID(id.String())
	if !c.yes {
		status, err := rig.ProbeSession(c.ctx, c.st, id)
		if err != nil {
			return c.fail(fmt.Errorf("probe the lease of session %s: %w", short, err))
		}
		msg := fmt.Sprintf("refusing to break the lease of session %s (held by %s) without --yes", short, holderText(status.Held, status.Holder, status.Epoch))
		if !c.json {
			fmt.Fprintf(c.stderr, "%s\n\n", breakConsequences)
		}
		return c.fail(&UsageError{Cmd: "lease", Msg: msg,
			Hint: fmt.Sprintf("if that holder is really wedged: looprig %slease break %s --yes", c.globalArgs(), short)})
	}
	res, err := rig.BreakLease(c.ctx, c.st, id)
	if err != nil && res.Epoch == 0 {
		return c.fail(err) // nothing was broken
	}
	if c.json {
		out := breakJSON{ID: id.String(), Broken: res.Held, Epoch: res.PreviousEpoch, Interrupted: res.Interrupted}
		if res.Epoch > 0 {
			out.Epoch, out.Fenced = res.Epoch, &res.Fenced
		}
		if res.Held {
			prev := host.HolderOf(res.PreviousHolder)
			out.PreviousEpoch, out.PreviousHolder = &res.PreviousEpoch, &prev
		}
		if t := res.Turn; t != nil {
			out.Turn = &brokenTurnJSON{ID: t.ID, Index: t.Index, Epoch: t.Epoch, PGID: t.PGID, Host: t.Host, Here: t.Here,
				Signalled: t.Signalled, Killed: t.Killed, Gone: t.Gone}
		}
		c.writeJSON(out)
	} else {
		c.printBreak(short, res)
	}
	if res.FenceErr != nil {
		fmt.Fprintf(c.stderr, "looprig: warning: could not fence the journal of session %s: %s\n", short, textsafe.Sanitize(res.FenceErr.Error()))
	}
	if res.TurnErr != nil {
		fmt.Fprintf(c.stderr, "looprig: warning: session %s: the old holder's turn: %s\n", short, textsafe.Sanitize(res.TurnErr.Error()))
	}
	if res.CloseErr != nil {
		fmt.Fprintf(c.stderr, "looprig: warning: session %s: could not journal the end of its open turn: %s\n", short, textsafe.Sanitize(res.CloseErr.Error()))
	}
	if err != nil { // the release failed: the break happened
		return c.fail(err)
	}
	return exitOK
}

// printBreak says what a lease break did, for people.
func (c *call) printBreak(short string, res rig.BreakResult) {
	g := c.globalArgs()
	if res.Epoch == 0 {
		fmt.Fprintf(c.stdout, "the lease of session %s is not held; nothing to break (restore it with: looprig %srestore %s)\n", short, g, short)
		return
	}
	if res.Held {
		fmt.Fprintf(c.stdout, "broke the lease of session %s: it was held by %s; took it at epoch %d", short,
			holderText(true, res.PreviousHolder, res.PreviousEpoch), res.Epoch)
	} else {
		fmt.Fprintf(c.stdout, "the lease of session %s was not held, but a turn of its last holder still ran here; took it at epoch %d", short, res.Epoch)
	}
	if res.Fenced {
		fmt.Fprint(c.stdout, ", fenced the journal")
	}
	fmt.Fprint(c.stdout, " and released it.\n")
	if t := res.Turn; t != nil {
		fmt.Fprintf(c.stdout, "%s\n", brokenTurnText(t))
	}
	if n := len(res.Interrupted); n > 0 {
		fmt.Fprintf(c.stdout, "journaled %d open turn(s) as interrupted (lease_lost).\n", n)
	}
	fmt.Fprintf(c.stdout, "\n%s\n\nrestore it with: looprig %srestore %s\n", breakConsequences, g, short)
}

// brokenTurnText says what a lease break did about the old holder's turn.
func brokenTurnText(t *rig.BrokenTurn) string {
	what := fmt.Sprintf("its turn %d (process group %d", t.Index, t.PGID)
	switch {
	case !t.Here:
		return fmt.Sprintf("%s) runs on %s, not on this machine: this break cannot stop it; it stops when that holder notices the loss", what, textsafe.Line(t.Host))
	case t.Signalled && t.Gone && t.Killed:
		return "stopped " + what + ") on this machine: SIGTERM, then SIGKILL after the grace"
	case t.Signalled && t.Gone:
		return "stopped " + what + ") on this machine with SIGTERM"
	case t.Gone:
		return what + ") had already ended"
	case t.Signalled:
		return "signalled " + what + ") on this machine, but it still runs"
	}
	return what + ") still has live processes, but none carries the turn's environment: left alone"
}

// holderText says who holds a lease, for people: "nobody" when it is free.
func holderText(held bool, h storage.Holder, epoch uint64) string {
	if !held {
		return "nobody"
	}
	return fmt.Sprintf("pid %d@%s at epoch %d", h.PID, textsafe.Line(h.Host), epoch)
}
