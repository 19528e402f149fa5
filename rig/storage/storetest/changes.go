package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"looprig/rig/storage"
)

var changeCases = []testCase{
	{"EveryChangeMovesTheStamp", testChangeStampMoves},
	{"CancelledContext", testChangeStampCancelled},
}

// settledStamp waits, up to settleWait, for two stamps in a row to be
// equal and returns it. ok is false for a backend that never settles
// (one that cannot tell changes returns a new stamp every time).
func settledStamp(t *testing.T, s storage.Store) (stamp string, ok bool) {
	t.Helper()
	const settleWait = 3 * time.Second
	prev := changeStamp(t, s)
	for end := time.Now().Add(settleWait); time.Now().Before(end); {
		time.Sleep(20 * time.Millisecond)
		cur := changeStamp(t, s)
		if cur == prev {
			return cur, true
		}
		prev = cur
	}
	return "", false
}

func changeStamp(t *testing.T, s storage.Store) string {
	t.Helper()
	st, err := s.ChangeStamp(t.Context())
	if err != nil {
		t.Fatalf("ChangeStamp = %v", err)
	}
	return st
}

// testChangeStampMoves: after each kind of change, the stamp differs from
// the settled stamp taken before it; and while nothing changes, a stamp
// that settled stays what it was.
func testChangeStampMoves(t *testing.T, s storage.Store) {
	ctx := t.Context()
	const key, name = "sessions/stamp/catalog", "sessions/stamp"
	var held storage.Lease
	steps := []struct {
		what string
		do   func() error
	}{
		{"Put of a new key", func() error { _, err := s.Put(ctx, key, []byte("1"), storage.MustNotExist); return err }},
		{"Put of an existing key", func() error { _, err := s.Put(ctx, key, []byte("2"), storage.AnyRevision); return err }},
		{"DeleteKey", func() error { return s.DeleteKey(ctx, key, storage.AnyRevision) }},
		{"Acquire", func() (err error) { held, err = s.Acquire(ctx, name); return err }},
		{"Break of a held name", func() error {
			l, err := s.Break(ctx, name)
			if err == nil {
				releaseAtCleanup(t, held)
				held = l
			}
			return err
		}},
		{"Release", func() error { return held.Release(ctx) }},
		{"Break of a free name", func() (err error) { held, err = s.Break(ctx, name); return err }},
	}
	for _, step := range steps {
		before, settled := settledStamp(t, s)
		if !settled {
			t.Logf("the stamps of this store never settle: it reports every stamp as a change")
			return
		}
		if err := step.do(); err != nil {
			t.Fatalf("%s: %v", step.what, err)
		}
		if held != nil {
			releaseAtCleanup(t, held)
		}
		if after := changeStamp(t, s); after == before {
			t.Fatalf("ChangeStamp after %s = %q, the same as before it", step.what, after)
		}
	}
	// Ledger appends are not covered; a store may still report them. What
	// must hold: a settled stamp stays settled while nothing changes.
	before, _ := settledStamp(t, s)
	time.Sleep(50 * time.Millisecond)
	if after := changeStamp(t, s); after != before {
		t.Fatalf("ChangeStamp moved from %q to %q with no change in between", before, after)
	}
}

func testChangeStampCancelled(t *testing.T, s storage.Store) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := s.ChangeStamp(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("ChangeStamp with a cancelled context = %v, want an error that is context.Canceled", err)
	}
}
