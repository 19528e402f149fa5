package hub

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"looprig/rig/event"
)

// memJournal records appended events; fail makes the next appends fail.
type memJournal struct {
	mu     sync.Mutex
	events []event.Event
	fail   error
}

func (j *memJournal) AppendEvent(_ context.Context, _ string, ev event.Event) (uint64, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.fail != nil {
		return 0, j.fail
	}
	j.events = append(j.events, ev)
	return uint64(len(j.events)), nil
}

func (j *memJournal) len() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return len(j.events)
}

func (j *memJournal) types() []event.Type {
	j.mu.Lock()
	defer j.mu.Unlock()
	var ts []event.Type
	for _, e := range j.events {
		ts = append(ts, e.Type())
	}
	return ts
}

var ctx = context.Background()

func recv(t *testing.T, s *Subscription) event.Envelope {
	t.Helper()
	select {
	case env, ok := <-s.C():
		if !ok {
			t.Fatal("subscription closed")
		}
		return env
	case <-time.After(5 * time.Second):
		t.Fatal("no event")
	}
	return event.Envelope{}
}

func TestEnduringIsDeliveredWithItsSeq(t *testing.T) {
	j := &memJournal{}
	h := New("s1", j)
	sub := h.Subscribe(Filter{AllLoops: true})
	for i := 0; i < 3; i++ {
		env, err := h.Publish(ctx, "loop1", event.TurnStarted{TurnID: "t", Index: i})
		if err != nil {
			t.Fatal(err)
		}
		got := recv(t, sub)
		if got.Seq != uint64(i+1) || env.Seq != got.Seq || got.LoopID != "loop1" || got.Session != "s1" {
			t.Fatalf("delivered %+v (returned %+v), want seq %d", got, env, i+1)
		}
	}
	env, err := h.Publish(ctx, "loop1", event.OutputDelta{TurnID: "t", Text: "x"})
	if err != nil || env.Seq != 0 {
		t.Fatalf("ephemeral: %+v, %v", env, err)
	}
	if got := recv(t, sub); got.Seq != 0 || got.Event.Type() != event.TypeOutputDelta {
		t.Fatalf("ephemeral delivered as %+v", got)
	}
	if j.len() != 3 {
		t.Fatalf("journal has %d events; ephemeral must not be journaled", j.len())
	}
}

// The journaled hook (the session's fold, rig.State) runs before any
// subscriber gets the event: a client that saw an event and asks the
// session about it (answers the gate, looks at the attention) finds the
// session knowing it already.
func TestJournaledRunsBeforeDelivery(t *testing.T) {
	var sub *Subscription
	var queued []int
	h := New("s1", &memJournal{}, WithJournaled(func(event.Envelope) { queued = append(queued, len(sub.C())) }))
	sub = h.Subscribe(Filter{AllLoops: true})
	for i := range 2 {
		if _, err := h.Publish(ctx, "loop1", event.TurnStarted{TurnID: "t", Index: i}); err != nil {
			t.Fatal(err)
		}
		recv(t, sub)
	}
	if len(queued) != 2 || queued[0] != 0 || queued[1] != 0 {
		t.Fatalf("subscriber had %v events queued when the hook ran, want [0 0]", queued)
	}
}

// peekJournal is a memJournal whose hook runs inside AppendEvent, once the
// event is journaled and before the hub gets its sequence back: the hook
// sees the world as it is at append time.
type peekJournal struct {
	memJournal
	onAppend func(seq uint64, ev event.Event)
}

func (j *peekJournal) AppendEvent(ctx context.Context, loop string, ev event.Event) (uint64, error) {
	seq, err := j.memJournal.AppendEvent(ctx, loop, ev)
	if err == nil && j.onAppend != nil {
		j.onAppend(seq, ev)
	}
	return seq, err
}

// receiver drains a subscription without a goroutine of its own: whoever
// holds mu takes what is queued on the channel into got.
type receiver struct {
	name string
	sub  *Subscription
	got  []event.Envelope
}

func (r *receiver) drain() {
	for {
		select {
		case env, ok := <-r.sub.C():
			if !ok {
				return
			}
			r.got = append(r.got, env)
		default:
			return
		}
	}
}

