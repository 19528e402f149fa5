package rigtest

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"looprig/rig"
	"looprig/rig/event"
	"looprig/rig/hub"
	"looprig/rig/journal"
	"looprig/rig/storage"
)

var leaseLossCases = []testCase{
	{"SessionLeaseBroken", func(t *testing.T, e *env) { testSessionLeaseBroken(t, e, false) }},
	{"SessionLeaseBrokenAtGate", func(t *testing.T, e *env) { testSessionLeaseBroken(t, e, true) }},
	{"StaleWriterFencedOff", testStaleWriterFenced},
	{"RootLeaseBroken", testRootLeaseBroken},
}

func (e *env) breakLease(t testing.TB, name string) storage.Lease {
	t.Helper()
	l, err := e.fs.Break(context.Background(), name)
	if err != nil {
		t.Fatalf("Break(%s): %v", name, err)
	}
	t.Cleanup(func() { _ = l.Release(context.Background()) })
	return l
}

// openGate submits, on a session whose profile gates "touch gated" (see
// gateProfile), a turn that stops at a gate before running anything, and
// returns it and the gate's id once the session reports both open: a
// healthy session would now accept RespondGate and Interrupt, and refuse
// Submit only as *rig.BusyError. The gated command would create file in
// the workspace.
func openGate(t testing.TB, e *env, s *rig.Session) (ti rig.TurnInfo, gateID, file string) {
	t.Helper()
	file = "gated-" + newMarker()
	ti = submit(t, s, "touch "+file)
	opened := waitJournal(t, e.raw, s.SessionID(), "GateOpened", func(r journal.Record) bool {
		o, ok := r.Event.(event.GateOpened)
		return ok && o.TurnID == ti.ID
	}).Event.(event.GateOpened)
	eventually(t, "the turn and its gate to be open", func() bool {
		st := s.Status()
		return st.Turn != nil && st.Turn.ID == ti.ID && st.Gate != nil && st.Gate.ID == opened.GateID
	})
	return ti, opened.GateID, file
}

// The mutations a stale holder attempts (tryStaleWrites).
const (
	opSubmit      = "Submit"
	opInterrupt   = "Interrupt"
	opRespondGate = "RespondGate"
)

var allStaleOps = []string{opRespondGate, opInterrupt, opSubmit}

// tryStaleWrites makes s, whose lease is gone, attempt the mutations ops in
// that order; gate is the gate its turn was waiting at when the lease went
// ("" when none was open). Each must fail because of the lease: errors.As
// finds E, the lease-loss error the session latches — not *rig.NoTurnError,
// *rig.NoGateError or *rig.BusyError, which say nothing about the lease —
// and the latched fault is E too.
func tryStaleWrites[E error](t testing.TB, s *rig.Session, gate string, ops ...string) {
	t.Helper()
	if gate == "" {
		gate = "no-gate-open"
	}
	for _, op := range ops {
		ctx := waitCtx(t)
		var err error
		switch op {
		case opSubmit:
			_, err = s.Submit(ctx, "echo stale")
		case opInterrupt:
			err = s.Interrupt(ctx)
		case opRespondGate:
			err = s.RespondGate(ctx, gate, true, testClient)
		default:
			t.Fatalf("unknown stale mutation %q", op)
		}
		var lost E
		var noTurn *rig.NoTurnError
		var noGate *rig.NoGateError
		var busy *rig.BusyError
		switch {
		case err == nil:
			t.Errorf("stale %s succeeded, want %T", op, lost)
		case errors.As(err, &noTurn) || errors.As(err, &noGate) || errors.As(err, &busy):
			t.Errorf("stale %s: %v (%T): refused for the turn or the gate, not for the lease", op, err, err)
		case !errors.As(err, &lost):
			t.Errorf("stale %s: got %T (%v), want an error errors.As finds as %T", op, err, err, lost)
		}
	}
	var lost E
	if err := s.Err(); !errors.As(err, &lost) {
		t.Errorf("latched fault of the stale session: %v, want %T", err, lost)
	}
}

