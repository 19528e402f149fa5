package host

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"runtime"
	"sync"
	"testing"
	"time"

	"looprig/rig/event"
)

// The host's memory bounds (see the package documentation, "Bounds"): a
// number of clients, a per-connection queue that counts what its writer
// holds, a budget for the queues of all connections, and a partial request
// line of at most MaxLine. These tests count bytes and connections, never
// time.

// TestTooManyClients: past DefaultMaxClients connections, a client is
// refused with an error of kind too_many_clients, which Dial returns; once
// one leaves, a client is served again.
func TestTooManyClients(t *testing.T) {
	f := start(t)
	ctx := wctx(t)
	raws := make([]*rawConn, DefaultMaxClients)
	for i := range raws {
		raws[i] = f.raw()
		raws[i].hello()
	}
	_, err := Dial(ctx, f.path, WithClientVersion("test"))
	re := asRemote(t, err, KindTooManyClients)
	if re.num("max") != DefaultMaxClients {
		t.Fatalf("refusal %+v: max %d", re, re.num("max"))
	}
	raws[0].c.Close()
	eventually(t, "a client served after one left", func() bool {
		c, err := Dial(ctx, f.path, WithClientVersion("test"))
		if err != nil {
			return false
		}
		c.Close()
		return true
	})
}

// liveHeap is the heap's live bytes after a collection.
func liveHeap() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// TestPartialLinesBounded: 100 clients each send a request line of one
// byte under MaxLine and no newline. The host holds at most
// DefaultMaxClients of them (the others are refused), each in at most
// MaxLine bytes plus its buffers.
func TestPartialLinesBounded(t *testing.T) {
	f := start(t)
	const clients = 100
	partial := append([]byte(`{"type":"status","id":1,"pad":"`), bytes.Repeat([]byte("a"), MaxLine-40)...)
	before := liveHeap()
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range clients {
		c, err := net.Dial("unix", f.path)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		c.SetWriteDeadline(time.Now().Add(waitTimeout))
		// A refused client's write fails: it was told why and closed.
		c.Write([]byte(`{"type":"hello","protocol":6,"version":"raw"}` + "\n"))
		c.Write(partial)
	}
	grown := int64(liveHeap()) - int64(before)
	// Per served connection: the line, its reader's and writer's 64 KiB
	// buffers, and 128 KiB for the rest (the connection, its hello).
	bound := int64(DefaultMaxClients) * (MaxLine + 4*64<<10)
	t.Logf("%d clients with a partial line of %d bytes: live heap grew by %.1f MiB (bound %.1f MiB)",
		clients, len(partial), float64(grown)/(1<<20), float64(bound)/(1<<20))
	if grown > bound {
		t.Fatalf("the host holds %d bytes for %d partial lines, over %d", grown, clients, bound)
	}
}

