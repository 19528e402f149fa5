package host

import "bufio"

func (c *conn) signal() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// sendLocked queues a line that is not an event.
func (c *conn) sendLocked(b []byte) {
	if c.closed {
		return
	}
	c.q = append(c.q, b)
	c.qReplies++
	c.signal()
}

func (c *conn) send(b []byte) {
	c.mu.Lock()
	c.sendLocked(b)
	c.mu.Unlock()
}

func (c *conn) pushEventLocked(sub *subscription, b []byte, seq uint64) {
	c.flushDropsLocked(sub)
	c.q = append(c.q, b)
	c.qEvents++
	c.qBytes += len(b)
	if seq > 0 {
		sub.lastQueued = seq
	}
	c.signal()
}

// fits reports whether an event of n bytes fits the queue, less reserve
// (a quarter of each bound) when it is a delta. An empty queue takes any
// event.
func (c *conn) fitsLocked(n int, delta bool) bool {
	if c.qEvents == 0 {
		return true
	}
	maxEv, maxB := c.srv.cfg.queueEvents, c.srv.cfg.queueBytes
	if delta {
		maxEv, maxB = maxEv-maxEv/4, maxB-maxB/4
	}
	return c.qEvents < maxEv && c.qBytes+n <= maxB
}

func (c *conn) writeLoop() {
	defer close(c.writerDone)
	bw := bufio.NewWriterSize(c.c, 64<<10)
	for {
		c.mu.Lock()
		for len(c.q) == 0 && !c.closed {
			c.mu.Unlock()
			<-c.wake
			c.mu.Lock()
		}
		batch, closed, space := c.q, c.closed, c.space
		c.q, c.qEvents, c.qBytes, c.qReplies = nil, 0, 0, 0
		c.space = make(chan struct{})
		c.mu.Unlock()
		close(space)
		for _, b := range batch {
			if _, err := bw.Write(b); err != nil {
				c.writeFailed()
				return
			}
		}
		if err := bw.Flush(); err != nil {
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
	c.q = nil
	space := c.space
	c.space = make(chan struct{})
	c.mu.Unlock()
	close(space)
	c.cancel()
	c.c.CloseRead() // the reader sees EOF
}

// waitSpace waits until fewer than maxQueuedReplies replies wait.
func (c *conn) waitReplySpace() (exit, bool) {
	for {
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return exitGone, false
		}
		if c.qReplies < maxQueuedReplies {
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
