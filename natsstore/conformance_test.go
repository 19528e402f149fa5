package natsstore

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

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
// subtest. The store is wrapped in a damagingStore so that the blob cases
// check damaged content too.
func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storage.Store {
		return damagingStore{openStore(t, startServer(t).URL())}
	})
}

// damagingStore is a Store that can damage its blobs (storetest.BlobDamager).
type damagingStore struct{ *Store }

var _ storetest.BlobDamager = damagingStore{}

// DamageBlob replaces the chunks of blob d with data, keeping its meta
// message (size, chunk count, the object store's digest), as damage on the
// server's disk would. Empty data leaves one empty chunk.
func (s damagingStore) DamageBlob(d storage.Digest, data []byte) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, info, err := s.blobMeta(ctx, d.String())
	if err != nil || info == nil {
		return false
	}
	subj := s.blobChunkSubj(info.NUID)
	if err := s.blobStream.Purge(ctx, jetstream.WithPurgeSubject(subj)); err != nil {
		panic(err)
	}
	for first := true; first || len(data) > 0; first = false {
		n := min(len(data), blobChunkSize)
		if _, err := s.js.Publish(ctx, subj, data[:n]); err != nil {
			panic(err)
		}
		data = data[n:]
	}
	return true
}
