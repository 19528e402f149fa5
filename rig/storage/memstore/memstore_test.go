package memstore_test

import (
	"context"
	"errors"
	"os"
	"testing"

	"looprig/rig/storage"
	"looprig/rig/storage/memstore"
	"looprig/rig/storage/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(*testing.T) storage.Store { return memstore.New() })
}

func TestAppendFault(t *testing.T) {
	ctx := t.Context()
	s := memstore.New()
	const name = "sessions/faulty"
	if err := s.Append(ctx, name, 0, []byte("a")); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("disk on fire")
	var gotName string
	var gotExpected uint64
	s.SetAppendFault(func(name string, expected uint64) error {
		gotName, gotExpected = name, expected
		return boom
	})
	err := s.Append(ctx, name, 1, []byte("b"), []byte("c"))
	if !errors.Is(err, boom) {
		t.Fatalf("Append with a fault = %v, want it to wrap %v", err, boom)
	}
	if gotName != name || gotExpected != 1 {
		t.Fatalf("fault saw (%q, %d), want (%q, 1)", gotName, gotExpected, name)
	}
	if tip, _ := s.Tip(ctx, name); tip != 1 {
		t.Fatalf("Tip after a faulted Append = %d, want 1", tip)
	}
	// A fault that may call the store and passes some appends through.
	s.SetAppendFault(func(name string, expected uint64) error {
		if tip, err := s.Tip(ctx, name); err != nil || tip != expected {
			return nil // let the CAS report it
		}
		if expected == 2 {
			return boom
		}
		return nil
	})
	if err := s.Append(ctx, name, 1, []byte("b")); err != nil {
		t.Fatalf("Append passed through the fault = %v", err)
	}
	if err := s.Append(ctx, name, 2, []byte("c")); !errors.Is(err, boom) {
		t.Fatalf("Append at 2 = %v, want %v", err, boom)
	}
	var ce *storage.ConflictError
	if err := s.Append(ctx, name, 0, []byte("x")); !errors.As(err, &ce) {
		t.Fatalf("stale Append with a pass-through fault = %v, want *storage.ConflictError", err)
	}
	s.SetAppendFault(nil)
	if err := s.Append(ctx, name, 2, []byte("c")); err != nil {
		t.Fatalf("Append after clearing the fault = %v", err)
	}
	if tip, _ := s.Tip(ctx, name); tip != 3 {
		t.Fatalf("Tip = %d, want 3", tip)
	}
}

func TestLeaseStats(t *testing.T) {
	ctx := t.Context()
	s := memstore.New()
	const name = "sessions/stats"
	wantStats := func(acq, rel int) {
		t.Helper()
		if a, r := s.LeaseStats(name); a != acq || r != rel {
			t.Fatalf("LeaseStats = (%d, %d), want (%d, %d)", a, r, acq, rel)
		}
	}
	wantStats(0, 0)
	l1, err := s.Acquire(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	wantStats(1, 0)
	if _, err := s.Acquire(ctx, name); err == nil {
		t.Fatal("second Acquire succeeded")
	}
	wantStats(1, 0) // refusals are not grants
	l1.Release(ctx)
	l1.Release(ctx)
	wantStats(1, 1) // only the first Release counts
	l2, _ := s.Acquire(ctx, name)
	l3, err := s.Break(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	wantStats(3, 1) // Break is a grant
	l2.Release(ctx) // the broken holder cleans up
	wantStats(3, 2)
	l3.Release(ctx)
	wantStats(3, 3)
	if a, r := s.LeaseStats("sessions/other"); a != 0 || r != 0 {
		t.Fatalf("LeaseStats of an unknown name = (%d, %d)", a, r)
	}
}

func TestBreak(t *testing.T) {
	ctx := t.Context()
	s := memstore.New()
	const name = "sessions/wedged"
	old, err := s.Acquire(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	nl, err := s.Break(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	// memstore closes Lost synchronously.
	select {
	case <-old.Lost():
	default:
		t.Fatal("Break returned before the old lease's Lost closed")
	}
	var lost *storage.LeaseLostError
	if err := storage.LostCause(name, old); !errors.As(err, &lost) {
		t.Fatalf("LostCause = %v", err)
	}
	want := storage.LeaseLostError{Name: name, Epoch: 1, Reason: storage.LossReplaced, NewEpoch: 2}
	if *lost != want {
		t.Fatalf("LostCause = %+v, want %+v", *lost, want)
	}
	if nl.Epoch() != 2 {
		t.Fatalf("breaker epoch %d, want 2", nl.Epoch())
	}
	// Releasing the old lease keeps the cause it had.
	old.Release(ctx)
	if err := storage.LostCause(name, old); !errors.As(err, &lost) || lost.Reason != storage.LossReplaced {
		t.Fatalf("LostCause after Release of a broken lease = %v, want reason %q", err, storage.LossReplaced)
	}
	// Break of a broken-and-held name again.
	nl2, err := s.Break(ctx, name)
	if err != nil || nl2.Epoch() != 3 {
		t.Fatalf("second Break = (%v, %v), want epoch 3", nl2, err)
	}
	if err := storage.LostCause(name, nl); !errors.As(err, &lost) || lost.NewEpoch != 3 {
		t.Fatalf("LostCause of the first breaker = %v, want NewEpoch 3", err)
	}
	st, err := s.Probe(ctx, name)
	if err != nil || !st.Held || st.Epoch != 3 {
		t.Fatalf("Probe = (%+v, %v), want held at 3", st, err)
	}
	if _, err := s.Break(ctx, "Bad"); err == nil {
		t.Fatal("Break of an invalid name succeeded")
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.Break(cctx, name); !errors.Is(err, context.Canceled) {
		t.Fatalf("Break with a cancelled context = %v", err)
	}
}

func TestHolderIsThisProcess(t *testing.T) {
	ctx := t.Context()
	s := memstore.New()
	const name = "sessions/holder"
	l, err := s.Acquire(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(ctx)
	_, err = s.Acquire(ctx, name)
	var held *storage.LeaseHeldError
	if !errors.As(err, &held) {
		t.Fatalf("second Acquire = %v", err)
	}
	host, _ := os.Hostname()
	if held.Holder.PID != os.Getpid() || held.Holder.Host != host || held.Holder.Acquired.IsZero() {
		t.Fatalf("Holder = %+v, want pid %d host %q and a time", held.Holder, os.Getpid(), host)
	}
}

func TestReleaseOnDoneContext(t *testing.T) {
	s := memstore.New()
	const name = "sessions/cleanup"
	l, err := s.Acquire(t.Context(), name)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := l.Release(ctx); err != nil {
		t.Fatalf("Release on a done context = %v, want nil (it always takes effect)", err)
	}
	if _, err := s.Acquire(t.Context(), name); err != nil {
		t.Fatalf("Acquire after Release on a done context = %v", err)
	}
}

func TestCursorStopsOnDoneContext(t *testing.T) {
	s := memstore.New()
	const name = "sessions/cursor"
	if err := s.Append(t.Context(), name, 0, []byte("a"), []byte("b")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	c, err := s.Read(ctx, name, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !c.Next() || c.Record().Seq != 1 {
		t.Fatal("first Next failed")
	}
	cancel()
	if c.Next() {
		t.Fatal("Next after cancel returned true")
	}
	if !errors.Is(c.Err(), context.Canceled) {
		t.Fatalf("Err = %v, want context.Canceled", c.Err())
	}
	c.Close()
}
