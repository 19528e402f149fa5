package rig

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"looprig/rig/engine"
	"looprig/rig/event"
)

// shutdownGraceMargin is what the default shutdown grace adds to the shell
// engine's SIGTERM→SIGKILL grace: the time a SIGKILLed process group takes
// to be gone and its pipes to drain (normally well under a second; the
// shell engine bounds each step by 5 s).
const shutdownGraceMargin = 5 * time.Second

// WithShutdownGrace bounds how long Session.Shutdown waits for the running
// turn's engine to return when the caller's context has no deadline
// (default: the shell engine's grace, engine.Config.ShellGrace — 3 s unless
// set —, plus 5 s, so 8 s by default). An engine that has not returned by
// then is abandoned: see Session.Shutdown. d <= 0 means the default.
func WithShutdownGrace(d time.Duration) Option { return func(r *Rig) { r.shutdownGrace = d } }

// shutdownWait is how long Shutdown waits for the running turn when the
// caller's context has no deadline.
func (r *Rig) shutdownWait() time.Duration {
	if r.shutdownGrace > 0 {
		return r.shutdownGrace
	}
	grace := r.engineCfg.ShellGrace
	if grace <= 0 {
		grace = engine.DefaultShellGrace
	}
	return grace + shutdownGraceMargin
}

// EngineUnresponsiveError is returned by Session.Shutdown when the running
// turn's engine did not return within the bound (the caller's deadline, or
// the rig's shutdown grace): the engine ignored its cancelled context.
// Shutdown went on without it: the turn is journaled as
// TurnInterrupted{engine_unresponsive} (unless the session had already
// faulted and can journal nothing), the hub stopped with
// SessionStopped, the catalog entry left running (the session lists as
// crashed), and the root lease, then the session lease, released. The
// engine's goroutine (and whatever it started) may still be running in
// this process; nothing it does is journaled any more.
type EngineUnresponsiveError struct {
	Session uuid.UUID
	Turn    string // id of the abandoned turn
	Index   int
	Waited  time.Duration // from the interrupt until Shutdown gave up
}

func (e *EngineUnresponsiveError) Error() string {
	return fmt.Sprintf("session %s: turn %d (%s): the engine did not stop within %s of the interrupt; "+
		"the turn is recorded as interrupted (%s) and the session's leases are released, but the engine may still be running",
		e.Session, e.Index, e.Turn, e.Waited.Round(time.Millisecond), event.ReasonEngineStuck)
}

// turnEnd says who records the end of a turn.
type turnEnd uint8

const (
	endOpen      turnEnd = iota // the engine is running
	endReturned                 // the engine returned: runTurn records the end
	endAbandoned                // Shutdown gave up on the engine and recorded the end
)

// record runs fn, which journals a record of the turn, unless Shutdown has
// abandoned the turn; it reports whether fn ran. Every record of a turn
// before its end (output, gates) is written through it, so none lands after
// the TurnInterrupted of an abandoned turn.
func (t *turnRun) record(fn func()) bool {
	t.endMu.Lock()
	defer t.endMu.Unlock()
	if t.end == endAbandoned {
		return false
	}
	fn()
	return true
}

// claimEnd makes by the recorder of the turn's end, if nobody is yet. A
// claim waits for a record of the turn in flight.
func (t *turnRun) claimEnd(by turnEnd) bool {
	t.endMu.Lock()
	defer t.endMu.Unlock()
	if t.end != endOpen {
		return false
	}
	t.end = by
	if by == endAbandoned {
		close(t.gone)
	}
	return true
}

// abandoned reports whether Shutdown abandoned the turn.
func (t *turnRun) abandoned() bool {
	select {
	case <-t.gone:
		return true
	default:
		return false
	}
}

// awaitTurn interrupts t and waits until its engine has returned, at most
// until ctx's deadline or, when ctx has none, the rig's shutdown grace. A
// context cancelled without a deadline does not cut the wait short: a
// caller that gave up still gets an orderly teardown. It returns nil when
// the engine returned, else what abandonTurn returns.
func (s *Session) awaitTurn(ctx context.Context, t *turnRun) (*EngineUnresponsiveError, error) {
	start := time.Now()
	// A faulted session interrupted the turn already (its context's cancel
	// reaches the turn's a moment after its own Done closes): keep that
	// reason.
	cause := causeShutdown
	if s.Err() != nil {
		cause = causeLeaseLost
	}
	t.cancel(cause)
	wait := s.rig.shutdownWait()
	if d, ok := ctx.Deadline(); ok {
		wait = time.Until(d)
	}
	select { // a finished turn wins over a spent bound
	case <-t.done:
		return nil, nil
	default:
	}
	timer := time.NewTimer(max(wait, 0))
	defer timer.Stop()
	select {
	case <-t.done:
		return nil, nil
	case <-timer.C:
	}
	return s.abandonTurn(t, time.Since(start))
}

// abandonTurn gives up on t's engine: it claims the turn's end, journals
// GateResolved for a gate the turn left open and TurnInterrupted
// {engine_unresponsive}, and clears the turn from the session's state. If
// the engine returned meanwhile (runTurn claimed the end first), it waits
// for runTurn to record the end — journal appends bounded by the rig's
// release timeout — and abandons nothing.
func (s *Session) abandonTurn(t *turnRun, waited time.Duration) (*EngineUnresponsiveError, error) {
	if !t.claimEnd(endAbandoned) {
		<-t.done
		return nil, nil
	}
	s.mu.Lock()
	if s.turn == t {
		s.turn = nil
	}
	if s.gate != nil && s.gate.turnID == t.id {
		s.gate = nil
	}
	s.mu.Unlock()
	t.endMu.Lock()
	gate := t.openGate
	t.endMu.Unlock()

	stuck := &EngineUnresponsiveError{Session: s.id, Turn: t.id, Index: t.index, Waited: waited}
	if s.Err() != nil {
		return stuck, nil // a faulted session journals nothing more
	}
	ctx, cancel := s.bg()
	defer cancel()
	if gate != "" {
		if _, err := s.hub.Publish(ctx, s.loopID, event.GateResolved{GateID: gate, Action: event.ActionClose, Reason: event.ReasonEngineStuck}); err != nil {
			return stuck, fmt.Errorf("record the abandoned turn's gate: %w", s.mutationErr(err))
		}
	}
	end := event.TurnInterrupted{TurnID: t.id, Index: t.index, Reason: event.ReasonEngineStuck}
	if _, err := s.hub.Publish(ctx, s.loopID, end); err != nil {
		return stuck, fmt.Errorf("record the abandoned turn: %w", s.mutationErr(err))
	}
	return stuck, nil
}
