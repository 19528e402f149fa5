package rigtest

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"looprig/rig"
	"looprig/rig/engine"
	"looprig/rig/event"
	"looprig/rig/journal"
	"looprig/rig/storage"
)

var restoreCases = []testCase{
	{"AfterCleanShutdown", testRestoreClean},
	{"UnknownID", testRestoreUnknown},
	{"OnlyIfCrashed", testRestoreOnlyIfCrashed},
}

// OnlyIfCrashed restores a crashed session, and refuses one shut down
// cleanly with *rig.NotCrashedError, writing nothing and leaving its
// lease free.
func testRestoreOnlyIfCrashed(t *testing.T, e *env) {
	r := e.define()
	crashed := e.newSession(r)
	e.fs.crash(t, storage.SessionName(crashed.SessionID().String()))
	select {
	case <-crashed.Done():
	case <-time.After(WaitTimeout):
		t.Fatal("crashed session did not notice")
	}
	s, err := r.RestoreSession(t.Context(), crashed.SessionID(), rig.OnlyIfCrashed())
	if err != nil {
		t.Fatalf("RestoreSession(crashed, OnlyIfCrashed): %v", err)
	}
	shutdown(t, s)

	// Shut down cleanly now (as another process would after its restore).
	name := storage.SessionName(crashed.SessionID().String())
	tip, err := e.raw.Tip(t.Context(), name)
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.RestoreSession(t.Context(), crashed.SessionID(), rig.OnlyIfCrashed())
	var nc *rig.NotCrashedError
	if !errors.As(err, &nc) || nc.Session != crashed.SessionID() {
		t.Fatalf("RestoreSession(stopped, OnlyIfCrashed) = %v, want *rig.NotCrashedError", err)
	}
	if after, err := e.raw.Tip(t.Context(), name); err != nil || after != tip {
		t.Fatalf("journal tip %d -> %d (%v): a refused restore wrote", tip, after, err)
	}
	if st, err := e.raw.Probe(t.Context(), name); err != nil || st.Held {
		t.Fatalf("lease after a refused restore: %+v, %v; want free", st, err)
	}
}

// A restore after a clean shutdown keeps the session and loop ids, appends
// exactly RestoreStarted and RestoreDone after its fence, and continues the
// turn index.
func testRestoreClean(t *testing.T, e *env) {
	s := e.newSession(e.define())
	id, loop, epoch := s.SessionID(), s.LoopID(), s.Epoch()
	runTurn(t, s, "echo one")
	runTurn(t, s, "echo two")
	shutdown(t, s)
	before := readJournal(t, e.raw, id)
	if last := before[len(before)-1]; last.Kind != journal.KindEvent || last.Event.Type() != event.TypeSessionStopped {
		t.Errorf("journal of a shut-down session ends with %v, want SessionStopped", typesOf(before[len(before)-1:]))
	}

	// Restore through a second open of the store: the session is durable.
	r2 := defineOn(t, e.b.Reopen(t, e.dir), e.ws)
	s2 := e.restore(r2, id)
	if s2.SessionID() != id || s2.LoopID() != loop {
		t.Errorf("restored session %s loop %s, want %s loop %s", s2.SessionID(), s2.LoopID(), id, loop)
	}
	if s2.Epoch() <= epoch {
		t.Errorf("restored epoch %d, want more than %d", s2.Epoch(), epoch)
	}
	recs := readJournal(t, e.raw, id)
	fi := lastFenceIndex(recs)
	if fi != len(before) || recs[fi].Epoch != s2.Epoch() {
		t.Fatalf("restore fence at index %d epoch %d, want index %d epoch %d:%s", fi, recs[fi].Epoch, len(before), s2.Epoch(), describe(recs))
	}
	after := recs[fi+1:]
	if got := typesOf(after); !slices.Equal(got, []string{"RestoreStarted", "RestoreDone"}) {
		t.Fatalf("after the restore fence: %v, want exactly RestoreStarted, RestoreDone", got)
	}
	if rs := after[0].Event.(event.RestoreStarted); rs.Epoch != s2.Epoch() {
		t.Errorf("RestoreStarted %+v, want epoch %d", rs, s2.Epoch())
	}
	if rd := after[1].Event.(event.RestoreDone); rd.Epoch != s2.Epoch() || len(rd.Interrupted) != 0 || len(rd.GatesClosed) != 0 {
		t.Errorf("RestoreDone %+v after a clean shutdown", rd)
	}
	info := s2.Restored()
	if info == nil || info.Epoch != s2.Epoch() || len(info.Interrupted) != 0 || len(info.GatesClosed) != 0 || len(info.Adopted) != 0 {
		t.Fatalf("RestoreInfo %+v", info)
	}
	if info.Records != uint64(len(before)+1) {
		t.Errorf("RestoreInfo.Records %d, want %d (the journal and the restore's fence)", info.Records, len(before)+1)
	}
	if s.Restored() != nil {
		t.Errorf("a new session reports a restore")
	}
	ti := runTurn(t, s2, "echo three")
	if ti.Index != 2 {
		t.Errorf("first turn after the restore has index %d, want 2", ti.Index)
	}
	if st := s2.Status(); st.Turns != 3 || st.LoopID != loop {
		t.Errorf("status after the restore: turns %d loop %s", st.Turns, st.LoopID)
	}
	recs = readJournal(t, e.raw, id)
	dones, _ := find[event.TurnDone](recs)
	if len(dones) != 3 || dones[2].TurnID != ti.ID {
		t.Errorf("TurnDone after the restore: %+v", dones)
	}
}

