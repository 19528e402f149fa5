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
			c.send(line(replyMsg{Type: msgReply, ID: re.id, Error: protoErr(re.kind, re.msg, nil)}))
			if re.kind != KindBadRequest {
				malformed = 0
				continue
			}
			if malformed++; malformed >= maxMalformed {
				c.send(line(errorMsg{Type: msgError, Error: protoErr(KindBadRequest,
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
			c.send(line(replyMsg{Type: msgReply, ID: r.ID, OK: true, Status: &st}))
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
		c.send(line(errorMsg{Type: msgError, Error: protoErr(KindBadRequest,
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
		c.send(line(errorMsg{Type: msgError, Error: e}))
		return exitRefused, false
	}
	c.send(line(helloMsg{Type: msgHello, Hello: Hello{Protocol: ProtocolVersion, Version: c.srv.cfg.version,
		Session: c.srv.id, PID: c.srv.pid, Epoch: c.srv.s.Epoch()}}))
	return 0, true
}

func (c *conn) readFailed(err error, inHello bool) exit {
	switch {
	case errors.Is(err, errLineTooLong):
		c.send(line(errorMsg{Type: msgError, Error: protoErr(KindLineTooLong,
			fmt.Sprintf("a request line is longer than %d bytes: closing the connection", MaxLine), map[string]any{"max": MaxLine})}))
		return exitRefused
	case c.isStopping():
		return exitStop
	case inHello && errors.Is(err, os.ErrDeadlineExceeded):
		c.send(line(errorMsg{Type: msgError, Error: protoErr(KindBadRequest,
			fmt.Sprintf("no hello within %s: closing the connection", c.srv.cfg.helloTimeout), nil)}))
		return exitRefused
	case errors.Is(err, io.EOF):
	}
	return exitGone
}

func okReply(id uint64) []byte { return line(replyMsg{Type: msgReply, ID: id, OK: true}) }

func errReply(id uint64, e *RemoteError) []byte {
	return line(replyMsg{Type: msgReply, ID: id, Error: e})
}

// requestTimeout bounds one request a client sent. A shutdown is bounded
// by the rig's shutdown grace instead (8 s by default), which bounds its
// wait for the running turn.
const requestTimeout = 30 * time.Second

// inputTimeout bounds an input request: a turn that does not read its
// terminal makes the write wait, never longer than this.
const inputTimeout = 5 * time.Second

// handle runs a request that may take a while: submit, interrupt,
// respond_gate, shutdown, input, resize or attention_seen.
func (c *conn) handle(req request) {
	defer c.reqs.done()
	defer func() { <-c.inflight }()
	s := c.srv.s
	r := replyMsg{Type: msgReply, ID: req.id()}
	// A request, once read, is carried out even if its client hangs up
	// right after sending it (a second Ctrl-C after an interrupt): what
	// the client asked for must not depend on how long it stayed. It is
	// bounded instead.
	bound := requestTimeout
	if _, ok := req.(*inputRequest); ok {
		bound = inputTimeout
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(c.ctx), bound)
	defer cancel()
	var err error
	switch q := req.(type) {
	case *submitRequest:
		var ti rig.TurnInfo
		if ti, err = s.Submit(ctx, *q.Input); err == nil {
			r.TurnID, r.Index = ti.ID, &ti.Index
		}
	case *interruptRequest:
		err = s.Interrupt(ctx)
	case *respondGateRequest:
		err = s.RespondGate(ctx, q.GateID, *q.Approve)
	case *shutdownRequest:
		// Without the request's deadline: the wait for the running turn is
		// the rig's shutdown grace, not the request's bound.
		err = s.Shutdown(context.WithoutCancel(ctx))
	case *inputRequest:
		in := rig.Input{EOF: q.EOF, From: q.From}
		if q.Input != nil {
			in.Text = *q.Input
		}
		r.Hidden, err = s.SendInput(ctx, in)
	case *resizeRequest:
		err = s.Resize(q.Cols, q.Rows)
	case *seenRequest:
		err = s.SeeAttention(ctx, q.Through, q.From)
	}
	if err != nil {
		r.Error = describe(err)
	} else {
		r.OK = true
	}
	c.send(line(r))
}
