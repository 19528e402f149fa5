package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"looprig/internal/textsafe"
	"looprig/rig"
)

// attachTail is how many journal records before the tip attach replays
// first.
const attachTail = 50

// connectTimeout bounds dialing a host and its hello.
const connectTimeout = 10 * time.Second

var cmdAttach = &command{
	name: "attach", brief: "follow a live session's events; Ctrl-C detaches, the session keeps running", help: helpAttach,
	json: true, args: oneID, needs: needsStore, interrupts: true,
	run: runAttach,
}

func runAttach(c *call) int {
	id, tip, err := c.findExisting(c.args[0])
	if err != nil {
		return c.fail(err)
	}
	cctx, cancel := context.WithTimeout(c.ctx, connectTimeout)
	cl, err := c.connect(cctx, id.String())
	cancel()
	if err != nil {
		return c.fail(err)
	}
	defer cl.Close()
	after := uint64(0)
	if tip > attachTail {
		after = tip - attachTail
	}
	sctx, cancel := context.WithTimeout(c.ctx, connectTimeout)
	f, err := rig.Follow(sctx, cl, after)
	cancel()
	if err != nil {
		return c.fail(err)
	}
	defer f.Close()
	p := newEventPrinter(c.env)
	if !c.json {
		short := rig.ShortID(id.String())
		fmt.Fprintf(c.stderr, "looprig: attached to session %s (host pid %d); Ctrl-C detaches, the session keeps running\n",
			short, cl.Hello().PID)
		if after > 0 {
			// The records before the replay are said, not shown; the turn
			// the replay begins inside gets its header.
			sk, err := skippedBefore(c.ctx, c.st, id, after, skipChunk)
			fmt.Fprintf(c.stderr, "looprig: %s\n", sk.note(fmt.Sprintf("'looprig %slog %s'", c.globalArgs(), short)))
			if err != nil {
				fmt.Fprintf(c.stderr, "looprig: warning: %s\n", textsafe.Sanitize(err.Error()))
			}
			if sk.open != nil {
				p.header(sk.open.Index, sk.open.Input)
			}
		}
	}
	seer := c.attentionSeer(cl)
	seer.attached(c.ctx)
	for {
		batch, err := f.Next(c.ctx)
		for _, env := range batch {
			p.print(env)
		}
		seer.shown(c.ctx, batch)
		switch {
		case err == nil:
			continue
		case c.ctx.Err() != nil:
			p.flush()
			dctx, cancel := context.WithTimeout(context.Background(), time.Second)
			cl.Detach(dctx)
			cancel()
			if !c.json {
				fmt.Fprintf(c.stderr, "looprig: detached; session %s keeps running (looprig %sattach %s)\n",
					rig.ShortID(id.String()), c.globalArgs(), rig.ShortID(id.String()))
			}
			return exitOK
		case errors.Is(err, rig.ErrFollowEnded):
			p.flush()
			if !c.json {
				fmt.Fprintf(c.stderr, "looprig: session %s stopped\n", rig.ShortID(id.String()))
			}
			return exitOK
		default:
			p.flush()
			return c.fail(remoteFault(id.String(), err))
		}
	}
}

// remoteFault turns a host's report that its session lost its lease into
// a *LeaseLostError, as leaseLost does for a session of this process.
func remoteFault(id string, err error) error { return leaseLost(id, err) }
