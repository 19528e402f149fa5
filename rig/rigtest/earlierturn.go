package rigtest

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"looprig/rig"
	"looprig/rig/engine"
	"looprig/rig/event"
	"looprig/rig/journal"
	"looprig/rig/storage"
)

// earlierTurnCases check that no turn of an earlier epoch runs beside the
// session's new owner on this machine: the process record a holder keeps
// of its running turn, BreakLease stopping that turn when its holder
// cannot (here: a deaf holder, which does not notice the break, as a
// stopped one), RestoreSession refusing to start while it runs, and a
// holder that resumes after a break recording, and so running, no turn.
var earlierTurnCases = []testCase{
	{"ProcessRecorded", testProcessRecorded},
	{"BreakStopsTheTurn", testBreakStopsTheTurn},
	{"RestoreRefusedWhileItRuns", testRestoreRefusedWhileTurnRuns},
	{"ResumedHolderRunsNoTurn", testResumedHolderRunsNoTurn},
}

// processRecord reads session id's process record as JSON fields (nil
// when there is none).
func processRecord(t testing.TB, store storage.Store, id uuid.UUID) map[string]any {
	t.Helper()
	e, err := store.Get(context.Background(), "sessions/"+id.String()+"/process")
	if rig.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatalf("read the process record: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal(e.Value, &m); err != nil {
		t.Fatalf("process record %q: %v", e.Value, err)
	}
	return m
}

// waitProcs waits until a process carrying marker runs.
func waitProcs(t testing.TB, marker string) {
	t.Helper()
	if procAvailable() {
		eventually(t, "the turn carrying "+marker+" to run", func() bool { return len(procsWith(marker)) > 0 })
	}
}

// deafSession is a shell session whose holder does not notice that its
// lease was broken, as a stopped holder would not.
func deafSession(t *testing.T, e *env) *rig.Session {
	t.Helper()
	r := e.define(rig.WithProfile(gateProfile()))
	e.fs.setDeaf(true)
	s := e.newSession(r)
	e.fs.setDeaf(false)
	return s
}

// A running turn is recorded with its process group, at the session's
// epoch; once it ended, the record names no turn.
func testProcessRecorded(t *testing.T, e *env) {
	s := e.newSession(e.define(rig.WithProfile(gateProfile())))
	ti := submit(t, s, outputInput(newMarker()))
	waitJournal(t, e.raw, s.SessionID(), "TurnOutput", isOutput)
	p := processRecord(t, e.raw, s.SessionID())
	if p == nil || p["turn"] != ti.ID || p["epoch"] != float64(s.Epoch()) || p["pgid"].(float64) <= 1 || p["host"] == "" || p["boot"] == "" {
		t.Fatalf("process record of the running turn: %v", p)
	}
	if err := s.Interrupt(waitCtx(t)); err != nil {
		t.Fatal(err)
	}
	if p := processRecord(t, e.raw, s.SessionID()); p == nil || p["turn"] != nil || p["pgid"] != nil || p["epoch"] != float64(s.Epoch()) {
		t.Fatalf("process record after the turn: %v, want the epoch and no turn", p)
	}
}

// BreakLease stops the running turn of a holder that does not notice the
// break before it returns, journals it as interrupted by the lost lease
// and claims the process record; the holder, once it writes, is fenced
// off.
func testBreakStopsTheTurn(t *testing.T, e *env) {
	s := deafSession(t, e)
	id := s.SessionID()
	m := newMarker()
	// Quiet after its first line: a checkpoint of more output would meet
	// the break's fence, and the holder would stop its turn itself.
	ti := submit(t, s, quietInput(m))
	waitJournal(t, e.raw, id, "TurnOutput", isOutput)
	waitProcs(t, m)

	res, err := rig.BreakLease(t.Context(), e.fs, id, rig.WithStopGrace(2*time.Second))
	if err != nil {
		t.Fatalf("BreakLease: %v", err)
	}
	if res.TurnErr != nil || res.CloseErr != nil {
		t.Fatalf("BreakLease: TurnErr %v, CloseErr %v", res.TurnErr, res.CloseErr)
	}
	bt := res.Turn
	if bt == nil || bt.ID != ti.ID || bt.Index != ti.Index || bt.Epoch != s.Epoch() || bt.PGID <= 1 || !bt.Here || !bt.Signalled || !bt.Gone {
		t.Fatalf("BreakLease's turn = %+v, want turn %s stopped here", bt, ti.ID)
	}
	if procAvailable() {
		noProcs(t, m, "after BreakLease returned")
	}
	if !slices.Equal(res.Interrupted, []string{ti.ID}) {
		t.Fatalf("BreakLease journaled %v as interrupted, want [%s]", res.Interrupted, ti.ID)
	}
	recs := readJournal(t, e.raw, id)
	i := lastFenceIndex(recs)
	if recs[i].Epoch != res.Epoch {
		t.Fatalf("the last fence is at epoch %d, want the break's %d:%s", recs[i].Epoch, res.Epoch, describe(recs))
	}
	ends, _ := find[event.TurnInterrupted](recs[i:])
	if len(ends) != 1 || ends[0].TurnID != ti.ID || ends[0].Reason != event.ReasonLeaseLost {
		t.Fatalf("after the break's fence:%s\nwant TurnInterrupted{lease_lost} of the turn", describe(recs[i:]))
	}
	if p := processRecord(t, e.raw, id); p == nil || p["turn"] != nil || p["epoch"] != float64(res.Epoch) {
		t.Fatalf("process record after the break: %v, want it claimed at epoch %d", p, res.Epoch)
	}
	// The holder finds out at its next append (its turn's end).
	eventually(t, "the old holder to fault", func() bool { return s.Err() != nil })
	waitTurnOver(t, s)

	// Nothing is left for a restore to close.
	r := e.restore(e.define(rig.WithProfile(gateProfile())), id)
	if got := r.Restored().Interrupted; len(got) != 0 {
		t.Fatalf("the restore after the break interrupted %v, want nothing", got)
	}
}

