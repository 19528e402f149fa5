package rigtest

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"looprig/rig"
	"looprig/rig/event"
)

// movedCases: a restore that accepts drift of the placement or the root
// moves the session's workspace (rig/moved.go).
var movedCases = []testCase{
	{"AcceptedPlacementDriftMovesTheWorkspace", testAcceptedPlacementDriftMoves},
	{"AcceptedRootDriftIntoAnEmptyDirectory", testAcceptedRootDriftEmptyDir},
	{"AcceptedRootDriftIntoAForeignDirectory", testAcceptedRootDriftForeignDir},
}

// A session made in an exclusive root and restored, its drift accepted,
// under session placement works from then on in a new directory of its
// own (0700, empty: it had no checkpoint), says so, and leaves the files
// in the root where they are; a turn runs in the new directory. Before,
// such a restore failed materialize_failed: the directory did not exist.
func testAcceptedPlacementDriftMoves(t *testing.T, e *env) {
	for _, placement := range []rig.Placement{rig.PlacementExclusive, rig.PlacementShared} {
		t.Run(string(placement), func(t *testing.T) {
			e := newEnv(t, e.b)
			root := canonical(t, t.TempDir())
			p := rig.Profile{Name: "default", Engine: "shell", Placement: placement, Root: root, Checkpoint: rig.CheckpointOff}
			s := e.newSession(e.define(rig.WithProfile(p)))
			id := s.SessionID()
			runTurn(t, s, "echo made > made.txt")
			shutdown(t, s)

			old := syscall.Umask(0o022)
			defer syscall.Umask(old)
			s = e.restore(e.define(rig.WithDecider(rig.AcceptAll("rigtest"))), id)
			ws := s.Workspace()
			if want := filepath.Join(e.ws, id.String()); ws != want {
				t.Fatalf("workspace %s, want %s", ws, want)
			}
			found := s.Restored().Workspace
			if found == nil || !found.New || found.MovedFrom != root || !strings.Contains(found.Summary(), root) {
				t.Errorf("the restore found %+v, want a new directory moved from %s", found, root)
			}
			fi, err := os.Lstat(ws)
			if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
				t.Fatalf("the new workspace: %v, %v; want a 0700 directory", fi, err)
			}
			if entries, _ := os.ReadDir(ws); len(entries) != 0 {
				t.Errorf("the new workspace holds %v, want nothing", entries)
			}
			runTurn(t, s, "echo here > here.txt")
			if !exists(filepath.Join(ws, "here.txt")) || exists(filepath.Join(root, "here.txt")) {
				t.Error("the turn after the move did not run in the new directory")
			}
			if b, err := os.ReadFile(filepath.Join(root, "made.txt")); err != nil || string(b) != "made\n" {
				t.Errorf("the root's file after the move: %q, %v", b, err)
			}
			if adopted, _ := find[event.ConfigurationAdopted](readJournal(t, e.raw, id)); len(adopted) != 1 {
				t.Errorf("%d ConfigurationAdopted, want 1", len(adopted))
			}
		})
	}
}

// An exclusive root with checkpoints, restored with its drift accepted
// into another root that is an empty directory (or none yet): the last
// checkpoint is brought back there. Before, an empty directory was taken
// for this machine's work on the session (every file "deleted here") and
// kept as it was.
func testAcceptedRootDriftEmptyDir(t *testing.T, e *env) {
	for _, missing := range []bool{false, true} {
		t.Run(map[bool]string{false: "empty", true: "missing"}[missing], func(t *testing.T) {
			e := newEnv(t, e.b)
			root := canonical(t, t.TempDir())
			s := e.newSession(e.define(rig.WithProfile(checkpointedRoot(root))))
			id := s.SessionID()
			runTurn(t, s, "echo a > a.txt")
			shutdown(t, s)

			other := filepath.Join(canonical(t, t.TempDir()), "other")
			if !missing {
				if err := os.Mkdir(other, 0o700); err != nil {
					t.Fatal(err)
				}
			}
			s = e.restore(e.define(rig.WithProfile(checkpointedRoot(other)), rig.WithDecider(rig.AcceptAll("rigtest"))), id)
			if found := s.Restored().Workspace; found == nil || !found.Materialized || found.Files != 1 {
				t.Errorf("the restore found %+v, want the last checkpoint materialized", found)
			}
			if b, err := os.ReadFile(filepath.Join(other, "a.txt")); err != nil || string(b) != "a\n" {
				t.Errorf("a.txt in the new root: %q, %v", b, err)
			}
			if !exists(filepath.Join(root, "a.txt")) {
				t.Error("the old root lost its file")
			}
		})
	}
}

// An exclusive root with checkpoints, restored with its drift accepted
// into a directory that holds other files: refused as diverged, before
// anything is journaled, the directory untouched; taking the checkpoint
// moves the directory aside (kept) and brings the checkpoint back. Before,
// this machine's stat index of the old root made it "kept as found".
func testAcceptedRootDriftForeignDir(t *testing.T, e *env) {
	root := canonical(t, t.TempDir())
	s := e.newSession(e.define(rig.WithProfile(checkpointedRoot(root))))
	id := s.SessionID()
	runTurn(t, s, "echo a > a.txt")
	shutdown(t, s)

	other := filepath.Join(canonical(t, t.TempDir()), "other")
	if err := os.Mkdir(other, 0o700); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(other, "theirs.txt"), "theirs")
	r := e.define(rig.WithProfile(checkpointedRoot(other)), rig.WithDecider(rig.AcceptAll("rigtest")))
	before := tip(t, e.raw, id)
	failRestore(t, r, t.Context(), id, rig.RestoreWorkspaceDiverged)
	onlyRestoreErroredAfter(t, e, id, before)
	if entries, _ := os.ReadDir(other); len(entries) != 1 || entries[0].Name() != "theirs.txt" {
		t.Fatalf("the refused restore changed the directory: %v", entries)
	}

	s, err := r.RestoreSession(t.Context(), id, rig.OnDiverged(rig.WorkspaceUseCheckpoint))
	if err != nil {
		t.Fatalf("restore taking the checkpoint: %v", err)
	}
	shutdownAtCleanup(t, s)
	found := s.Restored().Workspace
	if found == nil || found.MovedTo == "" {
		t.Fatalf("the restore found %+v, want the directory moved aside", found)
	}
	if !exists(filepath.Join(found.MovedTo, "theirs.txt")) {
		t.Error("the directory moved aside lost its file")
	}
	if b, err := os.ReadFile(filepath.Join(other, "a.txt")); err != nil || string(b) != "a\n" {
		t.Errorf("a.txt brought back: %q, %v", b, err)
	}
}
