package host

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"looprig/rig"
)

func (c *conn) readLoop() exit {
	lr := newLineReader(c.c, MaxLine)
	c.c.SetReadDeadline(time.Now().Add(c.srv.cfg.helloTimeout))
	ln, err := lr.next()
	if err != nil {
		return c.readFailed(err, true)
	}
	if x, ok := c.hello(ln); !ok {
		return x
	}
	c.c.SetReadDeadline(time.Time{})
	if c.isStopping() { // stop's deadline may have come before the line above
		return exitStop
	}
	malformed := 0
	for {
		if x, ok := c.waitReplySpace(); !ok {
			return x
		}
		ln, err := lr.next()
		if err != nil {
			return c.readFailed(err, false)
		}
		req, err := decodeRequest(ln)
		if err != nil {
			re := err.(*requestError)
			c.send(encode(&replyMsg{ID: re.id, Error: protoErr(re.kind, re.msg, nil)}))
			if re.kind != KindBadRequest {
				malformed = 0
				continue
			}
			if malformed++; malformed >= maxMalformed {
				c.send(encode(&errorMsg{Error: protoErr(KindBadRequest,
					fmt.Sprintf("%d malformed requests in a row: closing the connection", malformed), nil)}))
				return exitRefused
			}
			continue
		}
		malformed = 0
		switch r := req.(type) {
		case *helloRequest:
			c.send(errReply(r.ID, protoErr(KindBadRequest, "hello was already said", nil)))
		case *statusRequest:
			st := statusOf(c.srv.s.Status(), c.srv.pid)
			st.Terminal, st.EchoOff = c.srv.s.TerminalState()
			c.send(encode(&replyMsg{ID: r.ID, OK: true, Status: &st}))
		case *subscribeRequest:
			c.subscribe(r)
		case *unsubscribeRequest:
			c.dropSub(r.Sub)
			c.send(okReply(r.ID))
		case *detachRequest:
			c.send(okReply(r.ID))
			return exitDetach
		default: // the requests that may take a while
			select {
			case c.inflight <- struct{}{}:
			case <-c.stopCh:
				return exitStop
			}
			c.reqs.add()
			go c.handle(req)
		}
	}
}

// hello answers the client's hello.
func (c *conn) hello(ln []byte) (exit, bool) {
	req, err := decodeRequest(ln)
	hello, ok := req.(*helloRequest)
	if err != nil || !ok {
		c.send(encode(&errorMsg{Error: protoErr(KindBadRequest,
			fmt.Sprintf(`the first message must be {"type":"hello","protocol":%d,"version":"…"}`, ProtocolVersion), nil)}))
		return exitRefused, false
	}
	if hello.Protocol != ProtocolVersion {
		hint := stopHint(c.srv.id, c.srv.pid)
		e := protoErr(KindProtocolMismatch,
			fmt.Sprintf("this host (looprig %s, pid %d) speaks protocol %d; the client (looprig %s) speaks protocol %d",
				c.srv.cfg.version, c.srv.pid, ProtocolVersion, hello.Version, hello.Protocol),
			map[string]any{"client_protocol": hello.Protocol, "server_protocol": ProtocolVersion, "client_version": hello.Version,
				"server_version": c.srv.cfg.version, "session": c.srv.id, "pid": c.srv.pid})
		e.Hint = hint
		c.send(encode(&errorMsg{Error: e}))
		return exitRefused, false
	}
	c.send(encode(&helloMsg{Hello: Hello{Protocol: ProtocolVersion, Version: c.srv.cfg.version,
		Session: c.srv.id, PID: c.srv.pid, Epoch: c.srv.s.Epoch()}}))
	return 0, true
}

func (c *conn) readFailed(err error, inHello bool) exit {
	switch {
	case errors.Is(err, errLineTooLong):
		c.send(encode(&errorMsg{Error: protoErr(KindLineTooLong,
			fmt.Sprintf("a request line is longer than %d bytes: closing the connection", MaxLine), map[string]any{"max": MaxLine})}))
		return exitRefused
	case c.isStopping():
		return exitStop
	case inHello && errors.Is(err, os.ErrDeadlineExceeded):
		c.send(encode(&errorMsg{Error: protoErr(KindBadRequest,
			fmt.Sprintf("no hello within %s: closing the connection", c.srv.cfg.helloTimeout), nil)}))
		return exitRefused
	case errors.Is(err, io.EOF):
	}
	return exitGone
}

func okReply(id uint64) []byte { return encode(&replyMsg{ID: id, OK: true}) }

func errReply(id uint64, e *RemoteError) []byte {
	return encode(&replyMsg{ID: id, Error: e})
}

// DefaultRequestTimeout bounds one request a client sent (WithRequestTimeout).
// A shutdown is bounded by the rig's shutdown grace instead (8 s by
// default), which bounds its wait for the running turn, and a submit's
// wait for the checkpoint after the last turn by the checkpoint's bound.
const DefaultRequestTimeout = 30 * time.Second

// revertTimeout bounds a revert request: it checkpoints the workspace
// and writes what differs, as long as a checkpoint may take.
const revertTimeout = 5 * time.Minute

// inputTimeout bounds an input request: a turn that does not read its
// terminal makes the write wait, never longer than this.
const inputTimeout = 5 * time.Second

