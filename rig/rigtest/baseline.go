package rigtest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/uuid"

	"looprig/rig"
	"looprig/rig/event"
	"looprig/rig/journal"
	"looprig/rig/storage"
)

// baselineCases pin the seed's rule that an accepted adoption becomes the
// configuration the next restore compares against, and the order that puts
// the exclusive root's lease before the first restore mutation.
var baselineCases = []testCase{
	{"AcceptedDriftIsTheBaseline", testAcceptedDriftIsBaseline},
	{"InfoDriftAdoptedOnce", testInfoDriftAdoptedOnce},
	{"FailedRestoreAdoptsNothing", testFailedRestoreAdoptsNothing},
	{"OldAdoptionRecordsStillCount", testOldAdoptionRecords},
	{"BusyRootWritesNothing", testRestoreRootBusy},
}

// adoptions returns the ConfigurationAdopted events of session id.
func adoptions(t testing.TB, e *env, id uuid.UUID) []event.ConfigurationAdopted {
	t.Helper()
	got, _ := find[event.ConfigurationAdopted](readJournal(t, e.raw, id))
	return got
}

// restoreAndStop restores id with r, checks the restore adopted nothing,
// and shuts the session down.
func restoreAdoptingNothing(t testing.TB, e *env, r *rig.Rig, id uuid.UUID, what string) {
	t.Helper()
	before := len(adoptions(t, e, id))
	s := e.restore(r, id)
	if info := s.Restored(); len(info.Adopted) != 0 || info.AdoptedBy != "" {
		t.Errorf("%s: the restore adopted %+v (by %q), want nothing", what, info.Adopted, info.AdoptedBy)
	}
	shutdown(t, s)
	if n := len(adoptions(t, e, id)); n != before {
		t.Errorf("%s: %d ConfigurationAdopted record(s) after the restore, want %d", what, n, before)
	}
}

// Warn-level drift accepted once is the baseline: a plain restore under
// the same profile succeeds and adopts nothing; a further change is
// measured against the adopted configuration, not the one the session
// was created with.
func testAcceptedDriftIsBaseline(t *testing.T, e *env) {
	id := stoppedSession(t, e, e.define())
	demo := rig.Profile{Name: "default", Engine: "demo", Placement: rig.PlacementSession}
	s := e.restore(e.define(rig.WithProfile(demo), rig.WithDecider(rig.AcceptAll("test"))), id)
	checkAdopted(t, e, s, "test", "engine")
	if s.Restored().AdoptedBy != "test" {
		t.Errorf("RestoreInfo.AdoptedBy %q, want test", s.Restored().AdoptedBy)
	}
	shutdown(t, s)
	ca := adoptions(t, e, id)
	if len(ca) != 1 || ca[0].Manifest["engine"] != "demo" || ca[0].Fingerprint == "" {
		t.Fatalf("ConfigurationAdopted %+v, want one carrying the adopted manifest (engine demo) and its fingerprint", ca)
	}

	restoreAdoptingNothing(t, e, e.define(rig.WithProfile(demo)), id, "plain restore after the accepted drift")

	// Back to the shell engine: drift again, from demo (the baseline).
	before := tip(t, e.raw, id)
	s2, err := e.define().RestoreSession(t.Context(), id)
	if err == nil {
		shutdownAtCleanup(t, s2)
		t.Fatalf("restore under the original engine succeeded with the default decider; the baseline is the adopted demo engine")
	}
	rej := as[*rig.RestoreRejectedError](t, err, "restore under the original engine")
	if len(rej.Assessment.Changes) != 1 {
		t.Fatalf("changes %+v, want one", rej.Assessment.Changes)
	}
	if c := rej.Assessment.Changes[0]; c.Field != "engine" || c.Persisted != "demo" || c.Live != "shell" {
		t.Errorf("change %+v, want engine demo -> shell (measured against the adopted baseline)", c)
	}
	checkFailedRestore(t, e, id, before, "config_rejected")
}

// Info-level drift is adopted by the default decider once; the next
// restore under the same profile compares equal and journals nothing
// about configuration.
func testInfoDriftAdoptedOnce(t *testing.T, e *env) {
	alpha := rig.Profile{Name: "alpha", Engine: "shell", Placement: rig.PlacementSession}
	id := stoppedSession(t, e, e.define(rig.WithProfile(alpha)))
	beta := alpha
	beta.Name = "beta"
	s := e.restore(e.define(rig.WithProfile(beta)), id)
	checkAdopted(t, e, s, "default", "profile")
	if s.Restored().AdoptedBy != "default" {
		t.Errorf("RestoreInfo.AdoptedBy %q, want default", s.Restored().AdoptedBy)
	}
	shutdown(t, s)
	for i := range 2 {
		restoreAdoptingNothing(t, e, e.define(rig.WithProfile(beta)), id, fmt.Sprintf("restore %d under the adopted profile", i+2))
	}
	if n := len(adoptions(t, e, id)); n != 1 {
		t.Errorf("%d ConfigurationAdopted records after three restores, want 1", n)
	}
}

