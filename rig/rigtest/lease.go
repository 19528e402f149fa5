package rigtest

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sync"
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
			err = s.RespondGate(ctx, gate, true)
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
	waitIdle(t, s)
	if atGate && exists(filepath.Join(s.Workspace(), file)) {
		t.Errorf("the gated command of the stale holder ran")
	}
	noProcs(t, m, "after the lease loss stopped the turn")
	_ = s.Shutdown(waitCtx(t)) // tries SessionStopped, must not land
	seq, err := bj.AppendEvent(context.Background(), "", "", event.SessionIdle{})
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
			waitIdle(t, s)
			if file != "" && exists(filepath.Join(s.Workspace(), file)) {
				t.Errorf("the gated command of the stale holder ran")
			}
			_ = s.Shutdown(waitCtx(t))
			seq, err := bj.AppendEvent(context.Background(), "", "", event.SessionIdle{})
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
	waitIdle(t, s)
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

// ---- shutdown -----------------------------------------------------------------------------

var shutdownCases = []testCase{
	{"ConcurrentCallsOneResult", testShutdownConcurrent},
	{"CancelledCallerContext", testShutdownCancelled},
	{"ListSessionsStates", testListStates},
	{"ListerFollowsChanges", testListerFollowsChanges},
}

// checkReleaseOrder checks that the root lease was released before the
// session lease, each exactly once.
func checkReleaseOrder(t testing.TB, e *env, sessionName, rootName string) {
	t.Helper()
	var order []string
	for _, op := range e.fs.releases() {
		if op.name == sessionName || op.name == rootName {
			order = append(order, op.name)
		}
	}
	if !slices.Equal(order, []string{rootName, sessionName}) {
		t.Errorf("releases %v, want the root lease, then the session lease", order)
	}
	for _, n := range []string{rootName, sessionName} {
		if calls := e.fs.latest(n).releaseCalls(); calls != 1 {
			t.Errorf("lease %s released %d times, want once", n, calls)
		}
	}
}

// Eight concurrent Shutdown calls share one result; the running turn's
// process group is gone before SessionStopped is delivered; the root
// lease, then the session lease, are released once each; the session is
// listed idle and restores at once.
func testShutdownConcurrent(t *testing.T, e *env) {
	root := canonical(t, t.TempDir())
	r := e.define(rig.WithProfile(exclusiveProfile(root)))
	s := e.newSession(r)
	id := s.SessionID()
	sessionName := storage.SessionName(id.String())
	rootName := e.fs.names("workspace-roots/")[0]
	m := newMarker()
	var atStopped []string
	stopped := make(chan struct{})
	collect(t, s.Subscribe(hub.Filter{AllLoops: true}), func(env event.Envelope) {
		if isType[event.SessionStopped](env) {
			atStopped = procsWith(m)
			close(stopped)
		}
	})
	if info, ok := listed(t, e.fs, id); !ok || info.State != rig.StateLive || info.Holder == nil || info.Holder.PID != os.Getpid() {
		t.Errorf("live session listed as %+v (listed %v), want live, held by this process", info, ok)
	}
	ti := submit(t, s, "echo started; sleep "+m+"; echo never")
	waitSleepRunning(t, m)

	results := make([]error, 8)
	var wg sync.WaitGroup
	for i := range results {
		wg.Go(func() { results[i] = s.Shutdown(waitCtx(t)) })
	}
	wg.Wait()
	for i, err := range results {
		if err != results[0] {
			t.Errorf("Shutdown call %d returned %v, call 0 %v", i, err, results[0])
		}
	}
	if results[0] != nil {
		t.Errorf("Shutdown: %v", results[0])
	}
	select {
	case <-stopped:
	case <-time.After(WaitTimeout):
		t.Fatal("SessionStopped was not delivered")
	}
	if len(atStopped) != 0 {
		t.Errorf("turn processes alive when SessionStopped was delivered: %q", atStopped)
	}
	noProcs(t, m, "after Shutdown")
	checkReleaseOrder(t, e, sessionName, rootName)

	recs := readJournal(t, e.raw, id)
	ints, intRecs := find[event.TurnInterrupted](recs)
	_, stopRecs := find[event.SessionStopped](recs)
	if len(ints) != 1 || ints[0].TurnID != ti.ID || ints[0].Reason != event.ReasonShutdown {
		t.Errorf("TurnInterrupted %+v, want one {%s shutdown}", ints, ti.ID)
	}
	if len(stopRecs) != 1 || stopRecs[0].Seq != recs[len(recs)-1].Seq || (len(intRecs) == 1 && intRecs[0].Seq > stopRecs[0].Seq) {
		t.Errorf("journal does not end with one SessionStopped after the interrupted turn:%s", describe(recs))
	}
	audited := 0
	for _, r := range recs {
		if r.Kind == journal.KindCommand && r.Command.Name == journal.CommandShutdown {
			audited++
		}
	}
	if audited != 1 {
		t.Errorf("%d shutdown commands audited, want 1", audited)
	}
	if c, err := rig.ReadCatalog(t.Context(), e.raw, id.String()); err != nil || c.State != rig.CatalogStopped {
		t.Errorf("catalog after Shutdown: %+v, %v; want stopped", c, err)
	}
	if info, ok := listed(t, e.fs, id); !ok || info.State != rig.StateIdle {
		t.Errorf("stopped session listed as %+v (listed %v), want idle", info, ok)
	}
	if _, err := s.Submit(waitCtx(t), "echo late"); err != rig.ErrSessionClosed {
		t.Errorf("Submit after Shutdown: %v, want rig.ErrSessionClosed", err)
	}
	s2 := e.restore(r, id) // at once: both leases are free
	shutdown(t, s2)
	if calls := e.fs.latest(sessionName).releaseCalls(); calls != 1 {
		t.Errorf("restored session's lease released %d times", calls)
	}
}