// Restoring a session that a live session object holds is
// RestoreError{lease_failed} caused by *storage.LeaseHeldError with the
// holder's epoch; the journal is untouched.
func testRestoreWhileHeld(t *testing.T, e *env) {
	s := e.newSession(e.define())
	id := s.SessionID()
	runTurn(t, s, "echo held")
	stores := []struct {
		name  string
		store storage.Store
	}{{"same-store", e.fs}, {"reopened-store", e.b.Reopen(t, e.dir)}}
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			before := tip(t, e.raw, id)
			r := defineOn(t, st.store, e.ws)
			s2, err := r.RestoreSession(t.Context(), id)
			if err == nil {
				shutdownAtCleanup(t, s2)
				t.Fatalf("restore of a held session succeeded")
			}
			checkRestoreKind(t, err, id, rig.RestoreLeaseFailed)
			held := as[*storage.LeaseHeldError](t, err, "restore of a held session")
			if held.HolderEpoch != s.Epoch() {
				t.Errorf("LeaseHeldError.HolderEpoch %d, want the holder's epoch %d", held.HolderEpoch, s.Epoch())
			}
			if got := tip(t, e.raw, id); got != before {
				t.Errorf("journal tip moved from %d to %d", before, got)
			}
		})
	}
	if s.Err() != nil {
		t.Fatalf("the holder was disturbed: %v", s.Err())
	}
	runTurn(t, s, "echo still-mine")
}

// Restoring an id the store has never seen is RestoreError{discovery_failed}
// and leaves nothing behind: no ledger, no catalog entry, no lease.
func testRestoreUnknown(t *testing.T, e *env) {
	r := e.define()
	for _, id := range []uuid.UUID{uuid.New(), uuid.Nil} {
		s, err := r.RestoreSession(t.Context(), id)
		if err == nil {
			shutdownAtCleanup(t, s)
			t.Fatalf("restore of unknown id %s succeeded", id)
		}
		checkRestoreKind(t, err, id, rig.RestoreDiscoveryFailed)
		name := storage.SessionName(id.String())
		if n := tip(t, e.raw, id); n != 0 {
			t.Errorf("restore of an unknown id made a ledger (tip %d)", n)
		}
		if _, err := e.raw.Get(t.Context(), storage.CatalogKey(id.String())); !rig.IsNotFound(err) {
			t.Errorf("restore of an unknown id left a catalog entry (%v)", err)
		}
		if len(e.fs.names(name)) != 0 {
			t.Errorf("restore of an unknown id took its lease")
		}
		if st, err := e.raw.Probe(t.Context(), name); err != nil || st.Epoch != 0 || st.Held {
			t.Errorf("lease of an unknown id after the restore: %+v, %v; want never granted", st, err)
		}
	}
	if keys, err := e.raw.Keys(t.Context(), ""); err != nil || len(keys) != 0 {
		t.Errorf("store keys after restoring unknown ids: %v, %v", keys, err)
	}
}

