package storetest

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"looprig/rig/storage"
)

var leaseCases = []testCase{
	{"Exclusive", testLeaseExclusive},
	{"ConcurrentAcquireOneWinner", testLeaseConcurrentAcquire},
	{"EpochsIncrease", testLeaseEpochsIncrease},
	{"EpochsPerName", testLeaseEpochsPerName},
	{"PrefixNames", testLeasePrefixNames},
	{"ReleaseIdempotent", testLeaseReleaseIdempotent},
	{"StaleReleaseKeepsLaterHolder", testLeaseStaleRelease},
	{"LostCause", testLeaseLostCause},
	{"ProbeStates", testProbeStates},
	{"ProbeNeverFailsAcquire", testProbeNeverFailsAcquire},
	{"ProbeMany", testProbeMany},
	{"ProbeManyMany", testProbeManyMany},
	{"Break", testBreak},
	{"BreakFreeName", testBreakFree},
}

func testLeaseExclusive(t *testing.T, s storage.Store) {
	const name, other = "sessions/exclusive", "sessions/other"
	l := acquire(t, s, name)
	if l.Epoch() == 0 {
		t.Fatalf("Acquire(%q) granted epoch 0; epochs start at 1", name)
	}
	if isLost(l) {
		t.Fatalf("Lost() of a fresh grant is closed")
	}

	_, err := s.Acquire(t.Context(), name)
	var held *storage.LeaseHeldError
	if !errors.As(err, &held) {
		t.Fatalf("second Acquire(%q) = %v (%T), want *storage.LeaseHeldError", name, err, err)
	}
	if held.Name != name || held.HolderEpoch != l.Epoch() {
		t.Fatalf("second Acquire(%q) refused with Name %q HolderEpoch %d, want Name %q HolderEpoch %d",
			name, held.Name, held.HolderEpoch, name, l.Epoch())
	}
	if held.Holder.PID == 0 {
		t.Errorf("LeaseHeldError.Holder = %+v, want the holder's pid", held.Holder)
	}
	if isLost(l) {
		t.Fatalf("a refused Acquire closed the holder's Lost()")
	}

	o := acquire(t, s, other)
	if o.Epoch() != 1 {
		t.Errorf("Acquire(%q) while %q is held granted epoch %d, want 1", other, name, o.Epoch())
	}
	wantHeld(t, s, name, l.Epoch())
	wantHeld(t, s, other, o.Epoch())
}

func testLeaseConcurrentAcquire(t *testing.T, s storage.Store) {
	const name, n = "sessions/race", 8
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		winners []storage.Lease
		start   = make(chan struct{})
	)
	for range n {
		wg.Go(func() {
			<-start
			l, err := s.Acquire(t.Context(), name)
			if err != nil {
				var held *storage.LeaseHeldError
				if !errors.As(err, &held) {
					t.Errorf("concurrent Acquire(%q) = %v (%T), want a grant or *storage.LeaseHeldError", name, err, err)
				}
				return
			}
			releaseAtCleanup(t, l)
			mu.Lock()
			winners = append(winners, l)
			mu.Unlock()
		})
	}
	close(start)
	wg.Wait()
	if len(winners) != 1 {
		epochs := make([]uint64, len(winners))
		for i, l := range winners {
			epochs[i] = l.Epoch()
		}
		t.Fatalf("%d concurrent Acquires of a free name granted %d leases (epochs %v), want exactly 1", n, len(winners), epochs)
	}
	if e := winners[0].Epoch(); e != 1 {
		t.Errorf("the only grant of a fresh name has epoch %d, want 1", e)
	}
}

func testLeaseEpochsIncrease(t *testing.T, s storage.Store) {
	const name = "sessions/epochs"
	for want := uint64(1); want <= 4; want++ {
		l := acquire(t, s, name)
		if l.Epoch() != want {
			t.Fatalf("grant %d of %q has epoch %d, want %d (epochs start at 1 and go up by one per grant)",
				want, name, l.Epoch(), want)
		}
		release(t, l, "the lease")
	}
}

func testLeaseEpochsPerName(t *testing.T, s storage.Store) {
	const a, b = "sessions/a", "sessions/b"
	for range 3 {
		release(t, acquire(t, s, a), a)
	}
	lb := acquire(t, s, b)
	if lb.Epoch() != 1 {
		t.Fatalf("first grant of %q after 3 grants of %q has epoch %d, want 1 (epochs are per name)", b, a, lb.Epoch())
	}
	la := acquire(t, s, a)
	if la.Epoch() != 4 {
		t.Fatalf("fourth grant of %q has epoch %d, want 4", a, la.Epoch())
	}
}

