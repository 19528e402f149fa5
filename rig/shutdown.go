// Shutdown: Session.Shutdown's one teardown, the bounded wait for the
// running turn's engine and what is recorded when it is abandoned.

package rig

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"looprig/rig/engine"
	"looprig/rig/event"
	"looprig/rig/journal"
)

// shutdownGraceMargin is what the default shutdown grace adds to the shell
// engine's SIGTERM→SIGKILL grace: the time a SIGKILLed process group takes
// to be gone and its pipes to drain (normally well under a second; the
// shell engine bounds each step by 5 s).
const shutdownGraceMargin = 5 * time.Second

// DefaultShutdownGrace is the shutdown grace of a rig with the default
// engine configuration: engine.DefaultShellGrace plus 5 s.
const DefaultShutdownGrace = engine.DefaultShellGrace + shutdownGraceMargin

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
	// The gate the turn left open, as the fold says: the claim stopped
	// the turn's records (record), so nothing of it changes any more.
	gate := ""
	for _, g := range s.state.Gates {
		if g.TurnID == t.id {
			gate = g.ID
		}
	}
	s.mu.Unlock()

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

// Shutdown stops the session: it closes admission, interrupts the running
// turn and waits for its engine to return (for the shell engine: its
// process group is gone), stops the hub with SessionStopped, marks the
// catalog entry stopped, then releases the root lease and the session
// lease, once each, on fresh bounded contexts.
//
// The wait for the engine is bounded by the deadline of the first call's
// context or, when it has none, by the rig's shutdown grace
// (WithShutdownGrace; 8 s by default). Cancelling a context without a
// deadline does not cut the wait short. An engine that has not returned
// by then — one that ignores its context — is abandoned: the turn is
// journaled as TurnInterrupted{engine_unresponsive}, the hub is stopped,
// the catalog entry is left running (with a reason) so the session lists
// as crashed rather than cleanly stopped, the leases are released, and
// Shutdown returns *EngineUnresponsiveError (joined with any other
// failure). Nothing the abandoned engine does later is journaled.
//
// The leases are released however the rest went; a release that fails
// is logged and returned too (joined with any other failure), since the
// lease may stay held until the backend's TTL frees it. A cancelled
// context without a deadline changes nothing of the teardown, nor of its
// result: nil when it all went well.
//
// Every call returns the result of the one teardown; the context of a
// later call bounds only how long that call waits for it.
func (s *Session) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	first := !s.shutdownStarted
	s.shutdownStarted = true
	s.mu.Unlock()
	if first {
		s.shutdownErr = s.teardown(ctx)
		close(s.shutdownDone)
		return s.shutdownErr
	}
	select { // a finished teardown wins over a done ctx
	case <-s.shutdownDone:
		return s.shutdownErr
	default:
	}
	select {
	case <-s.shutdownDone:
		return s.shutdownErr
	case <-ctx.Done():
		return ctx.Err()
	}
}

// teardown is the one Shutdown; ctx bounds only the wait for the running
// turn's engine (see Shutdown).
func (s *Session) teardown(ctx context.Context) error {
	s.mu.Lock()
	s.closed = true
	t := s.turn
	healthy := s.fault == nil
	s.mu.Unlock()

	bctx, cancel := s.bg()
	defer cancel()
	var errs []error
	if healthy {
		if _, err := s.journal.AppendCommand(bctx, journal.Command{Name: journal.CommandShutdown, LoopID: s.loopID}); err != nil {
			errs = append(errs, fmt.Errorf("record shutdown: %w", s.mutationErr(err)))
		}
	}
	var stuck *EngineUnresponsiveError
	if t != nil {
		var err error
		if stuck, err = s.awaitTurn(ctx, t); err != nil {
			errs = append(errs, err)
		}
	}
	if healthy && stuck == nil && s.Err() == nil {
		s.checkpointWorkspace(event.TriggerStop, s.lastTurnID())
	}
	close(s.stopWatch)
	<-s.watchDone
	stopCtx, stopCancel := s.bg()
	defer stopCancel()
	if err := s.hub.Stop(stopCtx); err != nil && healthy {
		errs = append(errs, fmt.Errorf("stop hub: %w", s.mutationErr(err)))
	}
	if s.Err() == nil {
		// A session whose engine was abandoned did not stop cleanly: the
		// engine may still run (and touch the workspace) in this process.
		// Its entry stays running, so that once the leases are free it
		// lists as crashed, not idle; its journal is closed all the same.
		state, reason := CatalogStopped, ""
		if stuck != nil {
			state, reason = CatalogRunning, fmt.Sprintf("shutdown abandoned turn %d: %s", stuck.Index, event.ReasonEngineStuck)
		}
		if err := s.writeCatalogState(state, reason, true); err != nil {
			errs = append(errs, fmt.Errorf("catalog: %w", err))
		}
	}
	s.cancel(ErrSessionClosed)
	errs = append(errs, s.releaseLeases()...)
	if stuck != nil {
		if len(errs) == 0 {
			return stuck
		}
		errs = append([]error{stuck}, errs...)
	}
	return errors.Join(errs...)
}

// releaseLeases releases the root lease, then the session lease, each on
// a fresh bounded context.
func (s *Session) releaseLeases() []error {
	var errs []error
	if s.ws != nil && s.ws.lease != nil {
		ctx, cancel := context.WithTimeout(context.Background(), s.rig.releaseTimeout)
		if err := s.ws.lease.Release(ctx); err != nil {
			s.rig.log.Warn("root lease release failed", "root", s.ws.root, "err", err)
			errs = append(errs, fmt.Errorf("release root lease: %w", err))
		}
		cancel()
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.rig.releaseTimeout)
	defer cancel()
	if err := s.lease.Release(ctx); err != nil {
		s.rig.log.Warn("session lease release failed", "session", s.id, "err", err)
		errs = append(errs, fmt.Errorf("release session lease: %w", err))
	}
	return errs
}
