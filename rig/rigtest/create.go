package rigtest

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"

	"looprig/rig"
	"looprig/rig/engine"
	"looprig/rig/event"
	"looprig/rig/journal"
	"looprig/rig/storage"
)

var createCases = []testCase{
	{"JournalIsFenceStartedLoop", testJournalShape},
	{"SeedBeforeFirstLoop", testSeedBeforeLoop},
	{"FailureStages", testNewSessionFailures},
}

// A new session's journal is exactly: its fence, SessionStarted (with
// fingerprint and manifest), the root LoopStarted.
func testJournalShape(t *testing.T, e *env) {
	r := e.define(rig.WithProfile(gateProfile()))
	s := e.newSession(r, rig.WithTitle("shape"))
	name := storage.SessionName(s.SessionID().String())

	recs := readJournal(t, e.raw, s.SessionID())
	if len(recs) != 3 {
		t.Fatalf("journal of a new session has %d records, want fence, SessionStarted, LoopStarted:%s", len(recs), describe(recs))
	}
	if recs[0].Kind != journal.KindFence || recs[0].Epoch != s.Epoch() {
		t.Errorf("record 1 = %s epoch %d, want the fence at the lease epoch %d", recs[0].Kind, recs[0].Epoch, s.Epoch())
	}
	if l := e.fs.latest(name); l == nil || l.Epoch() != s.Epoch() {
		t.Errorf("session epoch %d is not the epoch of the lease granted for %s", s.Epoch(), name)
	}
	started, ok := recs[1].Event.(event.SessionStarted)
	if !ok {
		t.Fatalf("record 2 = %s, want SessionStarted:%s", typesOf(recs[1:2]), describe(recs))
	}
	if started.Fingerprint == "" || started.Manifest == nil {
		t.Errorf("SessionStarted has fingerprint %q and manifest %v; want both", started.Fingerprint, started.Manifest)
	} else if fp := rig.Manifest(started.Manifest).Fingerprint(); fp != started.Fingerprint {
		t.Errorf("SessionStarted fingerprint %s is not the fingerprint of its manifest (%s)", started.Fingerprint, fp)
	}
	if started.Rig != "rigtest" || started.Title != "shape" || started.Placement != string(rig.PlacementSession) {
		t.Errorf("SessionStarted = %+v, want rig rigtest, title shape, session placement", started)
	}
	if started.Manifest["engine"] != "shell" || started.Manifest["profile"] != "rigtest" {
		t.Errorf("manifest %v does not record profile rigtest and engine shell", started.Manifest)
	}
	loop, ok := recs[2].Event.(event.LoopStarted)
	if !ok {
		t.Fatalf("record 3 = %s, want LoopStarted:%s", typesOf(recs[2:3]), describe(recs))
	}
	if loop.LoopID != s.LoopID() || recs[2].LoopID != s.LoopID() || loop.Engine != "shell" || loop.LoopID == "" {
		t.Errorf("LoopStarted %+v (record loop %q), want loop %q with engine shell", loop, recs[2].LoopID, s.LoopID())
	}
	c, err := rig.ReadCatalog(t.Context(), e.raw, s.SessionID().String())
	if err != nil {
		t.Fatalf("catalog entry of a new session: %v", err)
	}
	if c.State != rig.CatalogRunning || c.Epoch != s.Epoch() || c.Title != "shape" {
		t.Errorf("catalog entry %+v, want running at epoch %d titled shape", c, s.Epoch())
	}
}

// A seed snapshot is in the workspace before the root loop starts.
func testSeedBeforeLoop(t *testing.T, e *env) {
	seed := t.TempDir()
	m := newMarker()
	writeFile(t, filepath.Join(seed, "seed.txt"), "seeded "+m+"\n")
	writeFile(t, filepath.Join(seed, "sub", "deep.txt"), "deep "+m+"\n")
	if err := os.Symlink("sub/deep.txt", filepath.Join(seed, "link.txt")); err != nil {
		t.Fatal(err)
	}
	r := e.define()
	s := e.newSession(r, rig.WithSeedSnapshot(seed))
	for _, f := range []string{"seed.txt", "sub/deep.txt", "link.txt"} {
		if !exists(filepath.Join(s.Workspace(), f)) {
			t.Errorf("seed file %s is not in the workspace of a new session", f)
		}
	}
	ti := runTurn(t, s, "cat seed.txt link.txt")
	out := turnOutput(readJournal(t, e.raw, s.SessionID()), ti.ID)
	if !strings.Contains(out, "seeded "+m) || !strings.Contains(out, "deep "+m) {
		t.Errorf("first turn printed %q, want the seed files", out)
	}
}

