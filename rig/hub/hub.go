// Package hub is a session's publish/subscribe point. It owns the durable
// tap (an enduring event is journaled before anyone sees it), per-subscriber
// bounded buffers, the activity edges (SessionActive, SessionIdle) with
// WaitIdle, and the end of the stream (Stop with SessionStopped, or Abort).
//
// Publishing never blocks on a subscriber. An ephemeral event that does not
// fit a subscriber's buffer (less a reserve kept for enduring events) is
// dropped for that subscriber and counted; an enduring one that does not fit
// closes that subscription with *SubscriptionLossError, and the subscriber
// recovers by replaying the journal from its last sequence.
package hub

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"looprig/rig/event"
	"looprig/rig/fault"
)

// BufferSize is the capacity of every subscription's channel.
const BufferSize = 256

// EnduringReserve is the part of a subscription's buffer that ephemeral
// events may not use, so that a subscriber behind on output deltas still
// has room for the enduring events that follow them.
const EnduringReserve = 64

// Journal is the durable tap: the hub appends every enduring event through
// it before delivery. rig/journal.SessionJournal implements it.
type Journal interface {
	AppendEvent(ctx context.Context, loopID string, ev event.Event) (uint64, error)
}

// ErrStopped is returned by Publish after Stop or Abort.
var ErrStopped = errors.New("hub: session stopped")

// FaultError is returned by Publish when the journal refused an enduring
// event. The hub is faulted from then on: every later enduring publish
// returns the same error, and nothing is delivered.
type FaultError struct {
	Type event.Type
	Err  error
}

func (e *FaultError) Error() string {
	return fmt.Sprintf("hub: journaling %s failed: %v", e.Type, e.Err)
}

func (e *FaultError) Unwrap() error { return e.Err }

// Explanation explains it: its cause's explanation (a lost lease: the
// fault is that the lease is lost), except stored damage, whose fault is
// kind persistence_fault: what the hub could not journal.
func (e *FaultError) Explanation() fault.Explanation {
	if x, ok := fault.First(e.Err); ok && x.Kind != fault.KindCorrupt && x.Kind != fault.KindBrokenJournal {
		return x
	}
	return fault.Of(fault.KindPersistenceFault, fault.Fact("event_type", string(e.Type)))
}

// SubscriptionLossError closes a subscription that could not keep up with
// enduring events. LastSeq is the last journal sequence it was delivered;
// replaying the journal after it recovers the stream.
type SubscriptionLossError struct {
	Session string
	LastSeq uint64
}

func (e *SubscriptionLossError) Error() string {
	return fmt.Sprintf("hub: subscription to session %s fell behind after seq %d; replay the journal from there", e.Session, e.LastSeq)
}

// Filter selects what a subscription receives. Session-scope events are
// always delivered; loop-scope events when AllLoops is set or their loop id
// is in Loops.
type Filter struct {
	AllLoops bool
	Loops    []string
}

func (f Filter) wants(env event.Envelope) bool {
	if env.Event.Scope() != event.LoopScope || f.AllLoops {
		return true
	}
	for _, id := range f.Loops {
		if id == env.LoopID {
			return true
		}
	}
	return false
}

// Option configures a Hub.
type Option func(*Hub)

// WithClock sets the clock stamped on ephemeral envelopes (and on enduring
// ones when the journal does not say).
func WithClock(now func() time.Time) Option { return func(h *Hub) { h.now = now } }

// WithJournaled registers fn to run for every enduring event once it is
// journaled and before it is delivered, in journal order (the hub's
// publishes wait for it: fn must be quick and must not publish). A
// subscriber that sees the event finds fn run: the session's fold
// (rig.State) knows what the subscriber saw.
func WithJournaled(fn func(event.Envelope)) Option { return func(h *Hub) { h.onJournaled = fn } }

// WithFaultHandler registers fn to run once, outside the hub's lock, when an
// enduring append fails.
func WithFaultHandler(fn func(error)) Option { return func(h *Hub) { h.onFault = fn } }

