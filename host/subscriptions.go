package host

import (
	"context"
	"errors"

	"looprig/rig"
	"looprig/rig/event"
)

type subscription struct {
	id     uint64
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{} // closed when its forwarder returned

	// guarded by conn.mu
	over       bool   // no more lines for it
	lastQueued uint64 // the last durable sequence queued
	lastTaken  uint64 // the last durable sequence the writer took
	drops      uint64 // deltas dropped, not yet reported
	dropTotal  uint64
	// held is what the forwarder holds of the batch it read and has not
	// queued yet (their footprint), charged to the server's budget: the
	// forwarder gives it back as it queues or drops each event and when
	// it ends, a cut (cutLocked) at once.
	held int
}

// subscribe replaces the connection's subscription: the session is
// followed (rig.Follow: its hub subscription is open before the reply)
// and forwarded by forward.
func (c *conn) subscribe(req *subscribeRequest) {
	c.dropSub(0)
	ctx, cancel := context.WithCancel(c.ctx)
	f, err := rig.Follow(ctx, c.srv.s, req.AfterSeq)
	if err != nil {
		cancel()
		c.send(errReply(req.ID, describe(err)))
		return
	}
	runTestHook("subscribed")
	c.mu.Lock()
	c.nextSub++
	sub := &subscription{id: c.nextSub, ctx: ctx, cancel: cancel, done: make(chan struct{}), lastQueued: req.AfterSeq, lastTaken: req.AfterSeq}
	c.sub = sub
	c.sendLocked(encode(&replyMsg{ID: req.ID, OK: true, Sub: sub.id}))
	c.mu.Unlock()
	c.fwd.add()
	go c.forward(sub, f)
}

// dropSub ends the current subscription (when id is 0 or its id) without
// a message and waits for its forwarder. A late unsubscribe naming an
// older subscription leaves the current one alone.
func (c *conn) dropSub(id uint64) {
	c.mu.Lock()
	sub := c.sub
	if sub != nil && id != 0 && sub.id != id {
		sub = nil
	}
	if sub != nil {
		c.sub = nil
	}
	if sub != nil {
		sub.over = true
	}
	c.mu.Unlock()
	if sub != nil {
		sub.cancel()
		<-sub.done
	}
}

func (c *conn) flushDropsLocked(sub *subscription) {
	if sub.drops > 0 {
		c.sendLocked(encode(&droppedMsg{Sub: sub.id, Count: sub.drops, Total: sub.dropTotal}))
		sub.drops = 0
	}
}

func (c *conn) addDrops(sub *subscription, n uint64) {
	c.mu.Lock()
	sub.drops += n
	sub.dropTotal += n
	c.mu.Unlock()
}

// endSubLocked ends sub with an "end" line.
func (c *conn) endSubLocked(sub *subscription, reason string, err *RemoteError) {
	if sub.over {
		return
	}
	sub.over = true
	c.flushDropsLocked(sub)
	c.sendLocked(encode(&endMsg{Sub: sub.id, LastSeq: sub.lastQueued, Reason: reason, Error: err}))
	sub.cancel()
}

func (c *conn) endSub(sub *subscription, reason string, err *RemoteError) {
	c.mu.Lock()
	c.endSubLocked(sub, reason, err)
	c.mu.Unlock()
}

// enqueue queues an event line, within the connection's bound and the
// server's budget, in place of the envelope it was made from, whose
// footprint (held) the forwarder held (hold).
//
// A durable event that does not fit the connection's bound waits for room:
// the forwarder then stops reading the session, whose hub drops the
// subscription it no longer empties, and the Follower reads the journal
// again from where it was once there is room, so a client that stops
// reading costs the session nothing and the host no more than its bound
// and the batch its forwarder holds, both in the budget.
// A live delta that does not fit is dropped and counted (the client's
// transcript takes its bytes from the next checkpoint).
//
// An event that fits the connection's bound but not the server's budget
// makes a connection give its queued output up and lose its subscription
// (reclaim, cut): another one whose client stopped reading, or that holds
// more than this one, else this one (a delta is then only dropped). It
// reports false once the subscription is over.
func (c *conn) enqueue(sub *subscription, b []byte, env event.Envelope, held int) bool {
	live := env.Seq == 0
	reclaimed := false
	for {
		c.mu.Lock()
		if sub.over || c.closed {
			c.mu.Unlock()
			return false
		}
		if c.fitsLocked(cost(b), live) {
			if c.srv.budget.exchange(held, cost(b)) {
				sub.held -= held
				c.pushEventLocked(sub, b, env.Seq)
				c.mu.Unlock()
				return true
			}
			c.mu.Unlock()
			if !reclaimed && c.srv.reclaim(c) {
				reclaimed = true
				continue
			}
			c.mu.Lock()
			if live {
				c.unholdLocked(sub, held)
				c.mu.Unlock()
				c.addDrops(sub, 1)
				return true
			}
			c.cutLocked(sub)
			c.mu.Unlock()
			return false
		}
		if live {
			c.unholdLocked(sub, held)
			sub.drops++
			sub.dropTotal++
			c.mu.Unlock()
			return true
		}
		space := c.space
		c.mu.Unlock()
		select {
		case <-space:
		case <-sub.ctx.Done():
			return false
		}
	}
}

