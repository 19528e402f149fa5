package rigtest

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/uuid"

	"looprig/rig"
	"looprig/rig/engine"
	"looprig/rig/event"
	"looprig/rig/journal"
	"looprig/rig/storage"
)

// restoreErrorCases cover every RestoreErrorKind.
var restoreErrorCases = []testCase{
	{"ReplayFailedGarbageAtTip", func(t *testing.T, e *env) { testReplayFailed(t, e, false) }},
	{"ReplayFailedGarbageMidJournal", func(t *testing.T, e *env) { testReplayFailed(t, e, true) }},
	{"DiscoveryFailedFenceOnly", testDiscoveryFenceOnly},
	{"LeaseFailed", testRestoreWhileHeld},
	{"JournalFailedOnce", func(t *testing.T, e *env) { testJournalFailed(t, e, true) }},
	{"JournalFailedAlways", func(t *testing.T, e *env) { testJournalFailed(t, e, false) }},
	{"AppendFailed", testAppendFailed},
	{"LoopFailed", testLoopFailed},
	{"RuntimeFailed", testRuntimeFailed},
	{"MaterializeFailed", testMaterializeFailed},
	{"MaterializeFailedSessionWorkspace", testMaterializeFailedSessionWorkspace},
	{"ContextDone", testContextDone},
	{"RefusalsDoNotGrowTheJournal", testRefusalsDoNotGrowTheJournal},
	{"ReadsAgainWhatCameBeforeItsFence", testRestoreReadsAgainWhatCameBeforeItsFence},
}

// failRestore runs a restore that must fail with kind, and returns the
// error.
func failRestore(t testing.TB, r *rig.Rig, ctx context.Context, id uuid.UUID, kind rig.RestoreErrorKind) error {
	t.Helper()
	s, err := r.RestoreSession(ctx, id)
	if err == nil {
		shutdownAtCleanup(t, s)
		t.Fatalf("restore succeeded, want %s", kind)
	}
	if s != nil {
		t.Errorf("a failed restore returned a session")
	}
	checkRestoreKind(t, err, id, kind)
	return err
}

// A payload that is not a journal record (at the tip, or in the middle with
// a valid record after it) fails the replay: replay_failed, and the catalog
// marks the session broken.
func testReplayFailed(t *testing.T, e *env, mid bool) {
	e.skipConsistency("writes a payload that is not a journal record")
	id := stoppedSession(t, e, e.define())
	name := storage.SessionName(id.String())
	ctx := t.Context()
	at := tip(t, e.raw, id)
	payloads := [][]byte{[]byte("this is not a journal record")}
	if mid {
		cur, err := e.raw.Read(ctx, name, 1)
		if err != nil || !cur.Next() {
			t.Fatalf("read record 2: %v", err)
		}
		payloads = append(payloads, slices.Clone(cur.Record().Payload))
		cur.Close()
	}
	if err := e.raw.Append(ctx, name, at, payloads...); err != nil {
		t.Fatal(err)
	}
	before := tip(t, e.raw, id)
	err := failRestore(t, e.define(), ctx, id, rig.RestoreReplayFailed)
	de := as[*journal.RecordDecodeError](t, err, "garbage in the journal")
	if de.Seq != at+1 {
		t.Errorf("RecordDecodeError at record %d, want %d", de.Seq, at+1)
	}
	// The journal is unreadable past the garbage: check the tail by hand.
	cur, err := e.raw.Read(ctx, name, before)
	if err != nil {
		t.Fatal(err)
	}
	var tail []journal.Record
	for cur.Next() {
		rec, err := journal.DecodeRecord(cur.Record().Seq, cur.Record().Payload)
		if err != nil {
			t.Fatalf("record %d after the garbage: %v", cur.Record().Seq, err)
		}
		tail = append(tail, rec)
	}
	cur.Close()
	if got := typesOf(tail); !slices.Equal(got, []string{"fence", "RestoreErrored"}) {
		t.Errorf("after the garbage: %v, want fence, RestoreErrored", got)
	} else if re := tail[1].Event.(event.RestoreErrored); re.Kind != string(rig.RestoreReplayFailed) {
		t.Errorf("RestoreErrored %+v", re)
	}
	checkLeaseFree(t, e, name)
	list, err := rig.ListSessions(ctx, e.raw)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].State != rig.StateBroken || list[0].Reason == "" {
		t.Errorf("ListSessions after replay_failed: %+v, want the session broken with a reason", list)
	}
}