// testLeasePrefixNames uses names that are path prefixes of each other or
// look like a backend's file suffixes; they are distinct, valid names.
func testLeasePrefixNames(t *testing.T, s storage.Store) {
	names := []string{"a", "a/b", "a/b/c", "a.lock/b", "a.epoch", "a.lock"}
	held := make([]storage.Lease, len(names))
	for i, n := range names {
		held[i] = acquire(t, s, n)
		if held[i].Epoch() != 1 {
			t.Fatalf("first grant of %q has epoch %d, want 1", n, held[i].Epoch())
		}
	}
	for i, n := range names {
		wantHeld(t, s, n, 1)
		if isLost(held[i]) {
			t.Fatalf("lease %q was lost after other names were granted", n)
		}
	}
	release(t, held[0], names[0])
	for i, n := range names[1:] {
		if isLost(held[i+1]) {
			t.Fatalf("releasing %q lost %q", names[0], n)
		}
		wantHeld(t, s, n, 1)
	}
	if l := acquire(t, s, names[0]); l.Epoch() != 2 {
		t.Fatalf("second grant of %q has epoch %d, want 2", names[0], l.Epoch())
	}
}

func testLeaseReleaseIdempotent(t *testing.T, s storage.Store) {
	const name = "sessions/release"
	l := acquire(t, s, name)
	release(t, l, "the lease")
	if !isLost(l) {
		t.Fatalf("Lost() is still open after Release returned")
	}
	release(t, l, "an already released lease")
	l2 := acquire(t, s, name)
	if l2.Epoch() != l.Epoch()+1 {
		t.Fatalf("grant after release has epoch %d, want %d", l2.Epoch(), l.Epoch()+1)
	}
}

func testLeaseStaleRelease(t *testing.T, s storage.Store) {
	const name = "sessions/stale"
	l1 := acquire(t, s, name)
	release(t, l1, "the first lease")
	l2 := acquire(t, s, name)
	if l2.Epoch() <= l1.Epoch() {
		t.Fatalf("second grant has epoch %d, not above the first (%d)", l2.Epoch(), l1.Epoch())
	}
	release(t, l1, "the first lease again, while a later grant holds the name")
	if isLost(l2) {
		t.Fatalf("releasing an old lease closed the later holder's Lost()")
	}
	if err := storage.LostCause(name, l2); err != nil {
		t.Fatalf("releasing an old lease made the later holder's LostCause %v", err)
	}
	wantHeld(t, s, name, l2.Epoch())
}

func testLeaseLostCause(t *testing.T, s storage.Store) {
	const name = "sessions/cause"
	l := acquire(t, s, name)
	if err := storage.LostCause(name, l); err != nil {
		t.Fatalf("LostCause of a valid lease = %v, want nil", err)
	}
	release(t, l, "the lease")
	lost := wantLostCause(t, name, l, "a released lease")
	if _, ok := l.(storage.LossReporter); ok && lost.Reason != storage.LossReleased {
		t.Errorf("LostCause of a released lease has Reason %q, want %q", lost.Reason, storage.LossReleased)
	}
	// Stable: asking again says the same.
	if again := wantLostCause(t, name, l, "a released lease, asked twice"); again.Reason != lost.Reason {
		t.Errorf("LostCause changed from %q to %q", lost.Reason, again.Reason)
	}
}

func wantProbe(t *testing.T, p storage.LeaseProber, name string, held bool, epoch uint64) storage.LeaseStatus {
	t.Helper()
	st, err := p.Probe(t.Context(), name)
	if err != nil {
		t.Fatalf("Probe(%q) = %v", name, err)
	}
	if st.Name != name || st.Held != held || st.Epoch != epoch {
		t.Fatalf("Probe(%q) = {Name %q, Held %v, Epoch %d}, want {Name %q, Held %v, Epoch %d}",
			name, st.Name, st.Held, st.Epoch, name, held, epoch)
	}
	if epoch > 0 {
		if st.Holder.PID == 0 {
			t.Errorf("Probe(%q).Holder = %+v, want the latest grantee's pid", name, st.Holder)
		}
		if st.Holder.Acquired.IsZero() {
			t.Errorf("Probe(%q).Holder.Acquired is zero", name)
		}
	}
	return st
}

