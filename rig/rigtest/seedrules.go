package rigtest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/google/uuid"

	"looprig/rig"
	"looprig/rig/event"
	"looprig/rig/journal"
	"looprig/rig/storage"
)

// seedRuleCases pin rules of the seed documents ("Create and restore",
// "Workspace leases") that held but that no other test guarded: each was
// broken once and this test failed (see the commit that added it).
var seedRuleCases = []testCase{
	{"SeedRefusedIntoANonEmptyRoot", testSeedRefusedIntoNonEmptyRoot},
	{"SessionWorkspaceIs0700", testSessionWorkspace0700},
	{"RootLeaseNamedByTheCanonicalRootsHash", testRootLeaseName},
	{"PlacementChangeIsWarnLevelDrift", testPlacementChangeIsWarn},
	{"MaterializeFailureJournalsNoRestoreStarted", testMaterializeFailureNoRestoreStarted},
	{"SharedPlacementTakesNoRootLease", testSharedTakesNoRootLease},
	{"ReplayRefusesALowerFenceAfterAHigher", testReplayFenceOrder},
}

// onlyRestoreErroredAfter checks that the journal of id holds, after
// tipBefore, nothing but fences and RestoreErrored: a restore that failed
// before its first mutation.
func onlyRestoreErroredAfter(t testing.TB, e *env, id uuid.UUID, tipBefore uint64) {
	t.Helper()
	recs := readJournal(t, e.raw, id)
	for _, r := range recs[tipBefore:] {
		if r.Kind == journal.KindFence {
			continue
		}
		if _, ok := r.Event.(event.RestoreErrored); r.Kind == journal.KindEvent && ok {
			continue
		}
		t.Fatalf("the failed restore journaled more than RestoreErrored after its fence:%s", describe(recs[tipBefore:]))
	}
}

// A seed is copied only into an empty workspace: an exclusive root that
// holds anything refuses the whole seed (stage seed, *rig.SeedError), and
// the root keeps what it held, with nothing of the seed in it.
func testSeedRefusedIntoNonEmptyRoot(t *testing.T, e *env) {
	root := canonical(t, t.TempDir())
	writeFile(t, filepath.Join(root, "mine.txt"), "mine")
	seed := t.TempDir()
	writeFile(t, filepath.Join(seed, "seed.txt"), "seed")
	r := e.define(rig.WithProfile(exclusiveProfile(root)))
	s, err := r.NewSession(t.Context(), rig.WithSeedSnapshot(seed))
	if err == nil {
		shutdownAtCleanup(t, s)
		t.Fatal("a seed was copied into a root that holds a file")
	}
	le := as[*rig.LifecycleError](t, err, "NewSession with a seed into a non-empty root")
	if le.Stage != rig.StageSeed {
		t.Errorf("stage %s, want %s", le.Stage, rig.StageSeed)
	}
	if se := as[*rig.SeedError](t, err, "seed into a non-empty root"); !strings.Contains(se.Reason, "not empty") {
		t.Errorf("SeedError %+v does not say the workspace is not empty", se)
	}
	if exists(filepath.Join(root, "seed.txt")) {
		t.Error("the refused seed was copied into the root")
	}
	if b, err := os.ReadFile(filepath.Join(root, "mine.txt")); err != nil || string(b) != "mine" {
		t.Errorf("the root's own file: %q, %v", b, err)
	}
	e.fs.checkBalanced(t, "")
	// An empty root takes the seed.
	empty := canonical(t, t.TempDir())
	s = e.newSession(e.define(rig.WithProfile(exclusiveProfile(empty))), rig.WithSeedSnapshot(seed))
	if !exists(filepath.Join(s.Workspace(), "seed.txt")) {
		t.Error("the seed was not copied into an empty root")
	}
}

// A session's own workspace directory is created 0700, whatever the
// umask lets through (022 here: a 0755 directory would show).
func testSessionWorkspace0700(t *testing.T, e *env) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	s := e.newSession(e.define())
	fi, err := os.Lstat(s.Workspace())
	if err != nil || !fi.IsDir() {
		t.Fatalf("workspace %s: %v, %v", s.Workspace(), fi, err)
	}
	if perm := fi.Mode().Perm(); perm != 0o700 {
		t.Errorf("session workspace mode %v, want 0700", perm)
	}
}

