package rig

import (
	"context"
	"errors"
	"sync"
	"time"
	"unicode/utf8"

	"looprig/rig/engine"
	"looprig/rig/event"
)

// turnSink is the engine.Sink of one turn. Output goes live to subscribers
// as OutputDelta (ephemeral) and into the journal as TurnOutput
// checkpoints: whenever checkpointBytes have gathered, and at least every
// checkpointEvery while output is pending, so a crash loses under a second
// of output. Both carry the offset of their first byte in the turn's
// output, so a reader reconciles them (Transcript). Past the rig's per-turn
// cap, output is only counted (Elided), which keeps journal growth and
// memory bounded for a turn printing gigabytes. Once Shutdown abandoned the
// turn (its engine ignored the interrupt) the sink drops everything:
// nothing of the turn is journaled or delivered after its TurnInterrupted.
// The output is also read for the program's calls for the user (a bell, a
// notification: attention.go), journaled as Attention once per episode.
type turnSink struct {
	s *Session
	t *turnRun

	produced int64 // bytes of output so far (Output's goroutine only)
	// attn reads the output for signals, and episodes groups them (Output's
	// goroutine only).
	attn     attentionDetector
	episodes episodes

	mu        sync.Mutex
	buf       []byte
	journaled int64 // bytes accepted for the journal
	elided    int64

	flushMu sync.Mutex // orders checkpoints
	flushed int64      // bytes checkpointed (under flushMu)

	stop chan struct{}
	done chan struct{}
}

func newTurnSink(s *Session, t *turnRun) *turnSink {
	k := &turnSink{s: s, t: t, stop: make(chan struct{}), done: make(chan struct{}), episodes: episodes{quiet: s.rig.attentionQuiet}}
	go k.tick()
	return k
}

// tick checkpoints pending output every interval until finish, or until
// Shutdown abandons the turn (nothing more is journaled then).
func (k *turnSink) tick() {
	defer close(k.done)
	every := time.NewTicker(k.s.rig.checkpointEvery)
	defer every.Stop()
	for {
		select {
		case <-every.C:
			k.flush(false)
		case <-k.stop:
			return
		case <-k.t.gone:
			return
		}
	}
}

// Output implements engine.Sink.
func (k *turnSink) Output(stream engine.Stream, text string) {
	if text == "" || k.t.abandoned() {
		return
	}
	orig := text
	off := k.produced
	k.produced += int64(len(text))
	k.t.keepTail(text) // before anyone sees it: an answer to it finds it there
	k.s.hub.Publish(context.Background(), k.s.loopID, event.OutputDelta{TurnID: k.t.id, Stream: string(stream), Offset: off, Text: text})
	k.mu.Lock()
	room := k.s.rig.turnJournalCap - k.journaled
	if int64(len(text)) > room {
		keep := runeCut(text, max(room, 0))
		k.elided += int64(len(text) - keep)
		text = text[:keep]
	}
	k.buf = append(k.buf, text...)
	k.journaled += int64(len(text))
	full := len(k.buf) >= k.s.rig.checkpointBytes
	k.mu.Unlock()
	if sig, ok := k.attn.scan(orig); ok && k.episodes.starts(k.s.rig.now()) {
		k.attention(sig) // flushes first
		return
	}
	if full {
		k.flush(false)
	}
}

// attention journals the start of an episode of signals, after the output
// that came before it, and updates the catalog entry.
func (k *turnSink) attention(sig attentionSignal) {
	k.flush(false)
	ctx, cancel := k.s.bg()
	defer cancel()
	var err error
	if !k.t.record(func() {
		_, err = k.s.hub.Publish(ctx, k.s.loopID, event.Attention{TurnID: k.t.id, Reason: sig.reason, Text: sig.text, Agent: sig.agent})
	}) || err != nil {
		return // abandoned, or the hub faulted the session
	}
	k.s.updateCatalog()
}

