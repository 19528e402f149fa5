package lease

import (
	"context"
	"errors"
	"os"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"looprig/rig/storage"
)

// A holder whose watchdog period is an hour still learns at once of a
// forced takeover, and of its lease granted to another after its lock
// file was removed by hand: inotify on its files tells it, or without
// inotify the bell the break or the grant rings (TestNotifiedWithoutInotify
// runs this so). Without either, the loss would wait for the period.
func TestNotifiedLossWithoutPolling(t *testing.T) {
	dir := t.TempDir()
	holder := NewManager(Options{Watchdog: time.Hour, Host: "holder"})
	t.Cleanup(func() { holder.Close() })
	breaker := testManager(t, 0, "breaker")
	l1 := mustAcquire(t, holder, dir, "sessions/n")
	settle(holder) // not the check after the grant, which dnotify delays
	lockPath, epochPath := leasePaths(dir, "sessions/n")
	l2, err := breaker.Break(context.Background(), "sessions/n", lockPath, epochPath)
	if err != nil {
		t.Fatal(err)
	}
	defer mustRelease(t, l2)
	if lost := noticed(t, l1, "the break"); lost.Reason != storage.LossReplaced {
		t.Fatalf("cause %+v, want replaced", lost)
	}
	// The lock file removed by hand, then the name granted to another:
	// the holder is told at once, with dnotify too (the grant rings).
	l3 := mustAcquire(t, holder, dir, "sessions/g")
	settle(holder)
	lockPath, epochPath = leasePaths(dir, "sessions/g")
	if err := os.Remove(lockPath); err != nil {
		t.Fatal(err)
	}
	l4, err := breaker.Acquire(context.Background(), "sessions/g", lockPath, epochPath)
	if err != nil {
		t.Fatal(err)
	}
	defer mustRelease(t, l4)
	noticed(t, l3, "its lease granted to another")
}

// With inotify, the lock file removed by hand is noticed at once too,
// before anyone takes the name. (With dnotify, a loss that gives the lease
// to no one rings no bell: it waits for the poll.)
func TestNotifiedLockRemovedByHand(t *testing.T) {
	dir := t.TempDir()
	holder := NewManager(Options{Watchdog: time.Hour, Host: "holder"})
	t.Cleanup(func() { holder.Close() })
	l3 := mustAcquire(t, holder, dir, "sessions/m")
	skipWithoutInotify(t, holder)
	lockPath, _ := leasePaths(dir, "sessions/m")
	if err := os.Remove(lockPath); err != nil {
		t.Fatal(err)
	}
	noticed(t, l3, "its lock file removed")
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

// An idle holder is not woken by other holders: grants, releases and
// breaks of other names in the same directory (other hosts' sessions) make
// no event it watches, so its watchdog's wakeups do not grow with their
// number. (Watching the directory, every one of them woke it.) Without
// inotify too: the holder watches its bell, which only a break of its own
// lease rings (TestNotifiedWithoutInotify runs this so).
func TestOthersDoNotWakeTheWatchdog(t *testing.T) {
	dir := t.TempDir()
	holder := NewManager(Options{Watchdog: time.Hour, Host: "holder"})
	t.Cleanup(func() { holder.Close() })
	l := mustAcquire(t, holder, dir, "sessions/mine")
	defer mustRelease(t, l)
	before := settle(holder)
	others := testManager(t, 0, "others")
	for i := range 50 {
		name := "sessions/other" + strconv.Itoa(i)
		o := mustAcquire(t, others, dir, name)
		mustRelease(t, o)
		o = mustAcquire(t, others, dir, name)
		if i%10 == 0 {
			lockPath, epochPath := leasePaths(dir, name)
			b, err := others.Break(context.Background(), name, lockPath, epochPath)
			if err != nil {
				t.Fatal(err)
			}
			mustRelease(t, b)
		}
		mustRelease(t, o)
		// Another process probing the holder's own files (ls, the TUI)
		// reads them; reads do not wake it either.
		_, epochPath := leasePaths(dir, "sessions/mine")
		if _, _, err := readEpochFile("sessions/mine", epochPath); err != nil {
			t.Fatal(err)
		}
	}
	if woke := settle(holder) - before; woke != 0 {
		t.Errorf("the holder's watchdog woke %d times while 50 others took and gave up leases next to it, want 0", woke)
	}
	notLost(t, l)
}

// The epoch file is replaced by rename: the watched inode is then no
// longer the file. A replacement that keeps the epoch (not a loss) must
// not leave the next one unseen: the watchdog watches the new inode
// before it reads it. Written in place or removed is noticed too. The
// period is an hour: only notification can tell. (With dnotify, by hand
// is for the poll: bell.go.)
func TestNotifiedEpochFileReplacedTwice(t *testing.T) {
	dir := t.TempDir()
	holder := NewManager(Options{Watchdog: time.Hour, Host: "holder"})
	t.Cleanup(func() { holder.Close() })
	l := mustAcquire(t, holder, dir, "sessions/e")
	skipWithoutInotify(t, holder)
	_, epochPath := leasePaths(dir, "sessions/e")
	same, err := os.ReadFile(epochPath)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 { // the same epoch, by rename: not a loss
		writeEpochAtomically(t, epochPath, same)
		time.Sleep(100 * time.Millisecond)
		notLost(t, l)
	}
	writeEpochAtomically(t, epochPath, formatEpochFile(l.Epoch()+1, storage.Holder{PID: 1, Host: "x"}))
	if lost := noticed(t, l, "its epoch file replaced after a harmless replacement"); lost.Reason != storage.LossEpochAdvanced {
		t.Fatalf("cause %+v, want epoch advanced", lost)
	}
	mustRelease(t, l)

	l = mustAcquire(t, holder, dir, "sessions/e")
	if err := os.WriteFile(epochPath, formatEpochFile(l.Epoch()+5, storage.Holder{}), 0o600); err != nil { // in place
		t.Fatal(err)
	}
	noticed(t, l, "its epoch file rewritten in place")
	mustRelease(t, l)

	l = mustAcquire(t, holder, dir, "sessions/e")
	if err := os.Remove(epochPath); err != nil {
		t.Fatal(err)
	}
	noticed(t, l, "its epoch file removed")
	mustRelease(t, l)
}

// Without an inotify instance (the user's are used up: 128 by default, a
// thousand hosts), the watchdog falls back to dnotify on the lease's bell
// (0700, beside the lock files): a break is still noticed at once with
// the period an hour, and other holders next to it do not wake it.
func TestNotifiedWithoutInotify(t *testing.T) {
	defer func(f func() (int, error)) { inotifyInit = f }(inotifyInit)
	inotifyInit = func() (int, error) { return -1, unix.EMFILE }
	TestNotifiedLossWithoutPolling(t)
	TestOthersDoNotWakeTheWatchdog(t)
	m := testManager(t, 0, "")
	dir := t.TempDir()
	l := mustAcquire(t, m, dir, "sessions/p")
	defer mustRelease(t, l)
	m.mu.Lock()
	if m.notify == nil || m.notify.fd >= 0 || m.pollPeriodLocked() != notifiedPoll {
		t.Errorf("without inotify: notifier %+v, period %v; want dnotify and %v", m.notify, m.pollPeriodLocked(), notifiedPoll)
	}
	m.mu.Unlock()
	lockPath, _ := leasePaths(dir, "sessions/p")
	fi, err := os.Stat(bellPath(lockPath))
	if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		t.Fatalf("the bell %s: %v, %v; want a directory, 0700", bellPath(lockPath), fi, err)
	}
}