// A subscriber never holds an enduring event before the journal has it,
// and has it, with the journal's sequence, once Publish returns. The
// journal's append hook looks at what every subscriber has received at the
// moment of each append; publishers run concurrently, so delivery order
// must be journal order too.
func TestNoSubscriberSeesEnduringBeforeItIsJournaled(t *testing.T) {
	var mu sync.Mutex // guards the receivers, appended and violations
	var receivers []*receiver
	appended := map[event.Event]uint64{} // event -> seq it was journaled at
	var violations []string
	j := &peekJournal{}
	j.onAppend = func(seq uint64, ev event.Event) {
		mu.Lock()
		defer mu.Unlock()
		appended[ev] = seq
		for _, r := range receivers {
			r.drain()
			for _, env := range r.got {
				if env.Event == ev {
					violations = append(violations, fmt.Sprintf("%s received %+v before it was journaled at seq %d", r.name, ev, seq))
				}
			}
		}
	}
	h := New("s1", j)
	all := &receiver{name: "all-loops", sub: h.Subscribe(Filter{AllLoops: true})}
	onlyA := &receiver{name: "loop-a", sub: h.Subscribe(Filter{Loops: []string{"a"}})}
	receivers = []*receiver{all, onlyA}

	const publishers, each = 4, 50 // 200 enduring events: within BufferSize
	var wg sync.WaitGroup
	for p := range publishers {
		wg.Go(func() {
			for i := range each {
				loop := []string{"a", "b"}[i%2]
				ev := event.TurnStarted{TurnID: fmt.Sprintf("p%d-%d", p, i), Index: i}
				env, err := h.Publish(ctx, loop, ev)
				if err != nil {
					t.Errorf("Publish: %v", err)
					return
				}
				mu.Lock()
				if seq, ok := appended[ev]; !ok || seq != env.Seq {
					violations = append(violations, fmt.Sprintf("Publish returned %+v for an event journaled at seq %d (journaled %v)", env, seq, ok))
				}
				for _, r := range receivers {
					if !r.sub.filter.wants(env) {
						continue
					}
					r.drain()
					found := false
					for _, got := range r.got {
						if got.Event == ev {
							found = got.Seq == env.Seq
						}
					}
					if !found {
						violations = append(violations, fmt.Sprintf("%s has not received %+v at seq %d when Publish returned", r.name, ev, env.Seq))
					}
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	for _, v := range violations[:min(len(violations), 10)] {
		t.Error(v)
	}
	if j.len() != publishers*each {
		t.Fatalf("journal has %d events, want %d", j.len(), publishers*each)
	}
	for _, r := range receivers {
		r.drain()
		var last uint64
		for _, env := range r.got {
			if env.Seq <= last {
				t.Fatalf("%s received seq %d after seq %d: delivery order is not journal order", r.name, env.Seq, last)
			}
			last = env.Seq
			if !r.sub.filter.wants(env) || appended[env.Event] != env.Seq {
				t.Fatalf("%s received %+v, journaled at seq %d", r.name, env, appended[env.Event])
			}
		}
	}
	if len(all.got) != publishers*each || len(onlyA.got) != publishers*each/2 {
		t.Fatalf("received %d (all loops) and %d (loop a), want %d and %d", len(all.got), len(onlyA.got), publishers*each, publishers*each/2)
	}
}

func TestFailedAppendDeliversNothingAndFaults(t *testing.T) {
	boom := errors.New("disk full")
	j := &memJournal{fail: boom}
	var faults []error
	h := New("s1", j, WithFaultHandler(func(err error) { faults = append(faults, err) }))
	sub := h.Subscribe(Filter{AllLoops: true})
	_, err := h.Publish(ctx, "", event.RestoreStarted{Epoch: 2})
	var fe *FaultError
	if !errors.As(err, &fe) || !errors.Is(err, boom) || fe.Type != event.TypeRestoreStarted {
		t.Fatalf("Publish = %v, want FaultError wrapping the journal error", err)
	}
	j.mu.Lock()
	j.fail = nil // the journal recovering must not un-fault the hub
	j.mu.Unlock()
	if _, err := h.Publish(ctx, "", event.SessionIdle{}); !errors.As(err, &fe) {
		t.Fatalf("later enduring Publish = %v, want the latched fault", err)
	}
	select {
	case env := <-sub.C():
		t.Fatalf("delivered %+v after a failed append", env)
	default:
	}
	if len(faults) != 1 || h.Err() == nil {
		t.Fatalf("fault handler ran %d times, Err = %v", len(faults), h.Err())
	}
	// Ephemeral events still flow: the session reports its fault through them.
	if _, err := h.Publish(ctx, "", event.SessionFaulted{Cause: "disk full"}); err != nil {
		t.Fatal(err)
	}
	if got := recv(t, sub); got.Event.Type() != event.TypeSessionFaulted {
		t.Fatalf("got %+v", got)
	}
}

// ctxJournal fails like rig/journal does when the caller's context ends
// while its record is still queued.
type ctxJournal struct{ memJournal }

func (j *ctxJournal) AppendEvent(ctx context.Context, loop string, ev event.Event) (uint64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	return j.memJournal.AppendEvent(ctx, loop, ev)
}

func TestCancelledPublishDoesNotFault(t *testing.T) {
	h := New("s1", &ctxJournal{})
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := h.Publish(cctx, "", event.SessionIdle{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Publish with a cancelled context = %v", err)
	}
	if h.Err() != nil {
		t.Fatalf("a cancelled publish faulted the hub: %v", h.Err())
	}
	if _, err := h.Publish(ctx, "", event.SessionIdle{}); err != nil {
		t.Fatalf("Publish after a cancelled one = %v", err)
	}
}

func TestSlowSubscriberNeverBlocksThePublisher(t *testing.T) {
	j := &memJournal{}
	h := New("s1", j)
	stuck := h.Subscribe(Filter{AllLoops: true}) // never reads
	reader := h.Subscribe(Filter{AllLoops: true})
	var got []event.Envelope
	drain := func() { // a subscriber that keeps up reads between publishes
		for {
			select {
			case env, ok := <-reader.C():
				if !ok {
					return
				}
				got = append(got, env)
			default:
				return
			}
		}
	}
	const ephemeral = 5000
	for i := 0; i < ephemeral; i++ {
		if _, err := h.Publish(ctx, "l", event.OutputDelta{TurnID: "t", Text: "x"}); err != nil {
			t.Fatal(err)
		}
		drain()
	}
	room := BufferSize - EnduringReserve
	if d := stuck.Dropped(); d != ephemeral-uint64(room) {
		t.Fatalf("stuck subscriber dropped %d, want %d", d, ephemeral-room)
	}
	if stuck.Err() != nil {
		t.Fatalf("ephemeral overflow closed the subscription: %v", stuck.Err())
	}
	// Enduring events use the reserve; the first one that does not fit
	// closes only the stuck subscription.
	var first event.Envelope
	for i := 0; i <= EnduringReserve; i++ {
		env, err := h.Publish(ctx, "l", event.TurnOutput{TurnID: "t", Text: "checkpoint"})
		if err != nil {
			t.Fatal(err)
		}
		drain()
		if i == 0 {
			first = env
		}
		if i < EnduringReserve && stuck.Err() != nil {
			t.Fatalf("enduring event %d closed the subscription with reserve left: %v", i, stuck.Err())
		}
	}
	var loss *SubscriptionLossError
	if !errors.As(stuck.Err(), &loss) || loss.LastSeq != EnduringReserve || loss.Session != "s1" {
		t.Fatalf("stuck Err = %v, want SubscriptionLossError after seq %d", stuck.Err(), EnduringReserve)
	}
	n := 0
	for range stuck.C() { // buffered events drain, then the channel is closed
		n++
	}
	if n != BufferSize {
		t.Fatalf("stuck subscription drained %d, want %d", n, BufferSize)
	}
	if _, err := h.Publish(ctx, "l", event.TurnDone{TurnID: "t"}); err != nil {
		t.Fatal(err)
	}
	if err := h.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	drain()
	if _, open := <-reader.C(); open {
		t.Fatal("reader still open after Stop")
	}
	if reader.Err() != nil {
		t.Fatalf("reader Err = %v", reader.Err())
	}
	enduring := 0
	for _, e := range got {
		if e.Seq > 0 {
			enduring++
			if enduring == 1 && e.Seq != first.Seq {
				t.Fatalf("reader's first enduring seq %d, want %d", e.Seq, first.Seq)
			}
		}
	}
	if want := EnduringReserve + 3; enduring != want { // TurnOutputs, TurnDone, SessionStopped
		t.Fatalf("reader saw %d enduring events, want %d", enduring, want)
	}
}

func TestLoopFilter(t *testing.T) {
	h := New("s1", &memJournal{})
	only := h.Subscribe(Filter{Loops: []string{"a"}})
	h.Publish(ctx, "b", event.TurnStarted{TurnID: "tb"})
	h.Publish(ctx, "a", event.TurnStarted{TurnID: "ta"})
	h.Publish(ctx, "", event.SessionIdle{})
	if e := recv(t, only); e.LoopID != "a" {
		t.Fatalf("first = %+v, want loop a", e)
	}
	if e := recv(t, only); e.Event.Type() != event.TypeSessionIdle {
		t.Fatalf("second = %+v, want session scope", e)
	}
}

func TestActivityEdgesAndWaitIdle(t *testing.T) {
	j := &memJournal{}
	h := New("s1", j)
	if err := h.WaitIdle(ctx); err != nil {
		t.Fatalf("WaitIdle on a fresh hub: %v", err)
	}
	h.Begin(ctx)
	h.Begin(ctx)
	waited := make(chan error, 1)
	go func() { waited <- h.WaitIdle(ctx) }()
	h.End(ctx)
	select {
	case err := <-waited:
		t.Fatalf("WaitIdle returned %v with one activity left", err)
	case <-time.After(20 * time.Millisecond):
	}
	h.End(ctx)
	if err := <-waited; err != nil {
		t.Fatal(err)
	}
	want := []event.Type{event.TypeSessionActive, event.TypeSessionIdle}
	if got := j.types(); len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("journal = %v, want %v", got, want)
	}
	if err := h.End(ctx); err == nil {
		t.Fatal("End without Begin succeeded")
	}
	short, cancel := context.WithCancel(ctx)
	h.Begin(ctx)
	cancel()
	if err := h.WaitIdle(short); !errors.Is(err, context.Canceled) {
		t.Fatalf("WaitIdle with a cancelled context = %v", err)
	}
}

func TestStopAndAbort(t *testing.T) {
	j := &memJournal{}
	h := New("s1", j)
	sub := h.Subscribe(Filter{})
	if err := h.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if e := recv(t, sub); e.Event.Type() != event.TypeSessionStopped {
		t.Fatalf("got %+v", e)
	}
	if _, ok := <-sub.C(); ok {
		t.Fatal("subscription open after Stop")
	}
	if _, err := h.Publish(ctx, "", event.SessionIdle{}); !errors.Is(err, ErrStopped) {
		t.Fatalf("Publish after Stop = %v", err)
	}
	if _, ok := <-h.Subscribe(Filter{}).C(); ok {
		t.Fatal("Subscribe after Stop is open")
	}
	if err := h.Stop(ctx); err != nil {
		t.Fatalf("second Stop = %v", err)
	}
	if j.len() != 1 {
		t.Fatalf("journal has %d events, want SessionStopped once", j.len())
	}

	j2 := &memJournal{}
	h2 := New("s2", j2)
	sub2 := h2.Subscribe(Filter{})
	h2.Abort()
	if _, ok := <-sub2.C(); ok || sub2.Err() != nil {
		t.Fatal("Abort left the subscription open or errored")
	}
	if j2.len() != 0 {
		t.Fatal("Abort journaled something")
	}
}

func TestNextDrainsQueuedIntoOneBatch(t *testing.T) {
	h := New("s1", &memJournal{})
	sub := h.Subscribe(Filter{AllLoops: true})
	for i := 0; i < 10; i++ {
		h.Publish(ctx, "l", event.OutputDelta{Text: "x"})
	}
	batch, ok, err := sub.Next(ctx, 0)
	if err != nil || !ok || len(batch) != 10 {
		t.Fatalf("Next = %d events, %v, %v; want 10", len(batch), ok, err)
	}
	batch, _, _ = func() ([]event.Envelope, bool, error) {
		for i := 0; i < 5; i++ {
			h.Publish(ctx, "l", event.OutputDelta{Text: "x"})
		}
		return sub.Next(ctx, 3)
	}()
	if len(batch) != 3 {
		t.Fatalf("Next with max 3 returned %d", len(batch))
	}
	sub.Close()
	sub.Close()
	batch, _, _ = sub.Next(ctx, 0)
	if len(batch) != 2 {
		t.Fatalf("after Close, Next drained %d, want the 2 left", len(batch))
	}
	if _, ok, _ := sub.Next(ctx, 0); ok {
		t.Fatal("Next on a closed, drained subscription reports ok")
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	sub2 := h.Subscribe(Filter{})
	if _, _, err := sub2.Next(cctx, 0); !errors.Is(err, context.Canceled) {
		t.Fatalf("Next with a cancelled context = %v", err)
	}
}

func BenchmarkPublishEphemeral(b *testing.B) {
	for _, n := range []int{1, 4, 16} {
		b.Run(itoa(n)+"subs", func(b *testing.B) {
			h := New("s", &memJournal{})
			benchSubscribers(b, h, n)
			ev := event.OutputDelta{TurnID: "t", Text: "hello world"}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				h.Publish(ctx, "l", ev)
			}
		})
	}
}

func BenchmarkPublishEnduring(b *testing.B) {
	for _, n := range []int{1, 4, 16} {
		b.Run(itoa(n)+"subs", func(b *testing.B) {
			h := New("s", &nopJournal{})
			benchSubscribers(b, h, n)
			ev := event.TurnOutput{TurnID: "t", Text: "hello world"}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				h.Publish(ctx, "l", ev)
			}
		})
	}
}

// benchSubscribers adds n subscribers; the first never reads.
func benchSubscribers(b *testing.B, h *Hub, n int) {
	h.Subscribe(Filter{AllLoops: true})
	for i := 1; i < n; i++ {
		s := h.Subscribe(Filter{AllLoops: true})
		go func() {
			for range s.C() {
			}
		}()
	}
	b.Cleanup(h.Abort)
}

type nopJournal struct{ seq uint64 }

func (j *nopJournal) AppendEvent(context.Context, string, event.Event) (uint64, error) {
	j.seq++
	return j.seq, nil
}

func itoa(n int) string { return string(rune('0'+n/10)) + string(rune('0'+n%10)) }
