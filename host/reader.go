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
		switch req.Type {
		case reqHello:
			c.send(errReply(req.ID, protoErr(KindBadRequest, "hello was already said", nil)))
		case reqStatus:
			st := statusOf(c.srv.s.Status(), c.srv.pid)
			st.Terminal, st.EchoOff = c.srv.s.TerminalState()
			c.send(line(replyMsg{Type: msgReply, ID: req.ID, OK: true, Status: &st}))
		case reqSubscribe:
			c.subscribe(req)
		case reqUnsubscribe:
			c.dropSub(req.Sub)
			c.send(okReply(req.ID))
		case reqDetach:
			c.send(okReply(req.ID))
			return exitDetach
		default:
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
	if err != nil || req.Type != reqHello {
		c.send(line(errorMsg{Type: msgError, Error: protoErr(KindBadRequest,
			fmt.Sprintf(`the first message must be {"type":"hello","protocol":%d,"version":"…"}`, ProtocolVersion), nil)}))
		return exitRefused, false
	}
	if req.Protocol != ProtocolVersion {
		hint := stopHint(c.srv.id, c.srv.pid)
		e := protoErr(KindProtocolMismatch,
			fmt.Sprintf("this host (looprig %s, pid %d) speaks protocol %d; the client (looprig %s) speaks protocol %d",
				c.srv.cfg.version, c.srv.pid, ProtocolVersion, req.Version, req.Protocol),
			map[string]any{"client_protocol": req.Protocol, "server_protocol": ProtocolVersion, "client_version": req.Version,
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

// requestTimeout bounds one request a client sent: a shutdown waits for
// the running turn (the rig's shutdown grace, 8 s by default).
const requestTimeout = 30 * time.Second

// inputTimeout bounds an input request: a turn that does not read its
// terminal makes the write wait, never longer than this.
const inputTimeout = 5 * time.Second

// handle runs a request that may take a while.
func (c *conn) handle(req request) {
	defer c.reqs.done()
	defer func() { <-c.inflight }()
	s := c.srv.s
	r := replyMsg{Type: msgReply, ID: req.ID}
	// A request, once read, is carried out even if its client hangs up
	// right after sending it (a second Ctrl-C after an interrupt): what
	// the client asked for must not depend on how long it stayed. It is
	// bounded instead.
	bound := requestTimeout
	if req.Type == reqInput {
		bound = inputTimeout
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(c.ctx), bound)
	defer cancel()
	var err error
	switch req.Type {
	case reqSubmit:
		var ti rig.TurnInfo
		if ti, err = s.Submit(ctx, *req.Input); err == nil {
			r.TurnID, r.Index = ti.ID, &ti.Index
		}
	case reqInterrupt:
		err = s.Interrupt(ctx)
	case reqRespondGate:
		err = s.RespondGate(ctx, req.GateID, *req.Approve)
	case reqShutdown:
		err = s.Shutdown(ctx)
	case reqInput:
		in := rig.Input{EOF: req.EOF, From: req.From}
		if req.Input != nil {
			in.Text = *req.Input
		}
		r.Hidden, err = s.SendInput(ctx, in)
	case reqResize:
		err = s.Resize(req.Cols, req.Rows)
	}
	if err != nil {
		r.Error = describe(err)
	} else {
		r.OK = true
	}
	c.send(line(r))
}