// handle runs a request that may take a while: submit, interrupt,
// respond_gate, shutdown, input, resize, attention_seen or revert.
func (c *conn) handle(req request) {
	defer c.reqs.done()
	defer func() { <-c.inflight }()
	s := c.srv.s
	r := &replyMsg{ID: req.id()}
	// A request, once read, is carried out even if its client hangs up
	// right after sending it (a second Ctrl-C after an interrupt): what
	// the client asked for must not depend on how long it stayed. It is
	// bounded instead.
	bound := c.srv.cfg.requestTimeout
	if _, ok := req.(*inputRequest); ok {
		bound = inputTimeout
	}
	stopProgress := func() {}
	var err error
	switch req.(type) {
	case *submitRequest, *revertRequest:
		// It may wait for a checkpoint (a revert takes one too): its
		// client is told how far it is, until the reply.
		stopProgress = c.reportProgress(req.id(), false)
	case *shutdownRequest:
		// So may a shutdown, which also waits for the running turn to
		// stop: its client hears from the host every quarter of a second
		// until the reply, so that it can tell a host that works from one
		// that says nothing (stopped, wedged).
		stopProgress = c.reportProgress(req.id(), true)
	}
	switch req.(type) {
	case *submitRequest, *revertRequest:
		// A turn submitted while the last one's workspace is checkpointed
		// waits for it, as long as the checkpoint's own bound, not the
		// request's; then it is submitted as any other, its bound from
		// then on.
		err = s.WaitCheckpoint(context.WithoutCancel(c.ctx), nil)
	}
	if _, ok := req.(*revertRequest); ok {
		bound = revertTimeout
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(c.ctx), bound)
	defer cancel()
	switch q := req.(type) {
	case *submitRequest:
		if err != nil {
			break
		}
		var ti rig.TurnInfo
		if ti, err = s.Submit(ctx, *q.Input); err == nil {
			r.TurnID, r.Index = ti.ID, &ti.Index
		}
	case *interruptRequest:
		err = s.Interrupt(ctx)
	case *respondGateRequest:
		err = s.RespondGate(ctx, q.GateID, *q.Approve, c.from(q.From))
	case *shutdownRequest:
		// Without the request's deadline: the wait for the running turn is
		// the rig's shutdown grace, not the request's bound; a checkpoint
		// in progress is waited for (its own bound), and so is the
		// shutdown's own.
		c.srv.work.stop() // what the host does between turns first
		err = s.Shutdown(context.WithoutCancel(ctx))
	case *inputRequest:
		in := rig.Input{EOF: q.EOF, From: c.from(q.From)}
		if q.Input != nil {
			in.Text = *q.Input
		}
		var sent rig.Sent
		sent, err = s.Send(ctx, in)
		r.Hidden, r.PromptEcho = sent.Hidden, sent.PromptEcho
	case *resizeRequest:
		err = s.Resize(q.Cols, q.Rows)
	case *seenRequest:
		err = s.SeeAttention(ctx, q.Through, q.From)
	case *revertRequest:
		if err != nil {
			break
		}
		turn := rig.LastTurn
		if q.Turn != nil {
			turn = *q.Turn
		}
		var rv rig.Reverted
		if rv, err = s.Revert(ctx, turn); err == nil {
			r.Reverted = &Reverted{TurnID: rv.TurnID, TurnIndex: rv.TurnIndex, Undo: rv.Undo, Manifest: rv.Manifest, From: rv.From,
				Changed: rv.Changed, Removed: rv.Removed, Paths: rv.Paths, Agent: rv.Agent}
		}
	}
	stopProgress()
	if err != nil {
		r.Error = describe(err)
	} else {
		r.OK = true
	}
	c.send(encode(r))
}

// progressEvery is how often a request that waits for a checkpoint tells
// its client how far it is.
const progressEvery = 250 * time.Millisecond

// reportProgress tells the client of request id, every progressEvery
// while the session takes a checkpoint, how far it is, until the returned
// function is called (before the request's reply is queued); with always,
// it sends a progress message without a checkpoint when none is taken.
func (c *conn) reportProgress(id uint64, always bool) (stop func()) {
	done, over := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(over)
		t := time.NewTicker(progressEvery)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			if p := c.srv.s.Checkpointing(); p != nil {
				c.sendProgress(id, Progress{Checkpoint: p})
			} else if always {
				c.sendProgress(id, Progress{})
			}
		}
	}()
	return func() {
		close(done)
		<-over
	}
}

// sendProgress queues a progress message for request id, unless replies
// are piling up for a client that does not read: progress is only ever
// the latest word, and the next one says it again.
func (c *conn) sendProgress(id uint64, p Progress) {
	if p.Checkpoint != nil {
		cp := *p.Checkpoint
		cp.Since = cp.Since.UTC()
		p.Checkpoint = &cp
	}
	b := encode(&progressMsg{ID: id, Progress: p})
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.qReplies >= maxQueuedReplies/2 {
		return
	}
	c.sendLocked(b)
}

// from is the connection's peer as a client of the kind it says it is.
func (c *conn) from(kind string) rig.Client {
	by := c.peer
	by.Kind = kind
	return by
}