// checkOnlyBreakerAfterFence checks that after the breaker's fence the
// journal holds only what the breaker wrote.
func checkOnlyBreakerAfterFence(t testing.TB, e *env, s *rig.Session, bj *journal.SessionJournal, breakerSeqs []uint64) {
	t.Helper()
	recs := readJournal(t, e.raw, s.SessionID())
	var after []uint64
	for _, r := range recs {
		if r.Seq > bj.FenceSeq() {
			after = append(after, r.Seq)
		}
	}
	if !slices.Equal(after, breakerSeqs) {
		t.Errorf("records after the breaker's fence %d: %v, want only the breaker's %v:%s", bj.FenceSeq(), after, breakerSeqs, describe(recs[bj.FenceSeq()-1:]))
	}
	if f := recs[bj.FenceSeq()-1]; f.Kind != journal.KindFence || f.Epoch != bj.Epoch() {
		t.Errorf("record %d is %v, want the breaker's fence", f.Seq, typesOf([]journal.Record{f}))
	}
}

// Breaking the session lease faults the session: SessionFaulted reaches
// subscribers, Submit fails with *journal.JournalLeaseLostError, and
// nothing of the stale holder lands after the breaker's fence. A running
// turn is stopped, its processes gone (atGate false); a turn waiting at a
// gate (atGate true) ends without running the gated command, and every
// mutation (RespondGate on that gate, Interrupt, Submit) is refused for the
// lease.
func testSessionLeaseBroken(t *testing.T, e *env, atGate bool) {
	s := e.newSession(e.define(rig.WithProfile(gateProfile())))
	id := s.SessionID()
	name := storage.SessionName(id.String())
	c := collect(t, s.Subscribe(hub.Filter{AllLoops: true}), nil)
	m := newMarker()
	var gate, file string
	if atGate {
		_, gate, file = openGate(t, e, s)
	} else {
		submit(t, s, outputInput(m))
		waitJournal(t, e.raw, id, "TurnOutput", isOutput)
	}

	bl := e.breakLease(t, name)
	if bl.Epoch() <= s.Epoch() {
		t.Errorf("breaker's epoch %d is not after the holder's %d", bl.Epoch(), s.Epoch())
	}
	c.wait(t, "SessionFaulted", isType[event.SessionFaulted])
	select {
	case <-s.Done():
	case <-time.After(WaitTimeout):
		t.Fatal("faulted session is not done")
	}
	_, err := s.Submit(waitCtx(t), "echo after-break")
	lost := as[*journal.JournalLeaseLostError](t, err, "Submit after the lease was broken")
	if lost.Epoch != s.Epoch() {
		t.Errorf("JournalLeaseLostError epoch %d, want %d", lost.Epoch, s.Epoch())
	}
	as[*journal.JournalLeaseLostError](t, s.Err(), "latched fault")

	bj, err := journal.Open(context.Background(), e.raw, name, bl)
	if err != nil {
		t.Fatalf("breaker opens the journal: %v", err)
	}
	if atGate {
		tryStaleWrites[*journal.JournalLeaseLostError](t, s, gate, allStaleOps...)
	}
	waitTurnOver(t, s)
	if atGate && exists(filepath.Join(s.Workspace(), file)) {
		t.Errorf("the gated command of the stale holder ran")
	}
	noProcs(t, m, "after the lease loss stopped the turn")
	_ = s.Shutdown(waitCtx(t)) // tries SessionStopped, must not land
	seq, err := bj.AppendEvent(context.Background(), "", event.SessionIdle{})
	if err != nil {
		t.Fatalf("breaker appends: %v", err)
	}
	checkOnlyBreakerAfterFence(t, e, s, bj, []uint64{seq})
}

