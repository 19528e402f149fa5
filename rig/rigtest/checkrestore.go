package rigtest

import (
	"errors"
	"io/fs"
	"os"
	"strings"
	"testing"

	"github.com/google/uuid"

	"looprig/rig"
	"looprig/rig/storage"
)

// CheckRestore (what take runs before it asks a holder for a session):
// it refuses what RestoreSession would refuse, takes nothing and writes
// nothing, and lets through a session its holder can hand over.
var checkRestoreCases = []testCase{
	{"HeldSessionPasses", testCheckHeldSessionPasses},
	{"DriftRefused", testCheckDriftRefused},
	{"BusyRootRefused", testCheckBusyRootRefused},
	{"MissingWorkspaceRefused", testCheckMissingWorkspaceRefused},
	{"FailedRestoreMarksTheListing", testFailedRestoreMarksTheListing},
}

// holderOf is the process that holds session id now.
func holderOf(t *testing.T, e *env, id uuid.UUID) *storage.Holder {
	t.Helper()
	h, _, err := rig.SessionHolder(t.Context(), e.raw, id)
	if err != nil || h == nil {
		t.Fatalf("holder of %s: %v, %v", id, h, err)
	}
	return h
}

// unchanged fails t unless session id's journal still ends at tip.
func unchanged(t *testing.T, e *env, id uuid.UUID, before uint64) {
	t.Helper()
	if after := tip(t, e.raw, id); after != before {
		t.Errorf("the check wrote to the journal: tip %d, was %d", after, before)
	}
}

// A live session in an exclusive root, checkpointed, passes: its own
// holder's root lease is no obstacle. The check takes neither lease: the
// session goes on, and its root lease is still its holder's.
func testCheckHeldSessionPasses(t *testing.T, e *env) {
	root := canonical(t, t.TempDir())
	p := checkpointedRoot(root)
	s := e.newSession(e.define(rig.WithProfile(p)))
	id := s.SessionID()
	runTurn(t, s, `printf 'kept\n' > a.txt`)
	before := tip(t, e.raw, id)
	if err := e.define(rig.WithProfile(p)).CheckRestore(t.Context(), id, holderOf(t, e, id)); err != nil {
		t.Fatalf("CheckRestore of a session its holder can hand over: %v", err)
	}
	unchanged(t, e, id, before)
	runTurn(t, s, `printf 'more\n' >> a.txt`) // still its holder's: both leases held
	shutdown(t, s)
}

// A profile that drifted from the session's record is refused as
// RestoreSession refuses it (*RestoreRejectedError), nothing journaled;
// accepted drift passes.
func testCheckDriftRefused(t *testing.T, e *env) {
	s := e.newSession(e.define())
	id := s.SessionID()
	runTurn(t, s, "echo before")
	holder := holderOf(t, e, id)
	before := tip(t, e.raw, id)
	demo := rig.Profile{Name: "default", Engine: "demo", Placement: rig.PlacementSession}
	err := e.define(rig.WithProfile(demo)).CheckRestore(t.Context(), id, holder)
	rej := as[*rig.RestoreRejectedError](t, err, "CheckRestore under a changed engine")
	if len(rej.Assessment.Changes) != 1 || rej.Assessment.Changes[0].Field != "engine" {
		t.Errorf("changes %+v, want the engine", rej.Assessment.Changes)
	}
	if rej.Journaled {
		t.Error("the refusal says it was journaled")
	}
	if err := e.define(rig.WithProfile(demo), rig.WithDecider(rig.AcceptAll("test"))).CheckRestore(t.Context(), id, holder); err != nil {
		t.Errorf("CheckRestore with drift accepted: %v", err)
	}
	unchanged(t, e, id, before)
	shutdown(t, s)
}

// An exclusive root another session holds is refused as busy
// (RestoreError{lease_failed} wrapping *WorkspaceRootBusyError), and the
// missing root is not written.
func testCheckBusyRootRefused(t *testing.T, e *env) {
	root, p, idA, b := busyRoot(t, e)
	before := tip(t, e.raw, idA)
	err := e.define(rig.WithProfile(p)).CheckRestore(t.Context(), idA, nil)
	var re *rig.RestoreError
	if !errors.As(err, &re) || re.Kind != rig.RestoreLeaseFailed {
		t.Fatalf("CheckRestore into a held root: %v, want lease_failed", err)
	}
	as[*rig.WorkspaceRootBusyError](t, err, "CheckRestore into a held root")
	if _, err := os.Lstat(root); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the check wrote the root another session holds: %v", err)
	}
	unchanged(t, e, idA, before)
	shutdown(t, b)
}

// A session workspace that is gone, with no checkpoint to bring it back
// from, is refused (materialize_failed).
func testCheckMissingWorkspaceRefused(t *testing.T, e *env) {
	p := rig.Profile{Name: "default", Engine: "shell", Placement: rig.PlacementSession, Checkpoint: rig.CheckpointOff}
	r := e.define(rig.WithProfile(p))
	s := e.newSession(r)
	id := s.SessionID()
	dir := s.Workspace()
	shutdown(t, s)
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	before := tip(t, e.raw, id)
	err := e.define(rig.WithProfile(p)).CheckRestore(t.Context(), id, nil)
	var re *rig.RestoreError
	if !errors.As(err, &re) || re.Kind != rig.RestoreMaterializeFailed {
		t.Fatalf("CheckRestore of a session whose workspace is gone: %v, want materialize_failed", err)
	}
	if _, err := os.Lstat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the check made the workspace: %v", err)
	}
	unchanged(t, e, id, before)
}

// A restore that fails leaves the session marked in listings with why
// (rig.LastRestoreFailed), until a restore succeeds.
func testFailedRestoreMarksTheListing(t *testing.T, e *env) {
	id := stoppedSession(t, e, e.define())
	demo := rig.Profile{Name: "default", Engine: "demo", Placement: rig.PlacementSession}
	if s, err := e.define(rig.WithProfile(demo)).RestoreSession(t.Context(), id); err == nil {
		shutdownAtCleanup(t, s)
		t.Fatal("restore under a changed engine succeeded")
	}
	reason := func() string {
		t.Helper()
		infos, err := rig.ListSessions(t.Context(), e.raw)
		if err != nil {
			t.Fatal(err)
		}
		for _, in := range infos {
			if in.ID == id.String() {
				return in.Reason
			}
		}
		t.Fatalf("session %s not listed", id)
		return ""
	}
	if got := reason(); !strings.HasPrefix(got, rig.LastRestoreFailed) || !strings.Contains(got, "config_rejected") {
		t.Errorf("listing's reason after a refused restore: %q", got)
	}
	s, err := e.define().RestoreSession(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	shutdown(t, s)
	if got := reason(); got != "" {
		t.Errorf("listing's reason after a restore that succeeded and a shutdown: %q", got)
	}
}