// A Shutdown whose caller context is already cancelled still tears down in
// order: processes gone, SessionStopped journaled, root then session lease
// released once each.
func testShutdownCancelled(t *testing.T, e *env) {
	root := canonical(t, t.TempDir())
	s := e.newSession(e.define(rig.WithProfile(exclusiveProfile(root))))
	id := s.SessionID()
	rootName := e.fs.names("workspace-roots/")[0]
	m := newMarker()
	submit(t, s, "sleep "+m+"; echo never")
	waitSleepRunning(t, m)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Errorf("Shutdown with a cancelled context: %v", err)
	}
	noProcs(t, m, "after Shutdown")
	checkReleaseOrder(t, e, storage.SessionName(id.String()), rootName)
	recs := readJournal(t, e.raw, id)
	if last := recs[len(recs)-1]; last.Kind != journal.KindEvent || last.Event.Type() != event.TypeSessionStopped {
		t.Errorf("journal ends with %v, want SessionStopped", typesOf(recs[len(recs)-1:]))
	}
	if err := s.Shutdown(ctx); err != nil {
		t.Errorf("second Shutdown: %v", err)
	}
}

// ListSessions shows a session live while this process holds it, idle after
// a clean shutdown and crashed after its holder vanished.
func testListStates(t *testing.T, e *env) {
	r := e.define()
	live := e.newSession(r, rig.WithTitle("live"))
	idle := e.newSession(r, rig.WithTitle("idle"))
	shutdown(t, idle)
	crashed := e.newSession(r, rig.WithTitle("crashed"))
	e.fs.crash(t, storage.SessionName(crashed.SessionID().String()))
	select {
	case <-crashed.Done():
	case <-time.After(WaitTimeout):
		t.Fatal("crashed session did not notice")
	}
	want := map[string]rig.SessionState{
		live.SessionID().String():    rig.StateLive,
		idle.SessionID().String():    rig.StateIdle,
		crashed.SessionID().String(): rig.StateCrashed,
	}
	for _, store := range []storage.Store{e.fs, e.raw} {
		list, err := rig.ListSessions(t.Context(), store)
		if err != nil {
			t.Fatal(err)
		}
		if len(list) != len(want) {
			t.Errorf("ListSessions lists %d sessions, want %d: %+v", len(list), len(want), list)
		}
		for _, info := range list {
			if w, ok := want[info.ID]; !ok || info.State != w || info.Title != string(w) {
				t.Errorf("session %s (%s) listed %s, want %s", info.ID, info.Title, info.State, w)
			}
			if info.ShortID() != info.ID[:8] {
				t.Errorf("short id %q", info.ShortID())
			}
		}
	}
}

// A Lister reuses its listing while the store's change stamp stands still,
// and lists again as soon as a session is created or shut down, or when
// RelistEvery passed.
func testListerFollowsChanges(t *testing.T, e *env) {
	l := rig.NewLister(e.raw)
	list := func() ([]rig.SessionInfo, bool) {
		t.Helper()
		infos, fresh, err := l.List(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		return infos, fresh
	}
	// settle lists until a listing is reused; false for a store whose
	// stamps never settle (it lists every time).
	settle := func() bool {
		t.Helper()
		for end := time.Now().Add(3 * time.Second); time.Now().Before(end); {
			if _, fresh := list(); !fresh {
				return true
			}
			time.Sleep(20 * time.Millisecond)
		}
		return false
	}
	stateOf := func(infos []rig.SessionInfo, id string) rig.SessionState {
		for _, info := range infos {
			if info.ID == id {
				return info.State
			}
		}
		return ""
	}
	if _, fresh := list(); !fresh {
		t.Fatal("the first List is not fresh")
	}
	settles := settle()
	r := e.define()
	s := e.newSession(r, rig.WithTitle("followed"))
	id := s.SessionID().String()
	infos, fresh := list()
	if !fresh || stateOf(infos, id) != rig.StateLive {
		t.Fatalf("List after a create: fresh %v, state %q; want a fresh listing with the session live", fresh, stateOf(infos, id))
	}
	if !settles {
		t.Logf("the store's change stamps never settle: every List lists")
		return
	}
	if !settle() {
		t.Fatal("the listing was reused before the create, never after it")
	}
	if infos, fresh := list(); fresh || stateOf(infos, id) != rig.StateLive {
		t.Fatalf("List with nothing changed: fresh %v, state %q; want the reused listing", fresh, stateOf(infos, id))
	}
	shutdown(t, s)
	if infos, fresh := list(); !fresh || stateOf(infos, id) != rig.StateIdle {
		t.Fatalf("List after a shutdown: fresh %v, state %q; want a fresh listing with the session idle", fresh, stateOf(infos, id))
	}
	settle()
	l.RelistEvery = 100 * time.Millisecond
	time.Sleep(150 * time.Millisecond)
	if _, fresh := list(); !fresh {
		t.Fatal("List after RelistEvery passed reused the listing")
	}
}
