package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"looprig/internal/textsafe"
	"looprig/rig"
)

// attachTail is how many journal records before the tip attach replays
// first, of a long journal (rig.ReplayStart).
const attachTail = 50

// connectTimeout bounds dialing a host and its hello.
const connectTimeout = 10 * time.Second

var cmdAttach = &command{
	name: "attach", brief: "be a live session's terminal: its output, your input, a prompt between turns; Ctrl-] detaches", help: helpAttach,
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
	h := &hostTurn{c: c, cl: cl, id: id.String()}
	after := rig.ReplayStart(tip, attachTail)
	sctx, cancel := context.WithTimeout(c.ctx, connectTimeout)
	st, err := cl.Status(sctx)
	var f *rig.Follower
	if err == nil {
		f, err = rig.Follow(sctx, endsNoted{h}, after)
	}
	cancel()
	if err != nil {
		if ff := h.fault(); ff != nil {
			err = ff
		}
		return c.fail(err)
	}
	defer f.Close()
	p := newEventPrinter(c.env)
	// attached ends with c.ctx (SIGINT, SIGTERM) and with attach's keys.
	attached, detach := context.WithCancel(c.ctx)
	defer detach()
	term := newAttachTerm(c, h, p, st, detach)
	if !c.json {
		c.attachBanner(id, cl.Hello().PID, after, p, term != nil)
	}
	if term != nil {
		stop := term.start(attached)
		defer stop()
	}
	return c.attachLoop(attached, h, f, p, term)
}

// attachBanner says what attach shows, and how to leave it.
func (c *call) attachBanner(id uuid.UUID, pid int, after uint64, p *eventPrinter, term bool) {
	short := rig.ShortID(id.String())
	keys := "Ctrl-C detaches"
	if term {
		keys = "what you type goes to the running turn; Ctrl-C interrupts it; Ctrl-] detaches"
	}
	fmt.Fprintf(c.stderr, "looprig: attached to session %s (host pid %d); %s, the session keeps running\n", short, pid, keys)
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
		if sk.open != nil && sk.onScreen {
			// The replay begins on a full-screen program's screen: its
			// output is the screen's (the program redraws it whole once
			// attached, attachTerm.redraw).
			p.out.write(sk.open.ID, screenEnter)
		}
	}
}

// attachLoop prints the session's events until attached ends (a detach),
// the session stops, or its host is lost; term, when not nil, is the
// terminal attach is.
func (c *call) attachLoop(attached context.Context, h *hostTurn, f *rig.Follower, p *eventPrinter, term *attachTerm) int {
	short := rig.ShortID(h.id)
	seer := c.attentionSeer(h.cl)
	seer.attached(c.ctx)
	for {
		batch, err := f.Next(attached)
		for _, env := range batch {
			if term != nil {
				term.before(env)
			}
			p.print(env)
			if term != nil {
				term.after(env)
			}
		}
		seer.shown(c.ctx, batch)
		if err == nil {
			if term != nil {
				term.settled()
			}
			continue
		}
		p.flush()
		if term != nil {
			term.end()
		}
		switch {
		case attached.Err() != nil && h.fault() == nil:
			dctx, cancel := context.WithTimeout(context.Background(), time.Second)
			h.cl.Detach(dctx)
			cancel()
			if !c.json {
				fmt.Fprintf(c.stderr, "looprig: detached; session %s keeps running (looprig %sattach %s)\n",
					short, c.globalArgs(), short)
			}
			return exitOK
		case errors.Is(err, rig.ErrFollowEnded):
			h.settle(c.ctx)
			if ff := h.fault(); ff != nil {
				return c.fail(ff)
			}
			if !c.json {
				fmt.Fprintf(c.stderr, "looprig: session %s stopped\n", short)
			}
			return exitOK
		default:
			if ff := h.fault(); ff != nil {
				return c.fail(ff)
			}
			return c.fail(remoteFault(h.id, err))
		}
	}
}

// remoteFault turns a host's report that its session lost its lease into
// a *LeaseLostError, as leaseLost does for a session of this process.
func remoteFault(id string, err error) error { return leaseLost(id, err) }