// stuckSub connects, says hello, subscribes after seq and never reads.
func stuckSub(t *testing.T, f *fixture, after uint64) net.Conn {
	t.Helper()
	c, err := net.Dial("unix", f.path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	fmt.Fprintf(c, "{\"type\":\"hello\",\"protocol\":%d,\"version\":\"raw\"}\n{\"type\":\"subscribe\",\"id\":1,\"after_seq\":%d}\n", ProtocolVersion, after)
	return c
}

// floodTurn runs `seq 1 n` in a new session served by a host with opts,
// read by one client while stuck clients subscribed to it never read. It
// returns the live heap at the end of the turn (above the start: what the
// host holds, the stuck connections included), the stuck connections and
// the fixture, and checks that the reading client got every durable event
// of the turn in order.
func floodTurn(t *testing.T, n, stuck int, opts ...Option) (uint64, []net.Conn, *fixture) {
	f := start(t, opts...)
	ctx := wctx(t)
	c := f.dial()
	st0, err := c.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	for range stuck {
		conns = append(conns, stuckSub(t, f, st0.Tip))
	}
	st, err := c.Subscribe(ctx, st0.Tip)
	if err != nil {
		t.Fatal(err)
	}
	// Each stuck subscription is open once its connection counts its
	// reply (the host wrote it even though nobody reads it).
	eventually(t, "the stuck subscriptions", func() bool { return subscribed(f) >= stuck })
	base := liveHeap()
	ti, err := c.Submit(ctx, fmt.Sprintf("seq 1 %d", n))
	if err != nil {
		t.Fatal(err)
	}
	got, again := readResubscribing(t, c, st, turnEnd(ti.ID))
	held := liveHeap()
	end := got[len(got)-1]
	if d, ok := end.Event.(event.TurnDone); !ok || d.ExitCode != 0 {
		t.Fatalf("turn ended with %+v", end.Event)
	}
	sameSeqs(t, "reading client vs journal", durable(got), upTo(f.journalEvents(st0.Tip), end.Seq))
	t.Logf("%d stuck clients: reading client got %d events, subscribed again %d times", stuck, len(got), again)
	return held - min(held, base), conns, f
}

// subscribed counts the host's connections with a subscription.
func subscribed(f *fixture) int {
	srv := servers.get(f.path)
	if srv == nil {
		return 0
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	n := 0
	for c := range srv.conns {
		c.mu.Lock()
		if c.sub != nil {
			n++
		}
		c.mu.Unlock()
	}
	return n
}

// TestStuckSubscribersBoundedMemory: 25 clients subscribed to a session
// that prints `seq 1 1500000` (10 MB, twice over as deltas and
// checkpoints) never read. At the end of the turn the host holds for them
// no more than its output budget and, per connection, 1 MiB: the lines its
// writer holds (writeChunk), its reader's and writer's buffers (128 KiB),
// and the events its hub subscription kept (shared with the other
// subscribers), over what the same turn leaves with no such client. The
// client that reads gets every durable event.
func TestStuckSubscribersBoundedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("a 10 MB turn")
	}
	const stuck, n = 25, 1_500_000
	var base, ours uint64
	t.Run("alone", func(t *testing.T) { base, _, _ = floodTurn(t, n, 0) })
	t.Run("stuck", func(t *testing.T) { ours, _, _ = floodTurn(t, n, stuck) })
	bound := uint64(DefaultOutputBudget + stuck*(1<<20))
	t.Logf("live heap at the turn's end: %.1f MiB with %d stuck clients, %.1f MiB without (bound on the difference %.1f MiB)",
		float64(ours)/(1<<20), stuck, float64(base)/(1<<20), float64(bound)/(1<<20))
	if ours > base+bound {
		t.Fatalf("%d stuck clients cost the host %d bytes, over %d", stuck, ours-base, bound)
	}
}

// TestBudgetCutsTheLargestHolder: with a budget of 2 MiB for connections
// of 1 MiB, stuck subscribers lose their subscription (a "lost" line after
// what their writer took) so that the client that reads is served, and the
// budget is never exceeded. The few the budget has room for keep theirs,
// and get every event once they read.
func TestBudgetCutsTheLargestHolder(t *testing.T) {
	const stuck, queue, budget = 8, 1 << 20, 2 << 20
	_, conns, f := floodTurn(t, 200_000, stuck, WithSendQueue(1024, queue), WithOutputBudget(budget))
	if p := servers.get(f.path).budget.peak.Load(); p > budget {
		t.Fatalf("the budget's peak use was %d bytes, over %d", p, budget)
	}
	cut := 0
	for i, c := range conns {
		r := &rawConn{t: t, c: c.(*net.UnixConn), lr: newLineReader(c, MaxServerLine)}
		var lastSeq uint64
		for done := false; !done; {
			m := r.read()
			switch m.Type {
			case msgLost:
				if m.Sub != 1 || m.LastSeq != lastSeq {
					t.Fatalf("stuck client %d: lost %+v after seq %d", i, m, lastSeq)
				}
				cut, done = cut+1, true
			case msgEvent:
				env, err := event.UnmarshalEnvelope(m.Event)
				if err != nil {
					t.Fatal(err)
				}
				if env.Seq > 0 {
					if env.Seq <= lastSeq {
						t.Fatalf("stuck client %d: seq %d after %d", i, env.Seq, lastSeq)
					}
					lastSeq = env.Seq
				}
				_, done = env.Event.(event.TurnDone)
			case msgHello, msgReply, msgDropped:
			default:
				t.Fatalf("stuck client %d got %+v", i, m)
			}
		}
	}
	t.Logf("%d of %d stuck clients were cut", cut, stuck)
	// What a stuck connection queues is its bound less what its writer
	// holds: the budget has room for that many.
	if room := (budget + queue - writeChunk - 1) / (queue - writeChunk); cut < stuck-room {
		t.Fatalf("%d of %d stuck clients were cut; the budget has room for %d", cut, stuck, room)
	}
}

