package host

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"looprig/rig"
	"looprig/rig/fault"
)

// DefaultStreamBuffer is how many events a Stream holds for its reader.
const DefaultStreamBuffer = 4096

// DialOption configures Dial.
type DialOption func(*dialConfig)

type dialConfig struct {
	version string
	buffer  int
}

// WithClientVersion sets the looprig version the client reports in its
// hello.
func WithClientVersion(v string) DialOption { return func(c *dialConfig) { c.version = v } }

// WithStreamBuffer sets how many events a Stream holds (≤ 0: the default);
// a quarter is kept for durable events.
func WithStreamBuffer(n int) DialOption { return func(c *dialConfig) { c.buffer = n } }

// Client is a connection to a host. Its methods are safe for concurrent
// use; one Stream is open at a time.
type Client struct {
	conn  *net.UnixConn
	hello Hello
	cfg   dialConfig

	wmu sync.Mutex // orders writes

	mu      sync.Mutex
	nextID  uint64
	pending map[uint64]*call
	streams map[uint64]*Stream // by sub id
	active  *Stream
	// abandoned holds the ids of subscribe requests whose caller gave up
	// before the reply: if the host did subscribe, the reader undoes it.
	abandoned map[uint64]bool
	err       error // why the client is done

	done       chan struct{} // closed when the client is done
	readerDone chan struct{}
	bg         sync.WaitGroup // background unsubscribes
	closeOnce  sync.Once
	detaching  atomic.Bool // the host's EOF after a detach is the end we asked for
}

type call struct {
	ch     chan replyMsg
	stream *Stream // a subscribe's stream
	// progress holds the latest progress the host reported for the call,
	// when its caller asked for it (WithProgress); the reader replaces
	// what the caller has not taken yet, never waits for it.
	progress chan Progress
}

// CallOption configures a call to the host.
type CallOption func(*callConfig)

type callConfig struct {
	progress func(Progress)
	silence  time.Duration
}

// WithSilence bounds the call by the host's silence rather than by its
// length: it gives up with *SilenceError when the host has neither
// answered nor reported progress for d (a submit or a shutdown waiting
// for a checkpoint of minutes reports every quarter of a second). It goes
// with the call's context, whose end still ends it.
func WithSilence(d time.Duration) CallOption {
	return func(c *callConfig) { c.silence = d }
}

// SilenceError: a host neither answered a call nor said how far it was
// for the call's bound (WithSilence). errors.Is(err,
// context.DeadlineExceeded) holds: it is a timeout.
type SilenceError struct {
	Request string // the request's type: "submit", "shutdown"
	PID     int    // the host's
	Silent  time.Duration
}

func (e *SilenceError) Error() string {
	return fmt.Sprintf("host pid %d neither answered the %s request nor said how far it was for %s", e.PID, e.Request, e.Silent)
}

func (e *SilenceError) Unwrap() error { return context.DeadlineExceeded }

// WithProgress has progress called, on the calling goroutine, whenever the
// host reports how far what the call waits for is (a Submit or a Shutdown
// waiting for a checkpoint of the workspace: every quarter of a second
// while it runs). Reports may be skipped; the last one stands.
func WithProgress(progress func(Progress)) CallOption {
	return func(c *callConfig) { c.progress = progress }
}

// Dial connects to the host at path and says hello. A host speaking
// another protocol is *ProtocolMismatchError; any other refusal is
// *RemoteError.
func Dial(ctx context.Context, path string, opts ...DialOption) (*Client, error) {
	cfg := dialConfig{version: "devel", buffer: DefaultStreamBuffer}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.buffer <= 0 {
		cfg.buffer = DefaultStreamBuffer
	}
	var d net.Dialer
	nc, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return nil, err
	}
	conn := nc.(*net.UnixConn)
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	lr := newLineReader(conn, MaxServerLine)
	_, werr := conn.Write(encode(&helloRequest{Protocol: ProtocolVersion, Version: cfg.version}))
	if werr != nil {
		// The host may have refused us before reading: its reason is
		// readable still.
		conn.SetReadDeadline(time.Now().Add(time.Second))
	}
	first, rerr := lr.next()
	if rerr != nil {
		conn.Close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if werr != nil {
			return nil, werr
		}
		return nil, fmt.Errorf("host: no hello from %s: %w", path, rerr)
	}
	msg, err := decodeMsg(first)
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("host: bad hello from %s: %w", path, err)
	}
	m, ok := msg.(*helloMsg)
	switch {
	case !ok:
		conn.Close()
		if e, ok := msg.(*errorMsg); ok && e.Error != nil {
			if e.Error.Kind == KindProtocolMismatch {
				e := e.Error
				return nil, &ProtocolMismatchError{Client: ProtocolVersion, Server: int(e.num("server_protocol")),
					ServerVersion: e.str("server_version"), Session: e.str("session"), PID: int(e.num("pid")), Hint: e.Hint}
			}
			return nil, e.Error
		}
		t, _ := msgType(first)
		return nil, fmt.Errorf("host: expected hello from %s, got %.40q", path, t)
	case m.Protocol != ProtocolVersion:
		conn.Close()
		return nil, &ProtocolMismatchError{Client: ProtocolVersion, Server: m.Protocol, ServerVersion: m.Version,
			Session: m.Session, PID: m.PID, Hint: stopHint(m.Session, m.PID)}
	}
	if !stop() {
		conn.Close()
		return nil, ctx.Err()
	}
	conn.SetDeadline(time.Time{})
	c := &Client{conn: conn, cfg: cfg, pending: map[uint64]*call{}, streams: map[uint64]*Stream{}, abandoned: map[uint64]bool{},
		hello:      m.Hello,
		done:       make(chan struct{}),
		readerDone: make(chan struct{}),
	}
	go c.readLoop(lr)
	return c, nil
}

