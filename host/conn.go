package host

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"looprig/rig"
)

// tracker counts running goroutines of one kind; idle is closed while
// none runs.
type tracker struct {
	mu   sync.Mutex
	n    int
	zero chan struct{}
}

func newTracker() *tracker {
	t := &tracker{zero: make(chan struct{})}
	close(t.zero)
	return t
}

func (t *tracker) add() {
	t.mu.Lock()
	if t.n == 0 {
		t.zero = make(chan struct{})
	}
	t.n++
	t.mu.Unlock()
}

func (t *tracker) done() {
	t.mu.Lock()
	t.n--
	if t.n == 0 {
		close(t.zero)
	}
	t.mu.Unlock()
}

func (t *tracker) idle() <-chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.zero
}

// exit says why a connection's reader stopped.
type exit int

const (
	exitGone    exit = iota // EOF or a read error: the client went away
	exitDetach              // the client detached; its reply is queued
	exitRefused             // a protocol violation; the error is queued
	exitStop                // the server stops
)

// conn is one client connection. Its reader runs in run; the writer, the
// request handlers and the forwarder are goroutines run waits for.
type conn struct {
	srv    *server
	c      *net.UnixConn
	peer   rig.Client      // the peer's process, as the system told it when it connected
	ctx    context.Context // ends with the connection: requests and the subscription derive from it
	cancel context.CancelFunc

	reqs       *tracker      // request handlers
	fwd        *tracker      // forwarders
	inflight   chan struct{} // request slots
	stopCh     chan struct{} // closed by stop
	writerDone chan struct{}
	wake       chan struct{} // cap 1: there is something for the writer

	queued  atomic.Int64  // qBytes and what the forwarder holds (noteHeldLocked), for the server's reclaim
	writing atomic.Uint64 // while the writer writes: 1 + the server's reclaim count when it began; else 0

	mu        sync.Mutex
	q         []qline       // lines, in order
	qEvents   int           // event lines in q
	qBytes    int           // cost of the event lines in q
	qReplies  int           // other lines in q
	qRBytes   int           // cost of the other lines in q
	wBytes    int           // cost of the event lines the writer holds
	space     chan struct{} // closed (and replaced) whenever the writer takes lines or has written them
	closed    bool          // nothing more is queued: the last line is in q
	sub       *subscription // the current subscription
	nextSub   uint64
	stopping  bool
	reason    string       // why the server stops
	fault     *RemoteError // the session's fault, if that is why
	drainSubs bool         // the session stopped: let subscriptions send their last events
}

func newConn(srv *server, c *net.UnixConn) *conn {
	ctx, cancel := context.WithCancel(context.Background())
	return &conn{srv: srv, c: c, ctx: ctx, cancel: cancel, reqs: newTracker(), fwd: newTracker(),
		inflight: make(chan struct{}, maxInflight), stopCh: make(chan struct{}), writerDone: make(chan struct{}),
		wake: make(chan struct{}, 1), space: make(chan struct{})}
}

func (c *conn) run() {
	defer c.srv.wg.Done()
	defer c.srv.forget(c)
	go c.writeLoop() // run waits for it (writerDone)
	c.finish(c.readLoop())
}

// stop makes the connection end: the reader stops at once, running
// requests get the drain timeout to reply, then the bye is sent.
func (c *conn) stop(reason string, fault *RemoteError, drainSubs bool) {
	c.mu.Lock()
	if c.stopping {
		c.mu.Unlock()
		return
	}
	c.stopping, c.reason, c.fault, c.drainSubs = true, reason, fault, drainSubs
	close(c.stopCh)
	c.mu.Unlock()
	c.c.SetReadDeadline(time.Now()) // unblocks the reader
}

func (c *conn) isStopping() bool {
	select {
	case <-c.stopCh:
		return true
	default:
		return false
	}
}

// finish ends the connection after its reader stopped, waiting for every
// goroutine it owns.
func (c *conn) finish(how exit) {
	drain := c.srv.cfg.drainTimeout
	expired := make(chan struct{})
	t := time.AfterFunc(drain, func() { close(expired) })
	defer t.Stop()
	if how == exitStop {
		c.mu.Lock()
		drainSubs := c.drainSubs
		c.mu.Unlock()
		if drainSubs {
			select { // the hub is stopped: forwarders send SessionStopped and end
			case <-c.fwd.idle():
			case <-expired:
			}
		}
		select { // a running shutdown request replies once the session is down
		case <-c.reqs.idle():
		case <-expired:
		}
	}
	c.cancel()
	c.mu.Lock()
	if sub := c.sub; sub != nil && how == exitStop {
		// Not ended by its forwarder: it did not get to the end of the
		// stream, whatever ended the server.
		reason := c.reason
		if reason == ReasonSessionStopped {
			reason = ReasonServerStopping
		}
		c.endSubLocked(sub, reason, c.fault)
	}
	c.mu.Unlock()
	<-c.fwd.idle()
	<-c.reqs.idle()
	c.mu.Lock()
	if how == exitStop {
		c.sendLocked(encode(&byeMsg{Reason: c.reason, Error: c.fault}))
	}
	c.closed = true
	c.signal()
	c.mu.Unlock()
	c.c.SetWriteDeadline(time.Now().Add(drain))
	<-c.writerDone
	c.c.Close()
}
