package host

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"looprig/rig"
	"looprig/rig/engine"
	"looprig/rig/event"
	"looprig/rig/fault"
	"looprig/rig/journal"
	"looprig/rig/storage"
	"looprig/rig/storage/memstore"
)

// waitTimeout bounds every wait; nothing asserts on wall-clock time.
const waitTimeout = 60 * time.Second

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "" {
		os.Exit(helperMain())
	}
	os.Exit(m.Run())
}

func wctx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	t.Cleanup(cancel)
	return ctx
}

// gateProfile runs /bin/sh and gates commands containing "touch gated".
func gateProfile() rig.Profile {
	return rig.Profile{Name: "hosttest", Engine: "shell", Placement: rig.PlacementSession, GatePolicy: []string{"touch gated"}}
}

// fixture is a live session on memstore served on a real socket.
type fixture struct {
	t      *testing.T
	store  *memstore.Store
	s      *rig.Session
	path   string
	cancel context.CancelFunc
	done   chan error

	returned bool
	served   error
}

func start(t *testing.T, opts ...Option) *fixture {
	t.Helper()
	return startWith(t, nil, opts...)
}

// startWith is start with rig options after the defaults.
func startWith(t *testing.T, rigOpts []rig.Option, opts ...Option) *fixture {
	t.Helper()
	store := memstore.New()
	r, err := rig.Define(append([]rig.Option{rig.WithStore(store), rig.WithProfile(gateProfile()), rig.WithWorkspaces(t.TempDir()),
		rig.WithCheckpoints(20*time.Millisecond, 64<<10),
		rig.WithEngineConfig(engine.Config{ShellGrace: 5 * time.Second})}, rigOpts...)...)
	if err != nil {
		t.Fatal(err)
	}
	s, err := r.NewSession(wctx(t))
	if err != nil {
		t.Fatal(err)
	}
	dir := privateDir(t)
	path := filepath.Join(dir, "h.sock")
	ln, err := Listen(path, false)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	f := &fixture{t: t, store: store, s: s, path: path, cancel: cancel, done: make(chan error, 1)}
	go func() { f.done <- Serve(ctx, s, ln, append([]Option{WithVersion("test")}, opts...)...) }()
	t.Cleanup(func() {
		cancel()
		f.wait()
		// Serve owns every goroutine it started and the clients were
		// closed (their cleanups ran first): none may be left.
		noHostGoroutines(t)
		sctx, scancel := context.WithTimeout(context.Background(), waitTimeout)
		defer scancel()
		s.Shutdown(sctx)
	})
	return f
}

// wait waits for Serve to return and returns what it returned.
func (f *fixture) wait() error {
	f.t.Helper()
	if !f.returned {
		select {
		case f.served = <-f.done:
			f.returned = true
		case <-time.After(waitTimeout):
			f.t.Fatalf("Serve did not return")
		}
	}
	return f.served
}

func (f *fixture) dial(opts ...DialOption) *Client {
	f.t.Helper()
	c, err := Dial(wctx(f.t), f.path, append([]DialOption{WithClientVersion("test")}, opts...)...)
	if err != nil {
		f.t.Fatalf("Dial: %v", err)
	}
	f.t.Cleanup(func() { c.Close() })
	return c
}

// journalEvents returns the journal's events after after.
func (f *fixture) journalEvents(after uint64) []event.Envelope {
	f.t.Helper()
	rp, err := journal.NewEventReplayer(wctx(f.t), f.store, storage.SessionName(f.s.SessionID().String()), after)
	if err != nil {
		f.t.Fatal(err)
	}
	defer rp.Close()
	var out []event.Envelope
	for rp.Next() {
		out = append(out, rp.Envelope())
	}
	if err := rp.Err(); err != nil {
		f.t.Fatal(err)
	}
	return out
}

// upTo cuts evs after the event with sequence seq.
func upTo(evs []event.Envelope, seq uint64) []event.Envelope {
	for i, e := range evs {
		if e.Seq == seq {
			return evs[:i+1]
		}
	}
	return evs
}

func durable(evs []event.Envelope) []event.Envelope {
	var out []event.Envelope
	for _, e := range evs {
		if e.Seq > 0 {
			out = append(out, e)
		}
	}
	return out
}

// sameSeqs fails unless got and want hold the same durable events, in the
// same order (sequence and type).
func sameSeqs(t *testing.T, what string, got, want []event.Envelope) {
	t.Helper()
	str := func(evs []event.Envelope) string {
		var b strings.Builder
		for _, e := range evs {
			b.WriteString(" " + itoa64(e.Seq) + ":" + string(e.Event.Type()))
		}
		return b.String()
	}
	if len(got) != len(want) {
		t.Fatalf("%s: %d events, want %d\n got%s\nwant%s", what, len(got), len(want), str(got), str(want))
	}
	for i := range got {
		if got[i].Seq != want[i].Seq || got[i].Event.Type() != want[i].Event.Type() {
			t.Fatalf("%s: event %d differs\n got%s\nwant%s", what, i, str(got), str(want))
		}
	}
}

func itoa64(n uint64) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// turnEnd matches the end of turn id.
func turnEnd(id string) func(event.Envelope) bool {
	return func(env event.Envelope) bool {
		switch e := env.Event.(type) {
		case event.TurnDone:
			return e.TurnID == id
		case event.TurnFailed:
			return e.TurnID == id
		case event.TurnInterrupted:
			return e.TurnID == id
		}
		return false
	}
}

func isType[T event.Event](env event.Envelope) bool {
	_, ok := env.Event.(T)
	return ok
}