// Hub is one session's publish/subscribe point. Its zero value is not
// usable; call New.
type Hub struct {
	session     string
	journal     Journal
	now         func() time.Time
	onFault     func(error)
	onJournaled func(event.Envelope)

	// edgeMu orders activity edges: SessionActive and SessionIdle are
	// journaled in the order Begin and End happened.
	edgeMu sync.Mutex
	// pubMu serializes enduring publishes so delivery order is journal
	// order. It is held across the journal append; mu is not.
	pubMu sync.Mutex

	mu      sync.Mutex
	subs    []*Subscription // open subscriptions, in no particular order
	active  int
	idle    chan struct{} // closed while active == 0
	busy    chan struct{} // closed while active > 0
	stopped bool
	fault   error
}

// New returns a hub for session that journals through j.
func New(session string, j Journal, opts ...Option) *Hub {
	h := &Hub{
		session: session,
		journal: j,
		now:     time.Now,
		idle:    make(chan struct{}),
		busy:    make(chan struct{}),
	}
	close(h.idle)
	for _, o := range opts {
		o(h)
	}
	return h
}

// Publish delivers ev to the subscribers that want it. An enduring event is
// journaled first and delivered with its sequence; if the journal refuses
// it, nothing is delivered, the hub is faulted and a *FaultError returned.
// A ctx that ends before the event is journaled returns ctx's error and
// faults nothing (the Journal must append nothing in that case).
func (h *Hub) Publish(ctx context.Context, loopID string, ev event.Event) (event.Envelope, error) {
	env := event.Envelope{Session: h.session, LoopID: loopID, Event: ev}
	if ev.Class() == event.Ephemeral {
		h.mu.Lock()
		defer h.mu.Unlock()
		if h.stopped {
			return env, ErrStopped
		}
		env.At = h.now()
		h.deliverLocked(env)
		return env, nil
	}

	h.pubMu.Lock()
	defer h.pubMu.Unlock()
	h.mu.Lock()
	stopped, fault := h.stopped, h.fault
	h.mu.Unlock()
	if stopped {
		return env, ErrStopped
	}
	if fault != nil {
		return env, fault
	}
	seq, err := h.journal.AppendEvent(ctx, loopID, ev)
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil && errors.Is(err, ctxErr) {
			// The caller gave up before the event was journaled: nothing
			// was written, the session is fine, nothing is delivered.
			return env, err
		}
		return env, h.faulted(ev.Type(), err)
	}
	env.Seq = seq
	env.At = h.now()
	if h.onJournaled != nil {
		h.onJournaled(env) // before delivery: whoever sees env finds it applied
	}
	h.mu.Lock()
	h.deliverLocked(env)
	h.mu.Unlock()
	return env, nil
}

// faulted latches the first journal failure and reports it once.
func (h *Hub) faulted(t event.Type, err error) error {
	h.mu.Lock()
	first := h.fault == nil
	if first {
		h.fault = &FaultError{Type: t, Err: err}
	}
	fault := h.fault
	h.mu.Unlock()
	if first && h.onFault != nil {
		h.onFault(fault)
	}
	return fault
}

// Err returns the latched journal failure, or nil.
func (h *Hub) Err() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.fault
}

func (h *Hub) deliverLocked(env event.Envelope) {
	for i := 0; i < len(h.subs); i++ {
		s := h.subs[i]
		if !s.filter.wants(env) {
			continue
		}
		if env.Seq == 0 {
			if len(s.ch) >= BufferSize-EnduringReserve {
				s.dropped++
				continue
			}
			s.ch <- env // cannot block: only this goroutine sends, under h.mu
			continue
		}
		select {
		case s.ch <- env:
			s.lastSeq = env.Seq
		default:
			s.err = &SubscriptionLossError{Session: h.session, LastSeq: s.lastSeq}
			h.closeLocked(s) // moves the last subscription to i: visit it next
			i--
		}
	}
}

// Subscribe opens a subscription. After Stop or Abort it returns a
// subscription that is already closed.
func (h *Hub) Subscribe(f Filter) *Subscription {
	s := &Subscription{hub: h, filter: f, ch: make(chan event.Envelope, BufferSize)}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stopped {
		close(s.ch)
		s.closed = true
		return s
	}
	h.subs = append(h.subs, s)
	return s
}

func (h *Hub) closeLocked(s *Subscription) {
	if s.closed {
		return
	}
	s.closed = true
	if i := slices.Index(h.subs, s); i >= 0 {
		last := len(h.subs) - 1
		h.subs[i] = h.subs[last]
		h.subs[last] = nil
		h.subs = h.subs[:last]
	}
	close(s.ch)
}