// Hello returns what the host said about itself.
func (c *Client) Hello() Hello { return c.hello }

// Done is closed when the connection is over; Err says why.
func (c *Client) Done() <-chan struct{} { return c.done }

// Err returns why the client is done (ErrClientClosed after Close,
// *HostClosedError when the host said bye), nil while it is not.
func (c *Client) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Close closes the connection (the host takes it as a detach) and waits
// for the client's goroutines.
func (c *Client) Close() error {
	c.fail(ErrClientClosed)
	<-c.readerDone
	c.bg.Wait()
	return nil
}

// fail ends the client with err (the first one wins).
func (c *Client) fail(err error) {
	c.closeOnce.Do(func() {
		c.mu.Lock()
		c.err = err
		streams := c.streams
		c.streams = map[uint64]*Stream{}
		c.mu.Unlock()
		for _, s := range streams {
			s.end(err)
		}
		close(c.done)
		c.conn.Close()
	})
}

func (c *Client) readLoop(lr *lineReader) {
	defer close(c.readerDone)
	for {
		b, err := lr.next()
		if err != nil {
			if c.detaching.Load() {
				c.fail(ErrClientClosed)
			} else {
				c.fail(fmt.Errorf("host: connection lost: %w", err))
			}
			return
		}
		msg, err := decodeMsg(b)
		if err != nil {
			c.fail(fmt.Errorf("host: bad line from host: %w", err))
			return
		}
		switch m := msg.(type) {
		case *replyMsg:
			c.reply(*m)
		case *progressMsg:
			c.progressed(m)
		case streamMsg:
			c.mu.Lock()
			s := c.streams[m.stream()]
			c.mu.Unlock()
			if s != nil {
				c.toStream(s, m)
			}
		case *errorMsg:
			if m.Error == nil {
				m.Error = &RemoteError{Type: fault.TypeError, Kind: fault.KindError, Message: "host error"}
			}
			c.fail(m.Error)
			return
		case *byeMsg:
			c.fail(&HostClosedError{Reason: m.Reason, Err: m.Error})
			return
		}
	}
}

func (c *Client) reply(m replyMsg) {
	c.mu.Lock()
	cl := c.pending[m.ID]
	delete(c.pending, m.ID)
	if cl == nil && c.abandoned[m.ID] {
		delete(c.abandoned, m.ID)
		var old *Stream
		if m.OK {
			// The host subscribed after all, replacing the open stream:
			// end that one here, and the new one there.
			old = c.active
			c.active = nil
			if old != nil {
				delete(c.streams, old.sub)
			}
		}
		c.mu.Unlock()
		if m.OK {
			if old != nil {
				old.end(ErrStreamClosed)
			}
			c.unsubscribeLater(m.Sub)
		}
		return
	}
	if cl != nil && cl.stream != nil && m.OK {
		// Registered before the next line is read: the stream's events
		// follow its reply.
		cl.stream.sub = m.Sub
		if old := c.active; old != nil {
			delete(c.streams, old.sub)
			defer old.end(ErrStreamClosed)
		}
		c.streams[m.Sub] = cl.stream
		c.active = cl.stream
	}
	c.mu.Unlock()
	if cl != nil {
		cl.ch <- m
	}
}

// progressed hands the progress of a call to its caller, replacing a
// report it has not taken yet; a report for a call nobody waits for any
// more, or that asked for none, is dropped.
func (c *Client) progressed(m *progressMsg) {
	c.mu.Lock()
	cl := c.pending[m.ID]
	c.mu.Unlock()
	if cl == nil || cl.progress == nil {
		return
	}
	for {
		select {
		case cl.progress <- m.Progress:
			return
		default:
		}
		select {
		case <-cl.progress:
		default:
		}
	}
}

