package host

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"looprig/rig"
	"looprig/rig/event"
	"looprig/rig/explain"
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
	_, werr := conn.Write(requestLine(&helloRequest{Protocol: ProtocolVersion, Version: cfg.version}))
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
	m, ok := msg.(helloMsg)
	switch {
	case !ok:
		conn.Close()
		if e, ok := msg.(errorMsg); ok && e.Error != nil {
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
		case replyMsg:
			c.reply(m)
		case streamMsg:
			c.mu.Lock()
			s := c.streams[m.stream()]
			c.mu.Unlock()
			if s != nil {
				c.toStream(s, m)
			}
		case errorMsg:
			if m.Error == nil {
				m.Error = &RemoteError{Type: explain.TypeError, Kind: explain.KindError, Message: "host error"}
			}
			c.fail(m.Error)
			return
		case byeMsg:
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

func (c *Client) toStream(s *Stream, m streamMsg) {
	switch m := m.(type) {
	case eventMsg:
		if s.push(m.Event) {
			return
		}
		// The stream's queue overflowed: tell the host to stop sending.
		c.forget(s)
		c.unsubscribeLater(s.sub)
	case droppedMsg:
		s.dropped(m.Count)
	case lostMsg:
		c.forget(s)
		s.end(&StreamLostError{LastSeq: m.LastSeq, Message: m.Message})
	case endMsg:
		c.forget(s)
		switch {
		case m.Error != nil:
			s.end(m.Error)
		case m.Reason == ReasonSessionStopped:
			s.end(ErrSessionEnded)
		default:
			s.end(&HostClosedError{Reason: m.Reason})
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
func (c *Client) roundTrip(ctx context.Context, req request, st *Stream) (replyMsg, error) {
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
	c.pending[id] = cl
	c.mu.Unlock()
	forget := func() {
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
	}
	if err := c.write(ctx, requestLine(req)); err != nil {
		forget()
		return replyMsg{}, err
	}
	select {
	case m := <-cl.ch:
		if m.Error != nil {
			return m, m.Error
		}
		if !m.OK {
			return m, &RemoteError{Type: explain.TypeError, Kind: explain.KindError, Message: "host: request failed without an error"}
		}
		return m, nil
	case <-ctx.Done():
		c.mu.Lock()
		if _, waiting := c.pending[id]; waiting && st != nil {
			c.abandoned[id] = true
		}
		delete(c.pending, id)
		c.mu.Unlock()
		select { // the reply may have come meanwhile
		case m := <-cl.ch:
			if m.Error != nil {
				return m, m.Error
			}
			if m.OK {
				return m, nil
			}
		default:
		}
		return replyMsg{}, ctx.Err()
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
func (c *Client) Submit(ctx context.Context, input string) (rig.TurnInfo, error) {
	m, err := c.roundTrip(ctx, &submitRequest{Input: &input}, nil)
	if err != nil {
		return rig.TurnInfo{}, err
	}
	ti := rig.TurnInfo{ID: m.TurnID}
	if m.Index != nil {
		ti.Index = *m.Index
	}
	return ti, nil
}

// SendInput sends text to the running turn's terminal, as if typed (end a
// line with "\n"), and reports whether it was hidden: the terminal had
// echo off when it arrived or was written (then the journal keeps only its
// length). from names the sender in the journal.
func (c *Client) SendInput(ctx context.Context, text, from string) (hidden bool, err error) {
	m, err := c.roundTrip(ctx, &inputRequest{Input: &text, From: from}, nil)
	return m.Hidden, err
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

// RespondGate answers the open gate.
func (c *Client) RespondGate(ctx context.Context, gateID string, approve bool) error {
	_, err := c.roundTrip(ctx, &respondGateRequest{GateID: gateID, Approve: &approve}, nil)
	return err
}

// SeeAttention says the user looked at the session: the attention it has
// pending, if recorded at or before sequence through (0: whatever is
// pending), is dealt with. from names the client in the journal.
func (c *Client) SeeAttention(ctx context.Context, through uint64, from string) error {
	_, err := c.roundTrip(ctx, &seenRequest{Through: through, From: from}, nil)
	return err
}

// Shutdown shuts the session down; the host then ends.
func (c *Client) Shutdown(ctx context.Context) error {
	_, err := c.roundTrip(ctx, &shutdownRequest{}, nil)
	return err
}

// Detach tells the host this client is leaving, then closes the client.
func (c *Client) Detach(ctx context.Context) error {
	c.detaching.Store(true)
	_, err := c.roundTrip(ctx, &detachRequest{}, nil)
	c.Close()
	return err
}

// Subscribe opens a stream of the session's events after afterSeq: every
// durable event after it exactly once, in sequence order, then live events
// (output deltas may be dropped: see Stream.Dropped). It replaces the
// client's open stream, if any. When ctx ends before the host answers and
// the host did subscribe, the client undoes it (and the stream it
// replaced ends with ErrStreamClosed).
func (c *Client) Subscribe(ctx context.Context, afterSeq uint64) (*Stream, error) {
	s := &Stream{c: c, max: c.cfg.buffer, wake: make(chan struct{}, 1), lastSeq: afterSeq, queuedSeq: afterSeq}
	if _, err := c.roundTrip(ctx, &subscribeRequest{AfterSeq: afterSeq}, s); err != nil {
		return nil, err
	}
	return s, nil
}

// Stream is one subscription's events. Next is for one goroutine at a
// time.
type Stream struct {
	c   *Client
	sub uint64 // set by the reader before the first event
	max int

	wake chan struct{}

	mu        sync.Mutex
	q         []item
	err       error  // the end, after q
	over      bool   // no more events are queued
	drops     uint64 // dropped so far (host and client)
	seen      uint64 // drops as of the last event Next returned
	lastSeq   uint64 // last durable sequence Next returned
	queuedSeq uint64 // last durable sequence queued
}

type item struct {
	raw   json.RawMessage // the event line, decoded by Next
	err   error
	drops uint64
}

// envelopeHead is what push reads of an event line: the client's reader
// must keep up with the socket, so the event itself is decoded by Next, on
// the reader's side of the queue (and a delta dropped here is never
// decoded at all).
type envelopeHead struct {
	Type event.Type `json:"type"`
	Seq  uint64     `json:"seq"`
}

// readHead reads the head of an event line: off its start, where
// event.MarshalEnvelope writes it ({"seq":N,"type":"T",…), without a
// parse; any other line through encoding/json.
func readHead(raw []byte) (envelopeHead, error) {
	const seqKey, typeKey = `{"seq":`, `,"type":"`
	if rest, ok := bytes.CutPrefix(raw, []byte(seqKey)); ok {
		i := 0
		for i < len(rest) && i < 20 && '0' <= rest[i] && rest[i] <= '9' {
			i++
		}
		if i > 0 && (i == 1 || rest[0] != '0') {
			if seq, err := strconv.ParseUint(string(rest[:i]), 10, 64); err == nil {
				if t, ok := bytes.CutPrefix(rest[i:], []byte(typeKey)); ok {
					// Type names are letters only: the next quote ends it.
					if j := bytes.IndexByte(t, '"'); j > 0 && bytes.IndexByte(t[:j], '\\') < 0 {
						return envelopeHead{Type: event.Type(t[:j]), Seq: seq}, nil
					}
				}
			}
		}
	}
	var head envelopeHead
	if err := json.Unmarshal(raw, &head); err != nil {
		return head, &EnvelopeDecodeError{Reason: "not a JSON object", Err: err}
	}
	return head, nil
}

// push queues an event line; false when the queue overflowed and the
// stream is lost.
func (s *Stream) push(raw json.RawMessage) bool {
	head, err := readHead(raw)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.over {
		return true
	}
	delta := err == nil && head.Type == event.TypeOutputDelta
	limit := s.max
	if delta {
		limit -= s.max / 4
	}
	if len(s.q) >= limit {
		if delta {
			s.drops++
			return true
		}
		s.over = true
		s.err = &StreamLostError{LastSeq: s.queuedSeq, Local: true}
		s.signal()
		return false
	}
	if err == nil && head.Seq > 0 {
		s.queuedSeq = head.Seq
	}
	s.q = append(s.q, item{raw: raw, err: err, drops: s.drops})
	s.signal()
	return true
}

func (s *Stream) dropped(n uint64) {
	s.mu.Lock()
	s.drops += n
	s.mu.Unlock()
}

// end ends the stream after what is queued.
func (s *Stream) end(err error) {
	s.mu.Lock()
	if !s.over {
		s.over = true
		s.err = err
	}
	s.mu.Unlock()
	s.signal()
}

func (s *Stream) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Next returns the next event. An event the client cannot decode is
// returned as *EnvelopeDecodeError (the stream goes on). At the end it
// returns ErrSessionEnded (the session stopped), *StreamLostError (the
// stream fell behind: subscribe again after its LastSeq), ErrStreamClosed,
// *RemoteError, or the client's error.
func (s *Stream) Next(ctx context.Context) (event.Envelope, error) {
	env, _, err := s.next(ctx, true)
	return env, err
}

// next is Next; without wait, it returns ok false at once when nothing is
// queued and the stream has not ended.
func (s *Stream) next(ctx context.Context, wait bool) (env event.Envelope, ok bool, err error) {
	for {
		s.mu.Lock()
		if len(s.q) > 0 {
			it := s.q[0]
			s.q[0] = item{}
			s.q = s.q[1:]
			s.seen = it.drops
			s.mu.Unlock()
			if it.err != nil {
				return event.Envelope{}, true, it.err
			}
			env, err := event.UnmarshalEnvelope(it.raw)
			if err == nil && env.Seq > 0 {
				s.mu.Lock()
				s.lastSeq = env.Seq
				s.mu.Unlock()
			}
			return env, true, err
		}
		if s.over {
			err := s.err
			s.mu.Unlock()
			return event.Envelope{}, true, err
		}
		s.mu.Unlock()
		if !wait {
			return event.Envelope{}, false, nil
		}
		select {
		case <-s.wake:
		case <-ctx.Done():
			return event.Envelope{}, true, ctx.Err()
		}
	}
}

// Dropped counts the output deltas dropped before the last event Next
// returned (by the host, for this stream, or by the client's queue). When
// it changes, a delta may be missing: rely on TurnOutput checkpoints.
func (s *Stream) Dropped() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seen
}

// LastSeq is the sequence of the last durable event Next returned (the
// subscription's after_seq before the first).
func (s *Stream) LastSeq() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastSeq
}

// Close ends the stream at once (what was queued is discarded; Next
// returns ErrStreamClosed) and tells the host, in the background.
func (s *Stream) Close() error {
	s.mu.Lock()
	wasOver := s.over
	s.q = nil
	s.mu.Unlock()
	s.end(ErrStreamClosed)
	if wasOver {
		return nil
	}
	c := s.c
	c.mu.Lock()
	active := c.active == s
	c.mu.Unlock()
	c.forget(s)
	if active {
		c.unsubscribeLater(s.sub)
	}
	return nil
}
