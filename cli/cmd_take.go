package cli

import (
	"flag"
	"fmt"
	"os"
	"time"

	"looprig/host"
	"looprig/internal/textsafe"
	"looprig/rig"
)

var cmdTake = &command{
	name: "take", brief: "take a session over from the process (on any machine) that holds it, and serve it here", help: helpTake,
	json: true, args: oneID, needs: needsStore,
	flags: func(fs *flag.FlagSet, o *opts) {
		fs.BoolVar(&o.takeInterrupt, "interrupt", false, "ask the holder to interrupt its running turn rather than wait for its end")
		fs.DurationVar(&o.takeTimeout, "timeout", 2*time.Minute, "how long the holder has to hand the session over (while its checkpoint moves on, it is answering)")
		fs.BoolVar(&o.withoutWS, "without-workspace", false, "take a session whose holder does not checkpoint its workspace (checkpoint = \"off\"): its files stay behind")
		restoreFlags(fs, o)
	},
	run: runTake,
}

func runTake(c *call) int {
	id, err := rig.FindSession(c.ctx, c.st, c.args[0])
	if err != nil {
		return c.fail(err)
	}
	sid, short := id.String(), rig.ShortID(id.String())
	holder, epoch, err := rig.SessionHolder(c.ctx, c.st, id)
	if err != nil {
		return c.fail(err)
	}
	from, asked := "", "" // the holder asked, and who asked it (this take)
	var stays error       // the workspace stays behind (--without-workspace)
	if holder != nil {
		if serving := c.servedByHost(); serving != nil && serving(c.ctx, sid, *holder) {
			return c.fail(fmt.Errorf("session %s is live here already, in host pid %d: looprig %sattach %s", short, holder.PID, c.globalArgs(), short))
		}
		from = fmt.Sprintf("%d@%s", holder.PID, holder.Host)
		// Before anything is asked of the holder: the session can be
		// restored here (its profile is known), and its workspace comes
		// with it, or the user said it may stay behind.
		p, err := c.recordedProfile(id)
		if err != nil {
			return c.fail(err)
		}
		if err := rig.CheckHandOff(c.ctx, c.st, id, p); err != nil {
			if !c.withoutWS {
				return c.fail(err)
			}
			stays = err
		}
		// And the restore here would pass its checks (configuration,
		// placement, workspace), as far as they can be made before the
		// holder's last checkpoint: a take that cannot restore the
		// session here does not take it from where it is served.
		r, opts, err := c.restoreRig(id)
		if err != nil {
			return c.fail(err)
		}
		if err := r.CheckRestore(c.ctx, id, holder, opts...); err != nil {
			if !c.json {
				fmt.Fprintf(c.stderr, "looprig: session %s stays with pid %d on %s: it could not be restored here, so it was not asked for\n",
					short, holder.PID, textsafe.Line(holder.Host))
			}
			c.checkedOnly = true
			return c.failRestore(err)
		}
		if !c.json {
			fmt.Fprintf(c.stderr, "looprig: asked pid %d on %s to hand session %s over…\n", holder.PID, textsafe.Line(holder.Host), short)
		}
		me, _ := os.Hostname()
		req := rig.HandOffRequest{To: fmt.Sprintf("%d@%s", os.Getpid(), me), Interrupt: c.takeInterrupt, Epoch: epoch, At: time.Now().UTC()}
		// A holder that checkpoints the workspace (the last turn's, then
		// the handover's) says how far it is in its catalog entry: take
		// says so, and waits as long as the checkpoint moves on.
		var line *waitLine
		if !c.json {
			line = newWaitLine(c.stderr)
		}
		_, err = rig.AwaitHandOff(c.ctx, c.st, id, *holder, req, c.takeTimeout, rig.WithHandOffProgress(func(p rig.CheckpointProgress) {
			line.update(host.Progress{Checkpoint: &p})
		}))
		line.finish()
		if err != nil {
			return c.fail(err)
		}
		asked = req.To
	}
	rd, err := c.startHost(c.ctx, c.st, append(c.restoreFlagArgs(), sid)...)
	if err != nil {
		if asked != "" && !c.json {
			// The holder let the session go (or its lease came free) and
			// the restore here failed after all: say so, and how it is
			// served again (its listing says so too: rig.LastRestoreFailed).
			fmt.Fprintf(c.stderr, "looprig: session %s left %s for this take but could not be restored here; nobody serves it now.\n"+
				"  serve it again, once the cause below is fixed: looprig %srestore %s (here), or 'looprig restore %s' where it was\n",
				short, from, c.globalArgs(), short, short)
		}
		return c.failRestore(err)
	}
	// Whether the holder handed the session over is what its journal says
	// (the restore read it): a lease that came free without HandedOff for
	// this take expired, or its holder died; no hand-over happened.
	handed := false
	if r := rd.Restored; r != nil && asked != "" {
		handed = r.Previous == rig.PreviousHandedOff && r.HandedOffTo == asked && r.PreviousEpoch == epoch
	}
	if c.json {
		out := takeJSON{ID: sid, ShortID: short, From: from, HandedOver: handed, PID: rd.PID, Epoch: rd.Epoch, WithoutWorkspace: stays != nil, Dir: rd.Workspace}
		if rd.Restored != nil {
			out.Workspace = newWorkspaceFoundJSON(rd.Restored.Workspace)
			out.Previous = rd.Restored.Previous
		}
		c.writeJSON(out)
		return exitOK
	}
	switch {
	case from == "":
		fmt.Fprintf(c.stdout, "session %s was not held: ", short)
	case handed:
		fmt.Fprintf(c.stdout, "took session %s over from %s: ", short, textsafe.Line(from))
	default:
		fmt.Fprintf(c.stdout, "session %s was not handed over: %s; restored here: ", short, notHandedOver(from, rd.Restored))
	}
	fmt.Fprintf(c.stdout, "live in host pid %d here at epoch %d; follow it: looprig %sattach %s\n", rd.PID, rd.Epoch, c.globalArgs(), short)
	if from != "" && !handed {
		fmt.Fprintf(c.stdout, "  %s\n", notHandedOverWorkspace(rd.Restored))
	}
	if rd.Restored != nil {
		c.printWorkspaceFound(rd.Restored.Workspace)
	}
	if stays != nil {
		fmt.Fprintf(c.stderr, "looprig: %s; taken anyway (--without-workspace): its turns here run in %s\n",
			textsafe.Line(stays.Error()), textsafe.Line(rd.Workspace))
	}
	return exitOK
}