// A holder's lease freed without its turn being stopped (broken by a bare
// store break here; a NATS lease expiring under a stopped holder): a
// restore is refused while the turn runs (turn_running, naming the group),
// and BreakLease of the free lease stops it, after which the restore
// works.
func testRestoreRefusedWhileTurnRuns(t *testing.T, e *env) {
	s := deafSession(t, e)
	id := s.SessionID()
	m := newMarker()
	// It prints once, then works quietly: its deaf holder, which appends
	// nothing more, does not find out that its journal was fenced.
	ti := submit(t, s, ": "+m+"; echo line-0; sleep 300")
	waitJournal(t, e.raw, id, "TurnOutput", isOutput)
	bl := e.breakLease(t, storage.SessionName(id.String()))
	if err := bl.Release(t.Context()); err != nil {
		t.Fatal(err)
	}

	r := e.define(rig.WithProfile(gateProfile()))
	_, err := r.RestoreSession(t.Context(), id)
	re := as[*rig.RestoreError](t, err, "a restore while the earlier turn runs")
	running := as[*rig.TurnRunningError](t, err, "a restore while the earlier turn runs")
	if re.Kind != rig.RestoreTurnRunning || running.Turn != ti.ID || running.Index != ti.Index || running.Epoch != s.Epoch() || running.PGID <= 1 {
		t.Fatalf("restore refused with %v (%+v), want turn_running naming turn %s", err, running, ti.ID)
	}
	waitProcs(t, m) // the refusal touched nothing
	if _, got := find[event.RestoreErrored](readJournal(t, e.raw, id)); len(got) != 1 {
		t.Fatalf("the refused restore journaled %d RestoreErrored, want 1", len(got))
	}

	res, err := rig.BreakLease(t.Context(), e.fs, id, rig.WithStopGrace(2*time.Second))
	if err != nil {
		t.Fatalf("BreakLease of the free lease: %v", err)
	}
	if res.Held || res.Epoch == 0 || res.Turn == nil || !res.Turn.Signalled || !res.Turn.Gone || !slices.Equal(res.Interrupted, []string{ti.ID}) {
		t.Fatalf("BreakLease of the free lease = %+v (turn %+v), want it taken to stop turn %s", res, res.Turn, ti.ID)
	}
	if procAvailable() {
		noProcs(t, m, "after BreakLease of the free lease")
	}
	again, err := rig.BreakLease(t.Context(), e.fs, id)
	if err != nil || again.Epoch != 0 || again.Turn != nil {
		t.Fatalf("BreakLease once the turn is gone = %+v, %v; want nothing done", again, err)
	}
	e.restore(r, id)
}

// startedEngine is a Go engine that waits for the test before it reports
// its turn's process group (a pretend one) through Turn.Started, and
// returns what Started returned.
type startedEngine struct {
	once    sync.Once
	running chan struct{}
	proceed chan struct{}
	result  chan error
}

func (g *startedEngine) Name() string { return "rigtest-started" }

func (g *startedEngine) Run(ctx context.Context, turn engine.Turn, sink engine.Sink) (engine.Result, error) {
	g.once.Do(func() { close(g.running) })
	<-g.proceed
	err := errors.New("no Turn.Started")
	if turn.Started != nil {
		err = turn.Started(1 << 22) // beyond any pid: nothing is ever signalled
	}
	g.result <- err
	return engine.Result{ExitCode: engine.NoExitCode}, err
}

// A holder that had journaled TurnStarted but not yet started the turn's
// processes when its lease was broken (a stopped holder, resuming later)
// cannot record the turn: the break claimed the process record at its
// epoch, so the engine is told to run nothing, and the holder faults.
func testResumedHolderRunsNoTurn(t *testing.T, e *env) {
	g := &startedEngine{running: make(chan struct{}), proceed: make(chan struct{}), result: make(chan error, 1)}
	p := gateProfile()
	p.Engine = g.Name()
	r := e.define(rig.WithProfile(p), rig.WithEngine(g.Name(), func(rig.Profile) (engine.Engine, error) { return g, nil }))
	e.fs.setDeaf(true)
	s := e.newSession(r)
	e.fs.setDeaf(false)
	t.Cleanup(func() {
		select {
		case <-g.proceed:
		default:
			close(g.proceed)
		}
	})
	submit(t, s, "anything")
	<-g.running
	if _, err := rig.BreakLease(t.Context(), e.fs, s.SessionID()); err != nil {
		t.Fatalf("BreakLease: %v", err)
	}
	close(g.proceed)
	err := <-g.result
	as[*journal.JournalLeaseLostError](t, err, "Turn.Started after the break")
	eventually(t, "the old holder to fault", func() bool { return s.Err() != nil })
}