// hold charges the footprint (n bytes) of a batch the forwarder read to
// the server's budget before it queues its events: what a client has its
// host hold counts whether it is queued or still in the forwarder's hands.
// When the budget has no room, a connection gives up what it holds
// (reclaim: a client that stopped reading first); when that frees nothing
// (this connection holds the most), this one's subscription is cut ("lost":
// its client subscribes again after the last event its writer took). It
// reports false once the subscription is over.
func (c *conn) hold(sub *subscription, n int) bool {
	reclaimed := false
	for {
		c.mu.Lock()
		if sub.over || c.closed {
			c.mu.Unlock()
			return false
		}
		if c.srv.budget.take(n) {
			sub.held += n
			c.noteHeldLocked()
			c.mu.Unlock()
			return true
		}
		c.mu.Unlock()
		if !reclaimed && c.srv.reclaim(c) {
			reclaimed = true
			continue
		}
		c.mu.Lock()
		c.cutLocked(sub)
		c.mu.Unlock()
		return false
	}
}

// unholdLocked gives back n bytes sub's forwarder held (at most what it
// still holds: a cut gave it all back).
func (c *conn) unholdLocked(sub *subscription, n int) {
	n = min(n, sub.held)
	sub.held -= n
	c.srv.budget.release(n)
	c.noteHeldLocked()
}

// unholdAll gives back what sub's forwarder still holds, when it ends.
func (c *conn) unholdAll(sub *subscription) {
	c.mu.Lock()
	c.unholdLocked(sub, sub.held)
	c.mu.Unlock()
}

// unhold is unholdLocked under the connection's lock: an event the
// forwarder dropped rather than queued.
func (c *conn) unhold(sub *subscription, n int) {
	c.mu.Lock()
	c.unholdLocked(sub, n)
	c.mu.Unlock()
}

// mayFit reports whether a delta of at least n bytes could fit the
// connection's bound, so that one that cannot is dropped before it is
// encoded.
func (c *conn) mayFit(n int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.fitsLocked(n, true)
}

// forward feeds one subscription from its Follower until the session's
// events end (an "end" line, session_stopped, or session_faulted with the
// fault when the session faulted), the subscription is dropped, or
// following fails (an "end" line with the error).
//
// What it holds of a batch it read counts in the server's budget (hold):
// a replayed batch is at most about 1 MiB of records (rig's replay
// chunks), a live one the hub's queue (at most hub.BufferSize events).
func (c *conn) forward(sub *subscription, f *rig.Follower) {
	defer c.fwd.done()
	defer close(sub.done)
	defer f.Close()
	defer c.unholdAll(sub)
	var sizes []int
	for {
		batch, err := f.Next(sub.ctx)
		var fault error
		if err != nil {
			fault = c.srv.s.Err()
		}
		switch {
		case sub.ctx.Err() != nil:
			return
		case fault != nil:
			// The session faulted (and is being shut down): its events
			// ended because of the fault, which is what the client is told.
			c.endSub(sub, ReasonSessionFaulted, describe(fault))
			return
		case errors.Is(err, rig.ErrFollowEnded):
			c.endSub(sub, ReasonSessionStopped, nil)
			return
		case err != nil:
			c.endSub(sub, ReasonError, describe(err))
			return
		}
		sizes = sizes[:0]
		total := 0
		for _, env := range batch {
			n := footprint(env)
			sizes = append(sizes, n)
			total += n
		}
		if !c.hold(sub, total) {
			return
		}
		for i, env := range batch {
			batch[i] = event.Envelope{} // held by env alone, until it is queued or dropped
			held := sizes[i]
			if d, ok := env.Event.(event.OutputDelta); ok && env.Seq == 0 && !c.mayFit(len(d.Text)) {
				c.unhold(sub, held)
				c.addDrops(sub, 1)
				continue
			}
			b, err := eventLine(sub.id, env)
			if err != nil {
				c.unhold(sub, held)
				if env.Seq == 0 {
					c.addDrops(sub, 1)
					continue
				}
				c.endSub(sub, ReasonError, protoErr(KindEventTooLarge, err.Error(), map[string]any{"seq": env.Seq}))
				return
			}
			if !c.enqueue(sub, b, env, held) {
				return
			}
		}
	}
}