// Drift accepted by a restore that then fails (the engine it adopts is not
// registered: loop_failed, after ConfigurationAdopted) is no baseline: the
// restore did not commit.
func testFailedRestoreAdoptsNothing(t *testing.T, e *env) {
	id := stoppedSession(t, e, e.define())
	gone := rig.Profile{Name: "default", Engine: "rigtest-unregistered", Placement: rig.PlacementSession}
	failRestore(t, e.define(rig.WithProfile(gone), rig.WithDecider(rig.AcceptAll("test"))), t.Context(), id, rig.RestoreLoopFailed)
	if n := len(adoptions(t, e, id)); n != 1 {
		t.Fatalf("%d ConfigurationAdopted records after the failed restore, want 1 (it is journaled before the loop)", n)
	}
	restoreAdoptingNothing(t, e, e.define(), id, "restore under the original profile after a failed adoption")
}

// Journals written before ConfigurationAdopted carried the adopted
// manifest still work: replay applies the recorded changes to the
// previous baseline.
func testOldAdoptionRecords(t *testing.T, e *env) {
	alpha := rig.Profile{Name: "alpha", Engine: "shell", Placement: rig.PlacementSession}
	id := stoppedSession(t, e, e.define(rig.WithProfile(alpha)))
	// Write an old-style committed adoption of profile alpha -> beta, as an
	// older looprig restoring the session did: under the lease, after a
	// fence, RestoreStarted, ConfigurationAdopted{changes}, RestoreDone.
	name := storage.SessionName(id.String())
	l, err := e.raw.Acquire(t.Context(), name)
	if err != nil {
		t.Fatal(err)
	}
	j, err := journal.Open(t.Context(), e.raw, name, l)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range []event.Event{
		event.RestoreStarted{Epoch: l.Epoch()},
		event.ConfigurationAdopted{Source: "default", Changes: []event.Change{
			{Field: "profile", Persisted: "alpha", Live: "beta", Level: event.LevelInfo}}},
		event.RestoreDone{Epoch: l.Epoch()},
		event.SessionStopped{},
	} {
		if _, err := j.AppendEvent(t.Context(), "", ev); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	beta := alpha
	beta.Name = "beta"
	restoreAdoptingNothing(t, e, e.define(rig.WithProfile(beta)), id, "restore after an old-style adoption")
	s := e.restore(e.define(rig.WithProfile(alpha)), id)
	if a := s.Restored().Adopted; len(a) != 1 || a[0].Persisted != "beta" || a[0].Live != "alpha" {
		t.Errorf("restore back under alpha adopted %+v, want profile beta -> alpha", a)
	}
}

// A restore whose exclusive root is held by another live session fails as
// a lease failure (lease_failed wrapping *rig.WorkspaceRootBusyError with
// the root and the holder's epoch), journals nothing after its fence but
// RestoreErrored, and releases the session lease; once the holder stops,
// the session restores.
func testRestoreRootBusy(t *testing.T, e *env) {
	root := canonical(t, t.TempDir())
	link := filepath.Join(t.TempDir(), "root-link")
	if err := os.Symlink(root, link); err != nil {
		t.Fatal(err)
	}
	id := stoppedSession(t, e, e.define(rig.WithProfile(exclusiveProfile(root))))
	holder := e.newSession(e.define(rig.WithProfile(exclusiveProfile(root))))
	rootName := ""
	for _, n := range e.fs.names("workspace-roots/") {
		rootName = n
	}
	rootEpoch := e.fs.latest(rootName).Epoch()

	before := tip(t, e.raw, id)
	err := failRestore(t, e.define(rig.WithProfile(exclusiveProfile(link))), t.Context(), id, rig.RestoreLeaseFailed)
	busy := as[*rig.WorkspaceRootBusyError](t, err, "restore into a busy root")
	if busy.Root != root || busy.HolderEpoch != rootEpoch {
		t.Errorf("WorkspaceRootBusyError{Root %q, HolderEpoch %d}, want {%q, %d}", busy.Root, busy.HolderEpoch, root, rootEpoch)
	}
	after := readJournal(t, e.raw, id)[before:]
	if types := typesOf(after); len(types) != 2 || after[0].Kind != journal.KindFence || types[1] != "RestoreErrored" {
		t.Errorf("after the busy-root restore: %v, want its fence and RestoreErrored only:%s", types, describe(after))
	}
	checkFailedRestore(t, e, id, before, string(rig.RestoreLeaseFailed))
	if err := holder.Err(); err != nil {
		t.Errorf("the root's holder was disturbed: %v", err)
	}
	shutdown(t, holder)
	e.restore(e.define(rig.WithProfile(exclusiveProfile(root))), id)
}
