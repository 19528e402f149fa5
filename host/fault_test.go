package host

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"looprig/rig"
	"looprig/rig/engine"
	"looprig/rig/event"
	"looprig/rig/explain"
	"looprig/rig/fault"
	"looprig/rig/storage"
)

// A session that faults while its turn runs (here its exclusive root's
// lease is lost; its journal still takes appends) is shut down by Serve in
// order: the turn ends interrupted by the lost lease, SessionStopped is
// journaled after it, and the session lease is free when Serve returns.
// Before, Serve returned at once and left all of that to the process's
// exit.
func TestFaultedSessionShutDownInOrder(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	p := gateProfile()
	p.Placement, p.Root = rig.PlacementExclusive, root
	f := startWith(t, []rig.Option{rig.WithProfile(p)})
	c := f.dial()
	ti, err := c.Submit(wctx(t), "echo started; sleep 30")
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "the turn's output", func() bool {
		_, ok := find[event.TurnOutput](f.journalEvents(0))
		return ok
	})
	sum := sha256.Sum256([]byte(root))
	l, err := f.store.Break(wctx(t), storage.RootLeaseName(hex.EncodeToString(sum[:])))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(context.Background())

	served := f.wait()
	if x := explain.Explain(served); x.Kind != fault.KindLeaseLost {
		t.Fatalf("Serve returned %v, want the lost root lease", served)
	}
	evs := durable(f.journalEvents(0))
	var tail []string
	ended := false
	for _, e := range evs {
		if len(tail) > 0 || e.Event.Type() == event.TypeTurnInterrupted {
			tail = append(tail, string(e.Event.Type()))
		}
		if end, ok := e.Event.(event.TurnInterrupted); ok && end.TurnID == ti.ID && end.Reason == event.ReasonLeaseLost {
			ended = true
		}
	}
	if _, stopped := evs[len(evs)-1].Event.(event.SessionStopped); !ended || !stopped {
		t.Fatalf("the journal's events from the turn's end: %v; want TurnInterrupted{lease_lost} of the turn, then SessionStopped last\n%+v", tail, evs)
	}
	st, err := f.store.Probe(wctx(t), storage.SessionName(f.s.SessionID().String()))
	if err != nil || st.Held {
		t.Fatalf("the session lease after Serve returned: %+v, %v; want it released", st, err)
	}
}

// stuckEngine ignores its context: its Run returns only once the test
// releases it.
type stuckEngine struct {
	started chan struct{}
	release chan struct{}
	once    sync.Once
}

func (e *stuckEngine) Name() string { return "host-test-stuck" }

func (e *stuckEngine) Run(ctx context.Context, turn engine.Turn, sink engine.Sink) (engine.Result, error) {
	e.once.Do(func() { close(e.started) })
	<-e.release
	return engine.Result{ExitCode: 0}, nil
}

// A shutdown request waits for the running turn no longer than the rig's
// shutdown grace, not the request's own bound (30 s): a turn whose engine
// ignores the interrupt is abandoned after the grace.
func TestShutdownRequestHonoursTheGrace(t *testing.T) {
	eng := &stuckEngine{started: make(chan struct{}), release: make(chan struct{})}
	t.Cleanup(func() { close(eng.release) })
	p := gateProfile()
	p.Engine = eng.Name()
	const grace = 300 * time.Millisecond
	f := startWith(t, []rig.Option{rig.WithProfile(p), rig.WithShutdownGrace(grace),
		rig.WithEngine(eng.Name(), func(rig.Profile) (engine.Engine, error) { return eng, nil })})
	c := f.dial()
	if _, err := c.Submit(wctx(t), "anything"); err != nil {
		t.Fatal(err)
	}
	<-eng.started
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := time.Now()
	err := c.Shutdown(ctx)
	took := time.Since(start)
	if errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown still waiting after %s (the grace is %s)", took.Round(time.Millisecond), grace)
	}
	asRemote(t, err, fault.KindEngineUnresponsive)
	if took > grace+5*time.Second {
		t.Fatalf("Shutdown took %s, want about the grace (%s)", took.Round(time.Millisecond), grace)
	}
	t.Logf("Shutdown returned after %s (grace %s)", took.Round(time.Millisecond), grace)
}