// TestQueueBoundCountsTheWriter: what the writer took and has not written
// counts against the connection's bound, so a client that stops reading
// leaves the host holding its bound, not twice it.
func TestQueueBoundCountsTheWriter(t *testing.T) {
	srv := &server{cfg: config{queueEvents: 100, queueBytes: 1000}}
	c := newConn(srv, nil)
	sub := &subscription{id: 1}
	line := func() []byte { return make([]byte, 400) }
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pushEventLocked(sub, line(), 1)
	c.pushEventLocked(sub, line(), 2)
	if c.fitsLocked(400, false) {
		t.Fatal("a third line fits a queue of 1000 bytes holding 800")
	}
	batch := c.takeLocked(nil)
	if len(batch) != 2 || c.qBytes != 0 || c.wBytes != 800 || sub.lastTaken != 2 {
		t.Fatalf("took %d lines: queued %d, writer %d, last taken %d", len(batch), c.qBytes, c.wBytes, sub.lastTaken)
	}
	if c.fitsLocked(400, false) {
		t.Fatal("a line fits while the writer holds 800 of 1000 bytes")
	}
	c.wBytes = 0 // written
	if !c.fitsLocked(400, false) {
		t.Fatal("a line does not fit an empty queue")
	}
}

// servers finds the server of a socket path, for tests that look at its
// connections.
var servers = serverIndex{m: map[string]*server{}}

type serverIndex struct {
	mu sync.Mutex
	m  map[string]*server
}

func (x *serverIndex) get(path string) *server {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.m[path]
}

func init() {
	h := func(srv *server, path string, done bool) {
		servers.mu.Lock()
		defer servers.mu.Unlock()
		if done {
			delete(servers.m, path)
			return
		}
		servers.m[path] = srv
	}
	serveHook.Store(&h)
}

