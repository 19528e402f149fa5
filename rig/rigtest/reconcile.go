package rigtest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/uuid"

	"looprig/rig"
	"looprig/rig/checkpoint"
	"looprig/rig/event"
	"looprig/rig/journal"
)

var reconcileCases = []testCase{
	{"RoundTripBringsWorkBack", testRoundTripBringsWorkBack},
	{"MatchesTheLastCheckpoint", testReconcileMatches},
	{"KeepsThisMachinesChanges", testReconcileKeeps},
	{"DivergedIsRefused", testReconcileDiverged},
	{"DivergedKept", testReconcileDivergedKept},
	{"DivergedTakesTheCheckpoint", testReconcileDivergedCheckpoint},
}

// machine is a second machine of the suite: a workspaces directory of its
// own on the same store.
func (e *env) machine() string { return e.t.TempDir() }

// travelled runs a session on machine A (e.ws): a turn that writes three
// files, then shuts it down; restores it on machine B (wsB), where a turn
// adds a file, deletes one and changes one, and shuts it down. It returns
// the session, A's workspace and B's tree.
func travelled(t *testing.T, e *env) (uuid.UUID, string, map[string]string) {
	t.Helper()
	s := e.newSession(e.define())
	id, dirA := s.SessionID(), s.Workspace()
	runTurn(t, s, `printf 'one\n' > keep.txt && printf 'two\n' > gone.txt && printf 'v1\n' > edit.txt`)
	shutdown(t, s)
	wsB := e.machine()
	sB := e.restore(defineOn(t, e.fs, wsB), id)
	if w := sB.Restored().Workspace; w == nil || !w.Materialized {
		t.Fatalf("restore on B: workspace %+v, want it brought back", w)
	}
	runTurn(t, sB, `printf 'new on B\n' > new.txt && rm gone.txt && printf 'v2 from B\n' > edit.txt`)
	treeB := treeOf(t, sB.Workspace())
	shutdown(t, sB)
	return id, dirA, treeB
}

// A → B → A: back on A, the directory A left is the checkpoint A took, and
// the session moved on on B: it is brought up to date (B's new file there,
// its deletion done, its edit in), the restore says so, and A's next
// checkpoint deletes nothing of B's work.
func testRoundTripBringsWorkBack(t *testing.T, e *env) {
	id, dirA, treeB := travelled(t, e)
	s := e.restore(e.define(), id)
	w := s.Restored().Workspace
	if w == nil || !w.Updated || w.From == nil || w.From.Turn != 0 || w.Changed != 3 {
		t.Fatalf("restore back on A: workspace %+v; want brought up to date from turn 0's checkpoint, 3 entries changed", w)
	}
	if got := treeOf(t, dirA); !sameTree(got, treeB) {
		t.Errorf("A's workspace after the restore:\n%v\nwant B's:\n%v", got, treeB)
	}
	recs := readJournal(t, e.raw, id)
	rcs, _ := find[event.WorkspaceReconciled](recs)
	if len(rcs) != 1 || rcs[0].Action != event.ReconcileUpdated || rcs[0].Differs != 3 {
		t.Errorf("journaled %+v; want one WorkspaceReconciled{updated, 3}", rcs)
	}
	ti := runTurn(t, s, "ls")
	tc, err := rig.FindTurnCheckpoints(t.Context(), e.raw, id, ti.ID)
	if err != nil {
		t.Fatal(err)
	}
	changes, err := checkpoint.Diff(t.Context(), e.raw, tc.Before, tc.After, checkpoint.DiffOptions{NoPatch: true})
	if err != nil || len(changes) != 0 {
		t.Errorf("the `ls` turn back on A changed %v (%v); want nothing", changes, err)
	}
}

// A restore on the machine that took the last checkpoint, whose
// directory is that checkpoint, uses it and says nothing else.
func testReconcileMatches(t *testing.T, e *env) {
	s := e.newSession(e.define())
	id := s.SessionID()
	runTurn(t, s, `printf 'x\n' > a.txt`)
	shutdown(t, s)
	s2 := e.restore(e.define(), id)
	if w := s2.Restored().Workspace; w == nil || !w.Matches || w.Differs != 0 {
		t.Errorf("workspace %+v; want it to match the last checkpoint", w)
	}
}

// Changes made on this machine after the last checkpoint (a turn a
// crash cut short, edits by hand) are kept, and named.
func testReconcileKeeps(t *testing.T, e *env) {
	s := e.newSession(e.define())
	id, dir := s.SessionID(), s.Workspace()
	runTurn(t, s, `printf 'x\n' > a.txt`)
	shutdown(t, s)
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("edited by hand\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s2 := e.restore(e.define(), id)
	w := s2.Restored().Workspace
	if w == nil || !w.Kept || w.Differs != 1 || len(w.Paths) != 1 || w.Paths[0] != "a.txt" {
		t.Errorf("workspace %+v; want kept, a.txt named", w)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "a.txt")); string(b) != "edited by hand\n" {
		t.Errorf("a.txt holds %q after the restore", b)
	}
}

