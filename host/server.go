package host

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"looprig/internal/peercred"
	"looprig/rig"
)

// Defaults of the server's bounds.
const (
	DefaultMaxClients   = 32               // connections served at once
	DefaultQueueEvents  = 1024             // events queued per connection
	DefaultQueueBytes   = 4 << 20          // bytes of events queued per connection, the writer's included
	DefaultOutputBudget = 32 << 20         // bytes of events queued on all connections together
	DefaultHelloTimeout = 10 * time.Second // from accept to the client's hello
	DefaultDrainTimeout = 2 * time.Second  // to flush a closing connection
	maxInflight         = 8                // requests running per connection
	maxQueuedReplies    = 64               // replies waiting per connection before reading stops
	maxReplyBytes       = 1 << 20          // bytes of replies waiting per connection before reading stops
	maxMalformed        = 3                // malformed lines in a row before the connection closes
)

// Option configures Serve.
type Option func(*config)

type config struct {
	version        string
	log            *slog.Logger
	maxClients     int
	queueEvents    int
	queueBytes     int
	outputBudget   int
	helloTimeout   time.Duration
	drainTimeout   time.Duration
	requestTimeout time.Duration
	// ownProcess: the process serves this session alone (WithOwnProcess);
	// idleMemory and idleTrimAfter stand in for its policy in tests.
	ownProcess    bool
	idleMemory    *idleMemory
	idleTrimAfter time.Duration
	betweenTurns  func(context.Context)
}

// WithOwnProcess says the process serves this one session (`looprig
// host`): between turns and clients Serve returns its free memory and
// switches the collector's clock off (trim.go).
func WithOwnProcess() Option { return func(c *config) { c.ownProcess = true } }

// WithBetweenTurns gives work for the host to do after each turn of the
// session, before it sleeps (trim.go): fn runs once per spell between
// turns, and its ctx ends when the next turn begins or Serve ends. The
// host of `looprig host` indexes what the turn journaled
// (`looprig search --update --session ID`, search.IndexSession).
func WithBetweenTurns(fn func(ctx context.Context)) Option {
	return func(c *config) { c.betweenTurns = fn }
}

// WithVersion sets the looprig version the host reports in its hello.
func WithVersion(v string) Option { return func(c *config) { c.version = v } }

// WithLogger sets where the server logs what it cannot tell a client
// (refused peers, accept failures). Default: discard.
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.log = l } }

// WithSendQueue bounds each connection's queue of events, in events and in
// bytes, the lines its writer holds included (≤ 0: the default). A quarter
// of each is kept for durable events.
func WithSendQueue(events, bytes int) Option {
	return func(c *config) { c.queueEvents, c.queueBytes = events, bytes }
}

// WithMaxClients bounds the connections served at once (≤ 0: the default);
// one more is refused with an error of kind too_many_clients.
func WithMaxClients(n int) Option { return func(c *config) { c.maxClients = n } }

// WithOutputBudget bounds the bytes of events queued on all connections
// together (≤ 0: the default; never less than one connection's queue).
func WithOutputBudget(bytes int) Option { return func(c *config) { c.outputBudget = bytes } }

// WithHelloTimeout bounds the wait for a client's hello.
func WithHelloTimeout(d time.Duration) Option { return func(c *config) { c.helloTimeout = d } }

// WithRequestTimeout bounds each request a client sends (≤ 0: the
// default, DefaultRequestTimeout); see DefaultRequestTimeout for what it
// does not bound.
func WithRequestTimeout(d time.Duration) Option { return func(c *config) { c.requestTimeout = d } }

// WithDrainTimeout bounds how long a closing connection is given to take
// what was queued for it (and, when the session stopped, its last events).
func WithDrainTimeout(d time.Duration) Option { return func(c *config) { c.drainTimeout = d } }

// serveHook, when set, runs when Serve starts serving path and when it
// has ended (done). Tests find a server's connections with it.
var serveHook atomic.Pointer[func(srv *server, path string, done bool)]

// testHook, when set, runs once a subscription is open ("subscribed":
// its Follower's hub subscription is, the reply is not sent yet). Tests
// widen that window.
var testHook atomic.Pointer[func(stage string)]

func runTestHook(stage string) {
	if h := testHook.Load(); h != nil {
		(*h)(stage)
	}
}

type server struct {
	s      *rig.Session
	id     string
	cfg    config
	uid    int
	pid    int
	budget *outputBudget

	wg     sync.WaitGroup // every goroutine Serve started
	stopCh chan struct{}  // closed when Serve stops

	reclaims atomic.Uint64 // reclaim's count

	idle         *idleMemory   // nil: the process's memory is not Serve's to manage
	connsChanged chan struct{} // a connection came or went (betweenTurns)
	work         betweenWork   // the work WithBetweenTurns gave, while it runs

	mu       sync.Mutex
	conns    map[*conn]struct{}
	stopping bool
}

