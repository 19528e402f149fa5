package cli

import (
	"flag"
	"fmt"
	"time"

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

const breakConsequences = `What happens to the old holder: its lease is gone at once (the lock file is
replaced) and looprig fences the journal at a new epoch, so its next write
is refused. Within about a second its watchdog notices: it shows LEASE LOST,
stops its running turn and writes nothing more ('looprig run' then exits
125, 'looprig restore --hold' exits 4). Nothing journaled before the break
is lost, and the next restore works at once.`

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
	if !res.Held {
		if c.json {
			c.writeJSON(breakJSON{ID: id.String(), Broken: false, Epoch: res.PreviousEpoch})
		} else {
			fmt.Fprintf(c.stdout, "the lease of session %s is not held; nothing to break (restore it with: looprig %srestore %s)\n", short, c.globalArgs(), short)
		}
		return exitOK
	}
	if c.json {
		c.writeJSON(breakJSON{ID: id.String(), Broken: true, Epoch: res.Epoch, PreviousEpoch: &res.PreviousEpoch,
			PreviousHolder: &holderJSON{Host: res.PreviousHolder.Host, PID: res.PreviousHolder.PID}, Fenced: &res.Fenced})
	} else {
		fmt.Fprintf(c.stdout, "broke the lease of session %s: it was held by %s; took it at epoch %d", short,
			holderText(true, res.PreviousHolder, res.PreviousEpoch), res.Epoch)
		if res.Fenced {
			fmt.Fprint(c.stdout, ", fenced the journal")
		}
		fmt.Fprintf(c.stdout, " and released it.\n\n%s\n\nrestore it with: looprig %srestore %s\n", breakConsequences, c.globalArgs(), short)
	}
	if res.FenceErr != nil {
		fmt.Fprintf(c.stderr, "looprig: warning: could not fence the journal of session %s: %s\n", short, textsafe.Sanitize(res.FenceErr.Error()))
	}
	if err != nil { // the release failed: the break happened
		return c.fail(err)
	}
	return exitOK
}

// holderText says who holds a lease, for people: "nobody" when it is free.
func holderText(held bool, h storage.Holder, epoch uint64) string {
	if !held {
		return "nobody"
	}
	return fmt.Sprintf("pid %d@%s at epoch %d", h.PID, textsafe.Line(h.Host), epoch)
}
