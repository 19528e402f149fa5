// Package rigtest is the test suite of the session runtime (package rig),
// in the style of rig/storage/storetest: every store backend runs it from
// its own tests with
//
//	func TestMain(m *testing.M) {
//		rigtest.HelperMain(backend())
//		os.Exit(m.Run())
//	}
//
//	func TestRuntime(t *testing.T) { rigtest.Run(t, backend()) }
//
//	func BenchmarkRestore(b *testing.B) { rigtest.BenchmarkRestore(b, backend()) }
//
// Run checks NewSession (journal shape, seeds, every failure stage and its
// cleanup), shell turns (workspace, streaming, checkpoints, exit codes,
// interrupts that kill the whole process group), gates, the restore
// transaction (clean, after a crash — in a helper process that is
// SIGKILLed when the backend is CrossProcess —, while held, unknown ids,
// configuration drift and every RestoreErrorKind), exclusive placement,
// lease loss, shutdown and the catalog. Errors are classified with
// errors.As only; nothing asserts on wall-clock time.
//
// The suite runs shell turns with /bin/sh and looks for their processes in
// /proc; the process checks are skipped where /proc is missing.
package rigtest

import (
	"testing"
	"time"

	"looprig/rig/storage"
)

// Backend describes the store the suite runs against.
type Backend struct {
	// Name names the backend in messages.
	Name string
	// NewStore returns a fresh, empty store and a string that identifies it
	// for Reopen (a directory for a file backend). It may use t.TempDir and
	// t.Cleanup.
	NewStore func(t testing.TB) (store storage.Store, dir string)
	// Reopen returns the store identified by dir again: a second, independent
	// open of the same data where the backend can (fsstore: a second Open of
	// dir), else the same instance (memstore). In a helper process it is
	// called with the helper's *testing.T.
	Reopen func(t testing.TB, dir string) storage.Store
	// CrossProcess reports that a helper process can open the store by dir
	// (Reopen in another process sees the same data and leases). The crash
	// tests then SIGKILL a helper process that owns a session.
	CrossProcess bool
}

// WaitTimeout bounds every wait of the suite. It is generous: the suite
// runs on loaded two-core machines, and it never measures time.
const WaitTimeout = 60 * time.Second

type testCase struct {
	name string
	fn   func(t *testing.T, e *env)
}

// Run runs the suite against b, one named subtest per rule.
func Run(t *testing.T, b Backend) {
	t.Helper()
	if b.NewStore == nil || b.Reopen == nil {
		t.Fatal("rigtest: Backend needs NewStore and Reopen")
	}
	for _, g := range groups() {
		t.Run(g.name, func(t *testing.T) {
			for _, c := range g.cases {
				t.Run(c.name, func(t *testing.T) {
					c.fn(t, newEnv(t, b))
				})
			}
		})
	}
}

func groups() []struct {
	name  string
	cases []testCase
} {
	return []struct {
		name  string
		cases []testCase
	}{
		{"NewSession", createCases},
		{"Placement", placementCases},
		{"Turn", turnCases},
		{"Terminal", terminalCases},
		{"Gate", gateCases},
		{"FromTurn", fromTurnCases},
		{"Attention", attentionCases},
		{"Restore", restoreCases},
		{"RestoreCrash", crashCases},
		{"Drift", driftCases},
		{"DriftBaseline", baselineCases},
		{"Shell", shellCases},
		{"RestoreErrors", restoreErrorCases},
		{"Workspace", workspaceCases},
		{"Reconcile", reconcileCases},
		{"Revert", revertCases},
		{"CheckpointCrash", checkpointCrashCases},
		{"RootOrder", rootOrderCases},
		{"CheckRestore", checkRestoreCases},
		{"Agent", agentCases},
		{"LeaseLoss", leaseLossCases},
		{"Shutdown", shutdownCases},
		{"Catalog", catalogCases},
		{"Delete", deleteCases},
		{"Bounds", boundsCases},
		{"Order", orderCases},
		{"Operations", opsCases},
		{"EarlierTurn", earlierTurnCases},
		{"MovedWorkspace", movedCases},
		{"Contract", contractCases},
		{"SeedRules", seedRuleCases},
		{"Fork", forkCases},
	}
}