// An exclusive root's lease is named by the hex SHA-256 of the canonical
// root: the same lease whichever path (a symlink, "..") names the root, at
// creation and at restore.
func testRootLeaseName(t *testing.T, e *env) {
	root := filepath.Join(canonical(t, t.TempDir()), "root")
	if err := os.Mkdir(filepath.Join(root), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(root, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(root, link); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(root))
	want := "workspace-roots/" + hex.EncodeToString(sum[:])
	p := exclusiveProfile(link + string(filepath.Separator) + "sub" + string(filepath.Separator) + "..")
	r := e.define(rig.WithProfile(p))
	s := e.newSession(r)
	if got := e.fs.names("workspace-roots/"); !slices.Equal(got, []string{want}) {
		t.Fatalf("root leases %v, want [%s] (the SHA-256 of %s)", got, want, root)
	}
	if st, err := e.raw.Probe(t.Context(), want); err != nil || !st.Held {
		t.Errorf("root lease %s while the session runs: %+v, %v; want held", want, st, err)
	}
	id := s.SessionID()
	shutdown(t, s)
	e.restore(e.define(rig.WithProfile(exclusiveProfile(root))), id)
	if got := e.fs.names("workspace-roots/"); !slices.Equal(got, []string{want}) {
		t.Errorf("root leases after a restore naming the root directly: %v, want [%s]", got, want)
	}
}

// A change of placement alone (the same root, exclusive to shared) is
// warn-level drift: the default decider refuses it, and the assessment
// names that one change.
func testPlacementChangeIsWarn(t *testing.T, e *env) {
	root := canonical(t, t.TempDir())
	id := stoppedSession(t, e, e.define(rig.WithProfile(exclusiveProfile(root))))
	shared := rig.Profile{Name: "exclusive", Engine: "shell", Placement: rig.PlacementShared, Root: root}
	s, err := e.define(rig.WithProfile(shared)).RestoreSession(t.Context(), id)
	if err == nil {
		shutdownAtCleanup(t, s)
		t.Fatal("the default decider accepted a change of placement")
	}
	rej := as[*rig.RestoreRejectedError](t, err, "restore under another placement")
	want := []event.Change{{Field: "placement", Persisted: "exclusive", Live: "shared", Level: event.LevelWarn}}
	if !slices.Equal(rej.Assessment.Changes, want) {
		t.Errorf("changes %+v, want %+v", rej.Assessment.Changes, want)
	}
}

// A restore whose workspace cannot be materialized fails before its
// first mutation: after its fence, the journal holds RestoreErrored and
// no RestoreStarted (for a session's own directory gone without a
// checkpoint, and for an exclusive root gone).
func testMaterializeFailureNoRestoreStarted(t *testing.T, e *env) {
	t.Run("session workspace", func(t *testing.T) {
		e := newEnv(t, e.b)
		p := rig.DefaultProfile()
		p.Checkpoint = rig.CheckpointOff
		s := e.newSession(e.define(rig.WithProfile(p)))
		id, dir := s.SessionID(), s.Workspace()
		shutdown(t, s)
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
		before := tip(t, e.raw, id)
		failRestore(t, e.define(rig.WithProfile(p)), t.Context(), id, rig.RestoreMaterializeFailed)
		onlyRestoreErroredAfter(t, e, id, before)
	})
	t.Run("exclusive root", func(t *testing.T) {
		e := newEnv(t, e.b)
		root := filepath.Join(canonical(t, t.TempDir()), "root")
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
		onlyRestoreErroredAfter(t, e, id, before)
	})
}

// Shared placement takes no root lease: two sessions work in one shared
// root at once, and neither they nor a restore acquire a workspace-roots
// lease.
func testSharedTakesNoRootLease(t *testing.T, e *env) {
	root := canonical(t, t.TempDir())
	p := rig.Profile{Name: "shared", Engine: "shell", Placement: rig.PlacementShared, Root: root}
	r := e.define(rig.WithProfile(p))
	a := e.newSession(r)
	b := e.newSession(r)
	runTurn(t, a, "echo a > a.txt")
	runTurn(t, b, "echo b > b.txt")
	if !exists(filepath.Join(root, "a.txt")) || !exists(filepath.Join(root, "b.txt")) {
		t.Fatal("the sessions did not both work in the shared root")
	}
	id := a.SessionID()
	shutdown(t, a)
	e.restore(r, id)
	if got := e.fs.names("workspace-roots/"); len(got) != 0 {
		t.Errorf("shared placement took root leases %v", got)
	}
}

// fixedLease is a lease at a given epoch that nothing takes away: a
// writer of the journal who believes it owns it.
type fixedLease uint64

func (l fixedLease) Epoch() uint64                 { return uint64(l) }
func (l fixedLease) Lost() <-chan struct{}         { return never }
func (l fixedLease) Release(context.Context) error { return nil }

// A journal in which a fence of a lower epoch follows one of a higher
// epoch was written by two owners at once: the replay refuses it
// (replay_failed, the catalog marked broken) and the restore writes
// nothing but RestoreErrored. An owner fencing twice at its own epoch is
// fine.
func testReplayFenceOrder(t *testing.T, e *env) {
	e.skipConsistency("writes the fences of overlapping owners (an epoch lower than an earlier one)")
	r := e.define()
	id := stoppedSession(t, e, r) // fence 1
	name := storage.SessionName(id.String())
	// The lease's next grants are above every fence written below.
	for range 4 {
		l, err := e.raw.Acquire(t.Context(), name)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Release(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	fence := func(epoch uint64) {
		t.Helper()
		j, err := journal.Open(t.Context(), e.raw, name, fixedLease(epoch))
		if err != nil {
			t.Fatalf("fence %d: %v", epoch, err)
		}
		if _, err := j.AppendEvent(t.Context(), "", event.SessionIdle{}); err != nil {
			t.Fatal(err)
		}
	}
	// The same epoch twice: one owner that opened its journal again.
	fence(3)
	fence(3)
	shutdown(t, e.restore(r, id)) // fence 6

	// Then epoch 7 after epoch 8: overlapping owners.
	for range 3 {
		l, err := e.raw.Acquire(t.Context(), name)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Release(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	fence(8)
	fence(7)
	before := tip(t, e.raw, id)
	failRestore(t, r, t.Context(), id, rig.RestoreReplayFailed)
	onlyRestoreErroredAfter(t, e, id, before)
	if c, err := rig.ReadCatalog(t.Context(), e.raw, id.String()); err != nil || c.State != rig.CatalogBroken {
		t.Errorf("catalog entry %+v (%v), want broken", c, err)
	}
}
