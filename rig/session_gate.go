// Gates and attention: the open gate's handle (gateState), the user's
// answer to it (RespondGate) and their look at what the turn asked
// (SeeAttention).

package rig

import (
	"context"

	"looprig/rig/event"
	"looprig/rig/journal"
)

// gateState is the handle of the gate a turn waits at: how an answer
// reaches it, and who claimed it. What the gate is (its prompt, when it
// opened) is the session's fold's (State.Gate).
type gateState struct {
	id, turnID string
	answer     chan bool
	// opened is closed once GateOpened is journaled, or its append failed
	// (then openErr is set first). The gate is answerable from the moment
	// GateOpened is delivered; an answer waits for opened, so it is never
	// journaled before the question.
	opened  chan struct{}
	openErr error
}

// RespondGate answers the open gate for client by: approve runs the gated
// command, deny refuses it. Both are journaled, naming by, before the turn
// goes on. An answer from a process inside the session's own turns is
// refused (*FromTurnError) and the attempt journaled (event.Refused); the
// gate stays open.
func (s *Session) RespondGate(ctx context.Context, gateID string, approve bool, by Client) error {
	s.mu.Lock()
	if err := s.admitLocked(); err != nil {
		s.mu.Unlock()
		return err
	}
	g, t := s.gate, s.turn
	if g == nil || g.id != gateID {
		open := ""
		if g != nil {
			open = g.id
		}
		s.mu.Unlock()
		return &NoGateError{GateID: gateID, Open: open}
	}
	s.mu.Unlock()
	action := event.ActionDeny
	if approve {
		action = event.ActionApprove
	}
	if reason, via := s.fromTurn(by); reason != "" {
		if t != nil && t.id != g.turnID {
			t = nil
		}
		e := &FromTurnError{Session: s.id.String(), TurnID: g.turnID, Request: RequestRespondGate, GateID: g.id, Client: *by.record(), Reason: reason, Via: via}
		s.rig.log.Warn("gate answer refused", "session", s.id, "err", e)
		s.journalRefused(t, event.RefusedGateAnswer+" "+g.id, event.Refused{TurnID: g.turnID, What: event.RefusedGateAnswer,
			GateID: g.id, Action: action, By: by.record(), Reason: reason, Via: via})
		return e
	}
	s.mu.Lock()
	if s.gate != g {
		open := ""
		if s.gate != nil {
			open = s.gate.id
		}
		s.mu.Unlock()
		return &NoGateError{GateID: gateID, Open: open}
	}
	s.gate = nil // claimed: a second answer is refused
	s.mu.Unlock()
	unclaim := func(err error) error {
		s.mu.Lock()
		if s.gate == nil {
			s.gate = g
		}
		s.mu.Unlock()
		return s.mutationErr(err)
	}
	select {
	case <-g.opened:
	case <-ctx.Done():
		return unclaim(ctx.Err())
	}
	if g.openErr != nil {
		return s.mutationErr(g.openErr)
	}
	if _, err := s.journal.AppendCommand(ctx, journal.Command{Name: journal.CommandRespondGate, LoopID: s.loopID, TurnID: g.turnID, GateID: g.id, Action: string(action)}); err != nil {
		return unclaim(s.commandErr(err))
	}
	// The answer is on record: a cancellation of ctx must not reach the hub.
	pctx, pcancel := s.bg()
	defer pcancel()
	var err error
	resolve := func() {
		_, err = s.hub.Publish(pctx, s.loopID, event.GateResolved{GateID: g.id, Action: action, Reason: event.ReasonUser, By: by.record()})
	}
	if t == nil || t.id != g.turnID {
		t = nil
		resolve()
	} else if !t.record(resolve) {
		return ErrSessionClosed // Shutdown abandoned the turn and closed the gate
	}
	if err != nil {
		return unclaim(err)
	}
	g.answer <- approve
	s.updateCatalog()
	return nil
}

// maxSeenFrom bounds the name of the client an AttentionSeen records.
const maxSeenFrom = 32

// SeeAttention records that the user looked at the session (a client
// showed it to them): the attention pending, if it was recorded at or
// before sequence through (0: whatever is pending now), is dealt with,
// journaled as AttentionSeen. from names the client. Nothing pending, or
// only attention recorded after through (a client that had not seen it
// yet), journals nothing.
func (s *Session) SeeAttention(ctx context.Context, through uint64, from string) error {
	s.seenMu.Lock()
	defer s.seenMu.Unlock()
	s.mu.Lock()
	if err := s.admitLocked(); err != nil {
		s.mu.Unlock()
		return err
	}
	a := s.state.Attention
	s.mu.Unlock()
	if a == nil || through != 0 && a.Seq > through {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	// Not on ctx: a cancellation reaching the hub would fault the session.
	pctx, cancel := s.bg()
	defer cancel()
	if _, err := s.hub.Publish(pctx, s.loopID, event.AttentionSeen{Through: a.Seq, From: cutUTF8(from, maxSeenFrom)}); err != nil {
		return s.mutationErr(err)
	}
	s.updateCatalog()
	return nil
}