func testProbeStates(t *testing.T, s storage.Store) {
	const name = "sessions/probe"
	wantProbe(t, s, name, false, 0)
	l := acquire(t, s, name)
	wantProbe(t, s, name, true, l.Epoch())
	wantProbe(t, s, name, true, l.Epoch()) // probing twice changes nothing
	if isLost(l) {
		t.Fatalf("Probe closed the holder's Lost()")
	}
	release(t, l, "the lease")
	wantProbe(t, s, name, false, l.Epoch())
	l2 := acquire(t, s, name)
	if l2.Epoch() != l.Epoch()+1 {
		t.Fatalf("grant after probes has epoch %d, want %d", l2.Epoch(), l.Epoch()+1)
	}
	wantProbe(t, s, name, true, l2.Epoch())
}

func testProbeNeverFailsAcquire(t *testing.T, s storage.Store) {
	const (
		name    = "sessions/probed"
		probers = 2
		// At least minCycles acquire/release cycles run, and more (up to
		// maxCycles) until the probers have overlapped them minProbes times:
		// a fast backend could otherwise finish before a probe ran.
		minCycles, maxCycles, minProbes = 100, 20000, 1000
	)
	var (
		wg     sync.WaitGroup
		probes atomic.Int64
		done   = make(chan struct{})
		ready  = make(chan struct{}, probers)
	)
	for range probers {
		wg.Go(func() {
			var last uint64
			for i := 0; ; i++ {
				st, err := s.Probe(t.Context(), name)
				if err != nil {
					t.Errorf("Probe(%q) during acquire/release cycles = %v", name, err)
					ready <- struct{}{}
					return
				}
				if st.Epoch < last {
					t.Errorf("Probe(%q) epoch went back from %d to %d", name, last, st.Epoch)
				}
				last = st.Epoch
				if i == 0 {
					ready <- struct{}{}
				} else {
					probes.Add(1)
				}
				select {
				case <-done:
					return
				default:
				}
				runtime.Gosched() // do not starve the acquirer on few CPUs
			}
		})
	}
	stop := func() { close(done); wg.Wait() }
	for range probers {
		<-ready
	}
	cycles := 0
	for ; cycles < minCycles || (cycles < maxCycles && probes.Load() < minProbes); cycles++ {
		l, err := s.Acquire(t.Context(), name)
		if err != nil {
			stop()
			t.Fatalf("cycle %d: Acquire(%q) = %v while only probes ran concurrently; a probe must never make Acquire fail", cycles+1, name, err)
		}
		if l.Epoch() != uint64(cycles+1) {
			_ = l.Release(t.Context())
			stop()
			t.Fatalf("cycle %d: grant has epoch %d, want %d", cycles+1, l.Epoch(), cycles+1)
		}
		if err := l.Release(t.Context()); err != nil {
			stop()
			t.Fatalf("cycle %d: Release = %v", cycles+1, err)
		}
		runtime.Gosched() // let the probers in between grants too
	}
	stop()
	if n := probes.Load(); n < minProbes {
		t.Logf("only %d probes overlapped %d acquire/release cycles", n, cycles)
	}
}

func testBreak(t *testing.T, s storage.Store) {
	const name = "sessions/broken"
	old := acquire(t, s, name)
	nl, err := s.Break(t.Context(), name)
	if err != nil {
		t.Fatalf("Break(%q) of a held name = %v, want a grant", name, err)
	}
	releaseAtCleanup(t, nl)
	if nl.Epoch() != old.Epoch()+1 {
		t.Fatalf("Break(%q) granted epoch %d, want %d (old holder's + 1)", name, nl.Epoch(), old.Epoch()+1)
	}
	waitLost(t, old, "the broken lease")
	lost := wantLostCause(t, name, old, "the broken lease")
	if lost.Reason == storage.LossReleased {
		t.Errorf("LostCause of a broken lease has Reason %q; it was not released", lost.Reason)
	}
	if lost.NewEpoch != 0 && lost.NewEpoch != nl.Epoch() {
		t.Errorf("LostCause of the broken lease has NewEpoch %d, want %d (or 0 when unknown)", lost.NewEpoch, nl.Epoch())
	}
	if isLost(nl) {
		t.Fatalf("the breaker's own Lost() is closed")
	}
	wantHeld(t, s, name, nl.Epoch())

	// The broken holder cleans up: that must not free the breaker's grant.
	release(t, old, "the broken lease")
	if isLost(nl) {
		t.Fatalf("releasing the broken lease closed the breaker's Lost()")
	}
	wantHeld(t, s, name, nl.Epoch())

	release(t, nl, "the breaker's lease")
	if l := acquire(t, s, name); l.Epoch() != nl.Epoch()+1 {
		t.Fatalf("grant after the breaker released has epoch %d, want %d", l.Epoch(), nl.Epoch()+1)
	}
}