// Serve serves s on ln until ctx ends or the session ends (s.Done). A
// session that faulted (its lease lost, its journal refusing appends) is
// shut down (Session.Shutdown, bounded by the rig's shutdown grace) while
// the connections close with the fault, and Serve waits for it. Serve
// returns once every connection and goroutine it
// started has ended and it has removed the socket file, if that is still
// the one it served: nil when ctx ended or the session shut down cleanly,
// the session's fault (its lease lost) when it faulted, or the listener's
// error. Closing connections are given the drain timeout to take what was
// queued for them; a request still running (a shutdown) is waited for.
func Serve(ctx context.Context, s *rig.Session, ln *net.UnixListener, opts ...Option) error {
	if s == nil || ln == nil {
		return errors.New("host: Serve needs a session and a listener")
	}
	cfg := config{version: "devel", maxClients: DefaultMaxClients, queueEvents: DefaultQueueEvents, queueBytes: DefaultQueueBytes,
		outputBudget: DefaultOutputBudget, helloTimeout: DefaultHelloTimeout, drainTimeout: DefaultDrainTimeout}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.maxClients <= 0 {
		cfg.maxClients = DefaultMaxClients
	}
	if cfg.queueEvents <= 0 {
		cfg.queueEvents = DefaultQueueEvents
	}
	if cfg.queueBytes <= 0 {
		cfg.queueBytes = DefaultQueueBytes
	}
	if cfg.outputBudget <= 0 {
		cfg.outputBudget = DefaultOutputBudget
	}
	cfg.outputBudget = max(cfg.outputBudget, cfg.queueBytes)
	if cfg.helloTimeout <= 0 {
		cfg.helloTimeout = DefaultHelloTimeout
	}
	if cfg.drainTimeout <= 0 {
		cfg.drainTimeout = DefaultDrainTimeout
	}
	if cfg.requestTimeout <= 0 {
		cfg.requestTimeout = DefaultRequestTimeout
	}
	if cfg.log == nil {
		cfg.log = slog.New(slog.DiscardHandler)
	}
	id := s.SessionID().String()
	srv := &server{s: s, id: id, cfg: cfg, budget: newOutputBudget(cfg.outputBudget),
		uid: os.Getuid(), pid: os.Getpid(), stopCh: make(chan struct{}), conns: map[*conn]struct{}{},
		connsChanged: make(chan struct{}, 1), idle: cfg.idleMemory}
	if srv.idle == nil && cfg.ownProcess {
		srv.idle = newIdleMemory()
	}

	path := ln.Addr().String()
	if h := serveHook.Load(); h != nil {
		(*h)(srv, path, false)
		defer (*h)(srv, path, true)
	}
	sockID, haveID := socketID(path)
	// Taken before a client can begin a turn: a turn that begins and ends
	// before betweenTurns first looks is still one it works after.
	spell := s.Busy()
	acceptErr := make(chan error, 1)
	srv.wg.Add(1)
	go func() {
		defer srv.wg.Done()
		acceptErr <- srv.acceptLoop(ln)
	}()
	trimCtx, stopTrim := context.WithCancel(context.Background())
	if srv.idle != nil || cfg.betweenTurns != nil {
		srv.wg.Add(1)
		go srv.betweenTurns(trimCtx, spell)
	}

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
	var down chan error // the faulted session's shutdown, which Serve waits for
	if ended {
		reason = ReasonSessionStopped
		if err != nil {
			reason, fault = ReasonSessionFaulted, describe(err)
			// Shut the faulted session down in the runtime's order — its
			// turn stopped (interrupted by the fault, its processes gone),
			// SessionStopped when the journal still takes it, the root
			// lease, then the session lease — while its clients are told
			// of the fault at once.
			down = make(chan error, 1)
			go func() { down <- shutdownSession(s) }()
		}
	}
	srv.stop(reason, fault, ended && err == nil)
	stopTrim()
	srv.wg.Wait()
	if down != nil {
		if serr := <-down; serr != nil {
			cfg.log.Warn("host: shut down the faulted session", "session", id, "err", serr)
		}
	}
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
	uid, err := peercred.UID(c)
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
			c.Write(encode(&errorMsg{Error: protoErr(KindPeerRefused, msg, fields)}))
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
	if len(srv.conns) >= srv.cfg.maxClients {
		srv.mu.Unlock()
		srv.refuseFull(c)
		return
	}
	// The peer's pid (0 where the system does not tell it), and what the
	// system says of its process now: a gate's answer or input from a
	// process inside the session's own turns is refused (rig.FromTurnError).
	pid, _ := peercred.PID(c)
	cn := newConn(srv, c)
	cn.peer = rig.PeerClient("", max(pid, 0))
	srv.conns[cn] = struct{}{}
	srv.wg.Add(1)
	srv.mu.Unlock()
	srv.idle.wake() // before the client's work: the collector's clock runs again
	srv.connsChange()
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
	srv.connsChange()
}
