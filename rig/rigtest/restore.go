package rigtest

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"looprig/rig"
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
