package host

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"looprig/rig"
	"looprig/rig/engine"
	"looprig/rig/event"
	"looprig/rig/fault"
	"looprig/rig/journal"
	"looprig/rig/storage"
)

func TestHelloAndStatus(t *testing.T) {
	f := start(t)
	c := f.dial()
	h := c.Hello()
	if h.Protocol != ProtocolVersion || h.Version != "test" || h.Session != f.s.SessionID().String() ||
		h.PID != os.Getpid() || h.Epoch != f.s.Epoch() || h.Epoch == 0 {
		t.Fatalf("hello %+v", h)
	}
	st, err := c.Status(wctx(t))
	if err != nil {
		t.Fatal(err)
	}
	want := f.s.Status()
	if st.Session != h.Session || st.Profile != "hosttest" || st.Engine != "shell" || st.Epoch != want.Epoch ||
		st.LoopID != f.s.LoopID() || st.Placement != "session" || st.Workspace != f.s.Workspace() ||
		st.Tip != want.Tip || st.Turn != nil || st.Gate != nil || st.Fault != nil || st.Closed || st.PID != os.Getpid() {
		t.Fatalf("status %+v\nrig status %+v", st, want)
	}
}

func TestProtocolMismatch(t *testing.T) {
	f := start(t)
	r := f.raw()
	r.send(`{"type":"hello","protocol":7,"version":"9.9"}`)
	m := r.read()
	if m.Type != msgError || m.Error == nil || m.Error.Kind != KindProtocolMismatch {
		t.Fatalf("mismatch answered with %+v", m)
	}
	e := m.Error
	if e.num("client_protocol") != 7 || e.num("server_protocol") != ProtocolVersion || e.num("pid") != int64(os.Getpid()) ||
		!strings.Contains(e.Message, "protocol 6") || !strings.Contains(e.Message, "protocol 7") ||
		!strings.Contains(e.Hint, "looprig stop "+rig.ShortID(f.s.SessionID().String())) ||
		!strings.Contains(e.Hint, fmt.Sprint(os.Getpid())) {
		t.Fatalf("mismatch error %+v", e)
	}
	r.closed()
	// The host serves on.
	if _, err := f.dial().Status(wctx(t)); err != nil {
		t.Fatal(err)
	}
}

// fakeHost answers every connection's first line with reply.
func fakeHost(t *testing.T, reply string) string {
	t.Helper()
	path := filepath.Join(privateDir(t), "fake.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { ln.Close(); <-done })
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			newLineReader(c, MaxLine).next()
			c.Write([]byte(reply + "\n"))
			c.Close()
		}
	}()
	return path
}

func TestDialProtocolMismatch(t *testing.T) {
	// A newer host that says hello in protocol 7.
	path := fakeHost(t, `{"type":"hello","protocol":7,"version":"3.0","session":"0b6e3c9a-0000-0000-0000-000000000000","pid":77,"epoch":3}`)
	_, err := Dial(wctx(t), path)
	var pm *ProtocolMismatchError
	if !errors.As(err, &pm) || pm.Server != 7 || pm.Client != ProtocolVersion || pm.PID != 77 || pm.ServerVersion != "3.0" ||
		!strings.Contains(pm.Error(), "looprig stop 0b6e3c9a") || !strings.Contains(pm.Error(), "kill 77") {
		t.Fatalf("Dial: %v (%+v)", err, pm)
	}
	// An older host that refuses our protocol.
	path = fakeHost(t, `{"type":"error","error":{"type":"ProtocolMismatchError","kind":"protocol_mismatch","message":"m","server_protocol":0,"pid":78,"session":"s","server_version":"0.1","hint":"stop it"}}`)
	_, err = Dial(wctx(t), path)
	if !errors.As(err, &pm) || pm.PID != 78 || pm.Hint != "stop it" || pm.ServerVersion != "0.1" {
		t.Fatalf("Dial: %v (%+v)", err, pm)
	}
}

