package lease

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"looprig/rig/storage"
)

// A holder a probe saw holding its lease is watched by its process
// descriptor: its SIGKILL moves HolderStamp, and no stamp reads the lock
// table (a TUI showing a thousand sessions read it twice a second).
func TestHolderStampCountsDeaths(t *testing.T) {
	dir := t.TempDir()
	m := testManager(t, 0, "")
	if _, ok := m.HolderStamp(); !ok {
		t.Skip("no process descriptors here (Linux before 5.3)")
	}
	var reads atomic.Int32
	readProcLocksHook = func() { reads.Add(1) }
	t.Cleanup(func() { readProcLocksHook = nil })

	a := startHelper(t, "hold", dir, "sessions/a")
	b := startHelper(t, "hold", dir, "sessions/b")
	probe := func(names ...string) {
		t.Helper()
		var reqs []ProbeRequest
		for _, n := range names {
			lp, ep := leasePaths(dir, n)
			reqs = append(reqs, ProbeRequest{Name: n, LockPath: lp, EpochPath: ep})
		}
		if _, err := m.ProbeMany(context.Background(), reqs, nil); err != nil {
			t.Fatal(err)
		}
	}
	probe("sessions/a", "sessions/b")
	stamp := func() uint64 {
		t.Helper()
		d, ok := m.HolderStamp()
		if !ok {
			t.Fatal("HolderStamp cannot tell after a probe of holders on this host")
		}
		return d
	}
	before := stamp()
	probeReads := reads.Load()
	for range 3 {
		if got := stamp(); got != before {
			t.Fatalf("HolderStamp moved from %d to %d with nobody dying", before, got)
		}
	}
	a.kill(t)
	deadline := time.Now().Add(5 * time.Second)
	for stamp() == before {
		if time.Now().After(deadline) {
			t.Fatal("HolderStamp did not move after a holder was SIGKILLed")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if got := stamp(); got != before+1 {
		t.Fatalf("HolderStamp = %d after one death, want %d", got, before+1)
	}
	if n := reads.Load() - probeReads; n != 0 {
		t.Fatalf("stamps read the lock table %d times", n)
	}
	// The survivor is still watched; a probe of it again adds no watch.
	probe("sessions/b")
	b.kill(t)
	for stamp() == before+1 {
		if time.Now().After(deadline) {
			t.Fatal("HolderStamp did not move after the second holder was SIGKILLed")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A held lease whose holder the watch cannot name (another host's name
// in its epoch file) makes HolderStamp give way to the lock table.
func TestHolderStampIncompleteForOtherHosts(t *testing.T) {
	m := testManager(t, 0, "")
	if _, ok := m.HolderStamp(); !ok {
		t.Skip("no process descriptors here (Linux before 5.3)")
	}
	w := m.holderWatch()
	w.note(nil, m.host)
	if _, ok := m.HolderStamp(); !ok {
		t.Fatal("no holders seen: HolderStamp should answer")
	}
	w.note([]storage.LeaseStatus{{Name: "sessions/x", Held: true, Holder: storage.Holder{PID: 1, Host: "elsewhere"}}}, m.host)
	if _, ok := m.HolderStamp(); ok {
		t.Fatal("a holder on another host is not watched, yet HolderStamp answered")
	}
}
