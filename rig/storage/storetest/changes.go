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
	{"DurableStampMoves", testDurableStampMoves},
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

// changeStep is one kind of change a stamp must see.
type changeStep struct {
	what string
	do   func() error
}

// changeSteps are every kind of change to s's KV and leases, in an order
// in which each can be done; a lease they leave held is released at the
// test's end.
func changeSteps(t *testing.T, s storage.Store) []changeStep {
	ctx := t.Context()
	const key, name = "sessions/stamp/catalog", "sessions/stamp"
	var held storage.Lease
	keep := func(l storage.Lease) {
		held = l
		releaseAtCleanup(t, l)
	}
	return []changeStep{
		{"Put of a new key", func() error { _, err := s.Put(ctx, key, []byte("1"), storage.MustNotExist); return err }},
		{"Put of an existing key", func() error { _, err := s.Put(ctx, key, []byte("2"), storage.AnyRevision); return err }},
		{"DeleteKey", func() error { return s.DeleteKey(ctx, key, storage.AnyRevision) }},
		{"Acquire", func() error {
			l, err := s.Acquire(ctx, name)
			if err == nil {
				keep(l)
			}
			return err
		}},
		{"Break of a held name", func() error {
			l, err := s.Break(ctx, name)
			if err == nil {
				keep(l)
			}
			return err
		}},
		{"Release", func() error { return held.Release(ctx) }},
		{"Break of a free name", func() error {
			l, err := s.Break(ctx, name)
			if err == nil {
				keep(l)
			}
			return err
		}},
	}
}

// testChangeStampMoves: after each kind of change, the stamp differs from
// the settled stamp taken before it; and while nothing changes, a stamp
// that settled stays what it was.
func testChangeStampMoves(t *testing.T, s storage.Store) {
	for _, step := range changeSteps(t, s) {
		before, settled := settledStamp(t, s)
		if !settled {
			t.Logf("the stamps of this store never settle: it reports every stamp as a change")
			return
		}
		if err := step.do(); err != nil {
			t.Fatalf("%s: %v", step.what, err)
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

// durableStamp waits, up to settleWait, for s to give a durable stamp it
// trusts (ok), and returns it.
func durableStamp(t *testing.T, s storage.DurableStamper) string {
	t.Helper()
	const settleWait = 5 * time.Second
	for end := time.Now().Add(settleWait); ; time.Sleep(20 * time.Millisecond) {
		stamp, ok, err := s.DurableStamp(t.Context())
		if err != nil {
			t.Fatalf("DurableStamp = %v", err)
		}
		if ok {
			return stamp
		}
		if time.Now().After(end) {
			t.Fatalf("DurableStamp gave no stamp it trusts in %s with nothing changing", settleWait)
		}
	}
}

// testDurableStampMoves: for a store with durable stamps, the stamp it
// trusts after each kind of change differs from the one before it; while
// nothing changes, it stays what it was.
func testDurableStampMoves(t *testing.T, s storage.Store) {
	ds, ok := s.(storage.DurableStamper)
	if !ok {
		t.Skip("the store has no durable stamps (storage.DurableStamper)")
	}
	for _, step := range changeSteps(t, s) {
		before := durableStamp(t, ds)
		if err := step.do(); err != nil {
			t.Fatalf("%s: %v", step.what, err)
		}
		if after := durableStamp(t, ds); after == before {
			t.Fatalf("DurableStamp after %s = %q, the same as before it", step.what, after)
		}
	}
	before := durableStamp(t, ds)
	time.Sleep(50 * time.Millisecond)
	if after := durableStamp(t, ds); after != before {
		t.Fatalf("DurableStamp moved from %q to %q with no change in between", before, after)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, _, err := ds.DurableStamp(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("DurableStamp with a cancelled context = %v, want an error that is context.Canceled", err)
	}
}

func testChangeStampCancelled(t *testing.T, s storage.Store) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := s.ChangeStamp(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("ChangeStamp with a cancelled context = %v, want an error that is context.Canceled", err)
	}
}
