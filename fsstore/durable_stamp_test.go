package fsstore_test

import (
	"testing"
	"time"

	"looprig/fsstore"
)

// trustedStamp waits for s to give a durable stamp it trusts.
func trustedStamp(t *testing.T, s *fsstore.Store) string {
	t.Helper()
	for end := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		stamp, ok, err := s.DurableStamp(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			return stamp
		}
		if time.Now().After(end) {
			t.Fatal("DurableStamp never trusted a stamp with nothing changing")
		}
	}
}

// Durable stamps compare across Stores of one directory: two give the
// same stamp, and a lease granted to another process moves both.
func TestDurableStampAcrossStores(t *testing.T) {
	dir := t.TempDir()
	a, b := openStore(t, dir), openStore(t, dir)
	before := trustedStamp(t, a)
	if other := trustedStamp(t, b); other != before {
		t.Fatalf("two Stores of %s give the durable stamps %q and %q with nothing changed", dir, before, other)
	}
	startHolder(t, dir) // another process takes sessions/held
	if after := trustedStamp(t, b); after == before {
		t.Fatalf("DurableStamp = %q before and after another process took a lease", after)
	}
	if x, y := trustedStamp(t, a), trustedStamp(t, b); x != y {
		t.Fatalf("two Stores of %s give the durable stamps %q and %q after a change", dir, x, y)
	}
}
