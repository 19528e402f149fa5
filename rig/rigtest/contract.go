package rigtest

import (
	"context"
	"errors"
	"testing"
	"time"

	"looprig/rig"
	"looprig/rig/event"
	"looprig/rig/journal"
	"looprig/rig/storage"
)

// contractCases: the session's contract at its edges, where looprig
// follows the seed or says why not (docs/ARCHITECTURE.md, "Where looprig
// differs from the seed"): what WaitIdle reports, a nil option, a release
// that fails.
var contractCases = []testCase{
	{"WaitIdleReportsStopAndFault", testWaitIdleReportsStopAndFault},
	{"NilOptionsRefused", testNilOptions},
	{"ReleaseFailureReturnedByShutdown", testReleaseFailureReturned},
}

// waitTurnOver waits until no turn of s runs, on a session that may have
// faulted or be shut down: WaitIdle then says so (the fault, or
// rig.ErrSessionClosed), which is what the caller expects.
func waitTurnOver(t testing.TB, s *rig.Session) {
	t.Helper()
	err := s.WaitIdle(waitCtx(t))
	if err == nil || errors.Is(err, rig.ErrSessionClosed) {
		return
	}
	if f := s.Err(); f == nil || err.Error() != f.Error() {
		t.Fatalf("WaitIdle: %v (the session's fault: %v)", err, f)
	}
}

// WaitIdle says how the session is once no turn runs: nil while it takes
// work, rig.ErrSessionClosed once it is shut down (at once on a session
// shut down before the call; after a turn Shutdown abandoned, once its
// engine returns), and the latched fault when the session lost its lease
// during the turn.
func testWaitIdleReportsStopAndFault(t *testing.T, e *env) {
	t.Run("live", func(t *testing.T) {
		e := newEnv(t, e.b)
		s := e.newSession(e.define())
		submit(t, s, "true")
		if err := s.WaitIdle(waitCtx(t)); err != nil {
			t.Errorf("WaitIdle on a live session: %v", err)
		}
	})
	t.Run("shut down", func(t *testing.T) {
		e := newEnv(t, e.b)
		s := e.newSession(e.define())
		shutdown(t, s)
		if err := s.WaitIdle(waitCtx(t)); !errors.Is(err, rig.ErrSessionClosed) {
			t.Errorf("WaitIdle after Shutdown: %v, want rig.ErrSessionClosed", err)
		}
	})
	t.Run("abandoned turn", func(t *testing.T) {
		e := newEnv(t, e.b)
		eng := newStuckEngine(false)
		r := e.define(eng.option(), rig.WithProfile(stuckProfile(rig.PlacementSession, "")), rig.WithShutdownGrace(100*time.Millisecond))
		s := e.newStuckSession(r, eng)
		submit(t, s, "anything")
		eng.waitStarted(t)
		waited := make(chan error, 1)
		go func() { waited <- s.WaitIdle(waitCtx(t)) }()
		_ = result(t, shutdownAsync(s, context.Background()), "Shutdown")
		select {
		case err := <-waited:
			t.Fatalf("WaitIdle returned %v while the abandoned engine still runs", err)
		case <-time.After(100 * time.Millisecond):
		}
		eng.unblock()
		if err := result(t, waited, "WaitIdle"); !errors.Is(err, rig.ErrSessionClosed) {
			t.Errorf("WaitIdle across a Shutdown that abandoned the turn: %v, want rig.ErrSessionClosed", err)
		}
	})
	t.Run("lease lost", func(t *testing.T) {
		e := newEnv(t, e.b)
		s := e.newSession(e.define())
		m := newMarker()
		submit(t, s, "sleep "+m)
		waitSleepRunning(t, m)
		e.breakLease(t, storage.SessionName(s.SessionID().String()))
		err := s.WaitIdle(waitCtx(t))
		var lost *journal.JournalLeaseLostError
		var fenced *journal.FencedError
		if !errors.As(err, &lost) && !errors.As(err, &fenced) {
			t.Errorf("WaitIdle after the lease was broken: %v, want the latched lease loss", err)
		}
		if f := s.Err(); f == nil || err == nil || err.Error() != f.Error() {
			t.Errorf("WaitIdle returned %v, the session's fault is %v", err, f)
		}
		noProcs(t, m, "once WaitIdle returned")
	})
}

// A nil option is refused, not called: Define returns an error,
// NewSession a LifecycleError at stage validate that took nothing.
func testNilOptions(t *testing.T, e *env) {
	if _, err := rig.Define(append(baseOptions(e.fs, e.ws), nil)...); err == nil {
		t.Error("Define accepted a nil option")
	}
	r := e.define()
	s, err := r.NewSession(t.Context(), rig.WithTitle("t"), nil)
	if err == nil {
		shutdownAtCleanup(t, s)
		t.Fatal("NewSession accepted a nil option")
	}
	if le := as[*rig.LifecycleError](t, err, "NewSession with a nil option"); le.Stage != rig.StageValidate {
		t.Errorf("stage %s, want %s", le.Stage, rig.StageValidate)
	}
	if got := e.fs.names(""); len(got) != 0 {
		t.Errorf("NewSession with a nil option took leases %v", got)
	}
}

// A release that fails is returned by Shutdown (joined, after everything
// else was done: SessionStopped journaled, the catalog entry stopped),
// not only logged: a documented divergence from the seed
// (docs/ARCHITECTURE.md, "Shutdown").
func testReleaseFailureReturned(t *testing.T, e *env) {
	s := e.newSession(e.define())
	id := s.SessionID()
	name := storage.SessionName(id.String())
	errRelease := errors.New("rigtest: release not acknowledged")
	e.fs.setReleaseFault(func(n string) error {
		if n == name {
			return errRelease
		}
		return nil
	})
	defer e.fs.setReleaseFault(nil)
	err := s.Shutdown(waitCtx(t))
	if !errors.Is(err, errRelease) {
		t.Fatalf("Shutdown: %v, want the release failure", err)
	}
	recs := readJournal(t, e.raw, id)
	if last := recs[len(recs)-1]; last.Kind != journal.KindEvent || last.Event.Type() != event.TypeSessionStopped {
		t.Errorf("journal ends with %v, want SessionStopped", typesOf(recs[len(recs)-1:]))
	}
	if c, err := rig.ReadCatalog(t.Context(), e.raw, id.String()); err != nil || c.State != rig.CatalogStopped {
		t.Errorf("catalog entry %+v (%v), want stopped", c, err)
	}
}
