package rig_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"looprig/rig"
	"looprig/rig/engine"
	"looprig/rig/event"
	"looprig/rig/journal"
	"looprig/rig/storage"
	"looprig/rig/storage/memstore"
)

// A live session's Status and catalog entry are projections of its fold
// (rig.State, session_status.go and session_catalog.go): the running
// turn's start they report is the one its end reports, not a second clock
// reading of the session's own (they once disagreed: Status told the time
// Submit began, the fold the time TurnStarted was journaled).
func TestStatusTurnIsTheFolds(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	store := memstore.New()
	r, err := rig.Define(rig.WithStore(store), rig.WithWorkspaces(t.TempDir()), rig.WithProfile(rig.DefaultProfile()))
	if err != nil {
		t.Fatal(err)
	}
	s, err := r.NewSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown(context.Background())
	ti, err := s.Submit(ctx, "sleep 30")
	if err != nil {
		t.Fatal(err)
	}
	st := s.Status()
	if st.Turn == nil || st.Turn.ID != ti.ID || st.Turn.Index != ti.Index || st.Turn.Input != "sleep 30" {
		t.Fatalf("Status().Turn = %+v after Submit returned, want turn %s", st.Turn, ti.ID)
	}
	started := st.Turn.Started
	c, err := rig.ReadCatalog(ctx, store, s.SessionID().String())
	if err != nil {
		t.Fatal(err)
	}
	if c.OpenTurn != ti.ID || !c.TurnSince.Equal(started) {
		t.Errorf("catalog has turn %q since %v, Status turn %s since %v", c.OpenTurn, c.TurnSince, ti.ID, started)
	}
	if err := s.Interrupt(ctx); err != nil {
		t.Fatal(err)
	}
	end := s.Status().LastEnd
	if end == nil || end.TurnID != ti.ID || end.Outcome != rig.TurnOutcomeInterrupted {
		t.Fatalf("Status().LastEnd = %+v after Interrupt, want turn %s interrupted", end, ti.ID)
	}
	if !end.Started.Equal(started) {
		t.Errorf("the turn ended having started at %v; while it ran, Status said %v", end.Started, started)
	}
}

// gateStuckEngine opens a gate and waits for its answer whatever its
// context says: a Shutdown gives up on it with the gate open.
type gateStuckEngine struct{}

func (e *gateStuckEngine) Name() string { return "gatestuck" }

func (e *gateStuckEngine) Run(_ context.Context, _ engine.Turn, sink engine.Sink) (engine.Result, error) {
	ok, err := sink.Gate(context.Background(), "go on?")
	if err != nil || !ok {
		return engine.Result{ExitCode: 1}, err
	}
	return engine.Result{}, nil
}

// A turn Shutdown gives up on while it waits at a gate has its gate closed
// (engine_unresponsive) before its end: the gate open is the session's
// fold's (State.Gate), not a record of the turn's own.
func TestAbandonedTurnClosesItsGate(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	store := memstore.New()
	eng := &gateStuckEngine{}
	r, err := rig.Define(rig.WithStore(store), rig.WithWorkspaces(t.TempDir()),
		rig.WithProfile(rig.Profile{Name: "gatestuck", Engine: eng.Name(), Placement: rig.PlacementSession}),
		rig.WithEngine(eng.Name(), func(rig.Profile) (engine.Engine, error) { return eng, nil }),
		rig.WithShutdownGrace(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	s, err := r.NewSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ti, err := s.Submit(ctx, "x")
	if err != nil {
		t.Fatal(err)
	}
	for s.Status().Gate == nil {
		if ctx.Err() != nil {
			t.Fatal("the gate never opened")
		}
		time.Sleep(10 * time.Millisecond)
	}
	gate := s.Status().Gate
	var stuck *rig.EngineUnresponsiveError
	// No deadline: the rig's shutdown grace bounds the wait for the engine.
	if err := s.Shutdown(context.Background()); !errors.As(err, &stuck) {
		t.Fatalf("Shutdown = %v, want *rig.EngineUnresponsiveError", err)
	}
	rp, err := journal.NewEventReplayer(ctx, store, storage.SessionName(s.SessionID().String()), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer rp.Close()
	var order []string
	for rp.Next() {
		switch ev := rp.Envelope().Event.(type) {
		case event.GateResolved:
			order = append(order, "resolved "+ev.GateID+" "+ev.Reason)
		case event.TurnInterrupted:
			order = append(order, "interrupted "+ev.TurnID+" "+ev.Reason)
		}
	}
	want := []string{"resolved " + gate.ID + " " + event.ReasonEngineStuck, "interrupted " + ti.ID + " " + event.ReasonEngineStuck}
	if !slices.Equal(order, want) {
		t.Errorf("journal has %q, want %q", order, want)
	}
}
