package rig_test

import (
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"

	"looprig/rig/rigtest"
	"looprig/rig/storage"
	"looprig/rig/storage/memstore"
)

// memBackend runs the runtime suite on memstore. Reopen returns the same
// instance: a memstore is its own durability domain.
func memBackend() rigtest.Backend {
	var stores sync.Map
	var n atomic.Int64
	return rigtest.Backend{
		Name: "memstore",
		NewStore: func(t testing.TB) (storage.Store, string) {
			s := memstore.New()
			dir := fmt.Sprintf("memstore-%d", n.Add(1))
			stores.Store(dir, s)
			return s, dir
		},
		Reopen: func(t testing.TB, dir string) storage.Store {
			s, ok := stores.Load(dir)
			if !ok {
				t.Fatalf("no memstore %q", dir)
			}
			return s.(storage.Store)
		},
	}
}

func TestMain(m *testing.M) {
	rigtest.HelperMain(memBackend())
	os.Exit(m.Run())
}

func TestRuntime(t *testing.T) { rigtest.Run(t, memBackend()) }

func BenchmarkRestore(b *testing.B) { rigtest.BenchmarkRestore(b, memBackend()) }