// checkRestoreKind checks err is a *rig.RestoreError of kind for id.
func checkRestoreKind(t testing.TB, err error, id uuid.UUID, kind rig.RestoreErrorKind) *rig.RestoreError {
	t.Helper()
	re := as[*rig.RestoreError](t, err, "RestoreSession")
	if re.Kind != kind {
		t.Errorf("RestoreError kind %q, want %q (%v)", re.Kind, kind, err)
	}
	if re.Session != id {
		t.Errorf("RestoreError names session %s, want %s", re.Session, id)
	}
	return re
}

// checkFailedRestore checks what a failed restore that took the lease
// leaves: after tipBefore, its fence(s) at one new epoch, no RestoreDone,
// and a last record RestoreErrored{kind}; the lease is free again.
func checkFailedRestore(t testing.TB, e *env, id uuid.UUID, tipBefore uint64, kind string) {
	t.Helper()
	recs := readJournal(t, e.raw, id)
	if uint64(len(recs)) <= tipBefore {
		t.Fatalf("the failed restore left no record after %d:%s", tipBefore, describe(recs))
	}
	after := recs[tipBefore:]
	if after[0].Kind != journal.KindFence {
		t.Errorf("the failed restore's first record is %v, want its fence", typesOf(after[:1]))
	}
	for _, r := range after {
		if r.Kind == journal.KindFence && r.Epoch != after[0].Epoch {
			t.Errorf("fences at epochs %d and %d in one failed restore", after[0].Epoch, r.Epoch)
		}
		if r.Kind == journal.KindEvent && r.Event.Type() == event.TypeRestoreDone {
			t.Errorf("a failed restore appended RestoreDone:%s", describe(after))
		}
	}
	last := after[len(after)-1]
	re, ok := last.Event.(event.RestoreErrored)
	if last.Kind != journal.KindEvent || !ok {
		t.Fatalf("the failed restore's journal tail ends with %v, want RestoreErrored:%s", typesOf(after[len(after)-1:]), describe(after))
	}
	if re.Kind != kind || re.Message == "" {
		t.Errorf("RestoreErrored %+v, want kind %q with a message", re, kind)
	}
	checkLeaseFree(t, e, storage.SessionName(id.String()))
}