// A holder that has not noticed the break is fenced off by the journal's
// compare-and-swap: its writes fail and none lands after the breaker's
// fence. Each mutation that writes a command is tried first, while the
// holder still believes it owns the session, so that its own append meets
// the fence: RespondGate and Interrupt with a turn waiting at a gate,
// Submit with no turn running (with one running it is *rig.BusyError,
// refused before anything is written, lease or no lease). The mutations
// after the first are refused for the latched loss.
func testStaleWriterFenced(t *testing.T, e *env) {
	for _, first := range allStaleOps {
		t.Run(first+"First", func(t *testing.T) {
			e := newEnv(t, e.b)
			e.fs.setDeaf(true)
			s := e.newSession(e.define(rig.WithProfile(gateProfile())))
			e.fs.setDeaf(false)
			id := s.SessionID()
			name := storage.SessionName(id.String())
			runTurn(t, s, "echo before")
			var gate, file string
			if first != opSubmit {
				_, gate, file = openGate(t, e, s)
			}
			bl := e.breakLease(t, name)
			bj, err := journal.Open(context.Background(), e.raw, name, bl)
			if err != nil {
				t.Fatalf("breaker opens the journal: %v", err)
			}
			if err := s.Err(); err != nil {
				t.Fatalf("the deafened holder noticed the break by itself (%v): its fencing is not tested", err)
			}
			ops := []string{first}
			for _, op := range allStaleOps {
				if op != first {
					ops = append(ops, op)
				}
			}
			tryStaleWrites[*journal.JournalLeaseLostError](t, s, gate, ops...)
			var fenced *journal.FencedError
			if !errors.As(s.Err(), &fenced) {
				t.Errorf("latched fault %v, want the *journal.FencedError of the holder's own append", s.Err())
			}
			waitTurnOver(t, s)
			if file != "" && exists(filepath.Join(s.Workspace(), file)) {
				t.Errorf("the gated command of the stale holder ran")
			}
			_ = s.Shutdown(waitCtx(t))
			seq, err := bj.AppendEvent(context.Background(), "", event.SessionIdle{})
			if err != nil {
				t.Fatalf("breaker appends: %v", err)
			}
			checkOnlyBreakerAfterFence(t, e, s, bj, []uint64{seq})
		})
	}
}

// Breaking an exclusive session's root lease while a turn waits at a gate
// faults the session: Submit, Interrupt and RespondGate fail with
// *rig.WorkspaceRootLeaseLostError, the gated command does not run in the
// root, and no command of the stale holder is journaled after the break
// (the session lease is still its own: the end of the turn is recorded).
func testRootLeaseBroken(t *testing.T, e *env) {
	root := canonical(t, t.TempDir())
	p := exclusiveProfile(root)
	p.GatePolicy = gateProfile().GatePolicy
	s := e.newSession(e.define(rig.WithProfile(p)))
	c := collect(t, s.Subscribe(hub.Filter{}), nil)
	roots := e.fs.names("workspace-roots/")
	if len(roots) != 1 {
		t.Fatalf("root leases: %v", roots)
	}
	rootEpoch := e.fs.latest(roots[0]).Epoch()
	_, gate, file := openGate(t, e, s)
	atBreak := tip(t, e.raw, s.SessionID())
	e.breakLease(t, roots[0])
	c.wait(t, "SessionFaulted", isType[event.SessionFaulted])
	select {
	case <-s.Done():
	case <-time.After(WaitTimeout):
		t.Fatal("faulted session is not done")
	}
	_, err := s.Submit(waitCtx(t), "echo after-break")
	lost := as[*rig.WorkspaceRootLeaseLostError](t, err, "Submit after the root lease was broken")
	if lost.Root != root || lost.Epoch != rootEpoch {
		t.Errorf("WorkspaceRootLeaseLostError{Root %q, Epoch %d}, want {%q, %d}", lost.Root, lost.Epoch, root, rootEpoch)
	}
	tryStaleWrites[*rig.WorkspaceRootLeaseLostError](t, s, gate, allStaleOps...)
	waitTurnOver(t, s)
	if exists(filepath.Join(root, file)) {
		t.Errorf("the gated command of the stale holder ran in the root")
	}
	recs := readJournal(t, e.raw, s.SessionID())
	for _, r := range recs[atBreak:] {
		if r.Kind == journal.KindCommand {
			t.Errorf("command %s journaled after the root lease was broken:%s", r.Command.Name, describe(recs[atBreak:]))
		}
	}
}