// Every failing stage of NewSession is a *rig.LifecycleError with its
// stage, and releases everything it took: no lease, ledger, catalog entry
// or workspace directory is left behind.
func testNewSessionFailures(t *testing.T, e *env) {
	for _, c := range newSessionFailureCases() {
		t.Run(c.name, func(t *testing.T) { runNewSessionFailure(t, newEnv(t, e.b), c) })
	}
}

// stageCase is a NewSession that fails at one stage; cause checks the
// error's cause.
type stageCase struct {
	name  string
	stage rig.LifecycleStage
	// setup returns the rig to call, the context and options; it may
	// install faults.
	setup func(t *testing.T, e *env) (*rig.Rig, context.Context, []rig.SessionOption)
	cause func(t *testing.T, err error)
}

// newSessionFailureCases are a failure at each stage of NewSession.
func newSessionFailureCases() []stageCase {
	return []stageCase{
		{"validate-cancelled-context", rig.StageValidate,
			func(t *testing.T, e *env) (*rig.Rig, context.Context, []rig.SessionOption) {
				ctx, cancel := context.WithCancel(context.Background())
				cancel()
				return e.define(), ctx, nil
			},
			func(t *testing.T, err error) {
				if !errors.Is(err, context.Canceled) {
					t.Errorf("cause %v is not context.Canceled", err)
				}
			}},
		{"validate-seed-on-shared", rig.StageValidate,
			func(t *testing.T, e *env) (*rig.Rig, context.Context, []rig.SessionOption) {
				seed := t.TempDir()
				writeFile(t, filepath.Join(seed, "f"), "x")
				r := e.define(rig.WithProfile(rig.Profile{Name: "shared", Engine: "shell", Placement: rig.PlacementShared, Root: t.TempDir()}))
				return r, t.Context(), []rig.SessionOption{rig.WithSeedSnapshot(seed)}
			},
			func(t *testing.T, err error) { as[*rig.SeedError](t, err, "seed on shared placement") }},
		{"lease", rig.StageLease,
			func(t *testing.T, e *env) (*rig.Rig, context.Context, []rig.SessionOption) {
				e.fs.setAcquireFault(func(name string) error {
					if strings.HasPrefix(name, "sessions/") {
						return errInjected
					}
					return nil
				})
				return e.define(), t.Context(), nil
			},
			func(t *testing.T, err error) {
				if !errors.Is(err, errInjected) {
					t.Errorf("cause %v is not the injected Acquire fault", err)
				}
			}},
		{"journal", rig.StageJournal,
			func(t *testing.T, e *env) (*rig.Rig, context.Context, []rig.SessionOption) {
				e.fs.setAppendFault(func(name string, expected uint64, _ [][]byte) error {
					if strings.HasPrefix(name, "sessions/") && expected == 0 {
						return errInjected
					}
					return nil
				})
				return e.define(), t.Context(), nil
			},
			func(t *testing.T, err error) {
				as[*journal.AppendError](t, err, "failed fence")
				if !errors.Is(err, errInjected) {
					t.Errorf("cause %v does not wrap the injected fault", err)
				}
			}},
		{"placement", rig.StagePlacement,
			func(t *testing.T, e *env) (*rig.Rig, context.Context, []rig.SessionOption) {
				r := e.define(rig.WithProfile(exclusiveProfile(canonical(t, t.TempDir()))))
				e.newSession(r) // holds the root
				return r, t.Context(), nil
			},
			func(t *testing.T, err error) { as[*rig.WorkspaceRootBusyError](t, err, "busy root") }},
		{"seed", rig.StageSeed,
			func(t *testing.T, e *env) (*rig.Rig, context.Context, []rig.SessionOption) {
				seed := t.TempDir()
				writeFile(t, filepath.Join(seed, "ok.txt"), "ok")
				if err := os.Symlink("/etc/passwd", filepath.Join(seed, "escape")); err != nil {
					t.Fatal(err)
				}
				return e.define(), t.Context(), []rig.SessionOption{rig.WithSeedSnapshot(seed)}
			},
			func(t *testing.T, err error) { as[*rig.SeedError](t, err, "absolute symlink in the seed") }},
		{"loop", rig.StageLoop,
			func(t *testing.T, e *env) (*rig.Rig, context.Context, []rig.SessionOption) {
				return e.define(rig.WithProfile(rig.Profile{Name: "bad", Engine: "no-such-engine", Placement: rig.PlacementSession})), t.Context(), nil
			},
			func(t *testing.T, err error) { as[*engine.UnknownEngineError](t, err, "unknown engine") }},
		{"commit", rig.StageCommit,
			func(t *testing.T, e *env) (*rig.Rig, context.Context, []rig.SessionOption) {
				e.fs.setAppendFault(func(name string, expected uint64, _ [][]byte) error {
					if strings.HasPrefix(name, "sessions/") && expected == 1 {
						return errInjected
					}
					return nil
				})
				return e.define(), t.Context(), nil
			},
			func(t *testing.T, err error) {
				if !errors.Is(err, errInjected) {
					t.Errorf("cause %v does not wrap the injected fault", err)
				}
			}},
	}
}