func testBreakFree(t *testing.T, s storage.Store) {
	const name = "sessions/free-break"
	release(t, acquire(t, s, name), "the first lease")
	l, err := s.Break(t.Context(), name)
	if err != nil {
		t.Fatalf("Break(%q) of a free name = %v, want a grant", name, err)
	}
	releaseAtCleanup(t, l)
	if l.Epoch() != 2 {
		t.Fatalf("Break(%q) of a free name after one grant has epoch %d, want 2", name, l.Epoch())
	}
	if isLost(l) {
		t.Fatalf("Lost() of the breaker's grant is closed")
	}
	wantHeld(t, s, name, l.Epoch())
}

// wantProbeMany checks that ProbeMany(names) reports, name by name and in
// order, what Probe reports of each.
func wantProbeMany(t *testing.T, s storage.Store, names []string) {
	t.Helper()
	got, err := s.ProbeMany(t.Context(), names)
	if err != nil {
		t.Fatalf("ProbeMany(%d names) = %v", len(names), err)
	}
	if len(got) != len(names) {
		t.Fatalf("ProbeMany(%d names) returned %d statuses, want one per name", len(names), len(got))
	}
	for i, name := range names {
		one, err := s.Probe(t.Context(), name)
		if err != nil {
			t.Fatalf("Probe(%q) = %v", name, err)
		}
		g := got[i]
		if g.Name != name || g.Held != one.Held || g.Epoch != one.Epoch || g.Holder.PID != one.Holder.PID || g.Holder.Host != one.Holder.Host {
			t.Fatalf("ProbeMany status %d = {Name %q, Held %v, Epoch %d, Holder %d@%s}, want what Probe says: {Name %q, Held %v, Epoch %d, Holder %d@%s}",
				i, g.Name, g.Held, g.Epoch, g.Holder.PID, g.Holder.Host, name, one.Held, one.Epoch, one.Holder.PID, one.Holder.Host)
		}
	}
}

// testProbeMany checks ProbeMany against Probe for held, released and
// never-granted names, a name given twice, and no names at all; a probe of
// many never makes an Acquire fail.
func testProbeMany(t *testing.T, s storage.Store) {
	const held, released, never = "sessions/many-held", "sessions/many-released", "sessions/many-never"
	l := acquire(t, s, held)
	release(t, acquire(t, s, released), released)
	release(t, acquire(t, s, released), released)
	wantProbeMany(t, s, []string{never, held, released, held})
	got, err := s.ProbeMany(t.Context(), []string{released, held})
	if err != nil {
		t.Fatal(err)
	}
	if !got[1].Held || got[1].Epoch != l.Epoch() || got[0].Held || got[0].Epoch != 2 {
		t.Fatalf("ProbeMany([released, held]) = %+v, want released free at epoch 2 and held at epoch %d", got, l.Epoch())
	}
	if got, err := s.ProbeMany(t.Context(), nil); err != nil || len(got) != 0 {
		t.Fatalf("ProbeMany(no names) = %v, %v; want no statuses and no error", got, err)
	}
	release(t, l, held)
	if l2 := acquire(t, s, held); l2.Epoch() != l.Epoch()+1 {
		t.Fatalf("grant after ProbeMany has epoch %d, want %d", l2.Epoch(), l.Epoch()+1)
	}
	wantProbeMany(t, s, []string{held, released, never})
}

// testProbeManyMany probes more names than a listing of a few sessions
// (backends may switch to a scan of every lease past some count).
func testProbeManyMany(t *testing.T, s storage.Store) {
	names := make([]string, 80)
	for i := range names {
		names[i] = fmt.Sprintf("sessions/many-%03d", i)
	}
	for i, name := range names {
		switch i % 20 {
		case 3, 11:
			acquire(t, s, name)
		case 7:
			release(t, acquire(t, s, name), name)
		}
	}
	wantProbeMany(t, s, names)
}
