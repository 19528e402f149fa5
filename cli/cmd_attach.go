package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"looprig/host"
	"looprig/internal/textsafe"
	"looprig/rig"
	"looprig/rig/event"
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
	st, err := cl.Subscribe(sctx, after)
	cancel()
	if err != nil {
		return c.fail(err)
	}
	if !c.json {
		fmt.Fprintf(c.stderr, "looprig: attached to session %s (host pid %d); Ctrl-C detaches, the session keeps running\n",
			rig.ShortID(id.String()), cl.Hello().PID)
	}
	p := &streamPrinter{e: c.env}
	for {
		env, err := st.Next(c.ctx)
		if err == nil {
			p.print(env, st.Dropped())
			continue
		}
		var lost *host.StreamLostError
		var decode *host.EnvelopeDecodeError
		switch {
		case errors.As(err, &decode):
			continue // one event this client cannot read; the stream goes on
		case c.ctx.Err() != nil:
			p.out.flush()
			dctx, cancel := context.WithTimeout(context.Background(), time.Second)
			cl.Detach(dctx)
			cancel()
			if !c.json {
				fmt.Fprintf(c.stderr, "looprig: detached; session %s keeps running (looprig %sattach %s)\n",
					rig.ShortID(id.String()), c.globalArgs(), rig.ShortID(id.String()))
			}
			return exitOK
		case errors.As(err, &lost):
			sctx, cancel := context.WithTimeout(c.ctx, connectTimeout)
			st, err = cl.Subscribe(sctx, lost.LastSeq)
			cancel()
			if err != nil {
				return c.fail(err)
			}
			continue
		case errors.Is(err, host.ErrSessionEnded):
			p.out.flush()
			if !c.json {
				fmt.Fprintf(c.stderr, "looprig: session %s stopped\n", rig.ShortID(id.String()))
			}
			return exitOK
		default:
			p.out.flush()
			return c.fail(remoteFault(id.String(), err))
		}
	}
}

// remoteFault turns a host's report that its session lost its lease into
// a *LeaseLostError, as leaseLost does for a session of this process.
func remoteFault(id string, err error) error { return leaseLost(id, err) }

// streamPrinter prints a session's events as they arrive, for people, or
// as `run --json` lines. Turn output is printed once, in order: live
// OutputDeltas as they come, and from the durable TurnOutput checkpoints
// whatever the deltas did not cover. Deltas carry no offset, so they are
// trusted only for a turn followed from its start with none missing: a
// turn whose TurnStarted this stream did not show (it began before the
// replay window), whose checkpoint had to print bytes (a replayed turn, or
// deltas queued while the replay ran), or after a dropped delta, is
// printed from its checkpoints only, every half second or so.
//
// Each turn's output is rendered by its own renderer (render.go) and
// printed line by line, each line once it is final; the lines still open
// are printed when the turn ends, or when attach exits.
type streamPrinter struct {
	e         *env
	live      map[string]bool  // turns whose deltas are printed
	printed   map[string]int64 // output bytes shown, per turn
	journaled map[string]int64 // output bytes checkpointed, per turn
	out       turnOutputs
	dropped   uint64
}

func (p *streamPrinter) print(env event.Envelope, dropped uint64) {
	e := p.e
	if e.json {
		if o, err := envelopeJSON(env); err == nil {
			e.writeJSON(o)
		}
		return
	}
	if p.printed == nil {
		p.live, p.printed, p.journaled = map[string]bool{}, map[string]int64{}, map[string]int64{}
		p.out.w = e.stdout
	}
	if dropped != p.dropped {
		p.dropped = dropped
		clear(p.live)
	}
	switch ev := env.Event.(type) {
	case event.OutputDelta:
		if !p.live[ev.TurnID] {
			return
		}
		p.out.write(ev.TurnID, ev.Text)
		p.printed[ev.TurnID] += int64(len(ev.Text))
	case event.TurnOutput:
		start := p.journaled[ev.TurnID]
		p.journaled[ev.TurnID] += int64(len(ev.Text))
		if have := p.printed[ev.TurnID]; have < p.journaled[ev.TurnID] {
			p.out.write(ev.TurnID, ev.Text[max(have-start, 0):])
			p.printed[ev.TurnID] = p.journaled[ev.TurnID]
			delete(p.live, ev.TurnID)
		}
	case event.TurnStarted:
		p.live[ev.TurnID] = true
		fmt.Fprintf(e.stdout, "── turn %d: %s\n", ev.Index, textsafe.Line(ev.Input))
	case event.TurnDone, event.TurnFailed, event.TurnInterrupted, event.GateOpened, event.GateResolved,
		event.SessionStopped, event.SessionFaulted, event.RestoreDone:
		switch env.Event.(type) {
		case event.TurnDone, event.TurnFailed, event.TurnInterrupted:
			p.out.end(turnOf(env.Event))
		}
		fmt.Fprintf(e.stdout, "── %s  %s\n", env.Event.Type(), strings.TrimSpace(eventSummary(env.Event)))
	}
}
