package lease

import (
	"context"
	"os"
	"testing"
	"time"

	"looprig/rig/storage"
)

// With inotify, a holder whose watchdog period is an hour still learns of
// a forced takeover at once: the change in its lease's directory wakes the
// watchdog. (Without it, the loss would wait for the period.)
func TestNotifiedLossWithoutPolling(t *testing.T) {
	dir := t.TempDir()
	holder := NewManager(Options{Watchdog: time.Hour, Host: "holder"})
	t.Cleanup(func() { holder.Close() })
	breaker := testManager(t, 0, "breaker")
	l1 := mustAcquire(t, holder, dir, "sessions/n")
	lockPath, epochPath := leasePaths(dir, "sessions/n")
	l2, err := breaker.Break(context.Background(), "sessions/n", lockPath, epochPath)
	if err != nil {
		t.Fatal(err)
	}
	defer mustRelease(t, l2)
	select {
	case <-l1.Lost():
	case <-time.After(3 * time.Second):
		t.Fatal("the holder did not notice the break within 3 s, with its watchdog period an hour")
	}
	if lost := l1.LostCause().(*storage.LeaseLostError); lost.Reason != storage.LossReplaced {
		t.Fatalf("cause %+v, want replaced", lost)
	}
	// The lock file removed by hand is noticed the same way.
	l3 := mustAcquire(t, holder, dir, "sessions/m")
	lockPath, _ = leasePaths(dir, "sessions/m")
	if err := os.Remove(lockPath); err != nil {
		t.Fatal(err)
	}
	select {
	case <-l3.Lost():
	case <-time.After(3 * time.Second):
		t.Fatal("the holder did not notice its lock file removed within 3 s")
	}
}

// While every live lease's directory is watched, the watchdog polls at
// notifiedPoll, not at its period; a directory it cannot watch brings the
// period back.
func TestNotifiedPollPeriod(t *testing.T) {
	m := testManager(t, 0, "")
	l := mustAcquire(t, m, t.TempDir(), "sessions/p")
	defer mustRelease(t, l)
	m.mu.Lock()
	got := m.pollPeriodLocked()
	m.unwatched = true
	fallback := m.pollPeriodLocked()
	m.mu.Unlock()
	if got != notifiedPoll {
		t.Errorf("period with every directory watched = %v, want %v", got, notifiedPoll)
	}
	if fallback != 10*time.Millisecond {
		t.Errorf("period with a directory unwatched = %v, want the watchdog's 10ms", fallback)
	}
}