// checkLeaseFree checks every grant of name was released and Acquire
// succeeds at once.
func checkLeaseFree(t testing.TB, e *env, name string) {
	t.Helper()
	if a, r := e.fs.stats(name); a != r {
		t.Errorf("lease %s: %d grant(s), %d released", name, a, r)
	}
	l, err := e.raw.Acquire(context.Background(), name)
	if err != nil {
		t.Fatalf("lease %s is not free after the failed restore: %v", name, err)
	}
	if err := l.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// ---- configuration drift -----------------------------------------------------------

var driftCases = []testCase{
	{"EngineChangeRejectedThenAccepted", testDriftRejected},
	{"InfoDriftAdopted", testDriftInfo},
	{"FingerprintOnlyMismatch", testDriftFingerprintOnly},
}

func stoppedSession(t testing.TB, e *env, r *rig.Rig) uuid.UUID {
	t.Helper()
	s := e.newSession(r)
	runTurn(t, s, "echo before")
	shutdown(t, s)
	return s.SessionID()
}

// checkAdopted checks the restore's records between RestoreStarted and
// RestoreDone include ConfigurationAdopted{source} with the changes.
func checkAdopted(t testing.TB, e *env, s *rig.Session, source string, fields ...string) {
	t.Helper()
	recs := readJournal(t, e.raw, s.SessionID())
	after := recs[lastFenceIndex(recs)+1:]
	types := typesOf(after)
	if len(types) != 3 || types[0] != "RestoreStarted" || types[1] != "ConfigurationAdopted" || types[2] != "RestoreDone" {
		t.Fatalf("after the restore fence: %v, want RestoreStarted, ConfigurationAdopted, RestoreDone", types)
	}
	ca := after[1].Event.(event.ConfigurationAdopted)
	if ca.Source != source {
		t.Errorf("ConfigurationAdopted source %q, want %q", ca.Source, source)
	}
	var got []string
	for _, c := range ca.Changes {
		got = append(got, c.Field)
	}
	if !slices.Equal(got, fields) {
		t.Errorf("adopted changes %+v, want fields %v", ca.Changes, fields)
	}
	if info := s.Restored(); info == nil || len(info.Adopted) != len(fields) {
		t.Errorf("RestoreInfo.Adopted = %+v", info)
	}
}

// An engine change is warn-level drift: the default decider rejects it
// (RestoreRejectedError listing it, RestoreErrored journaled, lease free);
// an explicit AcceptAll adopts it.
func testDriftRejected(t *testing.T, e *env) {
	id := stoppedSession(t, e, e.define())
	demo := rig.Profile{Name: "default", Engine: "demo", Placement: rig.PlacementSession}
	before := tip(t, e.raw, id)
	s, err := e.define(rig.WithProfile(demo)).RestoreSession(t.Context(), id)
	if err == nil {
		shutdownAtCleanup(t, s)
		t.Fatalf("restore under a changed engine succeeded with the default decider")
	}
	rej := as[*rig.RestoreRejectedError](t, err, "restore under a changed engine")
	if rej.Session != id || len(rej.Assessment.Changes) != 1 {
		t.Fatalf("RestoreRejectedError %+v, want one change for %s", rej, id)
	}
	if c := rej.Assessment.Changes[0]; c.Field != "engine" || c.Persisted != "shell" || c.Live != "demo" || c.Level != event.LevelWarn {
		t.Errorf("change %+v, want engine shell -> demo (warn)", c)
	}
	if !rej.Assessment.Warn() {
		t.Errorf("assessment of an engine change is not warn-level")
	}
	checkFailedRestore(t, e, id, before, "config_rejected")

	s2 := e.restore(e.define(rig.WithProfile(demo), rig.WithDecider(rig.AcceptAll("test"))), id)
	checkAdopted(t, e, s2, "test", "engine")
	ti := runTurn(t, s2, "adopted")
	out := turnOutput(readJournal(t, e.raw, id), ti.ID)
	if !strings.Contains(out, "step 1/3: adopted") {
		t.Errorf("turn after adopting the demo engine printed %q", out)
	}
}

// A renamed profile is info-level drift: the default decider accepts it and
// the restore records ConfigurationAdopted.
func testDriftInfo(t *testing.T, e *env) {
	alpha := rig.Profile{Name: "alpha", Engine: "shell", Placement: rig.PlacementSession}
	id := stoppedSession(t, e, e.define(rig.WithProfile(alpha)))
	beta := alpha
	beta.Name = "beta"
	s := e.restore(e.define(rig.WithProfile(beta)), id)
	checkAdopted(t, e, s, "default", "profile")
	if c := s.Restored().Adopted[0]; c.Persisted != "alpha" || c.Live != "beta" || c.Level != event.LevelInfo {
		t.Errorf("adopted change %+v, want profile alpha -> beta (info)", c)
	}
}

// A fingerprint-only session restored under a changed gate policy is
// *rig.ConfigMismatchError; under the same profile it restores.
func testDriftFingerprintOnly(t *testing.T, e *env) {
	p := gateProfile()
	r := e.define(rig.WithProfile(p), rig.WithFingerprintOnly())
	id := stoppedSession(t, e, r)
	started, _ := find[event.SessionStarted](readJournal(t, e.raw, id))
	if len(started) != 1 || started[0].Manifest != nil || started[0].Fingerprint == "" {
		t.Fatalf("fingerprint-only SessionStarted %+v, want a fingerprint and no manifest", started)
	}
	changed := p
	changed.GatePolicy = []string{"touch gated", "rm -rf"}
	before := tip(t, e.raw, id)
	s, err := e.define(rig.WithProfile(changed), rig.WithDecider(rig.AcceptAll("ignored"))).RestoreSession(t.Context(), id)
	if err == nil {
		shutdownAtCleanup(t, s)
		t.Fatalf("fingerprint-only session restored under a changed gate policy")
	}
	mm := as[*rig.ConfigMismatchError](t, err, "fingerprint-only restore under drift")
	if mm.Persisted != started[0].Fingerprint || mm.Live == mm.Persisted || mm.Session != id {
		t.Errorf("ConfigMismatchError %+v", mm)
	}
	checkFailedRestore(t, e, id, before, "config_mismatch")
	s2 := e.restore(e.define(rig.WithProfile(p)), id)
	if info := s2.Restored(); len(info.Adopted) != 0 {
		t.Errorf("restore without drift adopted %+v", info.Adopted)
	}
}

// ---- every RestoreErrorKind ---------------------------------------------------------

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

// A session-placement session whose workspace directory is gone:
// materialize_failed instead of silently restoring into an empty one.
func testMaterializeFailedSessionWorkspace(t *testing.T, e *env) {
	r := e.define()
	s := e.newSession(r)
	id, dir := s.SessionID(), s.Workspace()
	shutdown(t, s)
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	before := tip(t, e.raw, id)
	failRestore(t, e.define(), t.Context(), id, rig.RestoreMaterializeFailed)
	checkFailedRestore(t, e, id, before, string(rig.RestoreMaterializeFailed))
	if exists(dir) {
		t.Fatalf("a failed restore recreated the workspace %s", dir)
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	e.restore(e.define(), id)
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

// ---- catalog ---------------------------------------------------------------------------

var catalogCases = []testCase{
	{"RestoreRebuildsDeletedEntry", testCatalogRebuilt},
	{"AttentionFields", testCatalogAttention},
}

func listed(t testing.TB, store storage.Store, id uuid.UUID) (rig.SessionInfo, bool) {
	t.Helper()
	list, err := rig.ListSessions(context.Background(), store)
	if err != nil {
		t.Fatalf("ListSessions: %v", err)
	}
	for _, info := range list {
		if info.ID == id.String() {
			return info, true
		}
	}
	return rig.SessionInfo{}, false
}

// Deleting the catalog entry of a stopped session hides it from listings;
// restoring it rebuilds the entry from the journal.
func testCatalogRebuilt(t *testing.T, e *env) {
	s := e.newSession(e.define(), rig.WithTitle("catalogued"))
	id := s.SessionID()
	runTurn(t, s, "echo one")
	shutdown(t, s)
	ctx := t.Context()
	c, err := rig.ReadCatalog(ctx, e.raw, id.String())
	if err != nil || c.State != rig.CatalogStopped {
		t.Fatalf("catalog of a stopped session: %+v, %v", c, err)
	}
	if err := e.raw.DeleteKey(ctx, storage.CatalogKey(id.String()), storage.AnyRevision); err != nil {
		t.Fatal(err)
	}
	if info, ok := listed(t, e.raw, id); ok {
		t.Errorf("session without a catalog entry is listed: %+v", info)
	}
	s2 := e.restore(e.define(), id)
	c, err = rig.ReadCatalog(ctx, e.raw, id.String())
	if err != nil {
		t.Fatalf("catalog entry after the restore: %v", err)
	}
	if c.State != rig.CatalogRunning || c.Title != "catalogued" || c.Epoch != s2.Epoch() || c.Turns != 1 || c.Profile != "default" {
		t.Errorf("rebuilt catalog entry %+v", c)
	}
	if info, ok := listed(t, e.raw, id); !ok || info.State != rig.StateLive {
		t.Errorf("restored session listed as %+v (listed %v), want live", info, ok)
	}
	shutdown(t, s2)
	if info, ok := listed(t, e.raw, id); !ok || info.State != rig.StateIdle || info.Title != "catalogued" {
		t.Errorf("session after its shutdown listed as %+v (listed %v), want idle", info, ok)
	}
}
