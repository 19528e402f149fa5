package cli

import (
	"flag"
	"fmt"
	"os"
	"time"

	"looprig/internal/textsafe"
	"looprig/rig"
)

var cmdTake = &command{
	name: "take", brief: "take a session over from the process (on any machine) that holds it, and serve it here", help: helpTake,
	json: true, args: oneID, needs: needsStore,
	flags: func(fs *flag.FlagSet, o *opts) {
		fs.BoolVar(&o.takeInterrupt, "interrupt", false, "ask the holder to interrupt its running turn rather than wait for its end")
		fs.DurationVar(&o.takeTimeout, "timeout", 2*time.Minute, "how long the holder has to hand the session over")
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
	from := ""
	if holder != nil {
		if serving := c.servedByHost(); serving != nil && serving(c.ctx, sid, *holder) {
			return c.fail(fmt.Errorf("session %s is live here already, in host pid %d: looprig %sattach %s", short, holder.PID, c.globalArgs(), short))
		}
		from = fmt.Sprintf("%d@%s", holder.PID, holder.Host)
		if !c.json {
			fmt.Fprintf(c.stderr, "looprig: asked pid %d on %s to hand session %s over…\n", holder.PID, textsafe.Line(holder.Host), short)
		}
		me, _ := os.Hostname()
		req := rig.HandOffRequest{To: fmt.Sprintf("%d@%s", os.Getpid(), me), Interrupt: c.takeInterrupt, Epoch: epoch, At: time.Now().UTC()}
		if err := rig.AwaitHandOff(c.ctx, c.st, id, *holder, req, c.takeTimeout); err != nil {
			return c.fail(err)
		}
	}
	rd, err := c.startHost(c.ctx, c.st, sid)
	if err != nil {
		return c.failRestore(err)
	}
	if c.json {
		c.writeJSON(takeJSON{ID: sid, ShortID: short, From: from, PID: rd.PID, Epoch: rd.Epoch})
		return exitOK
	}
	if from != "" {
		fmt.Fprintf(c.stdout, "took session %s over from %s: ", short, textsafe.Line(from))
	} else {
		fmt.Fprintf(c.stdout, "session %s was not held: ", short)
	}
	fmt.Fprintf(c.stdout, "live in host pid %d here at epoch %d; follow it: looprig %sattach %s\n", rd.PID, rd.Epoch, c.globalArgs(), short)
	return exitOK
}

// takeJSON is what take --json prints.
type takeJSON struct {
	ID      string `json:"id"`
	ShortID string `json:"short_id"`
	From    string `json:"from"` // the holder that handed it over, "" when none held it
	PID     int    `json:"pid"`  // the host that serves it here
	Epoch   uint64 `json:"epoch"`
}