// unsubscribeLater tells the host to end subscription sub (if it is still
// the connection's), in a goroutine Close waits for; nothing once the
// client is done.
func (c *Client) unsubscribeLater(sub uint64) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	c.bg.Add(1)
	c.mu.Unlock()
	go func() {
		defer c.bg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		c.roundTrip(ctx, &unsubscribeRequest{Sub: sub}, nil)
	}()
}

// forget unregisters s.
func (c *Client) forget(s *Stream) {
	c.mu.Lock()
	if c.streams[s.sub] == s {
		delete(c.streams, s.sub)
	}
	if c.active == s {
		c.active = nil
	}
	c.mu.Unlock()
}

// roundTrip sends req with a fresh id and waits for its reply.
func (c *Client) roundTrip(ctx context.Context, req request, st *Stream, opts ...CallOption) (replyMsg, error) {
	var cfg callConfig
	for _, o := range opts {
		o(&cfg)
	}
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		return replyMsg{}, err
	}
	c.nextID++
	id := c.nextID
	req.setID(id)
	cl := &call{ch: make(chan replyMsg, 1), stream: st}
	if cfg.progress != nil || cfg.silence > 0 {
		cl.progress = make(chan Progress, 1)
	}
	c.pending[id] = cl
	c.mu.Unlock()
	forget := func() {
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
	}
	if err := c.write(ctx, encode(req)); err != nil {
		forget()
		return replyMsg{}, err
	}
	var silent <-chan time.Time // nil, never ready, without WithSilence
	if cfg.silence > 0 {
		t := time.NewTimer(cfg.silence)
		defer t.Stop()
		silent = t.C
		prev := cfg.progress
		cfg.progress = func(p Progress) { // the host spoke
			t.Reset(cfg.silence)
			if prev != nil {
				prev(p)
			}
		}
	}
	for {
		var gaveUp error
		select {
		case p := <-cl.progress: // nil, never ready, without WithProgress or WithSilence
			cfg.progress(p)
			continue
		case m := <-cl.ch:
			return settled(m)
		case <-ctx.Done():
			gaveUp = ctx.Err()
		case <-silent:
			gaveUp = &SilenceError{Request: req.msgType(), PID: c.hello.PID, Silent: cfg.silence}
		case <-c.done:
			select { // a reply that came with the end wins
			case m := <-cl.ch:
				if m.Error != nil {
					return m, m.Error
				}
				return m, nil
			default:
			}
			return replyMsg{}, c.Err()
		}
		c.mu.Lock()
		if _, waiting := c.pending[id]; waiting && st != nil {
			c.abandoned[id] = true
		}
		delete(c.pending, id)
		c.mu.Unlock()
		select { // the reply may have come meanwhile
		case m := <-cl.ch:
			if m.Error != nil || m.OK {
				return settled(m)
			}
		default:
		}
		return replyMsg{}, gaveUp
	}
}

// settled is the outcome of a call whose reply m came.
func settled(m replyMsg) (replyMsg, error) {
	if m.Error != nil {
		return m, m.Error
	}
	if !m.OK {
		return m, &RemoteError{Type: fault.TypeError, Kind: fault.KindError, Message: "host: request failed without an error"}
	}
	return m, nil
}

// write sends one line; a write that ctx cut short leaves a partial line,
// so it ends the client.
func (c *Client) write(ctx context.Context, b []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if err := ctx.Err(); err != nil {
		return err
	}
	fired := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		c.conn.SetWriteDeadline(time.Unix(1, 0))
		close(fired)
	})
	_, err := c.conn.Write(b)
	if !stop() {
		<-fired
		if err == nil {
			c.conn.SetWriteDeadline(time.Time{})
			return nil
		}
		c.fail(fmt.Errorf("host: write cut short: %w", ctx.Err()))
		return ctx.Err()
	}
	if err != nil {
		c.fail(fmt.Errorf("host: connection lost: %w", err))
		if e := c.Err(); e != nil {
			return e
		}
		return err
	}
	return nil
}

// Status returns a snapshot of the hosted session.
func (c *Client) Status(ctx context.Context) (Status, error) {
	m, err := c.roundTrip(ctx, &statusRequest{}, nil)
	if err != nil {
		return Status{}, err
	}
	if m.Status == nil {
		return Status{}, errors.New("host: status reply without a status")
	}
	return *m.Status, nil
}

