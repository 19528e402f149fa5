package natsstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"looprig/internal/procstart"
	"looprig/rig"
	"looprig/rig/engine"
	"looprig/rig/journal"
	"looprig/rig/storage"
)

// freeze makes s behave like a hung process: its heartbeats stop and its
// presence responder stays silent (its leases' self-fence still fires).
func (s *Store) freeze() {
	s.mu.Lock()
	s.hooks.frozen = true
	s.mu.Unlock()
}

func waitClosed(t *testing.T, ch <-chan struct{}, within time.Duration, what string) time.Time {
	t.Helper()
	select {
	case <-ch:
		return time.Now()
	case <-time.After(within):
		t.Fatalf("%s did not happen within %v", what, within)
		return time.Time{}
	}
}

func defineRig(t *testing.T, st storage.Store, ws string) *rig.Rig {
	t.Helper()
	r, err := rig.Define(rig.WithStore(st), rig.WithWorkspaces(ws), rig.WithProfile(rig.DemoProfile()),
		rig.WithEngineConfig(engine.Config{DemoSteps: 3, DemoInterval: 10 * time.Millisecond}))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// A holder that hangs (no heartbeats, no presence answers) keeps its
// session until its lease expires; it fences itself before that; another
// machine then restores the session at the next epoch, and the hung
// holder's writes can no longer land.
func TestHungHolderRestoredAfterTTL(t *testing.T) {
	srv := startServer(t)
	ctx := t.Context()
	a := openStore(t, srv.URL(), WithHolder(1001, "machine-a"), WithLeaseTTL(testTTL))
	b := openStore(t, srv.URL(), WithHolder(1002, "machine-b"), WithLeaseTTL(testTTL))
	ws := t.TempDir()

	s, err := defineRig(t, a, ws).NewSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown(context.Background())
	id, epoch := s.SessionID(), s.Epoch()
	name := storage.SessionName(id.String())
	tipBefore, err := b.Tip(ctx, name)
	if err != nil || tipBefore == 0 {
		t.Fatalf("Tip = %d, %v", tipBefore, err)
	}

	frozeAt := time.Now()
	a.freeze()
	rb := defineRig(t, b, ws)
	_, err = rb.RestoreSession(ctx, id)
	var held *storage.LeaseHeldError
	if !errors.As(err, &held) || held.HolderEpoch != epoch || held.Holder.Host != "machine-a" || held.Holder.PID != 1001 {
		t.Fatalf("restore while the hung holder's lease is unexpired = %v, want *storage.LeaseHeldError naming machine-a at epoch %d", err, epoch)
	}

	// The hung holder fences itself (its session faults) before its lease
	// can be taken.
	fenced := waitClosed(t, s.Done(), 3*testTTL, "the hung holder's self-fence")
	var jl *journal.JournalLeaseLostError
	if !errors.As(s.Err(), &jl) {
		t.Errorf("hung holder's session ended with %v, want *journal.JournalLeaseLostError", s.Err())
	}

	var s2 *rig.Session
	deadline := time.Now().Add(5 * testTTL)
	for {
		s2, err = rb.RestoreSession(ctx, id)
		if err == nil {
			break
		}
		if !errors.As(err, &held) || time.Now().After(deadline) {
			t.Fatalf("restore after the TTL = %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	restored := time.Now()
	defer s2.Shutdown(context.Background())
	if !fenced.Before(restored) {
		t.Errorf("the holder fenced itself at %v, after the restore at %v", fenced.Sub(frozeAt), restored.Sub(frozeAt))
	}
	if d := restored.Sub(frozeAt); d < testTTL-testTTL/3 {
		t.Errorf("restored %v after the holder hung, before its lease could expire (TTL %v)", d, testTTL)
	}
	if s2.Epoch() != epoch+1 {
		t.Errorf("restored at epoch %d, want %d", s2.Epoch(), epoch+1)
	}
	// The stale holder cannot append after the new fence.
	err = a.Append(ctx, name, tipBefore, []byte("stale"))
	var ce *storage.ConflictError
	if !errors.As(err, &ce) || ce.Actual <= tipBefore {
		t.Fatalf("stale holder's append at %d = %v, want *storage.ConflictError past it", tipBefore, err)
	}
	t.Logf("hung holder fenced after %v, restored after %v (TTL %v)", fenced.Sub(frozeAt).Round(time.Millisecond), restored.Sub(frozeAt).Round(time.Millisecond), testTTL)
}

// A holder whose process dies (its connection closes without a release) is
// seen as gone at once through presence: the lease is free immediately.
// Without presence the lease is free only after its TTL.
func TestCrashedHolder(t *testing.T) {
	for _, presence := range []bool{true, false} {
		t.Run(fmt.Sprintf("presence=%v", presence), func(t *testing.T) {
			srv := startServer(t)
			ctx := t.Context()
			opts := []Option{WithLeaseTTL(testTTL)}
			if !presence {
				opts = append(opts, WithoutPresence())
			}
			a := openStore(t, srv.URL(), opts...)
			b := openStore(t, srv.URL(), opts...)
			const name = "sessions/crashed"
			la, err := a.Acquire(ctx, name)
			if err != nil {
				t.Fatal(err)
			}
			if err := a.Append(ctx, name, 0, []byte("fence-1")); err != nil {
				t.Fatal(err)
			}
			crashed := time.Now()
			a.nc.Close() // the process died: no release, no more heartbeats
			if presence {
				waitClosed(t, la.Lost(), time.Second, "the crashed holder's loss")
			}

			var lb storage.Lease
			for {
				lb, err = b.Acquire(ctx, name)
				if err == nil {
					break
				}
				var held *storage.LeaseHeldError
				if !errors.As(err, &held) || time.Since(crashed) > 5*testTTL {
					t.Fatalf("Acquire after the holder crashed = %v", err)
				}
				if presence {
					t.Fatalf("Acquire right after the holder's connection closed = %v, want a grant (presence)", err)
				}
				time.Sleep(20 * time.Millisecond)
			}
			took := time.Since(crashed)
			defer lb.Release(ctx)
			if lb.Epoch() != la.Epoch()+1 {
				t.Errorf("takeover at epoch %d, want %d", lb.Epoch(), la.Epoch()+1)
			}
			if !presence && took < testTTL-testTTL/3 {
				t.Errorf("without presence the lease was free %v after the crash, before its TTL %v", took, testTTL)
			}
			if err := b.Append(ctx, name, 1, []byte("fence-2")); err != nil {
				t.Fatal(err)
			}
			t.Logf("taken over %v after the crash", took.Round(time.Millisecond))
		})
	}
}

// Four clients, each its own connection as four machines would have, race
// for one lease over and over. At no time do two of them hold it; grants
// carry unique, increasing epochs; every holder's marker lands in the
// ledger in epoch order.
func TestRacingClientsNeverShareALease(t *testing.T) {
	srv := startServer(t)
	const clients, grants = 4, 120
	const name = "sessions/contended"
	stores := make([]*Store, clients)
	for i := range stores {
		stores[i] = openStore(t, srv.URL(), WithHolder(2000+i, fmt.Sprintf("machine-%d", i)))
	}
	var (
		holder  atomic.Int32 // 0 or 1+the client holding
		granted atomic.Int64
		mu      sync.Mutex
		epochs  []uint64 // in grant order, as observed under the marker
		wg      sync.WaitGroup
	)
	ctx := t.Context()
	for i, st := range stores {
		wg.Go(func() {
			for granted.Load() < grants && !t.Failed() {
				l, err := st.Acquire(ctx, name)
				if err != nil {
					var held *storage.LeaseHeldError
					if !errors.As(err, &held) {
						t.Errorf("client %d: Acquire = %v", i, err)
					}
					continue
				}
				if prev := holder.Swap(int32(i + 1)); prev != 0 {
					t.Errorf("client %d got epoch %d while client %d holds the lease", i, l.Epoch(), prev-1)
				}
				mu.Lock()
				epochs = append(epochs, l.Epoch())
				mu.Unlock()
				// The holder's marker: one record at the tip, written under
				// the lease.
				tip, err := st.Tip(ctx, name)
				if err == nil {
					err = st.Append(ctx, name, tip, fmt.Appendf(nil, "%d", l.Epoch()))
				}
				if err != nil {
					t.Errorf("client %d: marker of epoch %d: %v", i, l.Epoch(), err)
				}
				granted.Add(1)
				if holder.Swap(0) != int32(i+1) {
					t.Errorf("client %d: another client took the marker while it held the lease", i)
				}
				if err := l.Release(ctx); err != nil {
					t.Errorf("client %d: Release = %v", i, err)
				}
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	for i := 1; i < len(epochs); i++ {
		if epochs[i] != epochs[i-1]+1 {
			t.Fatalf("grant %d has epoch %d after %d: epochs must be unique and increase by one per grant", i, epochs[i], epochs[i-1])
		}
	}
	c, err := stores[0].Read(ctx, name, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var n int
	for c.Next() {
		if got, want := string(c.Record().Payload), fmt.Sprint(epochs[n]); got != want {
			t.Fatalf("marker %d is %q, want %q", n+1, got, want)
		}
		n++
	}
	if c.Err() != nil || n != len(epochs) {
		t.Fatalf("ledger holds %d markers (err %v), want %d", n, c.Err(), len(epochs))
	}
	t.Logf("%d grants, epochs 1..%d", len(epochs), epochs[len(epochs)-1])
}

// A Break from another machine takes the lease at once; the broken holder
// learns it at once (not at its next renewal) with reason replaced, and its
// release does not free the breaker's grant.
func TestBreakAcrossClients(t *testing.T) {
	srv := startServer(t)
	ctx := t.Context()
	a := openStore(t, srv.URL(), WithLeaseTTL(time.Minute))
	b := openStore(t, srv.URL(), WithLeaseTTL(time.Minute))
	const name = "sessions/wedged"
	la, err := a.Acquire(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	lb, err := b.Break(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	defer lb.Release(ctx)
	waitClosed(t, la.Lost(), 2*time.Second, "the broken holder's loss")
	var lost *storage.LeaseLostError
	if err := storage.LostCause(name, la); !errors.As(err, &lost) || lost.Reason != storage.LossReplaced || lost.NewEpoch != lb.Epoch() {
		t.Errorf("broken holder's cause = %v, want replaced by epoch %d", err, lb.Epoch())
	}
	if err := la.Release(ctx); err != nil {
		t.Fatal(err)
	}
	st, err := a.Probe(ctx, name)
	if err != nil || !st.Held || st.Epoch != lb.Epoch() {
		t.Fatalf("Probe after the broken holder released = %+v, %v; want held at %d", st, err, lb.Epoch())
	}
}

// With presence, losing the connection loses every lease: another client
// may already have judged the holder gone.
func TestDisconnectLosesLeases(t *testing.T) {
	srv := startServer(t)
	ctx := t.Context()
	a := openStore(t, srv.URL())
	l, err := a.Acquire(ctx, "sessions/one")
	if err != nil {
		t.Fatal(err)
	}
	srv.Shutdown()
	waitClosed(t, l.Lost(), 2*time.Second, "loss on disconnect")
	var lost *storage.LeaseLostError
	if err := storage.LostCause("sessions/one", l); !errors.As(err, &lost) || lost.Reason == storage.LossReleased {
		t.Errorf("cause = %v", err)
	}
}

// A renewal must land before the expiry the holder last wrote; leases of a
// healthy holder never lapse over several TTLs.
func TestHeartbeatKeepsLease(t *testing.T) {
	srv := startServer(t)
	ctx := t.Context()
	// 2 s, not less: under the race detector on a loaded CI machine a
	// 1 s TTL's renewal (every TTL/3) was once confirmed too late, and the
	// holder fenced itself as it must.
	const ttl = 2 * time.Second
	a := openStore(t, srv.URL(), WithLeaseTTL(ttl))
	b := openStore(t, srv.URL(), WithLeaseTTL(ttl), WithoutPresence()) // judges by the record alone
	l, err := a.Acquire(ctx, "sessions/kept")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(ctx)
	end := time.Now().Add(5 * ttl / 2) // several renewals past the first TTL
	for time.Now().Before(end) {
		st, err := b.Probe(ctx, "sessions/kept")
		if err != nil || !st.Held || st.Epoch != 1 {
			t.Fatalf("Probe = %+v, %v; want held at epoch 1", st, err)
		}
		if isClosed(l.Lost()) {
			t.Fatalf("a healthy holder lost its lease: %v", storage.LostCause("sessions/kept", l))
		}
		time.Sleep(25 * time.Millisecond)
	}
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// ProbeMany over many names (the bucket scan) says what Probe says of each.
func TestProbeManyMatchesProbe(t *testing.T) {
	srv := startServer(t)
	ctx := t.Context()
	a := openStore(t, srv.URL())
	b := openStore(t, srv.URL())
	var names []string
	for i := range 60 {
		name := fmt.Sprintf("sessions/p%02d", i)
		names = append(names, name)
		switch i % 4 {
		case 0: // never granted
		case 1: // held by the other client
			l, err := b.Acquire(ctx, name)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Release(ctx)
		case 2: // released
			l, err := b.Acquire(ctx, name)
			if err != nil {
				t.Fatal(err)
			}
			l.Release(ctx)
		case 3: // held by a client that is gone
			c := openStore(t, srv.URL())
			if _, err := c.Acquire(ctx, name); err != nil {
				t.Fatal(err)
			}
			c.Close()
		}
	}
	got, err := a.ProbeMany(ctx, names)
	if err != nil {
		t.Fatal(err)
	}
	for i, name := range names {
		want, err := a.Probe(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		if got[i] != want {
			t.Errorf("ProbeMany[%s] = %+v, Probe = %+v", name, got[i], want)
		}
		if wantHeld := i%4 == 1; got[i].Held != wantHeld {
			t.Errorf("%s held = %v, want %v", name, got[i].Held, wantHeld)
		}
	}
}

// A grant by this process names its start (procstart.Self) in the lease's
// record, for a listing on this machine to tell pid reuse without the wall
// clock; a grant in the name of another pid names none.
func TestGrantNamesTheHoldersStart(t *testing.T) {
	srv := startServer(t)
	ctx := t.Context()
	self := procstart.Self()
	for _, c := range []struct {
		store *Store
		want  procstart.Stamp
	}{
		{openStore(t, srv.URL()), self},
		{openStore(t, srv.URL(), WithHolder(777, "elsewhere")), procstart.Stamp{}},
	} {
		name := fmt.Sprintf("sessions/start-%d", c.store.o.pid)
		l, err := c.store.Acquire(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		st, err := c.store.Probe(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		if got := (procstart.Stamp{Ticks: st.Holder.Started, Boot: st.Holder.Boot}); got != c.want {
			t.Errorf("pid %d's grant names start %+v, want %+v", c.store.o.pid, got, c.want)
		}
		l.Release(ctx)
	}
}