// diverge makes A's directory hold work of its own on top of the
// checkpoint A took, while the session moved on on B.
func diverge(t *testing.T, e *env) (uuid.UUID, string, map[string]string) {
	t.Helper()
	id, dirA, treeB := travelled(t, e)
	if err := os.WriteFile(filepath.Join(dirA, "mine.txt"), []byte("written on A meanwhile\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return id, dirA, treeB
}

// A directory with changes no checkpoint has, on top of an older
// checkpoint, is refused before RestoreStarted: workspace_diverged
// wrapping *WorkspaceDivergedError naming the paths and both lineages;
// nothing in the directory changes.
func testReconcileDiverged(t *testing.T, e *env) {
	id, dirA, _ := diverge(t, e)
	before := treeOf(t, dirA)
	tip := len(readJournal(t, e.raw, id))
	_, err := e.define().RestoreSession(t.Context(), id)
	re := as[*rig.RestoreError](t, err, "restore of a diverged workspace")
	if re.Kind != rig.RestoreWorkspaceDiverged {
		t.Fatalf("restore failed %s, want %s: %v", re.Kind, rig.RestoreWorkspaceDiverged, err)
	}
	dv := as[*rig.WorkspaceDivergedError](t, err, "its cause")
	if dv.Lineage == nil || dv.Lineage.Turn != 0 || dv.Last.Turn != 1 || dv.Differs != 4 || !strings.Contains(strings.Join(dv.Paths, ","), "mine.txt") {
		t.Errorf("diverged error %+v (lineage %v); want lineage turn 0, last turn 1, 4 entries with mine.txt", dv, dv.Lineage)
	}
	after := readJournal(t, e.raw, id)
	for _, r := range after[tip:] {
		if r.Kind == journal.KindEvent {
			if _, ok := r.Event.(event.RestoreErrored); !ok {
				t.Errorf("the refused restore journaled %s", r.Event.Type())
			}
		}
	}
	if got := treeOf(t, dirA); !sameTree(got, before) {
		t.Errorf("the refused restore changed the directory:\n%v\nwas\n%v", got, before)
	}
}

// Keeping a diverged directory: it is the workspace from now on, as it
// is, journaled as an adoption and checkpointed at once (the next restore
// finds it the last checkpoint).
func testReconcileDivergedKept(t *testing.T, e *env) {
	id, dirA, _ := diverge(t, e)
	before := treeOf(t, dirA)
	s, err := e.define().RestoreSession(t.Context(), id, rig.OnDiverged(rig.WorkspaceKeep))
	if err != nil {
		t.Fatal(err)
	}
	shutdownAtCleanup(t, s)
	if w := s.Restored().Workspace; w == nil || !w.Adopted || w.Differs != 4 {
		t.Errorf("workspace %+v; want adopted, 4 entries differing", w)
	}
	if got := treeOf(t, dirA); !sameTree(got, before) {
		t.Errorf("the kept directory changed:\n%v\nwas\n%v", got, before)
	}
	recs := readJournal(t, e.raw, id)
	rcs, _ := find[event.WorkspaceReconciled](recs)
	cps, _ := find[event.WorkspaceCheckpointed](recs)
	if len(rcs) != 1 || rcs[0].Action != event.ReconcileAdopted || cps[len(cps)-1].Trigger != event.TriggerRestore {
		t.Errorf("journaled %+v and last checkpoint %+v; want an adoption, then a checkpoint (restore)", rcs, cps[len(cps)-1])
	}
	shutdown(t, s)
	s2 := e.restore(e.define(), id)
	if w := s2.Restored().Workspace; w == nil || !w.Matches {
		t.Errorf("the restore after the adoption: workspace %+v; want it to match", w)
	}
}

// Taking the checkpoint: the diverged directory is moved aside to a
// sibling, intact, and the last checkpoint is brought back.
func testReconcileDivergedCheckpoint(t *testing.T, e *env) {
	id, dirA, treeB := diverge(t, e)
	before := treeOf(t, dirA)
	s, err := e.define().RestoreSession(t.Context(), id, rig.OnDiverged(rig.WorkspaceUseCheckpoint))
	if err != nil {
		t.Fatal(err)
	}
	shutdownAtCleanup(t, s)
	w := s.Restored().Workspace
	if w == nil || w.MovedTo == "" || filepath.Dir(w.MovedTo) != filepath.Dir(dirA) || !strings.HasPrefix(filepath.Base(w.MovedTo), filepath.Base(dirA)+".diverged-") {
		t.Fatalf("workspace %+v; want the directory moved to a sibling", w)
	}
	if got := treeOf(t, w.MovedTo); !sameTree(got, before) {
		t.Errorf("the directory moved aside:\n%v\nwas\n%v", got, before)
	}
	if got := treeOf(t, dirA); !sameTree(got, treeB) {
		t.Errorf("the workspace:\n%v\nwant the last checkpoint:\n%v", got, treeB)
	}
}

// sameTree compares two treeOf results.
func sameTree(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
