// Package runtimetest runs the runtime suite (rig/rigtest) on fsstore,
// including the crash tests that SIGKILL a helper process owning a session.
package runtimetest

import (
	"os"
	"testing"
	"time"

	"looprig/fsstore"
	"looprig/rig/rigtest"
	"looprig/rig/storage"
)

func open(t testing.TB, dir string) *fsstore.Store {
	t.Helper()
	s, err := fsstore.Open(dir, fsstore.WithWatchdog(10*time.Millisecond))
	if err != nil {
		t.Fatalf("fsstore.Open(%s): %v", dir, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func fsBackend() rigtest.Backend {
	return rigtest.Backend{
		Name: "fsstore",
		NewStore: func(t testing.TB) (storage.Store, string) {
			dir := t.TempDir() + "/store"
			return open(t, dir), dir
		},
		Reopen:       func(t testing.TB, dir string) storage.Store { return open(t, dir) },
		CrossProcess: true,
	}
}

func TestMain(m *testing.M) {
	rigtest.HelperMain(fsBackend())
	os.Exit(m.Run())
}

func TestRuntime(t *testing.T) { rigtest.Run(t, fsBackend()) }

func BenchmarkRestore(b *testing.B) { rigtest.BenchmarkRestore(b, fsBackend()) }
