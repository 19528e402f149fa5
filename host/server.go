package host

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"looprig/rig"
	"looprig/rig/event"
	"looprig/rig/hub"
	"looprig/rig/journal"
	"looprig/rig/storage"
)

// Defaults of the server's bounds.
const (
	DefaultQueueEvents  = 1024             // events queued per connection
	DefaultQueueBytes   = 16 << 20         // bytes of events queued per connection
	DefaultHelloTimeout = 10 * time.Second // from accept to the client's hello
	DefaultDrainTimeout = 2 * time.Second  // to flush a closing connection
	maxInflight         = 8                // requests running per connection
	maxQueuedReplies    = 64               // replies waiting per connection before reading stops
	maxMalformed        = 3                // malformed lines in a row before the connection closes
)

// Option configures Serve.
type Option func(*config)

type config struct {
	version      string
	log          *slog.Logger
	queueEvents  int
	queueBytes   int
	helloTimeout time.Duration
	drainTimeout time.Duration
}

// WithVersion sets the looprig version the host reports in its hello.
func WithVersion(v string) Option { return func(c *config) { c.version = v } }

// WithLogger sets where the server logs what it cannot tell a client
// (refused peers, accept failures). Default: discard.
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.log = l } }

// WithSendQueue bounds each connection's queue of events, in events and in
// bytes (≤ 0: the default). A quarter of each is kept for durable events.
func WithSendQueue(events, bytes int) Option {
	return func(c *config) { c.queueEvents, c.queueBytes = events, bytes }
}

// WithHelloTimeout bounds the wait for a client's hello.
func WithHelloTimeout(d time.Duration) Option { return func(c *config) { c.helloTimeout = d } }

// WithDrainTimeout bounds how long a closing connection is given to take
// what was queued for it (and, when the session stopped, its last events).
func WithDrainTimeout(d time.Duration) Option { return func(c *config) { c.drainTimeout = d } }

// testHook, when set, runs at two points of a subscription: "subscribed"
// (the hub subscription is open, the journal not read yet) and "replayed"
// (the replay is over, the live phase not begun). Tests widen those
// windows: events journaled in the first come twice, in the second only
// from the hub.
var testHook atomic.Pointer[func(stage string)]

func runTestHook(stage string) {
	if h := testHook.Load(); h != nil {
		(*h)(stage)
	}
}

type server struct {
	s       *rig.Session
	ledger  storage.Ledger
	journal string
	id      string
	cfg     config
	uid     int
	pid     int

	wg     sync.WaitGroup // every goroutine Serve started
	stopCh chan struct{}  // closed when Serve stops

	mu       sync.Mutex
	conns    map[*conn]struct{}
	stopping bool
}

// Serve serves s on ln until ctx ends or the session ends (s.Done). ledger
// is the session's store (the rig's Store), which subscriptions replay the
// journal from. Serve returns once every connection and goroutine it
// started has ended and it has removed the socket file, if that is still
// the one it served: nil when ctx ended or the session shut down cleanly,
// the session's fault (its lease lost) when it faulted, or the listener's
// error. Closing connections are given the drain timeout to take what was
// queued for them; a request still running (a shutdown) is waited for.
func Serve(ctx context.Context, s *rig.Session, ledger storage.Ledger, ln *net.UnixListener, opts ...Option) error {
	if s == nil || ledger == nil || ln == nil {
		return errors.New("host: Serve needs a session, its store and a listener")
	}
	cfg := config{version: "devel", queueEvents: DefaultQueueEvents, queueBytes: DefaultQueueBytes,
		helloTimeout: DefaultHelloTimeout, drainTimeout: DefaultDrainTimeout}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.queueEvents <= 0 {
		cfg.queueEvents = DefaultQueueEvents
	}
	if cfg.queueBytes <= 0 {
		cfg.queueBytes = DefaultQueueBytes
	}
	if cfg.helloTimeout <= 0 {
		cfg.helloTimeout = DefaultHelloTimeout
	}
	if cfg.drainTimeout <= 0 {
		cfg.drainTimeout = DefaultDrainTimeout
	}
	if cfg.log == nil {
		cfg.log = slog.New(slog.DiscardHandler)
	}
	id := s.SessionID().String()
	srv := &server{s: s, ledger: ledger, journal: storage.SessionName(id), id: id, cfg: cfg,
		uid: os.Getuid(), pid: os.Getpid(), stopCh: make(chan struct{}), conns: map[*conn]struct{}{}}

	path := ln.Addr().String()
	sockID, haveID := socketID(path)
	acceptErr := make(chan error, 1)
	srv.wg.Add(1)
	go func() {
		defer srv.wg.Done()
		acceptErr <- srv.acceptLoop(ln)
	}()

	var err error
	ended := false
	select {
	case <-ctx.Done():
	case <-s.Done():
		ended, err = true, s.Err()
	case err = <-acceptErr:
	}
	ln.Close()
	reason, fault := ReasonServerStopping, (*RemoteError)(nil)
	if ended {
		reason = ReasonSessionStopped
		if err != nil {
			reason, fault = ReasonSessionFaulted, describe(err)
		}
	}
	srv.stop(reason, fault, ended && err == nil)
	srv.wg.Wait()
	if haveID {
		if cur, ok := socketID(path); ok && cur == sockID {
			if rerr := os.Remove(path); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
				cfg.log.Warn("host: remove socket", "path", path, "err", rerr)
			}
		}
	}
	return err
}

