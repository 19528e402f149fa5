package rigtest

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"looprig/rig"
	"looprig/rig/engine"
	"looprig/rig/event"
	"looprig/rig/hub"
	"looprig/rig/journal"
	"looprig/rig/storage"
)

const stuckEngineName = "rigtest-stuck"

// stuckEngine is a Go engine (registered with rig.WithEngine) whose Run
// ignores its context: it returns only when the test releases it, at the
// latest in its cleanup (registered after the session's, so it runs before
// the session's cleanup Shutdown). A poked engine, once poked (after the
// interrupt it ignored), prints lateLine, closes emitted and returns.
type stuckEngine struct {
	release  chan struct{}
	started  chan struct{}
	returned chan struct{}
	poke     chan struct{} // nil: not poked
	emitted  chan struct{}
	once     sync.Once
	relOnce  sync.Once
}

func newStuckEngine(poked bool) *stuckEngine {
	e := &stuckEngine{release: make(chan struct{}), started: make(chan struct{}), returned: make(chan struct{})}
	if poked {
		e.poke, e.emitted = make(chan struct{}), make(chan struct{})
	}
	return e
}

// lateLine is what a poked stuckEngine prints once poked.
const lateLine = "stuck: printing after the interrupt\n"

// newStuckSession makes a session of r and releases eng when the test ends.
func (e *env) newStuckSession(r *rig.Rig, eng *stuckEngine) *rig.Session {
	e.t.Helper()
	s := e.newSession(r)
	e.t.Cleanup(eng.unblock)
	return s
}

func (e *stuckEngine) option() rig.Option {
	return rig.WithEngine(stuckEngineName, func(rig.Profile) (engine.Engine, error) { return e, nil })
}

func (e *stuckEngine) Name() string { return stuckEngineName }

func (e *stuckEngine) Run(_ context.Context, _ engine.Turn, sink engine.Sink) (engine.Result, error) {
	defer close(e.returned)
	sink.Output(engine.Stdout, "stuck: started\n")
	e.once.Do(func() { close(e.started) })
	if e.poke != nil {
		select {
		case <-e.poke:
			sink.Output(engine.Stdout, lateLine)
			close(e.emitted)
			return engine.Result{ExitCode: 0}, nil
		case <-e.release:
		}
	}
	<-e.release
	return engine.Result{ExitCode: 0}, nil
}

func (e *stuckEngine) unblock() { e.relOnce.Do(func() { close(e.release) }) }

func (e *stuckEngine) waitStarted(t testing.TB) {
	t.Helper()
	select {
	case <-e.started:
	case <-time.After(WaitTimeout):
		t.Fatal("the stuck engine did not start")
	}
}

func stuckProfile(placement rig.Placement, root string) rig.Profile {
	return rig.Profile{Name: "stuck", Engine: stuckEngineName, Placement: placement, Root: root}
}

// shutdownAsync runs Shutdown(ctx) and returns where its result arrives.
func shutdownAsync(s *rig.Session, ctx context.Context) <-chan error {
	ch := make(chan error, 1)
	go func() { ch <- s.Shutdown(ctx) }()
	return ch
}

// result waits (bounded by WaitTimeout) for a Shutdown result.
func result(t testing.TB, ch <-chan error, what string) error {
	t.Helper()
	select {
	case err := <-ch:
		return err
	case <-time.After(WaitTimeout):
		t.Fatalf("%s did not return: Shutdown waits for an engine that ignores its context", what)
		return nil
	}
}

