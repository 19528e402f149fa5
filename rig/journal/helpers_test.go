package journal

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"looprig/rig/storage"
	"looprig/rig/storage/memstore"
)

const testName = "sessions/6f1c0c7e-1d2a-4b8e-9f00-123456789abc"

var base = time.Date(2026, 7, 15, 10, 0, 0, 0, time.UTC)

// stepClock returns a clock that advances by 1ms per call, from base.
func stepClock() func() time.Time {
	var n atomic.Int64
	return func() time.Time { return base.Add(time.Duration(n.Add(1)) * time.Millisecond) }
}

func acquire(t testing.TB, st *memstore.Store) storage.Lease {
	t.Helper()
	l, err := st.Acquire(context.Background(), testName)
	if err != nil {
		t.Fatalf("Acquire: %v", err)
	}
	return l
}

func open(t testing.TB, led storage.Ledger, lease storage.Lease, opts ...Option) *SessionJournal {
	t.Helper()
	j, err := Open(context.Background(), led, testName, lease, opts...)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return j
}

func readAll(t testing.TB, led storage.Ledger, after uint64) []Record {
	t.Helper()
	r, err := NewReplayer(context.Background(), led, testName, after)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var out []Record
	for r.Next() {
		out = append(out, r.Record())
	}
	if err := r.Err(); err != nil {
		t.Fatalf("replay: %v", err)
	}
	return out
}

func ledgerTip(t testing.TB, led storage.Ledger) uint64 {
	t.Helper()
	tip, err := led.Tip(context.Background(), testName)
	if err != nil {
		t.Fatal(err)
	}
	return tip
}

// countingLedger counts Append calls and payloads, optionally sleeping in
// each Append to model an fdatasync.
type countingLedger struct {
	storage.Ledger
	delay    time.Duration
	calls    atomic.Int64
	payloads atomic.Int64
	// staleTip, when set, makes Tip lie (a writer raced in after the read).
	staleTip atomic.Bool
}

func (c *countingLedger) Append(ctx context.Context, name string, expected uint64, payloads ...[]byte) error {
	c.calls.Add(1)
	c.payloads.Add(int64(len(payloads)))
	if c.delay > 0 {
		time.Sleep(c.delay)
	}
	return c.Ledger.Append(ctx, name, expected, payloads...)
}

func (c *countingLedger) Tip(ctx context.Context, name string) (uint64, error) {
	tip, err := c.Ledger.Tip(ctx, name)
	if c.staleTip.Load() && tip > 0 {
		tip--
	}
	return tip, err
}

// deafLease is a lease whose loss is never noticed: Lost never closes. It
// models a stale writer whose watchdog has not fired yet.
type deafLease struct {
	storage.Lease
	never chan struct{}
}

func deaf(l storage.Lease) *deafLease { return &deafLease{Lease: l, never: make(chan struct{})} }

func (d *deafLease) Lost() <-chan struct{} { return d.never }

// LostCause hides the inner lease's LossReporter.
func (d *deafLease) LostCause() error { return nil }

// collect runs f in n goroutines and waits.
func parallel(n int, f func(g int)) {
	var wg sync.WaitGroup
	for g := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f(g)
		}()
	}
	wg.Wait()
}