// TestReplayHeldCountsInBudget: 12 clients subscribe from the start of a
// journal of 8 MB of 64 KiB output checkpoints and never read, with a
// queue of 1 MiB per connection and a budget of 4 MiB. Their forwarders
// read the journal in chunks of about 1 MiB (rig's replay), and what they
// hold of a chunk before it is queued counts in the budget with the
// queues: the budget is never exceeded, its use is exactly what the
// connections queued and their forwarders hold (some of it in forwarders'
// hands), the live heap grows by no more than the budget and, per
// connection, its writer's chunk and buffers, and a client that reads gets
// every event, subscribing again when it is cut.
func TestReplayHeldCountsInBudget(t *testing.T) {
	const stuck, queue, budget = 12, 1 << 20, 4 << 20
	f := start(t, WithSendQueue(1024, queue), WithOutputBudget(budget))
	ctx := wctx(t)
	c := f.dial()
	ti, err := c.Submit(ctx, "yes 012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789012 | head -c 8000000")
	if err != nil {
		t.Fatal(err)
	}
	st, err := c.Subscribe(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	// Alone, this client can still be cut: a live batch of the fast turn
	// (up to the hub's 256 events, several MiB of output) and its queue
	// may not fit the budget together.
	readResubscribing(t, c, st, turnEnd(ti.ID))
	st.Close()
	journaled := f.journalEvents(0)
	tip := journaled[len(journaled)-1].Seq
	outputs := 0
	for _, env := range journaled {
		if o, ok := env.Event.(event.TurnOutput); ok && len(o.Text) >= 32<<10 {
			outputs++
		}
	}
	if outputs < 64 {
		t.Fatalf("the journal holds %d large output checkpoints, want 64 or more", outputs)
	}
	base := liveHeap()
	for range stuck {
		stuckSub(t, f, 0)
	}
	eventually(t, "the stuck subscriptions", func() bool { return subscribed(f) >= stuck })
	// Left alone, the stuck clients' forwarders fill their queues and wait,
	// each holding the rest of its chunk in the budget. (Checked before the
	// reader: the room it needs is reclaimed from stalled clients first,
	// and it may cut every one of them.)
	srv := servers.get(f.path)
	eventually(t, "a stuck client's forwarder holding part of a chunk, in the budget", func() bool {
		u := useOf(srv)
		return u.held > 0 && u.used == u.queued+u.held
	})

	// The reading client: every durable event after 0, in order, once.
	// Its forwarder replays the journal with those of the stuck clients,
	// about 13 s of CPU under -race for the whole test: on a loaded machine
	// that is well over a minute, so this read has a deadline of its own,
	// and a failure says when the last event came (a stall, or slowness).
	rctx, rcancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer rcancel()
	began := time.Now()
	lastAt := began
	r := f.dial()
	st, err = r.Subscribe(rctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	var last uint64
	n, again := 0, 0
	for last < tip {
		env, err := st.Next(rctx)
		var lost *StreamLostError
		if errors.As(err, &lost) {
			again++
			if st, err = r.Subscribe(rctx, lost.LastSeq); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("after seq %d of %d (%d events, subscribed again %d times; the last came %v after subscribing, %v before this error): %v",
				last, tip, n, again, lastAt.Sub(began).Round(time.Millisecond), time.Since(lastAt).Round(time.Millisecond), err)
		}
		lastAt = time.Now()
		if env.Seq == 0 {
			continue
		}
		if env.Seq != journaled[n].Seq || env.Event.Type() != journaled[n].Event.Type() {
			t.Fatalf("event %d: seq %d %s, the journal's is seq %d %s", n, env.Seq, env.Event.Type(), journaled[n].Seq, journaled[n].Event.Type())
		}
		last = env.Seq
		n++
	}
	st.Close()
	r.Close()
	c.Close()

	var u budgetUse
	eventually(t, "the readers' connections gone, the budget's use what the connections hold", func() bool {
		u = useOf(srv)
		return u.conns == stuck && u.used == u.queued+u.held
	})
	grown := int64(liveHeap()) - int64(base)
	peak := srv.budget.peak.Load()
	t.Logf("reader: %d events, subscribed again %d times; %d of %d stuck clients cut; budget: %d queued + %d held = %d used, peak %d of %d; live heap grew %.1f MiB",
		n, again, u.cut, stuck, u.queued, u.held, u.used, peak, budget, float64(grown)/(1<<20))
	if peak > budget {
		t.Fatalf("the budget's peak use was %d bytes, over %d", peak, budget)
	}
	// Per connection: its writer's chunk, its reader's and writer's 64 KiB
	// buffers and 256 KiB for the rest; and the chunks being read.
	bound := int64(budget + stuck*(writeChunk+4*64<<10) + 4*(2<<20))
	if grown > bound {
		t.Fatalf("%d stuck clients on an 8 MB journal cost the host %d bytes, over %d", stuck, grown, bound)
	}
}

// budgetUse is what a server's connections hold of its output budget.
type budgetUse struct {
	conns              int
	queued, held, used int64
	cut                int // subscriptions given up
}

// useOf reads srv's budget and what its connections hold, together: every
// connection stays locked until the budget is read.
func useOf(srv *server) budgetUse {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	u := budgetUse{conns: len(srv.conns)}
	for cn := range srv.conns {
		cn.mu.Lock()
		defer cn.mu.Unlock()
		u.queued += int64(cn.qBytes)
		if cn.sub != nil {
			u.held += int64(cn.sub.held)
			if cn.sub.over {
				u.cut++
			}
		}
	}
	u.used = srv.budget.used.Load()
	return u
}