// runNewSessionFailure makes NewSession fail as c says, checks the error,
// then that the failure left nothing behind.
func runNewSessionFailure(t *testing.T, e *env, c stageCase) {
	r, ctx, opts := c.setup(t, e)
	before := e.fs.names("")
	s, err := r.NewSession(ctx, opts...)
	if err == nil {
		shutdownAtCleanup(t, s)
		t.Fatalf("NewSession succeeded, want a failure at stage %s", c.stage)
	}
	if s != nil {
		t.Errorf("failed NewSession returned a session")
	}
	le := as[*rig.LifecycleError](t, err, "NewSession")
	if le.Stage != c.stage {
		t.Errorf("LifecycleError stage %q, want %q (%v)", le.Stage, c.stage, err)
	}
	c.cause(t, err)
	e.fs.setAppendFault(nil)
	e.fs.setAcquireFault(nil)
	checkFailedCreationLeftNothing(t, e, c.stage, before)
}

// checkFailedCreationLeftNothing checks that a NewSession that failed at
// stage released what it took (the leases not in before) and removed what
// it wrote: journal, catalog entry, workspace.
func checkFailedCreationLeftNothing(t *testing.T, e *env, stage rig.LifecycleStage, before []string) {
	// What the failed call took, it released; what it wrote, it removed.
	var taken, sessions []string
	for _, n := range e.fs.names("") {
		if !slices.Contains(before, n) {
			taken = append(taken, n)
			if a, rel := e.fs.stats(n); a != rel {
				t.Errorf("lease %s: %d grant(s), %d released", n, a, rel)
			}
			if strings.HasPrefix(n, "sessions/") {
				sessions = append(sessions, n)
			}
		}
	}
	switch {
	case stage == rig.StageValidate || stage == rig.StageLease:
		if len(taken) != 0 {
			t.Errorf("stage %s acquired %v", stage, taken)
		}
	case len(sessions) != 1:
		t.Fatalf("the failed NewSession acquired session leases %v, want exactly one", sessions)
	}
	for _, name := range sessions {
		id := strings.TrimPrefix(name, "sessions/")
		if n, err := e.raw.Tip(t.Context(), name); err != nil || n != 0 {
			t.Errorf("ledger of the failed session has tip %d (%v), want none", n, err)
		}
		if _, err := e.raw.Get(t.Context(), storage.CatalogKey(id)); !rig.IsNotFound(err) {
			t.Errorf("catalog entry of the failed session: %v, want *storage.NotFoundError", err)
		}
		if exists(filepath.Join(e.ws, id)) {
			t.Errorf("workspace directory of the failed session is left behind")
		}
		if st, err := e.raw.Probe(t.Context(), name); err != nil || st.Held {
			t.Errorf("lease %s after the failure: %+v, %v; want free", name, st, err)
		}
		list, err := rig.ListSessions(t.Context(), e.raw)
		if err != nil {
			t.Fatal(err)
		}
		for _, info := range list {
			if info.ID == id {
				t.Errorf("ListSessions lists the failed session: %+v", info)
			}
		}
		if _, err := uuid.Parse(id); err != nil {
			t.Errorf("session name %s holds no uuid", name)
		}
	}
}

