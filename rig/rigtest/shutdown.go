package rigtest

import (
	"context"
	"os"
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