// checkAbandoned checks what a Shutdown that gave up on the engine left:
// the typed error naming the turn, a journal ending with
// TurnInterrupted{engine_unresponsive} and SessionStopped, a catalog entry
// left running without an open turn (listed crashed), and free leases.
func checkAbandoned(t testing.TB, e *env, s *rig.Session, ti rig.TurnInfo, err error, leaseNames ...string) *rig.EngineUnresponsiveError {
	t.Helper()
	id := s.SessionID()
	stuck := as[*rig.EngineUnresponsiveError](t, err, "Shutdown of a session whose engine ignores its context")
	if stuck.Session != id || stuck.Turn != ti.ID || stuck.Index != ti.Index {
		t.Errorf("EngineUnresponsiveError %+v, want session %s turn %d (%s)", stuck, id, ti.Index, ti.ID)
	}
	recs := readJournal(t, e.raw, id)
	ints, intRecs := find[event.TurnInterrupted](recs)
	if len(ints) != 1 || ints[0].TurnID != ti.ID || ints[0].Index != ti.Index || ints[0].Reason != event.ReasonEngineStuck {
		t.Errorf("TurnInterrupted %+v, want one {%s %d %s}:%s", ints, ti.ID, ti.Index, event.ReasonEngineStuck, describe(recs))
	}
	if n := len(recs); n < 2 || len(intRecs) != 1 || recs[n-2].Seq != intRecs[0].Seq ||
		recs[n-1].Kind != journal.KindEvent || recs[n-1].Event.Type() != event.TypeSessionStopped {
		t.Errorf("journal does not end with TurnInterrupted{%s}, SessionStopped:%s", event.ReasonEngineStuck, describe(recs))
	}
	if dones, _ := find[event.TurnDone](recs); len(dones) != 0 {
		t.Errorf("the abandoned turn is also recorded done: %+v", dones)
	}
	c, cerr := rig.ReadCatalog(context.Background(), e.raw, id.String())
	if cerr != nil || c.State != rig.CatalogRunning || c.OpenTurn != "" || c.Reason == "" {
		t.Errorf("catalog entry %+v (%v), want running (not cleanly stopped) with a reason and no open turn", c, cerr)
	}
	list, lerr := rig.ListSessions(context.Background(), e.raw)
	if lerr != nil {
		t.Fatal(lerr)
	}
	for _, info := range list {
		if info.ID == id.String() && info.State != rig.StateCrashed {
			t.Errorf("session listed %s after an abandoned shutdown, want %s", info.State, rig.StateCrashed)
		}
	}
	// Free: another holder can take each lease at once.
	for _, name := range leaseNames {
		l, err := e.raw.Acquire(context.Background(), name)
		if err != nil {
			t.Errorf("lease %s after Shutdown gave up on the engine: %v, want it free", name, err)
			continue
		}
		_ = l.Release(context.Background())
	}
	// The root lease went first, each once.
	var order []string
	for _, op := range e.fs.releases() {
		if slices.Contains(leaseNames, op.name) {
			order = append(order, op.name)
		}
	}
	if !slices.Equal(order, leaseNames) {
		t.Errorf("releases %v, want %v (root lease first, each once)", order, leaseNames)
	}
	return stuck
}

// checkNothingLate releases the engine, waits until its late return is
// over (WaitIdle returns once the runtime has handled it) and checks that
// it journaled nothing and rewrote no catalog entry.
func checkNothingLate(t testing.TB, e *env, s *rig.Session, eng *stuckEngine) {
	t.Helper()
	id := s.SessionID()
	before := tip(t, e.raw, id)
	cat, err := rig.ReadCatalog(context.Background(), e.raw, id.String())
	if err != nil {
		t.Fatal(err)
	}
	eng.unblock()
	select {
	case <-eng.returned:
	case <-time.After(WaitTimeout):
		t.Fatal("the released engine did not return")
	}
	waitTurnOver(t, s)
	if after := tip(t, e.raw, id); after != before {
		t.Errorf("the abandoned engine's late return appended to the journal: tip %d -> %d:%s", before, after, describe(readJournal(t, e.raw, id)[before:]))
	}
	if c, err := rig.ReadCatalog(context.Background(), e.raw, id.String()); err != nil || !c.Updated.Equal(cat.Updated) || c.State != cat.State {
		t.Errorf("the abandoned engine's late return rewrote the catalog entry: %+v -> %+v (%v)", cat, c, err)
	}
}

// Shutdown bounded by its caller's deadline gives up on an engine that
// ignores its context: *rig.EngineUnresponsiveError, the turn journaled
// TurnInterrupted{engine_unresponsive}, root and session lease free; a
// concurrent Shutdown gets the same result; the engine's late return
// journals nothing.
func testShutdownStuckDeadline(t *testing.T, e *env) {
	root := canonical(t, t.TempDir())
	eng := newStuckEngine(false)
	r := e.define(rig.WithProfile(stuckProfile(rig.PlacementExclusive, root)), eng.option())
	s := e.newStuckSession(r, eng)
	sessionName := storage.SessionName(s.SessionID().String())
	roots := e.fs.names("workspace-roots/")
	if len(roots) != 1 {
		t.Fatalf("root leases %v, want one", roots)
	}
	ti := submit(t, s, "ignore the interrupt")
	eng.waitStarted(t)

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	first := shutdownAsync(s, ctx)
	eventually(t, "Shutdown to begin", func() bool { return s.Status().Closed })
	second := shutdownAsync(s, waitCtx(t))
	err := result(t, first, "Shutdown with a deadline")
	if err2 := result(t, second, "a concurrent Shutdown"); err2 != err {
		t.Errorf("concurrent Shutdown returned %v, the first %v; want the same result", err2, err)
	}
	checkAbandoned(t, e, s, ti, err, roots[0], sessionName)
	if err3 := s.Shutdown(waitCtx(t)); err3 != err {
		t.Errorf("later Shutdown returned %v, want the first result %v", err3, err)
	}
	if _, err := s.Submit(waitCtx(t), "echo late"); err != rig.ErrSessionClosed {
		t.Errorf("Submit after Shutdown: %v, want rig.ErrSessionClosed", err)
	}
	checkNothingLate(t, e, s, eng)
}