// With dnotify, a burst of rings of the holder's bell (a ring is an entry
// made and removed) is one check, not one a change; a burst of changes
// in the leases' directory, as a neighbour's grant makes, is none.
func TestDnotifyBurstIsOneCheck(t *testing.T) {
	old := inotifyInit
	inotifyInit = func() (int, error) { return -1, errors.New("no inotify instance left") }
	defer func() { inotifyInit = old }()
	dir := t.TempDir()
	m := NewManager(Options{Watchdog: time.Hour})
	defer m.Close()
	l := mustAcquire(t, m, dir, "sessions/mine")
	defer mustRelease(t, l)
	time.Sleep(3 * dnotifyCoalesce) // the registration's check done
	before := m.rounds.Load()
	lockPath, _ := leasePaths(dir, "sessions/neighbour")
	for i := range 6 { // a neighbour's grant: files made, written, renamed
		if err := os.WriteFile(lockPath+".tmp"+strconv.Itoa(i), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(3 * dnotifyCoalesce)
	if checks := m.rounds.Load() - before; checks != 0 {
		t.Errorf("6 changes of a neighbour made %d checks, want 0", checks)
	}
	before = m.rounds.Load()
	mine, _ := leasePaths(dir, "sessions/mine")
	for range 3 {
		ringBell(mine)
	}
	time.Sleep(3 * dnotifyCoalesce)
	if checks := m.rounds.Load() - before; checks < 1 || checks > 2 {
		t.Errorf("3 rings in a burst made %d checks, want 1 (2 if the burst straddled the wait)", checks)
	}
	notLost(t, l)
}

// noticed waits for l to be lost, at most 3 s (the tests' holders poll
// every hour: only notification tells them in time), and returns why.
func noticed(t *testing.T, l *Lease, what string) *storage.LeaseLostError {
	t.Helper()
	select {
	case <-l.Lost():
		return l.LostCause().(*storage.LeaseLostError)
	case <-time.After(3 * time.Second):
		t.Fatalf("the holder did not notice %s within 3 s, with its watchdog period an hour", what)
		return nil
	}
}

// settle waits for m's watchdog to be done with the check after a grant
// and any event in flight, and returns its count of wakeups.
func settle(m *Manager) int64 {
	for prev := int64(-1); ; time.Sleep(3 * dnotifyCoalesce) {
		if r := m.rounds.Load(); r == prev {
			return r
		} else {
			prev = r
		}
	}
}

// skipWithoutInotify skips a test of what only inotify tells at once, when
// m's watchdog has none (the user's instances used up, by the tests of
// this package running in parallel or by a thousand hosts).
func skipWithoutInotify(t *testing.T, m *Manager) {
	t.Helper()
	m.mu.Lock()
	dnotify := m.notify == nil || m.notify.fd < 0
	m.mu.Unlock()
	if dnotify {
		t.Skip("no inotify instance left for this user (fs.inotify.max_user_instances): with dnotify, a loss by hand waits for the poll")
	}
}