// Submit starts a turn running input; it returns once TurnStarted is
// durable.
//
// A turn submitted while the workspace is checkpointed after the last
// turn's end waits for the checkpoint in the host (as long as its own
// bound): WithProgress says how far it is meanwhile.
func (c *Client) Submit(ctx context.Context, input string, opts ...CallOption) (rig.TurnInfo, error) {
	m, err := c.roundTrip(ctx, &submitRequest{Input: &input}, nil, opts...)
	if err != nil {
		return rig.TurnInfo{}, err
	}
	ti := rig.TurnInfo{ID: m.TurnID}
	if m.Index != nil {
		ti.Index = *m.Index
	}
	return ti, nil
}

// Revert puts the session's workspace back as it was before turn (its
// index; rig.LastTurn for the last turn, or to undo a revert after it):
// rig.Session.Revert, in the host. WithProgress says how far the
// checkpoints it waits for and takes are.
func (c *Client) Revert(ctx context.Context, turn int, opts ...CallOption) (Reverted, error) {
	req := &revertRequest{}
	if turn != rig.LastTurn {
		req.Turn = &turn
	}
	m, err := c.roundTrip(ctx, req, nil, opts...)
	if err != nil {
		return Reverted{}, err
	}
	if m.Reverted == nil {
		return Reverted{}, errors.New("host: revert reply without what it did")
	}
	return *m.Reverted, nil
}

// SendInput sends text to the running turn's terminal, as if typed (end a
// line with "\n"), and reports whether it was hidden: the terminal had
// echo off when it arrived or was written (then the journal keeps only its
// length). from names the sender in the journal.
func (c *Client) SendInput(ctx context.Context, text, from string) (hidden bool, err error) {
	sent, err := c.Send(ctx, text, from)
	return sent.Hidden, err
}

// Sent is what the host did with an input (Send).
type Sent struct {
	// Hidden: the turn's terminal had echo off (a password prompt): the
	// text was journaled as hidden input, its length only.
	Hidden bool
	// PromptEcho: the turn's last output looked like a password prompt
	// while its terminal still echoed; the host waited a moment for the
	// echo to go off (rig.Sent). With Hidden it went off in time; without,
	// the text was echoed into the turn's output and journaled.
	PromptEcho bool
}

// Send is SendInput, reporting what the host did with the text.
func (c *Client) Send(ctx context.Context, text, from string) (Sent, error) {
	m, err := c.roundTrip(ctx, &inputRequest{Input: &text, From: from}, nil)
	return Sent{Hidden: m.Hidden, PromptEcho: m.PromptEcho}, err
}

// SendEOF sends an end of file (^D) to the running turn's terminal.
func (c *Client) SendEOF(ctx context.Context, from string) error {
	_, err := c.roundTrip(ctx, &inputRequest{EOF: true, From: from}, nil)
	return err
}

// Resize sets the terminal size of the running turn and of the next ones
// (the attached client that resized last decides).
func (c *Client) Resize(ctx context.Context, cols, rows int) error {
	_, err := c.roundTrip(ctx, &resizeRequest{Cols: cols, Rows: rows}, nil)
	return err
}

// Interrupt stops the running turn and waits until it has ended.
func (c *Client) Interrupt(ctx context.Context) error {
	_, err := c.roundTrip(ctx, &interruptRequest{}, nil)
	return err
}

// RespondGate answers the open gate; from names the client in the
// journal ("tui", "cli"), beside its pid and whether it has a terminal,
// which the host asks the system. The host refuses an answer from a
// process inside the session's own turns (*rig.FromTurnError).
func (c *Client) RespondGate(ctx context.Context, gateID string, approve bool, from string) error {
	_, err := c.roundTrip(ctx, &respondGateRequest{GateID: gateID, Approve: &approve, From: from}, nil)
	return err
}

// SeeAttention says the user looked at the session: the attention it has
// pending, if recorded at or before sequence through (0: whatever is
// pending), is dealt with. from names the client in the journal.
func (c *Client) SeeAttention(ctx context.Context, through uint64, from string) error {
	_, err := c.roundTrip(ctx, &seenRequest{Through: through, From: from}, nil)
	return err
}

// Shutdown shuts the session down; the host then ends. It waits for a
// checkpoint in progress, and takes the shutdown's own: WithProgress says
// how far they are meanwhile.
func (c *Client) Shutdown(ctx context.Context, opts ...CallOption) error {
	_, err := c.roundTrip(ctx, &shutdownRequest{}, nil, opts...)
	return err
}

// Detach tells the host this client is leaving, then closes the client.
func (c *Client) Detach(ctx context.Context) error {
	c.detaching.Store(true)
	_, err := c.roundTrip(ctx, &detachRequest{}, nil)
	c.Close()
	return err
}