// Without a deadline Shutdown waits the rig's shutdown grace, then gives
// up the same way.
func testShutdownStuckGrace(t *testing.T, e *env) {
	const grace = 50 * time.Millisecond
	eng := newStuckEngine(false)
	r := e.define(rig.WithProfile(stuckProfile(rig.PlacementSession, "")), eng.option(), rig.WithShutdownGrace(grace))
	s := e.newStuckSession(r, eng)
	ti := submit(t, s, "ignore the interrupt")
	eng.waitStarted(t)
	err := result(t, shutdownAsync(s, context.Background()), "Shutdown without a deadline")
	stuck := checkAbandoned(t, e, s, ti, err, storage.SessionName(s.SessionID().String()))
	if stuck.Waited < grace {
		t.Errorf("Shutdown gave up after %s, before the grace %s", stuck.Waited, grace)
	}
	checkNothingLate(t, e, s, eng)
}

// An abandoned engine that prints and returns while Shutdown journals its
// turn's TurnInterrupted (the hub still open) gets nothing delivered or
// journaled: no output, no second end of the turn. (The output is dropped
// before it reaches the hub, which a subscriber sees at once; a broken
// guard further in, between the journal and the hub's stop, loses the race
// with SessionStopped only some of the time: run the case repeatedly.)
func testShutdownStuckOutput(t *testing.T, e *env) {
	eng := newStuckEngine(true)
	r := e.define(rig.WithProfile(stuckProfile(rig.PlacementSession, "")), eng.option(),
		rig.WithShutdownGrace(50*time.Millisecond),
		rig.WithCheckpoints(time.Millisecond, len(lateLine))) // lateLine is journaled at once
	s := e.newStuckSession(r, eng)
	id := s.SessionID()
	name := storage.SessionName(id.String())
	delivered := make(chan struct{})
	var deliveredOnce sync.Once
	c := collect(t, s.Subscribe(hub.Filter{AllLoops: true}), func(env event.Envelope) {
		if d, ok := env.Event.(event.OutputDelta); ok && d.Text == lateLine {
			deliveredOnce.Do(func() { close(delivered) })
		}
	})
	// While TurnInterrupted is being appended, the engine prints; the
	// append goes on once the output was dropped (emitted) or is on its
	// way to the journal (delivered live).
	var pokeOnce sync.Once
	e.fs.onRecord(func(n string, rec journal.Record) error {
		if _, ok := rec.Event.(event.TurnInterrupted); ok && n == name {
			pokeOnce.Do(func() {
				close(eng.poke)
				select {
				case <-eng.emitted:
				case <-delivered:
				case <-time.After(WaitTimeout):
					t.Error("the poked engine did not print")
				}
			})
		}
		return nil
	})
	ti := submit(t, s, "print after the interrupt")
	eng.waitStarted(t)
	waitJournal(t, e.raw, id, "the engine's first output", func(r journal.Record) bool {
		o, ok := r.Event.(event.TurnOutput)
		return ok && strings.Contains(o.Text, "started")
	})
	err := result(t, shutdownAsync(s, context.Background()), "Shutdown of a printing engine")
	e.fs.setAppendFault(nil)
	c.wait(t, "SessionStopped", isType[event.SessionStopped]) // everything delivered before it is in c
	for _, env := range c.snapshot() {
		if d, ok := env.Event.(event.OutputDelta); ok && d.Text == lateLine {
			t.Errorf("output the engine printed after Shutdown gave up on it was delivered live")
		}
	}
	checkAbandoned(t, e, s, ti, err, name)
	recs := readJournal(t, e.raw, id)
	if _, intRecs := find[event.TurnInterrupted](recs); len(intRecs) == 1 {
		if after := recs[intRecs[0].Seq:]; len(after) != 1 {
			t.Errorf("records after the abandoned turn's TurnInterrupted: %v, want only SessionStopped", typesOf(after))
		}
	}
	if out := turnOutput(recs, ti.ID); strings.Contains(out, lateLine) || !strings.Contains(out, "started") {
		t.Errorf("journaled output of the abandoned turn %q, want what it printed before the interrupt only", out)
	}
	checkNothingLate(t, e, s, eng)
}
