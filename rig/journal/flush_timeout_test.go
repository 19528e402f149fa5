package journal

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"looprig/rig/event"
	"looprig/rig/storage"
	"looprig/rig/storage/memstore"
)

// hangingLedger is a store whose Appends, once hang is set, never land:
// each waits until its context is done (a request to a server that does
// not answer) and returns its error.
type hangingLedger struct {
	storage.Ledger
	hang     atomic.Bool
	deadline atomic.Bool // an Append that hung had a deadline
}

func (h *hangingLedger) Append(ctx context.Context, name string, expected uint64, payloads ...[]byte) error {
	if !h.hang.Load() {
		return h.Ledger.Append(ctx, name, expected, payloads...)
	}
	if _, ok := ctx.Deadline(); ok {
		h.deadline.Store(true)
	}
	<-ctx.Done()
	return ctx.Err()
}

// A flush that the store does not answer ends at the journal's flush
// timeout: the append fails (the caller's context had no deadline), the
// journal latches the failure, and the next append fails at once. Without
// a deadline on the flush, the first append would wait forever.
func TestFlushHasADeadline(t *testing.T) {
	st := memstore.New()
	led := &hangingLedger{Ledger: st}
	j := open(t, led, acquire(t, st), WithFlushTimeout(50*time.Millisecond))
	led.hang.Store(true)

	done := make(chan error, 1)
	go func() {
		_, err := j.AppendEvent(context.Background(), "", event.SessionIdle{})
		done <- err
	}()
	var err error
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("an append whose store never answers did not return: the flush has no deadline")
	}
	if !led.deadline.Load() {
		t.Error("the store's Append got a context without a deadline")
	}
	var ae *AppendError
	if !errors.As(err, &ae) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("append: %v, want an *AppendError wrapping context.DeadlineExceeded", err)
	}
	if j.Err() == nil {
		t.Error("the journal did not latch the failed flush")
	}
	led.hang.Store(false)
	if _, err := j.AppendEvent(context.Background(), "", event.SessionIdle{}); !errors.As(err, &ae) {
		t.Errorf("append after the failed flush: %v, want the latched *AppendError", err)
	}
	if tip := ledgerTip(t, st); tip != 1 {
		t.Errorf("tip %d, want 1 (the fence alone)", tip)
	}
}

// The flush's deadline is its own: a caller that gives up (its context
// cancelled while the flush is in the store) leaves the flush running to
// its end, and the record lands.
func TestFlushOutlivesItsCaller(t *testing.T) {
	st := memstore.New()
	led := &countingLedger{Ledger: st, delay: 100 * time.Millisecond}
	j := open(t, led, acquire(t, st), WithFlushTimeout(10*time.Second))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := j.AppendEvent(ctx, "", event.SessionIdle{}); err != nil {
		t.Fatalf("append whose caller gave up during the flush: %v", err)
	}
	if j.Err() != nil || ledgerTip(t, st) != 2 {
		t.Fatalf("journal %v, tip %d; want the record landed", j.Err(), ledgerTip(t, st))
	}
}