// readUntil reads st until stop matches, failing on any error.
func readUntil(t *testing.T, st *Stream, stop func(event.Envelope) bool) []event.Envelope {
	t.Helper()
	ctx := wctx(t)
	var out []event.Envelope
	for {
		env, err := st.Next(ctx)
		if err != nil {
			t.Fatalf("Stream.Next after %d events: %v", len(out), err)
		}
		out = append(out, env)
		if stop(env) {
			return out
		}
	}
}

// readResubscribing reads st until stop matches, subscribing again after
// LastSeq whenever the stream is lost, as a client must. It returns the
// events and how many times it subscribed again.
func readResubscribing(t *testing.T, c *Client, st *Stream, stop func(event.Envelope) bool) ([]event.Envelope, int) {
	t.Helper()
	ctx := wctx(t)
	var out []event.Envelope
	again := 0
	for {
		env, err := st.Next(ctx)
		var lost *StreamLostError
		if errors.As(err, &lost) {
			if lost.LastSeq != st.LastSeq() {
				t.Fatalf("lost at seq %d, but the stream delivered up to %d", lost.LastSeq, st.LastSeq())
			}
			again++
			if st, err = c.Subscribe(ctx, lost.LastSeq); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("Stream.Next after %d events: %v", len(out), err)
		}
		out = append(out, env)
		if stop(env) {
			return out, again
		}
	}
}

func find[T event.Event](evs []event.Envelope) (T, bool) {
	for _, e := range evs {
		if v, ok := e.Event.(T); ok {
			return v, true
		}
	}
	var z T
	return z, false
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func asRemote(t *testing.T, err error, kind fault.Kind) *RemoteError {
	t.Helper()
	var re *RemoteError
	if !errors.As(err, &re) {
		t.Fatalf("got %v (%T), want *RemoteError of kind %s", err, err, kind)
	}
	if re.Kind != kind {
		t.Fatalf("got kind %s (%v), want %s", re.Kind, re, kind)
	}
	return re
}

// noHostGoroutines fails when a goroutine of the server or the client
// outlives them. Serve waits for its goroutines, Client.Close for the
// client's: the grace here is only for a goroutine between its last
// signal and its return.
func noHostGoroutines(t *testing.T) {
	t.Helper()
	marks := []string{"host.(*conn)", "host.(*server)", "host.(*Client)", "host.Serve(", "host.(*Stream)"}
	var last string
	for deadline := time.Now().Add(200 * time.Millisecond); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		last = ""
		for _, g := range strings.Split(string(buf), "\n\n") {
			for _, m := range marks {
				if strings.Contains(g, m) {
					last += g + "\n\n"
					break
				}
			}
		}
		if last == "" {
			return
		}
	}
	t.Errorf("goroutines outlived the server and its clients:\n%s", last)
}

// rawConn speaks the protocol by hand.
type rawConn struct {
	t  *testing.T
	c  *net.UnixConn
	lr *lineReader
}

func (f *fixture) raw() *rawConn {
	f.t.Helper()
	nc, err := net.Dial("unix", f.path)
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { nc.Close() })
	return &rawConn{t: f.t, c: nc.(*net.UnixConn), lr: newLineReader(nc, MaxServerLine)}
}

func (r *rawConn) send(s string) {
	r.t.Helper()
	r.c.SetWriteDeadline(time.Now().Add(waitTimeout))
	if _, err := r.c.Write([]byte(s + "\n")); err != nil {
		r.t.Fatalf("write: %v", err)
	}
}

// inMsg is any host line, as tests that read a raw connection decode it
// (the client decodes each type into its own struct: decodeMsg).
type inMsg struct {
	Type     string          `json:"type"`
	ID       uint64          `json:"id"`
	OK       bool            `json:"ok"`
	Error    *RemoteError    `json:"error"`
	Status   *Status         `json:"status"`
	TurnID   string          `json:"turn_id"`
	Index    int             `json:"index"`
	Sub      uint64          `json:"sub"`
	Hidden   bool            `json:"hidden"`
	Event    json.RawMessage `json:"event"`
	Count    uint64          `json:"count"`
	Total    uint64          `json:"total"`
	LastSeq  uint64          `json:"last_seq"`
	Reason   string          `json:"reason"`
	Message  string          `json:"message"`
	Protocol int             `json:"protocol"`
	Version  string          `json:"version"`
	Session  string          `json:"session"`
	PID      int             `json:"pid"`
	Epoch    uint64          `json:"epoch"`
}

// read returns the next line, decoded.
func (r *rawConn) read() inMsg {
	r.t.Helper()
	m, err := r.next()
	if err != nil {
		r.t.Fatalf("read: %v", err)
	}
	return m
}

func (r *rawConn) next() (inMsg, error) {
	r.c.SetReadDeadline(time.Now().Add(waitTimeout))
	b, err := r.lr.next()
	if err != nil {
		return inMsg{}, err
	}
	var m inMsg
	if err := json.Unmarshal(b, &m); err != nil {
		r.t.Fatalf("bad line %q: %v", b, err)
	}
	return m, nil
}

func (r *rawConn) hello() inMsg {
	r.t.Helper()
	r.send(`{"type":"hello","protocol":6,"version":"raw"}`)
	m := r.read()
	if m.Type != msgHello {
		r.t.Fatalf("hello answered with %+v", m)
	}
	return m
}

// closed fails unless the host closed the connection (after at most a
// few more lines, returned).
func (r *rawConn) closed() []inMsg {
	r.t.Helper()
	var out []inMsg
	for i := 0; i < 100; i++ {
		m, err := r.next()
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				r.t.Fatalf("the host did not close the connection")
			}
			return out
		}
		out = append(out, m)
	}
	r.t.Fatalf("the host went on talking: %+v", out)
	return nil
}
