package cli

import (
	"context"
	"time"

	"looprig/host"
	"looprig/rig/event"
)

// seenTimeout bounds telling a host that the user looked at its session.
const seenTimeout = 2 * time.Second

// attentionSeer tells the host of a session a person follows (attach
// without --json) that they looked at it: what its turn asked of them
// when they attached, and every call that comes while they follow it
// (rig.Session.SeeAttention, journaled as AttentionSeen). A program
// reading --json is not a person looking: it tells nothing.
type attentionSeer struct {
	cl   *host.Client
	off  bool
	sent uint64 // the last sequence said to be seen
}

func (c *call) attentionSeer(cl *host.Client) *attentionSeer {
	return &attentionSeer{cl: cl, off: c.json}
}

// attached says the person sees the session now: what is pending is seen.
func (a *attentionSeer) attached(ctx context.Context) { a.tell(ctx, 0) }

// shown says the person saw batch: an Attention in it is seen.
func (a *attentionSeer) shown(ctx context.Context, batch []event.Envelope) {
	var through uint64
	for _, env := range batch {
		if _, ok := env.Event.(event.Attention); ok && env.Seq > a.sent {
			through = env.Seq
		}
	}
	if through > 0 {
		a.tell(ctx, through)
	}
}

// seenTries is how many times a look is sent before it is given up: a
// host slow to journal it (a loaded machine) is asked again.
const seenTries = 3

// tell sends the look, best effort: a host that cannot record it (the
// session stops) changes nothing for the person following it.
func (a *attentionSeer) tell(ctx context.Context, through uint64) {
	if a.off {
		return
	}
	for range seenTries {
		sctx, cancel := context.WithTimeout(ctx, seenTimeout)
		err := a.cl.SeeAttention(sctx, through, "cli")
		cancel()
		if err == nil {
			a.sent = max(a.sent, through)
			return
		}
		if ctx.Err() != nil || a.cl.Err() != nil {
			return
		}
	}
}