// Begin marks the start of an activity (a turn). The first activity after
// an idle period publishes SessionActive.
func (h *Hub) Begin(ctx context.Context) error {
	h.edgeMu.Lock()
	defer h.edgeMu.Unlock()
	h.mu.Lock()
	h.active++
	edge := h.active == 1
	if edge {
		h.idle = make(chan struct{})
		close(h.busy)
	}
	h.mu.Unlock()
	if !edge {
		return nil
	}
	_, err := h.Publish(ctx, "", event.SessionActive{})
	return err
}

// End marks the end of an activity. The last one publishes SessionIdle and
// releases WaitIdle callers. The idle edge is taken even when journaling
// SessionIdle fails, so WaitIdle never hangs on a faulted session.
func (h *Hub) End(ctx context.Context) error {
	h.edgeMu.Lock()
	defer h.edgeMu.Unlock()
	h.mu.Lock()
	if h.active == 0 {
		h.mu.Unlock()
		return errors.New("hub: End without Begin")
	}
	h.active--
	edge := h.active == 0
	if edge {
		h.busy = make(chan struct{})
	}
	h.mu.Unlock()
	if !edge {
		return nil
	}
	_, err := h.Publish(ctx, "", event.SessionIdle{})
	h.mu.Lock()
	close(h.idle)
	h.mu.Unlock()
	return err
}

// WaitIdle waits until no activity is running.
func (h *Hub) WaitIdle(ctx context.Context) error {
	h.mu.Lock()
	idle := h.idle
	h.mu.Unlock()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Busy returns a channel that is closed when an activity begins: closed
// already while one runs.
func (h *Hub) Busy() <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.busy
}

// Stop publishes SessionStopped, closes every subscription and refuses
// later publishes. It returns the journal error if SessionStopped could not
// be journaled; the hub is stopped either way.
func (h *Hub) Stop(ctx context.Context) error {
	_, err := h.Publish(ctx, "", event.SessionStopped{})
	if errors.Is(err, ErrStopped) {
		return nil
	}
	h.shut()
	return err
}

// Abort closes every subscription and refuses later publishes without
// journaling anything: for sessions whose construction failed.
func (h *Hub) Abort() { h.shut() }

func (h *Hub) shut() {
	h.pubMu.Lock() // let an admitted enduring publish finish first
	defer h.pubMu.Unlock()
	h.mu.Lock()
	defer h.mu.Unlock()
	h.stopped = true
	for len(h.subs) > 0 {
		h.closeLocked(h.subs[len(h.subs)-1])
	}
}

// Subscription is one subscriber's bounded stream.
type Subscription struct {
	hub    *Hub
	filter Filter
	ch     chan event.Envelope

	// guarded by hub.mu
	closed  bool
	dropped uint64
	lastSeq uint64
	err     error
}

// C is the subscription's channel. It is closed when the session stops, the
// subscriber falls behind on enduring events (see Err), or Close is called.
func (s *Subscription) C() <-chan event.Envelope { return s.ch }

// Err is nil while the subscription is open or after a clean end, and a
// *SubscriptionLossError when it was closed for falling behind.
func (s *Subscription) Err() error {
	s.hub.mu.Lock()
	defer s.hub.mu.Unlock()
	return s.err
}

// Dropped counts ephemeral events dropped because the buffer was full.
func (s *Subscription) Dropped() uint64 {
	s.hub.mu.Lock()
	defer s.hub.mu.Unlock()
	return s.dropped
}

// Close ends the subscription. It is safe to call more than once.
func (s *Subscription) Close() {
	s.hub.mu.Lock()
	defer s.hub.mu.Unlock()
	s.hub.closeLocked(s)
}

// Next waits for at least one envelope, then takes everything already
// queued, up to max (max <= 0 means BufferSize). It returns ok == false once
// the subscription is closed and drained; then Err says why.
func (s *Subscription) Next(ctx context.Context, max int) (batch []event.Envelope, ok bool, err error) {
	if max <= 0 {
		max = BufferSize
	}
	select {
	case env, open := <-s.ch:
		if !open {
			return nil, false, nil
		}
		batch = append(batch, env)
	case <-ctx.Done():
		return nil, true, ctx.Err()
	}
	for len(batch) < max {
		select {
		case env, open := <-s.ch:
			if !open {
				return batch, true, nil
			}
			batch = append(batch, env)
		default:
			return batch, true, nil
		}
	}
	return batch, true, nil
}