// A journal holding only a fence has no session in it: discovery_failed.
func testDiscoveryFenceOnly(t *testing.T, e *env) {
	id := uuid.New()
	name := storage.SessionName(id.String())
	ctx := t.Context()
	l, err := e.raw.Acquire(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := journal.Open(ctx, e.raw, name, l); err != nil {
		t.Fatal(err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	failRestore(t, e.define(), ctx, id, rig.RestoreDiscoveryFailed)
	checkFailedRestore(t, e, id, 1, string(rig.RestoreDiscoveryFailed))
	list, err := rig.ListSessions(ctx, e.raw)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].ID != id.String() || list[0].State != rig.StateBroken {
		t.Errorf("ListSessions after discovery_failed: %+v, want the id broken", list)
	}
}

// The restore's fence cannot be appended: journal_failed. A transient
// fault still leaves RestoreErrored on record; a persistent one leaves the
// journal untouched. Either way the lease is free.
func testJournalFailed(t *testing.T, e *env, once bool) {
	id := stoppedSession(t, e, e.define())
	name := storage.SessionName(id.String())
	before := tip(t, e.raw, id)
	if once {
		e.fs.failAppendOnce(name, before)
	} else {
		e.fs.failAppendAt(name, before)
	}
	err := failRestore(t, e.define(), t.Context(), id, rig.RestoreJournalFailed)
	if !errors.Is(err, errInjected) {
		t.Errorf("cause %v does not wrap the injected fault", err)
	}
	e.fs.setAppendFault(nil)
	if once {
		checkFailedRestore(t, e, id, before, string(rig.RestoreJournalFailed))
	} else {
		if got := tip(t, e.raw, id); got != before {
			t.Errorf("journal tip moved from %d to %d although every append failed", before, got)
		}
		checkLeaseFree(t, e, name)
	}
	e.restore(e.define(), id) // a retry succeeds
}

// RestoreStarted cannot be appended (once): append_failed, recorded after
// a second fence at the same epoch; a retry succeeds.
func testAppendFailed(t *testing.T, e *env) {
	id := stoppedSession(t, e, e.define())
	name := storage.SessionName(id.String())
	before := tip(t, e.raw, id)
	e.fs.failAppendOnce(name, before+1)
	err := failRestore(t, e.define(), t.Context(), id, rig.RestoreAppendFailed)
	if !errors.Is(err, errInjected) {
		t.Errorf("cause %v does not wrap the injected fault", err)
	}
	e.fs.setAppendFault(nil)
	checkFailedRestore(t, e, id, before, string(rig.RestoreAppendFailed))
	s := e.restore(e.define(), id)
	runTurn(t, s, "echo retried")
}

func customEngine(name string) rig.Option {
	return rig.WithEngine(name, func(rig.Profile) (engine.Engine, error) {
		return engine.NewDemo(engine.Config{DemoSteps: 1}), nil
	})
}

// A session whose engine was registered with WithEngine, restored by a rig
// that does not know it: loop_failed.
func testLoopFailed(t *testing.T, e *env) {
	p := rig.Profile{Name: "custom", Engine: "rigtest-custom", Placement: rig.PlacementSession}
	id := stoppedSession(t, e, e.define(rig.WithProfile(p), customEngine(p.Engine)))
	before := tip(t, e.raw, id)
	err := failRestore(t, e.define(rig.WithProfile(p)), t.Context(), id, rig.RestoreLoopFailed)
	as[*engine.UnknownEngineError](t, err, "restore without the custom engine")
	checkFailedRestore(t, e, id, before, string(rig.RestoreLoopFailed))
	e.restore(e.define(rig.WithProfile(p), customEngine(p.Engine)), id)
}

// An engine factory that fails: runtime_failed.
func testRuntimeFailed(t *testing.T, e *env) {
	p := rig.Profile{Name: "custom", Engine: "rigtest-custom", Placement: rig.PlacementSession}
	id := stoppedSession(t, e, e.define(rig.WithProfile(p), customEngine(p.Engine)))
	before := tip(t, e.raw, id)
	broken := rig.WithEngine(p.Engine, func(rig.Profile) (engine.Engine, error) { return nil, errInjected })
	err := failRestore(t, e.define(rig.WithProfile(p), broken), t.Context(), id, rig.RestoreRuntimeFailed)
	if !errors.Is(err, errInjected) {
		t.Errorf("cause %v is not the factory's error", err)
	}
	checkFailedRestore(t, e, id, before, string(rig.RestoreRuntimeFailed))
}

// An exclusive session whose root directory is gone: materialize_failed,
// with the root lease (if any was taken) released.
func testMaterializeFailed(t *testing.T, e *env) {
	parent := canonical(t, t.TempDir())
	root := filepath.Join(parent, "root")
	if err := os.Mkdir(root, 0o700); err != nil {
		t.Fatal(err)
	}
	p := exclusiveProfile(root)
	id := stoppedSession(t, e, e.define(rig.WithProfile(p)))
	if err := os.RemoveAll(root); err != nil {
		t.Fatal(err)
	}
	before := tip(t, e.raw, id)
	failRestore(t, e.define(rig.WithProfile(p)), t.Context(), id, rig.RestoreMaterializeFailed)
	checkFailedRestore(t, e, id, before, string(rig.RestoreMaterializeFailed))
	e.fs.checkBalanced(t, "")
	if err := os.Mkdir(root, 0o700); err != nil {
		t.Fatal(err)
	}
	e.restore(e.define(rig.WithProfile(p)), id)
}

// A session-placement session whose workspace directory is gone and
// that has no checkpoint of it (its profile takes none):
// materialize_failed instead of silently restoring into an empty one.
func testMaterializeFailedSessionWorkspace(t *testing.T, e *env) {
	p := rig.DefaultProfile()
	p.Checkpoint = rig.CheckpointOff
	r := e.define(rig.WithProfile(p))
	s := e.newSession(r)
	id, dir := s.SessionID(), s.Workspace()
	shutdown(t, s)
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	before := tip(t, e.raw, id)
	failRestore(t, e.define(rig.WithProfile(p)), t.Context(), id, rig.RestoreMaterializeFailed)
	checkFailedRestore(t, e, id, before, string(rig.RestoreMaterializeFailed))
	if exists(dir) {
		t.Fatalf("a failed restore recreated the workspace %s", dir)
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	e.restore(e.define(rig.WithProfile(p)), id)
}

// A decider that cancels the restore's context: context_done.
func testContextDone(t *testing.T, e *env) {
	alpha := rig.Profile{Name: "alpha", Engine: "shell", Placement: rig.PlacementSession}
	id := stoppedSession(t, e, e.define(rig.WithProfile(alpha)))
	beta := alpha
	beta.Name = "beta"
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	decider := rig.DeciderFunc(func(context.Context, rig.Assessment) (rig.Decision, error) {
		cancel()
		return rig.Decision{Accept: true, Source: "cancelling"}, nil
	})
	before := tip(t, e.raw, id)
	err := failRestore(t, e.define(rig.WithProfile(beta), rig.WithDecider(decider)), ctx, id, rig.RestoreContextDone)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("cause %v is not context.Canceled", err)
	}
	checkFailedRestore(t, e, id, before, string(rig.RestoreContextDone))
	e.restore(e.define(rig.WithProfile(beta)), id)
}
