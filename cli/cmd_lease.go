package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"looprig/internal/textsafe"
	"looprig/rig"
	"looprig/rig/journal"
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
	id, tip, err := e.findExisting(ctx, st, input)
	if err != nil {
		return e.fail(err)
	}
	short := rig.ShortID(id.String())
	name := storage.SessionName(id.String())
	status, err := st.Probe(ctx, name)
	if err != nil {
		return e.fail(fmt.Errorf("probe the lease of session %s: %w", short, err))
	}
	who := "nobody"
	if status.Held {
		who = fmt.Sprintf("pid %d@%s at epoch %d", status.Holder.PID, textsafe.Line(status.Holder.Host), status.Epoch)
	}
	if !*yes {
		msg := fmt.Sprintf("refusing to break the lease of session %s (held by %s) without --yes", short, who)
		if !e.json {
			fmt.Fprintf(e.stderr, "%s\n\n", breakConsequences)
		}
		return e.fail(&UsageError{Cmd: "lease", Msg: msg,
			Hint: fmt.Sprintf("if that holder is really wedged: looprig %slease break %s --yes", e.globalArgs(), short)})
	}
	if !status.Held {
		if e.json {
			e.writeJSONLine(newObj().set("id", id.String()).set("broken", false).set("epoch", status.Epoch).set("previous_holder", nil))
		} else {
			fmt.Fprintf(e.stdout, "the lease of session %s is not held; nothing to break (restore it with: looprig %srestore %s)\n", short, e.globalArgs(), short)
		}
		return exitOK
	}
	l, err := st.Break(ctx, name)
	if err != nil {
		return e.fail(fmt.Errorf("break the lease of session %s: %w", short, err))
	}
	// Fence the journal at the new epoch: the old holder's next append
	// conflicts even before its watchdog notices the loss.
	var fenceErr error
	if tip > 0 {
		for attempt := 0; attempt < 3; attempt++ {
			if _, fenceErr = journal.Open(ctx, st, name, l); fenceErr == nil {
				break
			}
			var fenced *journal.FencedError
			if !errors.As(fenceErr, &fenced) {
				break
			}
		}
	}
	epoch := l.Epoch()
	relErr := l.Release(ctx)
	if e.json {
		o := newObj().set("id", id.String()).set("broken", true).set("epoch", epoch).set("previous_epoch", status.Epoch).
			set("previous_holder", map[string]any{"pid": status.Holder.PID, "host": status.Holder.Host}).set("fenced", tip > 0 && fenceErr == nil)
		e.writeJSONLine(o)
	} else {
		fmt.Fprintf(e.stdout, "broke the lease of session %s: it was held by %s; took it at epoch %d", short, who, epoch)
		if tip > 0 && fenceErr == nil {
			fmt.Fprint(e.stdout, ", fenced the journal")
		}
		fmt.Fprintf(e.stdout, " and released it.\n\n%s\n\nrestore it with: looprig %srestore %s\n", breakConsequences, e.globalArgs(), short)
	}
	if fenceErr != nil {
		fmt.Fprintf(e.stderr, "looprig: warning: could not fence the journal of session %s: %s\n", short, textsafe.Sanitize(fenceErr.Error()))
	}
	if relErr != nil {
		return e.fail(fmt.Errorf("release the broken lease of session %s: %w", short, relErr))
	}
	return exitOK
}