// Gate implements engine.Sink: it journals GateOpened, waits for
// RespondGate or the end of ctx, and closes the gate on the way out if
// nobody answered.
func (k *turnSink) Gate(ctx context.Context, prompt string) (bool, error) {
	s := k.s
	k.flush(false) // output before the question stays before it in the journal
	g := &gateState{id: newID(), turnID: k.t.id, answer: make(chan bool, 1), opened: make(chan struct{})}
	// Open before publishing: a subscriber may answer as soon as GateOpened
	// is delivered, which happens inside Publish.
	s.mu.Lock()
	s.gate = g
	s.mu.Unlock()
	// Not on ctx: an interrupt arriving now would fault the session through
	// the hub; it is seen below and closes the gate.
	pctx, pcancel := s.bg()
	var err error
	if !k.t.record(func() {
		_, err = s.hub.Publish(pctx, s.loopID, event.GateOpened{GateID: g.id, TurnID: k.t.id, Prompt: prompt})
	}) {
		err = ErrSessionClosed // Shutdown abandoned the turn
	}
	pcancel()
	if err != nil {
		g.openErr = err
		close(g.opened)
		s.mu.Lock()
		if s.gate == g {
			s.gate = nil
		}
		s.mu.Unlock()
		return false, err
	}
	close(g.opened)
	s.updateCatalog()
	select {
	case ok := <-g.answer:
		return ok, nil
	case <-ctx.Done():
	}
	s.mu.Lock()
	mine := s.gate == g
	if mine {
		s.gate = nil
	}
	s.mu.Unlock()
	if !mine { // RespondGate claimed it and journaled the answer
		select {
		case ok := <-g.answer:
			return ok, nil
		default:
			return false, context.Cause(ctx)
		}
	}
	reason := "interrupted"
	if c, ok := context.Cause(ctx).(*interruptCause); ok {
		reason = c.reason
	} else if errors.Is(context.Cause(ctx), context.DeadlineExceeded) {
		reason = "timed_out" // the engine's deadline for an answer passed
	}
	bg, cancel := s.bg()
	defer cancel()
	k.t.record(func() {
		s.hub.Publish(bg, s.loopID, event.GateResolved{GateID: g.id, Action: event.ActionClose, Reason: reason}) // a failure faults the session
	})
	return false, context.Cause(ctx)
}

// flush journals pending output as TurnOutput records of at most
// checkpointBytes each, cut at UTF-8 boundaries. With final it also
// reports elided output.
func (k *turnSink) flush(final bool) {
	k.flushMu.Lock()
	defer k.flushMu.Unlock()
	k.mu.Lock()
	pending := k.buf
	k.buf = nil
	elided := k.elided
	k.mu.Unlock()
	ctx, cancel := k.s.bg()
	defer cancel()
	limit := k.s.rig.checkpointBytes
	for len(pending) > 0 {
		n := min(len(pending), limit)
		for n < len(pending) && n > 0 && !utf8.RuneStart(pending[n]) {
			n--
		}
		if n == 0 {
			n = min(len(pending), limit)
		}
		var err error
		if !k.t.record(func() {
			_, err = k.s.hub.Publish(ctx, k.s.loopID, event.TurnOutput{TurnID: k.t.id, Offset: k.flushed, Text: string(pending[:n])})
		}) || err != nil {
			return // abandoned, or the hub faulted the session: nothing more is journaled
		}
		k.flushed += int64(n)
		pending = pending[n:]
	}
	if final && elided > 0 {
		k.t.record(func() {
			k.s.hub.Publish(ctx, k.s.loopID, event.TurnOutput{TurnID: k.t.id, Offset: k.flushed, Elided: elided})
		})
	}
}

// finish stops the checkpoint ticker and journals what is left.
func (k *turnSink) finish() {
	close(k.stop)
	<-k.done
	k.flush(true)
}

// runeCut returns the largest n <= limit at which s can be cut without
// splitting a UTF-8 sequence.
func runeCut(s string, limit int64) int {
	n := int(min(limit, int64(len(s))))
	for n > 0 && n < len(s) && !utf8.RuneStart(s[n]) {
		n--
	}
	return n
}
