package rigtest

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"looprig/rig"
	"looprig/rig/engine"
	"looprig/rig/storage"
)

// env is one subtest's world: a fresh store behind a fault-injecting
// wrapper, and a workspaces directory.
type env struct {
	t   *testing.T
	b   Backend
	raw storage.Store // the backend's store, unwrapped
	dir string
	fs  *faultStore // wraps raw; rigs use it
	ws  string      // workspaces directory of session placement

	skipCheck string // why this case opts out of the consistency check
}

// newEnv makes the world of one case, and registers the consistency check
// of its journals (CheckJournals) in its cleanup: registered first, it runs
// last, once the case's sessions were shut down.
func newEnv(t *testing.T, b Backend) *env {
	raw, dir := b.NewStore(t)
	e := &env{t: t, b: b, raw: raw, dir: dir, fs: newFaultStore(raw), ws: t.TempDir()}
	t.Cleanup(func() {
		if e.skipCheck != "" {
			t.Logf("consistency check skipped: %s", e.skipCheck)
			return
		}
		CheckJournals(t, e.raw, e.fs.sessionLedgers()...)
	})
	return e
}

// skipConsistency opts this case out of the consistency check of its
// journals, for why: it writes a journal looprig never would (a corrupt
// frame, overlapping owners, hand-made records).
func (e *env) skipConsistency(why string) {
	if why == "" {
		e.t.Fatal("skipConsistency needs a reason")
	}
	e.skipCheck = why
}

// baseOptions are the rig options every rig of the suite uses: fast
// checkpoints and a fast demo engine.
func baseOptions(store storage.Store, workspaces string) []rig.Option {
	return []rig.Option{
		rig.WithStore(store),
		rig.WithWorkspaces(workspaces),
		rig.WithCheckpoints(20*time.Millisecond, 64<<10),
		rig.WithEngineConfig(engine.Config{DemoSteps: 3, DemoInterval: 20 * time.Millisecond, ShellGrace: 5 * time.Second}),
	}
}

// define returns a rig over the wrapped store; opts come after the
// defaults and may override them.
func (e *env) define(opts ...rig.Option) *rig.Rig {
	e.t.Helper()
	return defineOn(e.t, e.fs, e.ws, opts...)
}

func defineOn(t testing.TB, store storage.Store, ws string, opts ...rig.Option) *rig.Rig {
	t.Helper()
	r, err := rig.Define(append(baseOptions(store, ws), opts...)...)
	if err != nil {
		t.Fatalf("rig.Define: %v", err)
	}
	return r
}

// gateProfile is a shell profile whose gate policy is "touch gated".
func gateProfile() rig.Profile {
	return rig.Profile{Name: "rigtest", Engine: "shell", Placement: rig.PlacementSession, GatePolicy: []string{"touch gated"}}
}

func exclusiveProfile(root string) rig.Profile {
	// Checkpoints off, as the tests of an exclusive root without them
	// need (the default is every turn); those with set it themselves.
	return rig.Profile{Name: "exclusive", Engine: "shell", Placement: rig.PlacementExclusive, Root: root, Checkpoint: rig.CheckpointOff}
}

func (e *env) newSession(r *rig.Rig, opts ...rig.SessionOption) *rig.Session {
	e.t.Helper()
	s, err := r.NewSession(e.t.Context(), opts...)
	if err != nil {
		e.t.Fatalf("NewSession: %v", err)
	}
	shutdownAtCleanup(e.t, s)
	return s
}

func (e *env) restore(r *rig.Rig, id uuid.UUID) *rig.Session {
	e.t.Helper()
	s, err := r.RestoreSession(e.t.Context(), id)
	if err != nil {
		e.t.Fatalf("RestoreSession(%s): %v", id, err)
	}
	shutdownAtCleanup(e.t, s)
	return s
}

// shutdownAtCleanup shuts s down when the test ends (Shutdown is
// idempotent), so no turn outlives its test.
func shutdownAtCleanup(t testing.TB, s *rig.Session) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), WaitTimeout)
		defer cancel()
		_ = s.Shutdown(ctx)
	})
}

func shutdown(t testing.TB, s *rig.Session) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), WaitTimeout)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
}

func waitCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), WaitTimeout)
	t.Cleanup(cancel)
	return ctx
}

func waitIdle(t testing.TB, s *rig.Session) {
	t.Helper()
	if err := s.WaitIdle(waitCtx(t)); err != nil {
		t.Fatalf("WaitIdle: %v", err)
	}
}

// submit submits input and fails the test on error.
func submit(t testing.TB, s *rig.Session, input string) rig.TurnInfo {
	t.Helper()
	ti, err := s.Submit(waitCtx(t), input)
	if err != nil {
		t.Fatalf("Submit(%q): %v", input, err)
	}
	return ti
}

// runTurn submits input and waits for its turn to end.
func runTurn(t testing.TB, s *rig.Session, input string) rig.TurnInfo {
	t.Helper()
	ti := submit(t, s, input)
	waitIdle(t, s)
	return ti
}

// eventually polls cond until it holds or WaitTimeout passes.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(WaitTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
