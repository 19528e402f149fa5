package natsstore

import (
	"context"
	"testing"
	"time"

	"looprig/natsstore/embedded"
	"looprig/rig/storage"
	"looprig/rig/storage/storetest"
)

// startServer starts an embedded server for one test, on its own
// directory and port, shut down when the test ends.
func startServer(t testing.TB, opts ...embedded.Option) *embedded.Server {
	t.Helper()
	e, err := embedded.Start(t.TempDir(), opts...)
	if err != nil {
		t.Fatalf("embedded.Start: %v", err)
	}
	t.Cleanup(e.Shutdown)
	return e
}

// testTTL is the lease TTL of the tests that wait for expiry: short, so
// that they run quickly. Other tests keep the default TTL, which a loaded
// machine (slow fsyncs) renews in time; nothing there waits for expiry.
const testTTL = 2 * time.Second

func openStore(t testing.TB, url string, opts ...Option) *Store {
	t.Helper()
	base := []Option{WithoutEnvCredentials(), WithTimeout(20 * time.Second)}
	s, err := Open(context.Background(), url, append(base, opts...)...)
	if err != nil {
		t.Fatalf("Open(%s): %v", url, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestConformance runs the storage contract suite, one embedded server per
// subtest.
func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storage.Store {
		return openStore(t, startServer(t).URL())
	})
}
