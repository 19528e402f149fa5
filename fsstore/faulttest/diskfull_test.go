package faulttest

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"looprig/fsstore"
	"looprig/fsstore/internal/seam"
	"looprig/rig"
	"looprig/rig/event"
	"looprig/rig/hub"
	"looprig/rig/journal"
	"looprig/rig/storage"
)

// collector gathers what a session acknowledges (journaled events, as
// delivered) and whether it reported a fault.
type collector struct {
	sub     *hub.Subscription
	mu      sync.Mutex
	acked   map[uint64]string
	outputs int
	faulted bool
	done    chan struct{}
}

func collect(sub *hub.Subscription) *collector {
	c := &collector{sub: sub, acked: map[uint64]string{}, done: make(chan struct{})}
	go func() {
		defer close(c.done)
		for env := range sub.C() {
			c.mu.Lock()
			if env.Seq > 0 {
				c.acked[env.Seq] = string(env.Event.Type())
			}
			switch env.Event.(type) {
			case event.TurnOutput:
				c.outputs++
			case event.SessionFaulted:
				c.faulted = true
			}
			c.mu.Unlock()
		}
	}()
	return c
}

func (c *collector) waitOutputs(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(helperTimeout)
	for {
		c.mu.Lock()
		got := c.outputs
		c.mu.Unlock()
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d output checkpoints journaled", got)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (c *collector) snapshot() (map[uint64]string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := make(map[uint64]string, len(c.acked))
	for k, v := range c.acked {
		m[k] = v
	}
	return m, c.faulted
}

// checkDiskFullFault checks how a session met a full disk: it faulted
// with a typed error that says ENOSPC, told its subscribers
// (SessionFaulted — an ephemeral event, which the hub may drop for a
// subscriber whose queue is full of live output, as it says by counting
// drops), and refuses further writes.
// startChatty creates a stopped session in a store at dir, restores it
// and submits chatty to it, collecting its events.
func startChatty(t *testing.T, dir string) (uuid.UUID, *fsstore.Store, *rig.Session, *collector) {
	t.Helper()
	id := newStoppedSession(t, dir)
	st := openStore(t, dir)
	s, err := defineRig(t, st).RestoreSession(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	c := collect(s.Subscribe(hub.Filter{AllLoops: true}))
	if _, err := s.Submit(context.Background(), chatty); err != nil {
		t.Fatal(err)
	}
	return id, st, s, c
}

func checkDiskFullFault(t *testing.T, s *rig.Session, c *collector) {
	t.Helper()
	select {
	case <-s.Done():
	case <-time.After(helperTimeout):
		t.Fatal("the session did not fault on a full disk")
	}
	err := s.Err()
	var ae *journal.AppendError
	if !errors.As(err, &ae) || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("fault = %T %v, want *journal.AppendError wrapping ENOSPC", err, err)
	}
	if _, err := s.Submit(context.Background(), "echo more"); !errors.As(err, &ae) {
		t.Fatalf("Submit after the fault = %v, want the latched *journal.AppendError", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, faulted := c.snapshot(); faulted {
			break
		}
		if time.Now().After(deadline) {
			if c.sub.Dropped() == 0 {
				t.Fatal("no SessionFaulted reached the subscriber, and it dropped nothing")
			}
			t.Logf("SessionFaulted was dropped for the full subscriber (%d ephemeral events dropped)", c.sub.Dropped())
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func ledgerSize(t *testing.T, dir string, id uuid.UUID) int64 {
	t.Helper()
	fi, err := os.Stat(filepath.Join(dir, "ledgers", "sessions", id.String()+".log"))
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// TestDiskFullInjected: every ledger write fails with ENOSPC (after half of
// its batch reached the file) while a turn prints. The session faults
// with a typed error, the half-written batch is taken back (the file ends
// at its last acknowledged frame, so reopening cuts nothing), nothing
// acknowledged is lost, and the store reopens and restores.
func TestDiskFullInjected(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	id, st, s, c := startChatty(t, dir)
	c.waitOutputs(t, 3)
	restore := seam.Set(func(p seam.Point, path string) error {
		if p == seam.LedgerWrite {
			return syscall.ENOSPC
		}
		return nil
	})
	defer restore()
	checkDiskFullFault(t, s, c)
	size := ledgerSize(t, dir, id)
	s.Shutdown(ctx) // its records cannot land; it releases the lease
	restore()
	<-c.done
	acked, _ := c.snapshot()
	st.Close()

	// Reopen: the file validates as it is (no torn tail to cut).
	st = openStore(t, dir)
	if _, err := st.Tip(ctx, storage.SessionName(id.String())); err != nil {
		t.Fatalf("reopen after a full disk: %v", err)
	}
	if after := ledgerSize(t, dir, id); after != size {
		t.Errorf("the ledger was %d bytes after the failed write and %d after reopening: the failed batch was not taken back", size, after)
	}
	st.Close()
	epoch := restoreAndCheck(t, dir, id, acked)
	t.Logf("%d records acknowledged before the disk filled; restored at epoch %d", len(acked), epoch)
}
