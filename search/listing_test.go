package search_test

import (
	"testing"
	"time"

	"looprig/rig"
	"looprig/search"
)

// stillStore waits until w's store gives a durable stamp it trusts: what
// a search lists from then on is kept until the next change.
func (w *world) stillStore() {
	w.t.Helper()
	for end := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, ok, err := w.store.DurableStamp(w.t.Context()); err != nil {
			w.t.Fatal(err)
		} else if ok {
			return
		}
		if time.Now().After(end) {
			w.t.Fatal("the store's durable stamp was never trusted")
		}
	}
}

// A search lists the store's sessions once while the store stands still;
// a session created or deleted since is seen, and a session held when it
// listed is read to its tip by every search (its output moves no stamp).
func TestSearchKeepsListingWhileStoreStill(t *testing.T) {
	w := newWorld(t)
	ctx := t.Context()
	out := search.Filter{Kinds: []search.Kind{search.KindOutput}}
	a := w.session(w.shell)
	w.run(a, "echo kept-one")
	if err := a.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	w.search("kept", out) // makes the index (its directory is in the store's)
	w.stillStore()
	wantHits(t, w.search("kept", out), "output: kept-one")
	listed := w.listings
	wantHits(t, w.search("kept", out), "output: kept-one")
	if w.listings != listed {
		t.Errorf("a search with the store standing still listed its sessions again (%d listings, want %d)", w.listings, listed)
	}

	// A new session moves the stamp: listed again, found.
	b := w.session(w.shell)
	w.run(b, "echo kept-two")
	w.stillStore()
	wantHits(t, w.search("kept", out), "output: kept-one", "output: kept-two")
	if w.listings == listed {
		t.Errorf("a search after a session was created did not list the sessions again")
	}

	// b is held: what its turn prints after the listing, which moves no
	// stamp, is found without another listing.
	if _, err := b.Submit(ctx, "echo kept-three; sleep 1; echo kept-four; sleep 60"); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); len(w.search("kept-three", out)) == 0; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("kept-three not found during the turn")
		}
	}
	w.stillStore()
	w.search("kept", out) // lists: the turn's start moved the stamp
	listed = w.listings
	for deadline := time.Now().Add(10 * time.Second); len(w.search("kept-four", out)) == 0; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("kept-four not found during the turn")
		}
	}
	if w.listings != listed {
		t.Errorf("searches during a turn's output listed the sessions again (%d listings, want %d)", w.listings, listed)
	}
	if err := b.Interrupt(ctx); err != nil {
		t.Fatal(err)
	}

	// A deleted session moves the stamp: gone from the results.
	w.stillStore()
	if _, err := rig.DeleteSession(ctx, w.store, w.store.WorkspacesDir(), a.SessionID()); err != nil {
		t.Fatal(err)
	}
	wantHits(t, w.search("kept", out), "output: kept-two", "output: kept-three", "output: kept-four")
}
