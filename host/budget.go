package host

import (
	"fmt"
	"net"
	"sync/atomic"
	"time"
)

// outputBudget bounds the event lines queued on every connection of a
// server together (what their writers have not taken yet). A nil budget
// grants everything.
type outputBudget struct {
	max  int64
	used atomic.Int64
	peak atomic.Int64 // the most used at once, for tests
}

func newOutputBudget(n int) *outputBudget { return &outputBudget{max: int64(n)} }

// take reserves n bytes; false when they would go over the budget.
func (b *outputBudget) take(n int) bool {
	if b == nil {
		return true
	}
	for {
		used := b.used.Load()
		if used+int64(n) > b.max {
			return false
		}
		if b.used.CompareAndSwap(used, used+int64(n)) {
			if p := b.peak.Load(); used+int64(n) > p {
				b.peak.CompareAndSwap(p, used+int64(n)) // a lost race only understates a peak by one line
			}
			return true
		}
	}
}

// exchange replaces a reservation of old bytes by one of n bytes (what a
// forwarder held of an event by its line); false, and nothing changed,
// when the difference would go over the budget.
func (b *outputBudget) exchange(old, n int) bool {
	if n <= old {
		b.release(old - n)
		return true
	}
	return b.take(n - old)
}

// release gives n bytes back.
func (b *outputBudget) release(n int) {
	if b != nil && n != 0 {
		b.used.Add(-int64(n))
	}
}

// reclaim makes room in the budget for from: another connection loses its
// queued event lines and its subscription (cut). A connection whose writer
// has been waiting on its client since before the previous reclaim (its
// client does not read) is chosen first, the one of them that holds the
// most; else the one that holds the most, if it holds more than from. It
// reports whether anything was freed; false means from holds the most
// itself.
func (srv *server) reclaim(from *conn) bool {
	epoch := srv.reclaims.Add(1)
	srv.mu.Lock()
	var victim *conn
	most, stalled := from.queued.Load(), false
	for c := range srv.conns {
		if c == from {
			continue
		}
		n := c.queued.Load()
		w := c.writing.Load()
		st := w != 0 && w < epoch // its write began before the previous reclaim
		if n > 0 && (st && !stalled || st == stalled && n > most) {
			victim, most, stalled = c, n, st
		}
	}
	srv.mu.Unlock()
	return victim != nil && victim.cut() > 0
}

// cut drops the event lines of the connection's subscription that its
// writer has not taken and ends the subscription with a "lost" line: its
// client subscribes again after the last event it got and reads the rest
// from the journal. It returns the bytes freed.
func (c *conn) cut() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cutLocked(c.sub)
}

// cutLocked cuts sub if it is the connection's subscription and goes on (the
// lines of one that ended are its client's, up to its end).
func (c *conn) cutLocked(sub *subscription) int {
	if sub == nil || sub != c.sub || sub.over {
		return 0
	}
	freed := c.discardEventsLocked(sub) + sub.held
	c.unholdLocked(sub, sub.held) // the forwarder lets its batch go as it sees the cut
	sub.over = true
	c.flushDropsLocked(sub)
	c.sendLocked(encode(&lostMsg{Sub: sub.id, LastSeq: sub.lastTaken,
		Message: fmt.Sprintf("host: the output queued for the host's clients reached its budget (%d bytes) and this client's was given up; subscribe again after seq %d",
			c.srv.budget.limit(), sub.lastTaken)}))
	sub.cancel()
	return freed
}

func (b *outputBudget) limit() int64 {
	if b == nil {
		return 0
	}
	return b.max
}

// refuseFull refuses a connection over the server's bound on clients: an
// error line, then close. The line fits the new socket's empty buffer, so
// the write does not wait for the client.
func (srv *server) refuseFull(c *net.UnixConn) {
	n := srv.cfg.maxClients
	srv.cfg.log.Warn("host: refusing a connection: too many clients", "session", srv.id, "max", n)
	c.SetWriteDeadline(time.Now().Add(time.Second))
	c.Write(encode(&errorMsg{Error: protoErr(KindTooManyClients,
		fmt.Sprintf("this host serves at most %d clients at once", n), map[string]any{"max": n})}))
	c.Close()
}