// A submitted shell turn arrives through the subscription: TurnStarted,
// its output, TurnDone; every durable event is the journal's.
func TestSubmitAndSubscribe(t *testing.T) {
	f := start(t)
	c := f.dial()
	ctx := wctx(t)
	st, err := c.Subscribe(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	ti, err := c.Submit(ctx, "echo hello; echo world")
	if err != nil {
		t.Fatal(err)
	}
	evs := readUntil(t, st, turnEnd(ti.ID))
	started, ok := find[event.TurnStarted](evs)
	if !ok || started.TurnID != ti.ID || started.Index != ti.Index || started.Input != "echo hello; echo world" {
		t.Fatalf("TurnStarted %+v (%v)", started, ok)
	}
	var text string
	for _, e := range evs {
		if o, ok := e.Event.(event.TurnOutput); ok {
			text += o.Text
		}
	}
	if text != "hello\nworld\n" {
		t.Errorf("TurnOutput text %q", text)
	}
	done := evs[len(evs)-1].Event.(event.TurnDone)
	if done.ExitCode != 0 {
		t.Errorf("TurnDone %+v", done)
	}
	if evs[0].Session != f.s.SessionID().String() {
		t.Errorf("envelope session %q", evs[0].Session)
	}
	sameSeqs(t, "stream vs journal", durable(evs), upTo(f.journalEvents(0), evs[len(evs)-1].Seq))
	if st.LastSeq() != evs[len(evs)-1].Seq {
		t.Errorf("LastSeq %d", st.LastSeq())
	}
}

// Subscribing after a sequence in the middle of a running turn yields
// every durable event after it exactly once, in order — also when events
// are journaled between the replay and the live phase.
func TestSubscribeAfterSeqMidTurn(t *testing.T) {
	f := start(t)
	c := f.dial()
	ctx := wctx(t)
	ti, err := c.Submit(ctx, `i=0; while [ $i -lt 60 ]; do echo "line $i"; i=$((i+1)); sleep 0.02; done`)
	if err != nil {
		t.Fatal(err)
	}
	var after uint64
	eventually(t, "three checkpoints", func() bool {
		n := 0
		for _, e := range f.journalEvents(0) {
			if _, ok := e.Event.(event.TurnOutput); ok {
				if n++; n == 2 {
					after = e.Seq
				}
			}
		}
		return n >= 3
	})
	// Widen the window between the hub subscription and the reply: what
	// the turn journals then comes from both the journal and the hub (a
	// host that did not skip it would send it twice). The window between
	// the replay and the live part is rig's (TestFollowWindows).
	var stages sync.Map
	hook := func(stage string) {
		stages.Store(stage, true)
		tip := f.s.Status().Tip
		eventually(t, "the journal to grow", func() bool { return f.s.Status().Tip >= tip+3 })
	}
	testHook.Store(&hook)
	defer testHook.Store(nil)
	st, err := c.Subscribe(ctx, after)
	if err != nil {
		t.Fatal(err)
	}
	evs := readUntil(t, st, turnEnd(ti.ID))
	if _, ok := stages.Load("subscribed"); !ok {
		t.Fatalf("the subscribed hook did not run")
	}
	end := evs[len(evs)-1].Seq
	sameSeqs(t, "stream after seq "+fmt.Sprint(after), durable(evs), upTo(f.journalEvents(after), end))
	if first := durable(evs)[0].Seq; first <= after {
		t.Fatalf("first event %d is not after %d", first, after)
	}
}

func TestTwoClientsSeeTheSameOutput(t *testing.T) {
	f := start(t)
	ctx := wctx(t)
	c1, c2 := f.dial(), f.dial()
	s1, err := c1.Subscribe(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	s2, err := c2.Subscribe(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	ti, err := c1.Submit(ctx, `for i in 1 2 3 4 5; do echo "out $i"; sleep 0.01; done`)
	if err != nil {
		t.Fatal(err)
	}
	e1, e2 := readUntil(t, s1, turnEnd(ti.ID)), readUntil(t, s2, turnEnd(ti.ID))
	sameSeqs(t, "client 2 vs client 1", durable(e2), durable(e1))
	sameSeqs(t, "client 1 vs journal", durable(e1), upTo(f.journalEvents(0), e1[len(e1)-1].Seq))
	out := func(evs []event.Envelope) (live, kept string) {
		for _, e := range evs {
			switch o := e.Event.(type) {
			case event.OutputDelta:
				live += o.Text
			case event.TurnOutput:
				kept += o.Text
			}
		}
		return
	}
	l1, k1 := out(e1)
	l2, k2 := out(e2)
	want := "out 1\nout 2\nout 3\nout 4\nout 5\n"
	if k1 != want || k2 != want || l1 != want || l2 != want {
		t.Fatalf("output: client 1 live %q kept %q; client 2 live %q kept %q", l1, k1, l2, k2)
	}
}

// A client that never reads slows neither the session nor another client:
// the turn prints 20k lines and ends; the reading client gets every
// durable event exactly once (subscribing again after a loss of its own
// queue); the idle one, reading at last, gets every durable event exactly
// once too: its forwarder waited for room, and read the journal again for
// what its hub subscription lost meanwhile.
func TestSlowClientDoesNotBlock(t *testing.T) {
	f := start(t, WithSendQueue(64, 256<<10))
	ctx := wctx(t)
	idle := f.raw()
	idle.hello()
	idle.send(`{"type":"subscribe","id":1,"after_seq":0}`)

	c := f.dial()
	st, err := c.Subscribe(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	ti, err := c.Submit(ctx, `i=0; while [ $i -lt 20000 ]; do echo "line $i ........................................................................................"; i=$((i+1)); done`)
	if err != nil {
		t.Fatal(err)
	}
	got, resubscribed := readResubscribing(t, c, st, turnEnd(ti.ID))
	if err := f.s.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	end := got[len(got)-1]
	if d, ok := end.Event.(event.TurnDone); !ok || d.ExitCode != 0 {
		t.Fatalf("turn ended with %+v", end.Event)
	}
	sameSeqs(t, "reading client vs journal", durable(got), upTo(f.journalEvents(0), end.Seq))
	t.Logf("reading client: %d events, subscribed again %d times", len(got), resubscribed)

	// Now the idle client reads: every durable event once, in order, up
	// to the turn's end.
	var idleGot []event.Envelope
	var dropped uint64
	for {
		m := idle.read()
		switch m.Type {
		case msgReply:
			if m.ID != 1 || !m.OK {
				t.Fatalf("subscribe reply %+v", m)
			}
			continue
		case msgEvent:
			env, err := event.UnmarshalEnvelope(m.Event)
			if err != nil {
				t.Fatal(err)
			}
			idleGot = append(idleGot, env)
			if env.Seq < end.Seq {
				continue
			}
		case msgDropped:
			dropped = m.Total
			continue
		default:
			t.Fatalf("idle client got %+v", m)
		}
		break
	}
	sameSeqs(t, "idle client vs journal", durable(idleGot), upTo(f.journalEvents(0), end.Seq))
	t.Logf("idle client: %d events, %d deltas dropped", len(idleGot), dropped)
	if dropped == 0 {
		t.Fatalf("the idle client's queue never filled; the test proves nothing")
	}
	// Its connection is still good.
	idle.send(`{"type":"status","id":2}`)
	for {
		m := idle.read()
		if m.Type == msgEvent || m.Type == msgDropped {
			continue // what followed the turn's end
		}
		if m.Type != msgReply || m.ID != 2 || !m.OK || m.Status == nil {
			t.Fatalf("status after catching up: %+v", m)
		}
		break
	}
}

// A client's own queue does not block its reader: a stream nobody reads
// ends with a local *StreamLostError, and subscribing again after its
// LastSeq goes on without a gap.
func TestClientStreamOverflow(t *testing.T) {
	f := start(t)
	ctx := wctx(t)
	c := f.dial(WithStreamBuffer(8))
	st, err := c.Subscribe(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	ti, err := c.Submit(ctx, `for i in $(seq 1 40); do echo $i; sleep 0.005; done`)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.s.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	// Replies still flow while the stream is full.
	if _, err := c.Status(ctx); err != nil {
		t.Fatal(err)
	}
	var got []event.Envelope
	var lost *StreamLostError
	for {
		env, err := st.Next(ctx)
		if errors.As(err, &lost) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, env)
	}
	if !lost.Local || lost.LastSeq != st.LastSeq() || len(got) > 8 {
		t.Fatalf("lost %+v after %d events (LastSeq %d)", lost, len(got), st.LastSeq())
	}
	st2, err := c.Subscribe(ctx, lost.LastSeq)
	if err != nil {
		t.Fatal(err)
	}
	rest, _ := readResubscribing(t, c, st2, turnEnd(ti.ID))
	got = append(got, rest...)
	sameSeqs(t, "across the loss", durable(got), upTo(f.journalEvents(0), got[len(got)-1].Seq))
}

func TestBusyAndInterrupt(t *testing.T) {
	f := start(t)
	ctx := wctx(t)
	c := f.dial()
	st, err := c.Subscribe(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	ti, err := c.Submit(ctx, "sleep 30")
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Submit(ctx, "echo no")
	re := asRemote(t, err, fault.KindBusy)
	var busy *rig.BusyError
	if !errors.As(err, &busy) || busy.TurnID != ti.ID || busy.Index != ti.Index || re.Type != fault.TypeBusyError {
		t.Fatalf("busy error %+v (%+v)", re, busy)
	}
	if err := c.Interrupt(ctx); err != nil {
		t.Fatalf("Interrupt: %v", err)
	}
	evs := readUntil(t, st, turnEnd(ti.ID))
	if in, ok := evs[len(evs)-1].Event.(event.TurnInterrupted); !ok || in.Reason != event.ReasonUser {
		t.Fatalf("turn ended with %+v", evs[len(evs)-1].Event)
	}
	err = c.Interrupt(ctx)
	asRemote(t, err, fault.KindNoTurn)
	var noTurn *rig.NoTurnError
	if !errors.As(err, &noTurn) {
		t.Fatalf("errors.As NoTurnError: %v", err)
	}
}

func TestRespondGate(t *testing.T) {
	f := start(t)
	ctx := wctx(t)
	c := f.dial()
	st, err := c.Subscribe(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, approve := range []bool{true, false} {
		file := fmt.Sprintf("gated-%v", approve)
		ti, err := c.Submit(ctx, "touch "+file)
		if err != nil {
			t.Fatal(err)
		}
		evs := readUntil(t, st, isType[event.GateOpened])
		g := evs[len(evs)-1].Event.(event.GateOpened)
		if g.TurnID != ti.ID || !strings.Contains(g.Prompt, "touch gated") {
			t.Fatalf("gate %+v", g)
		}
		if s, err := c.Status(ctx); err != nil || s.Gate == nil || s.Gate.ID != g.GateID {
			t.Fatalf("status gate %+v, %v", s.Gate, err)
		}
		err = c.RespondGate(ctx, g.GateID+"-wrong", true, "test")
		asRemote(t, err, fault.KindNoGate)
		var ng *rig.NoGateError
		if !errors.As(err, &ng) || ng.Open != g.GateID {
			t.Fatalf("no_gate %+v", ng)
		}
		if err := c.RespondGate(ctx, g.GateID, approve, "test"); err != nil {
			t.Fatalf("RespondGate(%v): %v", approve, err)
		}
		evs = readUntil(t, st, turnEnd(ti.ID))
		res, _ := find[event.GateResolved](evs)
		wantAction := event.ActionDeny
		if approve {
			wantAction = event.ActionApprove
		}
		if res.GateID != g.GateID || res.Action != wantAction {
			t.Fatalf("GateResolved %+v", res)
		}
		_, statErr := os.Stat(filepath.Join(f.s.Workspace(), file))
		switch end := evs[len(evs)-1].Event.(type) {
		case event.TurnDone:
			if !approve || end.ExitCode != 0 || statErr != nil {
				t.Fatalf("approve=%v: %+v, file: %v", approve, end, statErr)
			}
		case event.TurnFailed:
			if approve || !errors.Is(statErr, fs.ErrNotExist) {
				t.Fatalf("approve=%v: %+v, file: %v", approve, end, statErr)
			}
		default:
			t.Fatalf("turn ended with %+v", end)
		}
	}
}

// shutdown shuts the session down; every client sees the end, Serve
// returns nil and removes its socket.
func TestShutdown(t *testing.T) {
	f := start(t)
	ctx := wctx(t)
	c, watcher := f.dial(), f.dial()
	st, err := watcher.Subscribe(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	evs := readUntil(t, st, isType[event.SessionStopped])
	if _, err := st.Next(ctx); !errors.Is(err, ErrSessionEnded) {
		t.Fatalf("after SessionStopped: %v", err)
	}
	sameSeqs(t, "to the end", durable(evs), f.journalEvents(0))
	if err := f.wait(); err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if _, err := os.Lstat(f.path); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("socket left behind: %v", err)
	}
	if !f.s.Status().Closed {
		t.Fatalf("the session is not shut down")
	}
	for _, cl := range []*Client{c, watcher} {
		<-cl.Done()
		var hc *HostClosedError
		if err := cl.Err(); !errors.As(err, &hc) || hc.Reason != ReasonSessionStopped {
			t.Fatalf("client end: %v", err)
		}
		if _, err := cl.Status(ctx); err == nil {
			t.Fatalf("Status on a closed client succeeded")
		}
	}
	if _, err := Dial(ctx, f.path); err == nil {
		t.Fatalf("Dial after the end succeeded")
	}
}

func TestSessionClosedError(t *testing.T) {
	f := start(t)
	ctx := wctx(t)
	c := f.dial()
	// Shut the session down behind the host's back: Submit races Serve's
	// end; when it gets there first it is refused as session_closed,
	// otherwise the host has said goodbye (HostClosedError) or already
	// closed the connection under the request (EPIPE, ECONNRESET).
	testErr := Describe(rig.ErrSessionClosed)
	if testErr.Kind != fault.KindSessionClosed || !errors.Is(testErr, rig.ErrSessionClosed) {
		t.Fatalf("Describe(ErrSessionClosed) = %+v", testErr)
	}
	if err := f.s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Submit(ctx, "echo late"); err == nil {
		t.Fatalf("Submit after shutdown succeeded")
	} else if !errors.Is(err, rig.ErrSessionClosed) {
		var hc *HostClosedError
		if !errors.As(err, &hc) && !errors.Is(err, syscall.EPIPE) && !errors.Is(err, syscall.ECONNRESET) {
			t.Fatalf("Submit after shutdown: %v", err)
		}
	}
	if err := f.wait(); err != nil {
		t.Fatal(err)
	}
}

// Serve's context ending closes every connection with a bye and leaves
// the session alone.
func TestServeContextEnds(t *testing.T) {
	f := start(t)
	ctx := wctx(t)
	c := f.dial()
	st, err := c.Subscribe(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	readUntil(t, st, isType[event.LoopStarted])
	f.cancel()
	if err := f.wait(); err != nil {
		t.Fatalf("Serve: %v", err)
	}
	<-c.Done()
	var hc *HostClosedError
	if err := c.Err(); !errors.As(err, &hc) || hc.Reason != ReasonServerStopping {
		t.Fatalf("client end: %v", err)
	}
	if _, err := st.Next(ctx); !errors.As(err, &hc) || hc.Reason != ReasonServerStopping {
		t.Fatalf("stream end: %v", err)
	}
	if s := f.s.Status(); s.Closed || s.Fault != nil {
		t.Fatalf("the session was touched: %+v", s)
	}
	if _, err := os.Lstat(f.path); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("socket left behind: %v", err)
	}
}

// A session that loses its lease ends the server with the fault; clients
// are told why.
func TestLeaseLost(t *testing.T) {
	f := start(t)
	ctx := wctx(t)
	c := f.dial()
	if _, err := f.store.Break(ctx, storage.SessionName(f.s.SessionID().String())); err != nil {
		t.Fatal(err)
	}
	err := f.wait()
	var lost *journal.JournalLeaseLostError
	if !errors.As(err, &lost) {
		t.Fatalf("Serve: %v", err)
	}
	<-c.Done()
	var hc *HostClosedError
	if err := c.Err(); !errors.As(err, &hc) || hc.Reason != ReasonSessionFaulted || hc.Err == nil || hc.Err.Kind != fault.KindLeaseLost ||
		hc.Err.num("epoch") != int64(f.s.Epoch()) || hc.Err.Type != fault.TypeLeaseLostError {
		t.Fatalf("client end: %v (%+v)", err, hc.Err)
	}
}

// Malformed, unknown and oversize lines are answered (or closed) without
// disturbing anyone else.
func TestProtocolErrors(t *testing.T) {
	f := start(t)
	ctx := wctx(t)
	other := f.dial()

	r := f.raw()
	r.hello()
	r.send(`{"type":"launch_missiles","id":5}`)
	if m := r.read(); m.Type != msgReply || m.ID != 5 || m.OK || m.Error == nil || m.Error.Kind != KindUnknownType {
		t.Fatalf("unknown type: %+v", m)
	}
	r.send(`{"type":"status","id":6}`)
	if m := r.read(); m.ID != 6 || !m.OK {
		t.Fatalf("status after an unknown type: %+v", m)
	}
	bad := func() {
		t.Helper()
		r.send(`{"type":`)
		if m := r.read(); m.Type != msgReply || m.OK || m.Error == nil || m.Error.Kind != KindBadRequest {
			t.Fatalf("malformed: %+v", m)
		}
	}
	bad()
	bad()
	r.send(`{"type":"status","id":7}`) // a good line resets the count
	if m := r.read(); m.ID != 7 || !m.OK {
		t.Fatalf("status: %+v", m)
	}
	bad()
	bad()
	r.send(`{"type":"submit","id":8}`) // the third malformed request in a row
	if m := r.read(); m.ID != 8 || m.Error == nil || m.Error.Kind != KindBadRequest {
		t.Fatalf("third malformed: %+v", m)
	}
	if rest := r.closed(); len(rest) != 1 || rest[0].Type != msgError {
		t.Fatalf("after 3 malformed: %+v", rest)
	}

	// An oversize line: an error, then the connection is closed.
	o := f.raw()
	o.hello()
	go func() {
		o.c.SetWriteDeadline(time.Now().Add(waitTimeout))
		o.c.Write([]byte(`{"type":"submit","id":1,"input":"` + strings.Repeat("x", MaxLine) + "\"}\n"))
	}()
	rest := o.closed()
	if len(rest) != 1 || rest[0].Type != msgError || rest[0].Error.Kind != KindLineTooLong {
		t.Fatalf("oversize line: %+v", rest)
	}

	// No hello first.
	n := f.raw()
	n.send(`{"type":"status","id":1}`)
	if rest := n.closed(); len(rest) != 1 || rest[0].Error == nil || rest[0].Error.Kind != KindBadRequest {
		t.Fatalf("no hello: %+v", rest)
	}

	// Everyone else is still served.
	if _, err := other.Status(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := f.dial().Status(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestHelloTimeout(t *testing.T) {
	f := start(t, WithHelloTimeout(50*time.Millisecond))
	r := f.raw()
	if rest := r.closed(); len(rest) != 1 || rest[0].Error == nil || !strings.Contains(rest[0].Error.Message, "no hello") {
		t.Fatalf("silent client: %+v", rest)
	}
	if _, err := f.dial().Status(wctx(t)); err != nil {
		t.Fatal(err)
	}
}

// detach ends the connection cleanly; the session goes on.
func TestDetach(t *testing.T) {
	f := start(t)
	ctx := wctx(t)
	c := f.dial()
	if _, err := c.Subscribe(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if err := c.Detach(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Status(ctx); !errors.Is(err, ErrClientClosed) {
		t.Fatalf("Status after Detach: %v", err)
	}
	if _, err := f.dial().Submit(ctx, "true"); err != nil {
		t.Fatal(err)
	}
}

// A context that ends during a call returns at once; the client stays
// usable.
func TestCallContext(t *testing.T) {
	f := start(t)
	c := f.dial()
	ctx := wctx(t)
	if _, err := c.Submit(ctx, "sleep 30"); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	// The interrupt goes through; only the wait for its reply is cut.
	if err := c.Interrupt(short); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Interrupt: %v", err)
	}
	if err := f.s.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Status(ctx); err != nil {
		t.Fatalf("Status after a cut call: %v", err)
	}
}

// A host that ends after a successor took over its socket path (the
// successor holds the lease; this one lost it) leaves the successor's
// socket alone.
func TestServeLeavesSuccessorSocket(t *testing.T) {
	f := start(t)
	// Serve has recorded its socket once it answers (it does so before
	// accepting).
	if _, err := f.dial().Status(wctx(t)); err != nil {
		t.Fatal(err)
	}
	ln, err := Listen(f.path, true) // the successor replaces the socket
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	f.cancel()
	if err := f.wait(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(f.path); err != nil {
		t.Fatalf("the successor's socket was removed: %v", err)
	}
	c, err := net.Dial("unix", f.path)
	if err != nil {
		t.Fatalf("the successor's socket does not answer: %v", err)
	}
	c.Close()
}

// A request still running when the server stops is waited for and
// answered before the bye, and Serve returns only after it.
func TestStopWaitsForRunningRequest(t *testing.T) {
	f := startWith(t, []rig.Option{rig.WithEngineConfig(engine.Config{ShellGrace: time.Second})})
	ctx := wctx(t)
	c := f.dial()
	st, err := c.Subscribe(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	// The turn ignores ^C and SIGTERM: its interrupt takes the grace periods.
	ti, err := c.Submit(ctx, `trap "" INT TERM; echo ready; while :; do sleep 0.05; done`)
	if err != nil {
		t.Fatal(err)
	}
	readUntil(t, st, isType[event.TurnOutput])
	interrupted := make(chan error, 1)
	go func() { interrupted <- c.Interrupt(ctx) }()
	eventually(t, "the interrupt to be journaled", func() bool { return commandSeen(f, journal.CommandInterrupt) })
	if f.s.Status().Turn == nil {
		t.Fatalf("turn %s ended before the server stopped; the test proves nothing", ti.ID)
	}
	f.cancel() // the server stops while the interrupt waits for the turn
	if err := f.wait(); err != nil {
		t.Fatal(err)
	}
	// Serve returned: the request's goroutine is over, and the interrupt
	// was answered (not cut off).
	noHostGoroutines(t)
	select {
	case err := <-interrupted:
		if err != nil {
			t.Fatalf("Interrupt: %v", err)
		}
	case <-time.After(waitTimeout):
		t.Fatalf("no answer to the interrupt")
	}
}

// commandSeen reports whether the journal holds a command named name.
func commandSeen(f *fixture, name string) bool {
	rp, err := journal.NewReplayer(context.Background(), f.store, storage.SessionName(f.s.SessionID().String()), 0)
	if err != nil {
		return false
	}
	defer rp.Close()
	for rp.Next() {
		if r := rp.Record(); r.Kind == journal.KindCommand && r.Command.Name == name {
			return true
		}
	}
	return false
}

// When the session stops, a subscriber still catching up (its replay
// waits for it to read) gets everything through SessionStopped before
// the connection closes.
func TestShutdownDrainsSubscriptions(t *testing.T) {
	f := start(t, WithSendQueue(4, 64<<10), WithDrainTimeout(waitTimeout))
	ctx := wctx(t)
	c := f.dial()
	// About 2 MB of journaled output: far more than the socket buffer and
	// the 4-event queue hold, so the subscriber's replay is still waiting
	// for it when the session stops.
	if _, err := c.Submit(ctx, `i=0; while [ $i -lt 20000 ]; do echo "line $i ........................................................................................"; i=$((i+1)); done`); err != nil {
		t.Fatal(err)
	}
	if err := f.s.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	slow := f.dial()
	st, err := slow.Subscribe(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Shutdown(ctx); err != nil { // while slow has read nothing
		t.Fatal(err)
	}
	evs := readUntil(t, st, isType[event.SessionStopped])
	if _, err := st.Next(ctx); !errors.Is(err, ErrSessionEnded) {
		t.Fatalf("after SessionStopped: %v", err)
	}
	sameSeqs(t, "slow subscriber", durable(evs), f.journalEvents(0))
}

// An unsubscribe naming an older subscription (a client's late
// background unsubscribe) leaves the current one alone.
func TestStaleUnsubscribe(t *testing.T) {
	f := start(t)
	r := f.raw()
	r.hello()
	r.send(`{"type":"subscribe","id":1,"after_seq":0}`)
	r.send(`{"type":"subscribe","id":2,"after_seq":0}`)
	r.send(`{"type":"unsubscribe","id":3,"sub":1}`)
	r.send(`{"type":"submit","id":4,"input":"echo still here"}`)
	var sub2 uint64
	for {
		m := r.read()
		if m.Type == msgReply && m.ID == 2 {
			sub2 = m.Sub
		}
		if m.Type == msgEvent && m.Sub == sub2 && sub2 != 0 {
			env, err := event.UnmarshalEnvelope(m.Event)
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := env.Event.(event.TurnDone); ok {
				return // subscription 2 lived on
			}
		}
		if m.Type == msgEnd || m.Type == msgLost {
			t.Fatalf("%+v", m)
		}
	}
}

// A Subscribe whose context ends before the host answers leaves nothing
// behind: when the host did subscribe, the client undoes it, and the
// stream the host replaced ends.
func TestSubscribeAbandoned(t *testing.T) {
	f := start(t)
	ctx := wctx(t)
	c := f.dial()
	old, err := c.Subscribe(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	readUntil(t, old, isType[event.LoopStarted])
	release := make(chan struct{})
	hook := func(stage string) {
		if stage == "subscribed" {
			<-release
		}
	}
	testHook.Store(&hook)
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := c.Subscribe(short, 0); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Subscribe: %v", err)
	}
	testHook.Store(nil)
	close(release) // the host subscribes now, replacing old
	for {
		_, err := old.Next(ctx)
		if errors.Is(err, ErrStreamClosed) {
			break
		}
		if err != nil {
			t.Fatalf("old stream: %v", err)
		}
	}
	st, err := c.Subscribe(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	ti, err := c.Submit(ctx, "echo after")
	if err != nil {
		t.Fatal(err)
	}
	evs := readUntil(t, st, turnEnd(ti.ID))
	sameSeqs(t, "new stream", durable(evs), upTo(f.journalEvents(0), evs[len(evs)-1].Seq))
}

// A durable event that does not fit the connection's queue waits for room
// (it is never dropped, and the subscription does not end); a delta that
// does not fit is dropped and counted.
func TestEnqueueWaitsForDurableDropsDeltas(t *testing.T) {
	f := start(t)
	ctx := wctx(t)
	srv := &server{s: f.s, cfg: config{queueEvents: 1, queueBytes: 1 << 20}}
	c := newConn(srv, nil)
	subCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	sub := &subscription{id: 1, ctx: subCtx, cancel: cancel, done: make(chan struct{})}
	c.mu.Lock()
	c.pushEventLocked(sub, []byte("first\n"), 1) // the queue is full now
	c.mu.Unlock()
	if !c.enqueue(sub, []byte("delta\n"), event.Envelope{Event: event.OutputDelta{TurnID: "t", Stream: event.StreamStdout, Text: "x"}}, 0) {
		t.Fatal("a dropped delta ended the subscription")
	}
	c.mu.Lock()
	if len(c.q) != 1 || sub.drops != 1 {
		t.Fatalf("after a delta into a full queue: queue %v, drops %d", c.q, sub.drops)
	}
	c.mu.Unlock()
	go func() { // a writer that takes the queue and writes it a little later
		time.Sleep(50 * time.Millisecond)
		c.mu.Lock()
		c.takeLocked(nil)
		c.wBytes = 0
		c.spaceLocked()
		c.mu.Unlock()
	}()
	env := event.Envelope{Seq: 2, Event: event.SessionIdle{}}
	if !c.enqueue(sub, []byte("durable\n"), env, 0) {
		t.Fatalf("a durable event ended the subscription")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	// The queue starts with the drops' report, then the event.
	if sub.over || len(c.q) != 2 || string(c.q[1].b) != "durable\n" || sub.lastQueued != 2 {
		t.Fatalf("queue %v, sub %+v", c.q, sub)
	}
}

// A turn's notification reaches a client as an Attention event and in the
// status; attention_seen records the look (AttentionSeen, to every
// subscriber) and clears the status.
func TestAttentionThroughHost(t *testing.T) {
	f := start(t)
	c := f.dial()
	ctx := wctx(t)
	st, err := c.Subscribe(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	ti, err := c.Submit(ctx, `printf '\033]777;notify;CI;tests passed\033\\'; sleep 60`)
	if err != nil {
		t.Fatal(err)
	}
	evs := readUntil(t, st, func(env event.Envelope) bool { _, ok := env.Event.(event.Attention); return ok })
	a := evs[len(evs)-1]
	if ev := a.Event.(event.Attention); ev.TurnID != ti.ID || ev.Reason != event.AttentionOSC777 || ev.Text != "CI: tests passed" {
		t.Fatalf("Attention %+v", ev)
	}
	status, err := c.Status(ctx)
	if err != nil || status.Attention == nil || status.Attention.Seq != a.Seq || status.Attention.Text != "CI: tests passed" || status.Attention.Since.IsZero() {
		t.Fatalf("status attention %+v, %v", status.Attention, err)
	}
	if err := f.dial().SeeAttention(ctx, a.Seq, "other"); err != nil {
		t.Fatal(err)
	}
	evs = readUntil(t, st, func(env event.Envelope) bool { _, ok := env.Event.(event.AttentionSeen); return ok })
	if seen := evs[len(evs)-1].Event.(event.AttentionSeen); seen.Through != a.Seq || seen.From != "other" {
		t.Fatalf("AttentionSeen %+v", seen)
	}
	if status, err = c.Status(ctx); err != nil || status.Attention != nil {
		t.Fatalf("status attention after the look %+v, %v", status.Attention, err)
	}
}
