package rigtest

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"looprig/rig"
	"looprig/rig/engine"
	"looprig/rig/event"
	"looprig/rig/journal"
	"looprig/rig/storage"
)

// orderCases check orders and wrappings the runtime promises in its doc
// comments: what a failure releases and in which order, what a rejection
// wraps, what a restore refuses to follow.
var orderCases = []testCase{
	{"FailedNewSessionReleasesRootThenSession", testFailedNewSessionReleaseOrder},
	{"FailedRestoreReleasesRootThenSession", testFailedRestoreReleaseOrder},
	{"DeciderErrorIsUnwrapped", testDeciderErrorUnwrapped},
	{"RestoreRefusesSymlinkedSessionWorkspace", testRestoreWorkspaceSymlink},
}

// checkLeasesReleased checks that the only grants of sessionName and
// rootName in e.fs were released, root lease first, once each (see
// checkReleaseOrder), and that both are free in the store.
func checkLeasesReleased(t testing.TB, e *env, sessionName, rootName string) {
	t.Helper()
	for _, n := range []string{rootName, sessionName} {
		if a, _ := e.fs.stats(n); a != 1 {
			t.Errorf("lease %s granted %d times, want once", n, a)
		}
	}
	checkReleaseOrder(t, e, sessionName, rootName)
	for _, n := range []string{rootName, sessionName} {
		l, err := e.raw.Acquire(context.Background(), n)
		if err != nil {
			t.Errorf("lease %s is not free after the failure: %v", n, err)
			continue
		}
		if err := l.Release(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
}

// onlyName returns the one lease name granted with prefix.
func onlyName(t testing.TB, e *env, prefix string) string {
	t.Helper()
	names := e.fs.names(prefix)
	if len(names) != 1 {
		t.Fatalf("leases granted under %q: %v, want exactly one", prefix, names)
	}
	return names[0]
}

// A NewSession that fails after it took an exclusive root's lease (the
// seed is refused, the engine factory fails, SessionStarted cannot be
// appended) releases the root lease, then the session lease, once each.
func testFailedNewSessionReleaseOrder(t *testing.T, e *env) {
	cases := []struct {
		name  string
		stage rig.LifecycleStage
		// setup returns the rig options and session options; it may
		// install faults.
		setup func(t *testing.T, e *env, p *rig.Profile) ([]rig.Option, []rig.SessionOption)
	}{
		{"seed-refused", rig.StageSeed, func(t *testing.T, e *env, p *rig.Profile) ([]rig.Option, []rig.SessionOption) {
			seed := t.TempDir()
			writeFile(t, filepath.Join(seed, "ok.txt"), "ok")
			if err := os.Symlink("/etc/passwd", filepath.Join(seed, "escape")); err != nil {
				t.Fatal(err)
			}
			return nil, []rig.SessionOption{rig.WithSeedSnapshot(seed)}
		}},
		{"engine-factory-fails", rig.StageLoop, func(t *testing.T, e *env, p *rig.Profile) ([]rig.Option, []rig.SessionOption) {
			p.Engine = "rigtest-broken"
			return []rig.Option{rig.WithEngine(p.Engine, func(rig.Profile) (engine.Engine, error) { return nil, errInjected })}, nil
		}},
		{"session-started-append-fails", rig.StageCommit, func(t *testing.T, e *env, p *rig.Profile) ([]rig.Option, []rig.SessionOption) {
			e.fs.setAppendFault(func(name string, expected uint64, _ [][]byte) error {
				if strings.HasPrefix(name, "sessions/") && expected == 1 {
					return errInjected
				}
				return nil
			})
			return nil, nil
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, e.b)
			root := canonical(t, t.TempDir())
			p := exclusiveProfile(root)
			opts, sopts := c.setup(t, e, &p)
			r := e.define(append([]rig.Option{rig.WithProfile(p)}, opts...)...)
			s, err := r.NewSession(t.Context(), sopts...)
			if err == nil {
				shutdownAtCleanup(t, s)
				t.Fatalf("NewSession succeeded, want a failure at stage %s", c.stage)
			}
			e.fs.setAppendFault(nil)
			if le := as[*rig.LifecycleError](t, err, "NewSession"); le.Stage != c.stage {
				t.Fatalf("failed at stage %s (%v), want %s", le.Stage, err, c.stage)
			}
			checkLeasesReleased(t, e, onlyName(t, e, "sessions/"), onlyName(t, e, "workspace-roots/"))
			if ents, err := os.ReadDir(root); err != nil || len(ents) != 0 {
				t.Errorf("the failed session left %d entries in the root (%v)", len(ents), err)
			}
		})
	}
}

// A restore that fails after it took an exclusive root's lease (the engine
// is unknown: loop_failed; its factory fails: runtime_failed; RestoreDone
// cannot be appended: append_failed) releases the root lease, then the
// session lease, once each; a retry with a working rig restores.
func testFailedRestoreReleaseOrder(t *testing.T, e *env) {
	cases := []struct {
		kind rig.RestoreErrorKind
		// setup returns the options of the restoring rig beyond its
		// profile; it may install faults.
		setup func(t *testing.T, e *env, p rig.Profile) []rig.Option
	}{
		{rig.RestoreLoopFailed, func(t *testing.T, e *env, p rig.Profile) []rig.Option { return nil }},
		{rig.RestoreRuntimeFailed, func(t *testing.T, e *env, p rig.Profile) []rig.Option {
			return []rig.Option{rig.WithEngine(p.Engine, func(rig.Profile) (engine.Engine, error) { return nil, errInjected })}
		}},
		{rig.RestoreAppendFailed, func(t *testing.T, e *env, p rig.Profile) []rig.Option {
			e.fs.onRecord(func(_ string, rec journal.Record) error {
				if rec.Kind == journal.KindEvent && rec.Event.Type() == event.TypeRestoreDone {
					return errInjected
				}
				return nil
			})
			return []rig.Option{customEngine(p.Engine)}
		}},
	}
	for _, c := range cases {
		t.Run(string(c.kind), func(t *testing.T) {
			e := newEnv(t, e.b)
			root := canonical(t, t.TempDir())
			p := exclusiveProfile(root)
			p.Engine = "rigtest-custom"
			// The session is made on the raw store: e.fs sees only the
			// restore's grants and releases.
			made := defineOn(t, e.raw, e.ws, rig.WithProfile(p), customEngine(p.Engine))
			s, err := made.NewSession(t.Context())
			if err != nil {
				t.Fatalf("NewSession: %v", err)
			}
			shutdownAtCleanup(t, s)
			id := s.SessionID()
			runTurn(t, s, "before")
			shutdown(t, s)

			before := tip(t, e.raw, id)
			opts := c.setup(t, e, p)
			err = failRestore(t, e.define(append([]rig.Option{rig.WithProfile(p)}, opts...)...), t.Context(), id, c.kind)
			e.fs.setAppendFault(nil)
			if c.kind != rig.RestoreLoopFailed && !errors.Is(err, errInjected) {
				t.Errorf("cause %v does not wrap the injected fault", err)
			}
			checkFailedRestore(t, e, id, before, string(c.kind))
			checkLeasesReleased(t, e, storage.SessionName(id.String()), onlyName(t, e, "workspace-roots/"))

			s2 := e.restore(e.define(rig.WithProfile(p), customEngine(p.Engine)), id)
			if s2.Workspace() != root {
				t.Errorf("the retried restore runs in %q, want the root %q", s2.Workspace(), root)
			}
		})
	}
}

// deciderError is the error of a decider that cannot decide.
type deciderError struct{ why string }

func (e *deciderError) Error() string { return "rigtest decider: " + e.why }

// A decider that returns an error rejects the restore with
// *rig.RestoreRejectedError whose Unwrap reaches the decider's error
// (errors.Is and errors.As); the rejection is on record and the lease free.
func testDeciderErrorUnwrapped(t *testing.T, e *env) {
	alpha := rig.Profile{Name: "alpha", Engine: "shell", Placement: rig.PlacementSession}
	id := stoppedSession(t, e, e.define(rig.WithProfile(alpha)))
	beta := alpha
	beta.Name = "beta" // info-level drift: only an erring decider refuses it
	derr := &deciderError{why: "no operator to ask"}
	calls := 0
	decider := rig.DeciderFunc(func(context.Context, rig.Assessment) (rig.Decision, error) {
		calls++
		return rig.Decision{Source: "rigtest"}, derr
	})
	before := tip(t, e.raw, id)
	s, err := e.define(rig.WithProfile(beta), rig.WithDecider(decider)).RestoreSession(t.Context(), id)
	if err == nil {
		shutdownAtCleanup(t, s)
		t.Fatalf("restore succeeded although the decider failed")
	}
	if calls != 1 {
		t.Errorf("decider called %d times, want once", calls)
	}
	rej := as[*rig.RestoreRejectedError](t, err, "restore whose decider failed")
	if rej.Session != id || len(rej.Assessment.Changes) != 1 || rej.Assessment.Changes[0].Field != "profile" {
		t.Errorf("RestoreRejectedError %+v, want the profile change of %s", rej, id)
	}
	if !errors.Is(err, derr) {
		t.Errorf("errors.Is(%v, the decider's error) is false", err)
	}
	if got := as[*deciderError](t, err, "restore whose decider failed"); got != derr {
		t.Errorf("errors.As found %p, want the decider's error %p", got, derr)
	}
	if !strings.Contains(err.Error(), derr.Error()) {
		t.Errorf("message %q does not say why the decider failed", err)
	}
	checkFailedRestore(t, e, id, before, "config_rejected")
}

// A session workspace (<workspaces>/<id>) that was replaced by a symbolic
// link is refused by RestoreSession, as it is by DeleteSession
// (testDeleteWorkspaceSymlink): materialize_failed, on record, nothing
// written through the link, the lease free. Replacing the link with a
// directory lets the session restore.
func testRestoreWorkspaceSymlink(t *testing.T, e *env) {
	r := e.define()
	s := e.newSession(r)
	id := s.SessionID()
	runTurn(t, s, "echo kept > kept.txt")
	shutdown(t, s)
	ws := filepath.Join(e.ws, id.String())
	target := t.TempDir()
	writeFile(t, filepath.Join(target, "precious.txt"), "keep me")
	if err := os.RemoveAll(ws); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, ws); err != nil {
		t.Fatal(err)
	}
	before := tip(t, e.raw, id)
	s2, err := r.RestoreSession(t.Context(), id)
	if err == nil {
		shutdownAtCleanup(t, s2)
		ti := runTurn(t, s2, "pwd -P; echo leaked > leaked.txt")
		out := turnOutput(readJournal(t, e.raw, id), ti.ID)
		t.Fatalf("restore followed the symlinked workspace %s -> %s: the session runs in %q, its turn printed %q and wrote leaked.txt into the target: %v",
			ws, target, s2.Workspace(), out, exists(filepath.Join(target, "leaked.txt")))
	}
	checkRestoreKind(t, err, id, rig.RestoreMaterializeFailed)
	checkFailedRestore(t, e, id, before, string(rig.RestoreMaterializeFailed))
	if fi, err := os.Lstat(ws); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the workspace link after the refused restore: %v, %v; want it left as it was", fi, err)
	}
	if ents, err := os.ReadDir(target); err != nil || len(ents) != 1 || ents[0].Name() != "precious.txt" {
		t.Errorf("the link's target after the refused restore: %v, %v; want precious.txt only", ents, err)
	}

	if err := os.Remove(ws); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(ws, 0o700); err != nil {
		t.Fatal(err)
	}
	if s3 := e.restore(r, id); s3.Workspace() != ws {
		t.Errorf("restored into %q, want %q", s3.Workspace(), ws)
	}
}
