package host

import (
	"context"
	"fmt"

	"looprig/rig/event"
	"looprig/rig/hub"
	"looprig/rig/journal"
)

type subscription struct {
	id     uint64
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{} // closed when its forwarder returned

	// guarded by conn.mu
	over       bool   // no more lines for it
	lastQueued uint64 // the last durable sequence queued
	drops      uint64 // deltas dropped, not yet reported
	dropTotal  uint64
}

// subscribe replaces the connection's subscription: hub first, then the
// journal replay (in forward).
func (c *conn) subscribe(req request) {
	c.dropSub(0)
	ctx, cancel := context.WithCancel(c.ctx)
	hs := c.srv.s.Subscribe(hub.Filter{AllLoops: true})
	runTestHook("subscribed")
	rp, err := journal.NewEventReplayer(ctx, c.srv.ledger, c.srv.journal, req.AfterSeq)
	if err != nil {
		hs.Close()
		cancel()
		c.send(errReply(req.ID, describe(err)))
		return
	}
	c.mu.Lock()
	c.nextSub++
	sub := &subscription{id: c.nextSub, ctx: ctx, cancel: cancel, done: make(chan struct{}), lastQueued: req.AfterSeq}
	c.sub = sub
	c.sendLocked(line(replyMsg{Type: msgReply, ID: req.ID, OK: true, Sub: sub.id}))
	c.mu.Unlock()
	c.fwd.add()
	go c.forward(sub, hs, rp, req.AfterSeq)
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
		c.sendLocked(line(droppedMsg{Type: msgDropped, Sub: sub.id, Count: sub.drops, Total: sub.dropTotal}))
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
	c.sendLocked(line(endMsg{Type: msgEnd, Sub: sub.id, LastSeq: sub.lastQueued, Reason: reason, Error: err}))
	sub.cancel()
}

func (c *conn) endSub(sub *subscription, reason string, err *RemoteError) {
	c.mu.Lock()
	c.endSubLocked(sub, reason, err)
	c.mu.Unlock()
}

// enqueueReplay queues a replayed event, waiting for room: the replay is
// pulled, so it can wait for a slow client. It reports false once the
// subscription is over.
func (c *conn) enqueueReplay(sub *subscription, b []byte, seq uint64) bool {
	for {
		c.mu.Lock()
		if sub.over || c.closed {
			c.mu.Unlock()
			return false
		}
		if c.fitsLocked(len(b), false) {
			c.pushEventLocked(sub, b, seq)
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

// enqueueLive queues a live event without waiting: a delta that does not
// fit is dropped and counted; any other event that does not fit ends the
// subscription with "lost" — unless the session is shutting down: its
// last few events are then waited for (finish bounds the wait by the drain
// timeout), since nobody could subscribe again after them. It reports
// false once the subscription is over.
func (c *conn) enqueueLive(sub *subscription, b []byte, env event.Envelope) bool {
	c.mu.Lock()
	if sub.over || c.closed {
		c.mu.Unlock()
		return false
	}
	delta := isDelta(env)
	if c.fitsLocked(len(b), delta) {
		c.pushEventLocked(sub, b, env.Seq)
		c.mu.Unlock()
		return true
	}
	if delta {
		sub.drops++
		sub.dropTotal++
		c.mu.Unlock()
		return true
	}
	if c.srv.s.Status().Closed {
		c.mu.Unlock()
		return c.enqueueReplay(sub, b, env.Seq)
	}
	defer c.mu.Unlock()
	sub.over = true
	c.flushDropsLocked(sub)
	c.sendLocked(line(lostMsg{Type: msgLost, Sub: sub.id, LastSeq: sub.lastQueued,
		Message: fmt.Sprintf("this connection fell behind the session's events: subscribe again after seq %d", sub.lastQueued)}))
	sub.cancel()
	return false
}

func isDelta(env event.Envelope) bool {
	_, ok := env.Event.(event.OutputDelta)
	return ok
}

// forward feeds one subscription: the journal after after, then the hub,
// skipping every durable event not above the last one queued. When it
// falls behind the hub itself it subscribes again and replays the gap.
func (c *conn) forward(sub *subscription, hs *hub.Subscription, rp *journal.EventReplayer, after uint64) {
	defer c.fwd.done()
	defer close(sub.done)
	defer func() { hs.Close() }()
	last := after
	hooked := false
	for {
		replayed := false
		for rp.Next() {
			env := rp.Envelope()
			b, err := eventLine(sub.id, env)
			if err != nil {
				rp.Close()
				c.endSub(sub, ReasonError, protoErr(KindEventTooLarge, err.Error(), map[string]any{"seq": env.Seq}))
				return
			}
			if !c.enqueueReplay(sub, b, env.Seq) {
				rp.Close()
				return
			}
			last, replayed = env.Seq, true
		}
		rerr := rp.Err()
		rp.Close()
		if rerr != nil {
			if sub.ctx.Err() == nil {
				c.endSub(sub, ReasonError, describe(rerr))
			}
			return
		}
		if !hooked {
			hooked = true
			runTestHook("replayed")
		}
		// catching: output published while the replay ran may predate what
		// it sent; it is dropped (and counted) until the hub is caught up.
		catching := replayed
		replayedTo := last
		var hubDrops uint64
		for {
			batch, ok, err := hs.Next(sub.ctx, 0)
			if err != nil {
				return // the subscription's context ended
			}
			if d := hs.Dropped(); d > hubDrops {
				c.addDrops(sub, d-hubDrops)
				hubDrops = d
			}
			for _, env := range batch {
				if env.Seq > 0 {
					if env.Seq >= replayedTo {
						catching = false
					}
					if env.Seq <= last {
						continue
					}
				} else if catching && isDelta(env) {
					c.addDrops(sub, 1)
					continue
				}
				b, err := eventLine(sub.id, env)
				if err != nil {
					if env.Seq == 0 {
						c.addDrops(sub, 1)
						continue
					}
					c.endSub(sub, ReasonError, protoErr(KindEventTooLarge, err.Error(), map[string]any{"seq": env.Seq}))
					return
				}
				if !c.enqueueLive(sub, b, env) {
					return
				}
				if env.Seq > 0 {
					last = env.Seq
				}
			}
			if ok && len(batch) < hub.BufferSize {
				catching = false // the hub had nothing more: what comes now is live
			}
			if ok {
				continue
			}
			if hs.Err() == nil { // the hub stopped: the session is over
				c.endSub(sub, ReasonSessionStopped, nil)
				return
			}
			// This forwarder fell behind the hub: subscribe again first,
			// then replay what it missed.
			hs = c.srv.s.Subscribe(hub.Filter{AllLoops: true})
			if rp, err = journal.NewEventReplayer(sub.ctx, c.srv.ledger, c.srv.journal, last); err != nil {
				if sub.ctx.Err() == nil {
					c.endSub(sub, ReasonError, describe(err))
				}
				return
			}
			break
		}
	}
}
