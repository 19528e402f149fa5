package cli

import (
	"context"
	"fmt"
	"time"

	"looprig/internal/textsafe"
	"looprig/rig"
	"looprig/rig/storage"
)

func cmdLease(e *env, args []string) int {
	if len(args) == 0 {
		return e.fail(&UsageError{Cmd: "lease", Msg: "missing subcommand: the only one is 'lease break ID'", Hint: "see 'looprig lease break --help'"})
	}
	switch args[0] {
	case "break":
		return cmdLeaseBreak(e, args[1:])
	case "-h", "--help", "-help", "help":
		fmt.Fprint(e.stdout, helpLease)
		return exitOK
	}
	return e.fail(&UsageError{Cmd: "lease", Msg: fmt.Sprintf("unknown subcommand %q: the only one is 'lease break ID'", args[0])})
}

const breakConsequences = `What happens to the old holder: its lease is gone at once (the lock file is
replaced) and looprig fences the journal at a new epoch, so its next write
is refused. Within about a second its watchdog notices: it shows LEASE LOST,
stops its running turn and writes nothing more ('looprig run' then exits
125, 'looprig restore --hold' exits 4). Nothing journaled before the break
is lost, and the next restore works at once.`

func cmdLeaseBreak(e *env, args []string) int {
	fs := e.newFlags("lease break")
	fs.BoolVar(&e.json, "json", false, "JSON output")
	yes := fs.Bool("yes", false, "really break the lease")
	pos, _, dash, code, done := e.parse(fs, args, helpLease)
	if done {
		return code
	}
	input, code, bad := e.wantID(pos, dash)
	if bad {
		return code
	}
	if _, err := e.loadConfig(); err != nil { // a bad configuration is an error everywhere
		return e.fail(err)
	}
	st, err := e.openStore()
	if err != nil {
		return e.fail(err)
	}
	defer st.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	id, _, err := e.findExisting(ctx, st, input)
	if err != nil {
		return e.fail(err)
	}
	short := rig.ShortID(id.String())
	if !*yes {
		status, err := rig.ProbeSession(ctx, st, id)
		if err != nil {
			return e.fail(fmt.Errorf("probe the lease of session %s: %w", short, err))
		}
		msg := fmt.Sprintf("refusing to break the lease of session %s (held by %s) without --yes", short, holderText(status.Held, status.Holder, status.Epoch))
		if !e.json {
			fmt.Fprintf(e.stderr, "%s\n\n", breakConsequences)
		}
		return e.fail(&UsageError{Cmd: "lease", Msg: msg,
			Hint: fmt.Sprintf("if that holder is really wedged: looprig %slease break %s --yes", e.globalArgs(), short)})
	}
	res, err := rig.BreakLease(ctx, st, id)
	if err != nil && res.Epoch == 0 {
		return e.fail(err) // nothing was broken
	}
	if !res.Held {
		if e.json {
			e.writeJSONLine(newObj().set("id", id.String()).set("broken", false).set("epoch", res.PreviousEpoch).set("previous_holder", nil))
		} else {
			fmt.Fprintf(e.stdout, "the lease of session %s is not held; nothing to break (restore it with: looprig %srestore %s)\n", short, e.globalArgs(), short)
		}
		return exitOK
	}
	if e.json {
		o := newObj().set("id", id.String()).set("broken", true).set("epoch", res.Epoch).set("previous_epoch", res.PreviousEpoch).
			set("previous_holder", map[string]any{"pid": res.PreviousHolder.PID, "host": res.PreviousHolder.Host}).set("fenced", res.Fenced)
		e.writeJSONLine(o)
	} else {
		fmt.Fprintf(e.stdout, "broke the lease of session %s: it was held by %s; took it at epoch %d", short,
			holderText(true, res.PreviousHolder, res.PreviousEpoch), res.Epoch)
		if res.Fenced {
			fmt.Fprint(e.stdout, ", fenced the journal")
		}
		fmt.Fprintf(e.stdout, " and released it.\n\n%s\n\nrestore it with: looprig %srestore %s\n", breakConsequences, e.globalArgs(), short)
	}
	if res.FenceErr != nil {
		fmt.Fprintf(e.stderr, "looprig: warning: could not fence the journal of session %s: %s\n", short, textsafe.Sanitize(res.FenceErr.Error()))
	}
	if err != nil { // the release failed: the break happened
		return e.fail(err)
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