// acceptLoop accepts until the listener is closed.
func (srv *server) acceptLoop(ln *net.UnixListener) error {
	var delay time.Duration
	for {
		c, err := ln.AcceptUnix()
		if err != nil {
			if errors.Is(err, net.ErrClosed) || srv.isStopping() {
				return nil
			}
			if !transientAccept(err) {
				return fmt.Errorf("host: accept: %w", err)
			}
			delay = min(max(2*delay, 5*time.Millisecond), time.Second)
			srv.cfg.log.Warn("host: accept failed; retrying", "err", err, "in", delay)
			t := time.NewTimer(delay)
			select {
			case <-t.C:
			case <-srv.stopCh:
				t.Stop()
				return nil
			}
			continue
		}
		delay = 0
		srv.admit(c)
	}
}

func transientAccept(err error) bool {
	for _, e := range []error{syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM, syscall.ECONNABORTED, syscall.EINTR} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

func (srv *server) isStopping() bool {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	return srv.stopping
}

// admit checks the peer's uid and starts serving the connection.
func (srv *server) admit(c *net.UnixConn) {
	uid, err := peerUID(c)
	if err != nil || uid != srv.uid {
		var msg string
		fields := map[string]any{"uid": srv.uid}
		if err != nil {
			msg = "refusing connection: the peer's credentials cannot be read: " + err.Error()
		} else {
			msg = fmt.Sprintf("refusing connection from uid %d: this host serves uid %d only", uid, srv.uid)
			fields["peer_uid"] = uid
		}
		srv.cfg.log.Warn("host: "+msg, "session", srv.id)
		srv.wg.Add(1)
		go func() {
			defer srv.wg.Done()
			c.SetWriteDeadline(time.Now().Add(time.Second))
			c.Write(line(errorMsg{Type: msgError, Error: protoErr(KindPeerRefused, msg, fields)}))
			c.Close()
		}()
		return
	}
	srv.mu.Lock()
	if srv.stopping {
		srv.mu.Unlock()
		c.Close()
		return
	}
	cn := newConn(srv, c)
	srv.conns[cn] = struct{}{}
	srv.wg.Add(1)
	srv.mu.Unlock()
	go cn.run()
}

// stop ends every connection: see conn.stop.
func (srv *server) stop(reason string, fault *RemoteError, drainSubs bool) {
	srv.mu.Lock()
	if srv.stopping {
		srv.mu.Unlock()
		return
	}
	srv.stopping = true
	close(srv.stopCh)
	conns := make([]*conn, 0, len(srv.conns))
	for c := range srv.conns {
		conns = append(conns, c)
	}
	srv.mu.Unlock()
	for _, c := range conns {
		c.stop(reason, fault, drainSubs)
	}
}

func (srv *server) forget(c *conn) {
	srv.mu.Lock()
	delete(srv.conns, c)
	srv.mu.Unlock()
}

// ---- connections --------------------------------------------------------------

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
	ctx    context.Context // ends with the connection: requests and the subscription derive from it
	cancel context.CancelFunc

	reqs       *tracker      // request handlers
	fwd        *tracker      // forwarders
	inflight   chan struct{} // request slots
	stopCh     chan struct{} // closed by stop
	writerDone chan struct{}
	wake       chan struct{} // cap 1: there is something for the writer

	mu        sync.Mutex
	q         [][]byte      // lines, in order
	qEvents   int           // event lines in q
	qBytes    int           // bytes of the event lines in q
	qReplies  int           // other lines in q
	space     chan struct{} // closed (and replaced) whenever the writer takes q
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
		c.sendLocked(line(byeMsg{Type: msgBye, Reason: c.reason, Error: c.fault}))
	}
	c.closed = true
	c.signal()
	c.mu.Unlock()
	c.c.SetWriteDeadline(time.Now().Add(drain))
	<-c.writerDone
	c.c.Close()
}

// ---- the send queue -------------------------------------------------------------

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

// ---- the reader -------------------------------------------------------------------

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

// ---- subscriptions -----------------------------------------------------------------

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