var placementCases = []testCase{
	{"ExclusiveRootBusy", testExclusiveBusy},
	{"UnsafeRootsRefused", testUnsafeRootsRefused},
}

// A second session on an exclusive root (named directly or through a
// symlink) is refused with *rig.WorkspaceRootBusyError naming the canonical
// root and the holder's root-lease epoch; it materializes no seed and
// releases its session lease. Once the first session shuts down, a new one
// gets the root.
func testExclusiveBusy(t *testing.T, e *env) {
	root := canonical(t, t.TempDir())
	link := filepath.Join(t.TempDir(), "root-link")
	if err := os.Symlink(root, link); err != nil {
		t.Fatal(err)
	}
	seed := t.TempDir()
	m := newMarker()
	seedFile := "seed-" + m
	writeFile(t, filepath.Join(seed, seedFile), m)

	first := e.newSession(e.define(rig.WithProfile(exclusiveProfile(root))))
	if first.Workspace() != root || first.Status().Root != root {
		t.Errorf("exclusive session runs in %q (root %q), want %q", first.Workspace(), first.Status().Root, root)
	}
	roots := e.fs.names("workspace-roots/")
	if len(roots) != 1 {
		t.Fatalf("root leases granted: %v, want one", roots)
	}
	rootName := roots[0]
	rootEpoch := e.fs.latest(rootName).Epoch()

	for _, via := range []string{root, link} {
		before := e.fs.names("sessions/")
		r := e.define(rig.WithProfile(exclusiveProfile(via)))
		s, err := r.NewSession(t.Context(), rig.WithSeedSnapshot(seed))
		if err == nil {
			shutdownAtCleanup(t, s)
			t.Fatalf("second session on root %s was created, want *rig.WorkspaceRootBusyError", via)
		}
		busy := as[*rig.WorkspaceRootBusyError](t, err, "second session on root "+via)
		if busy.Root != root || busy.HolderEpoch != rootEpoch {
			t.Errorf("WorkspaceRootBusyError{Root %q, HolderEpoch %d}, want {%q, %d}", busy.Root, busy.HolderEpoch, root, rootEpoch)
		}
		as[*storage.LeaseHeldError](t, err, "busy root cause")
		if le := as[*rig.LifecycleError](t, err, "busy root"); le.Stage != rig.StagePlacement {
			t.Errorf("stage %s, want placement", le.Stage)
		}
		if exists(filepath.Join(root, seedFile)) {
			t.Errorf("refused session materialized its seed into the busy root")
		}
		for _, n := range e.fs.names("sessions/") {
			if !slices.Contains(before, n) {
				if a, rel := e.fs.stats(n); a != 1 || rel != 1 {
					t.Errorf("refused session's lease %s: %d grant(s), %d released; want 1, 1", n, a, rel)
				}
			}
		}
		if a, _ := e.fs.stats(rootName); a != 1 {
			t.Errorf("root lease granted %d times while held, want 1", a)
		}
	}

	shutdown(t, first)
	r := e.define(rig.WithProfile(exclusiveProfile(link)))
	next := e.newSession(r, rig.WithSeedSnapshot(seed))
	if !exists(filepath.Join(root, seedFile)) {
		t.Errorf("the session made after the holder shut down has no seed in the root")
	}
	if l := e.fs.latest(rootName); l == nil || l.Epoch() <= rootEpoch {
		t.Errorf("the next session did not take the root lease at a later epoch")
	}
	if next.Workspace() != root {
		t.Errorf("session through the link runs in %q, want the canonical root %q", next.Workspace(), root)
	}
	shutdown(t, next)
	e.fs.checkBalanced(t, "")
}