// notHandedOver says why a holder that was asked did not hand the
// session over, from how the restore found its journal.
func notHandedOver(from string, r *rig.RestoreInfo) string {
	who := "its holder (" + textsafe.Line(from) + ")"
	prev := ""
	if r != nil {
		prev = r.Previous
	}
	switch prev {
	case rig.PreviousStopped:
		return who + " stopped it meanwhile, without handing it over"
	case rig.PreviousHandedOff:
		return who + " handed it over to another take (" + textsafe.Line(r.HandedOffTo) + ")"
	}
	return who + " did not hand it over: its lease expired (the holder is stopped or cut off from the store) or it died"
}

// notHandedOverWorkspace says what a session not handed over brings:
// nothing its holder did after its last checkpoint.
func notHandedOverWorkspace(r *rig.RestoreInfo) string {
	what := "no hand-over and no final checkpoint: the workspace is the session's last checkpoint; what the holder did after it did not come"
	if r != nil && r.Workspace != nil && r.Workspace.Kept {
		what = "no hand-over and no final checkpoint: the workspace directory here was kept as its holder left it, changes since the last checkpoint included"
	}
	if r != nil && len(r.Interrupted) > 0 {
		what += fmt.Sprintf("; its open turn is recorded as crashed (%s)", plural(len(r.Interrupted), "turn"))
	}
	return what
}

// takeJSON is what take --json prints.
type takeJSON struct {
	ID      string `json:"id"`
	ShortID string `json:"short_id"`
	From    string `json:"from"` // the holder take asked, "" when none held it
	PID     int    `json:"pid"`  // the host that serves it here
	Epoch   uint64 `json:"epoch"`
	// Workspace is how the restore here found the workspace directory
	// (see restore --json); null without a checkpoint.
	Workspace *workspaceFoundJSON `json:"workspace"`
	// WithoutWorkspace: the holder did not checkpoint the workspace, and
	// it was taken anyway (--without-workspace): its files stayed behind.
	WithoutWorkspace bool `json:"without_workspace"`
	// Dir is the directory its turns run in here.
	Dir string `json:"dir"`
	// HandedOver: the holder asked handed it over to this take (its
	// journal says HandedOff). False with a From: its lease came free
	// without that (expired, or the holder died or stopped): the session
	// is back from its last checkpoint, as after a crash.
	HandedOver bool `json:"handed_over"`
	// Previous is how the holder before this restore let the session go:
	// handed_off, stopped, crashed ("" for none).
	Previous string `json:"previous"`
}
