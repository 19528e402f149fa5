package host

import (
	"bufio"
)

// writeChunk bounds what the writer takes from the queue at a time (at
// least one line): the lines a client that stops reading leaves the writer
// holding.
const writeChunk = 256 << 10

// qline is one line queued for the client.
type qline struct {
	b   []byte
	sub *subscription // the event's subscription; nil for a line that is not an event
	seq uint64        // the sequence of a durable event
}

// cost is what an event line counts against the bounds: the memory it
// holds.
func cost(b []byte) int { return cap(b) }

func (c *conn) signal() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// spaceLocked tells whoever waits for room that there may be some.
func (c *conn) spaceLocked() {
	close(c.space)
	c.space = make(chan struct{})
}

// sendLocked queues a line that is not an event.
func (c *conn) sendLocked(b []byte) {
	if c.closed {
		return
	}
	c.q = append(c.q, qline{b: b})
	c.qReplies++
	c.qRBytes += cost(b)
	c.signal()
}

func (c *conn) send(b []byte) {
	c.mu.Lock()
	c.sendLocked(b)
	c.mu.Unlock()
}

// pushEventLocked queues an event line that fits (fitsLocked) and whose
// cost the server's budget granted.
func (c *conn) pushEventLocked(sub *subscription, b []byte, seq uint64) {
	c.flushDropsLocked(sub)
	c.q = append(c.q, qline{b: b, sub: sub, seq: seq})
	c.qEvents++
	c.qBytes += cost(b)
	c.noteHeldLocked()
	if seq > 0 {
		sub.lastQueued = seq
	}
	c.signal()
}

// noteHeldLocked publishes what the connection holds for the server's
// reclaim: its queued event lines and what its forwarder holds of a batch.
func (c *conn) noteHeldLocked() {
	n := c.qBytes
	if c.sub != nil {
		n += c.sub.held
	}
	c.queued.Store(int64(n))
}

// fitsLocked reports whether an event line of n bytes fits the
// connection's bound (what is queued plus what the writer holds), less
// reserve (a quarter of each bound) when it is a delta. A connection that
// holds no event takes any one.
func (c *conn) fitsLocked(n int, delta bool) bool {
	if c.qEvents == 0 && c.wBytes == 0 {
		return true
	}
	maxEv, maxB := c.srv.cfg.queueEvents, c.srv.cfg.queueBytes
	if delta {
		maxEv, maxB = maxEv-maxEv/4, maxB-maxB/4
	}
	return c.qEvents < maxEv && c.qBytes+c.wBytes+n <= maxB
}

// discardEventsLocked drops the event lines of sub (of every subscription
// when sub is nil) the writer has not taken, and gives their bytes back to
// the server's budget; it returns how many.
func (c *conn) discardEventsLocked(sub *subscription) int {
	keep := c.q[:0]
	freed, n := 0, 0
	for _, l := range c.q {
		if l.sub != nil && (sub == nil || l.sub == sub) {
			freed += cost(l.b)
			n++
			continue
		}
		keep = append(keep, l)
	}
	clear(c.q[len(keep):])
	c.q = keep
	c.qEvents -= n
	c.qBytes -= freed
	c.noteHeldLocked()
	c.srv.budget.release(freed)
	if freed > 0 {
		c.spaceLocked()
	}
	return freed
}

// takeLocked moves the lines at the head of the queue, up to writeChunk
// bytes (at least one line), to batch, and counts their event bytes as the
// writer's.
func (c *conn) takeLocked(batch []qline) []qline {
	n, size, events := 0, 0, 0
	for n < len(c.q) && (n == 0 || size+len(c.q[n].b) <= writeChunk) {
		l := c.q[n]
		size += len(l.b)
		if l.sub != nil {
			events += cost(l.b)
			c.qEvents--
			if l.seq > 0 {
				l.sub.lastTaken = l.seq
			}
		} else {
			c.qReplies--
			c.qRBytes -= cost(l.b)
		}
		n++
	}
	batch = append(batch, c.q[:n]...)
	clear(c.q[:n])
	c.q = c.q[n:]
	if len(c.q) == 0 {
		c.q = c.q[:0:0] // let the old array go
	}
	c.qBytes -= events
	c.wBytes = events
	c.noteHeldLocked()
	c.srv.budget.release(events)
	return batch
}

func (c *conn) writeLoop() {
	defer close(c.writerDone)
	bw := bufio.NewWriterSize(c.c, 64<<10)
	var batch []qline
	for {
		c.mu.Lock()
		for len(c.q) == 0 && !c.closed {
			c.mu.Unlock()
			<-c.wake
			c.mu.Lock()
		}
		batch = c.takeLocked(batch[:0])
		closed := c.closed && len(c.q) == 0
		c.spaceLocked()
		c.mu.Unlock()
		c.writing.Store(c.srv.reclaims.Load() + 1)
		for _, l := range batch {
			if _, err := bw.Write(l.b); err != nil {
				c.writeFailed()
				return
			}
		}
		err := bw.Flush()
		c.writing.Store(0)
		clear(batch)
		c.mu.Lock()
		c.wBytes = 0
		c.spaceLocked()
		c.mu.Unlock()
		if err != nil {
			c.writeFailed()
			return
		}
		if closed {
			return
		}
	}
}

// writeFailed: the client is gone or did not take its last lines in time.
func (c *conn) writeFailed() {
	c.mu.Lock()
	c.closed = true
	c.discardEventsLocked(nil)
	c.q, c.qReplies, c.qRBytes, c.wBytes = nil, 0, 0, 0
	c.spaceLocked()
	c.mu.Unlock()
	c.cancel()
	c.c.CloseRead() // the reader sees EOF
}

// waitReplySpace waits until fewer than maxQueuedReplies replies, of less
// than maxReplyBytes, wait.
func (c *conn) waitReplySpace() (exit, bool) {
	for {
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return exitGone, false
		}
		if c.qReplies < maxQueuedReplies && c.qRBytes < maxReplyBytes {
			c.mu.Unlock()
			return 0, true
		}
		space := c.space
		c.mu.Unlock()
		select {
		case <-space:
		case <-c.stopCh:
			return exitStop, false
		}
	}
}
