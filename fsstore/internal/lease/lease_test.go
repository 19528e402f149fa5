package lease

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"looprig/rig/storage"
)

// lossTimeout bounds waiting for a watchdog (period 10ms in tests) to
// notice a loss: generous, for a loaded machine.
const lossTimeout = 10 * time.Second

func testManager(t *testing.T, pid int, host string) *Manager {
	t.Helper()
	m := NewManager(Options{Watchdog: 10 * time.Millisecond, PID: pid, Host: host})
	t.Cleanup(func() { m.Close() })
	return m
}

func mustAcquire(t *testing.T, m *Manager, dir, name string) *Lease {
	t.Helper()
	lockPath, epochPath := leasePaths(dir, name)
	l, err := m.Acquire(context.Background(), name, lockPath, epochPath)
	if err != nil {
		t.Fatalf("Acquire(%q): %v", name, err)
	}
	return l
}

func mustRelease(t *testing.T, l *Lease) {
	t.Helper()
	if err := l.Release(context.Background()); err != nil {
		t.Fatalf("Release(%q epoch %d): %v", l.Name(), l.Epoch(), err)
	}
}

// wantHeld asserts that acquiring name fails with *storage.LeaseHeldError
// naming epoch and returns it.
func wantHeld(t *testing.T, m *Manager, dir, name string, epoch uint64) *storage.LeaseHeldError {
	t.Helper()
	lockPath, epochPath := leasePaths(dir, name)
	l, err := m.Acquire(context.Background(), name, lockPath, epochPath)
	if err == nil {
		l.Release(context.Background())
		t.Fatalf("Acquire(%q) succeeded at epoch %d, want LeaseHeldError", name, l.Epoch())
	}
	var held *storage.LeaseHeldError
	if !errors.As(err, &held) {
		t.Fatalf("Acquire(%q): %v, want *storage.LeaseHeldError", name, err)
	}
	if held.Name != name || held.HolderEpoch != epoch {
		t.Fatalf("LeaseHeldError %+v, want name %q epoch %d", held, name, epoch)
	}
	return held
}

func waitLost(t *testing.T, l *Lease) *storage.LeaseLostError {
	t.Helper()
	select {
	case <-l.Lost():
	case <-time.After(lossTimeout):
		t.Fatalf("lease %q epoch %d: Lost not closed within %v", l.Name(), l.Epoch(), lossTimeout)
	}
	var lost *storage.LeaseLostError
	if err := l.LostCause(); !errors.As(err, &lost) {
		t.Fatalf("LostCause = %v, want *storage.LeaseLostError", err)
	}
	if lost.Name != l.Name() || lost.Epoch != l.Epoch() {
		t.Fatalf("LeaseLostError %+v for lease %q epoch %d", lost, l.Name(), l.Epoch())
	}
	return lost
}

func notLost(t *testing.T, l *Lease) {
	t.Helper()
	select {
	case <-l.Lost():
		t.Fatalf("lease %q epoch %d lost: %v", l.Name(), l.Epoch(), l.LostCause())
	default:
	}
	if err := l.LostCause(); err != nil {
		t.Fatalf("LostCause = %v while not lost", err)
	}
}

func readEpoch(t *testing.T, dir, name string) uint64 {
	t.Helper()
	_, epochPath := leasePaths(dir, name)
	n, _, err := readEpochFile(name, epochPath)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// writeEpochAtomically replaces the epoch file the way an outside writer
// that respects the format would (so the watchdog never sees a torn file).
func writeEpochAtomically(t *testing.T, path string, data []byte) {
	t.Helper()
	tmp := path + ".test-tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func TestAcquireExclusiveInProcess(t *testing.T) {
	dir := t.TempDir()
	m := testManager(t, 4242, "host-a")
	other := testManager(t, 4343, "host-b")
	l := mustAcquire(t, m, dir, "sessions/one")
	if l.Epoch() != 1 {
		t.Fatalf("first epoch %d, want 1", l.Epoch())
	}
	// Same Manager and another Manager of this process are both refused:
	// each attempt has its own open file description.
	for _, mm := range []*Manager{m, other} {
		held := wantHeld(t, mm, dir, "sessions/one", 1)
		if held.Holder.PID != 4242 || held.Holder.Host != "host-a" || held.Holder.Acquired.IsZero() {
			t.Fatalf("holder %+v, want pid 4242 on host-a with a time", held.Holder)
		}
	}
	notLost(t, l)
	mustRelease(t, l)
}

func TestEpochsIncreaseOverCycles(t *testing.T) {
	dir := t.TempDir()
	m := testManager(t, 0, "")
	for want := uint64(1); want <= 4; want++ {
		l := mustAcquire(t, m, dir, "sessions/cycle")
		if l.Epoch() != want {
			t.Fatalf("cycle %d: epoch %d", want, l.Epoch())
		}
		if got := readEpoch(t, dir, "sessions/cycle"); got != want {
			t.Fatalf("epoch file says %d, lease %d", got, want)
		}
		if l.Holder().PID != os.Getpid() {
			t.Fatalf("default pid %d, want %d", l.Holder().PID, os.Getpid())
		}
		mustRelease(t, l)
	}
	// A new Manager (a restart) continues from the file.
	l := mustAcquire(t, testManager(t, 0, ""), dir, "sessions/cycle")
	if l.Epoch() != 5 {
		t.Fatalf("after restart epoch %d, want 5", l.Epoch())
	}
	mustRelease(t, l)
}

func TestNamesAreIndependent(t *testing.T) {
	dir := t.TempDir()
	m := testManager(t, 0, "")
	a := mustAcquire(t, m, dir, "sessions/a")
	b := mustAcquire(t, m, dir, "sessions/b")
	root := mustAcquire(t, m, dir, "workspace-roots/0123abcd")
	for _, l := range []*Lease{a, b, root} {
		if l.Epoch() != 1 {
			t.Fatalf("%s epoch %d, want 1", l.Name(), l.Epoch())
		}
	}
	mustRelease(t, a)
	wantHeld(t, m, dir, "sessions/b", 1)
	a2 := mustAcquire(t, m, dir, "sessions/a")
	if a2.Epoch() != 2 {
		t.Fatalf("a epoch %d, want 2", a2.Epoch())
	}
	for _, l := range []*Lease{a2, b, root} {
		mustRelease(t, l)
	}
}

func TestReleaseIdempotentAndNeverFreesLaterHolder(t *testing.T) {
	dir := t.TempDir()
	m := testManager(t, 0, "")
	l1 := mustAcquire(t, m, dir, "sessions/r")
	mustRelease(t, l1)
	mustRelease(t, l1)
	lost := waitLost(t, l1)
	if lost.Reason != storage.LossReleased || lost.NewEpoch != 0 {
		t.Fatalf("cause %+v, want released", lost)
	}
	l2 := mustAcquire(t, m, dir, "sessions/r")
	mustRelease(t, l1) // must not free l2
	wantHeld(t, m, dir, "sessions/r", 2)
	notLost(t, l2)
	// The lock file is never removed by Release.
	lockPath, _ := leasePaths(dir, "sessions/r")
	if _, err := os.Lstat(lockPath); err != nil {
		t.Fatal(err)
	}
	mustRelease(t, l2)
	if l2.LostCause().(*storage.LeaseLostError).Reason != storage.LossReleased {
		t.Fatalf("cause %v", l2.LostCause())
	}
	l3 := mustAcquire(t, m, dir, "sessions/r")
	if l3.Epoch() != 3 {
		t.Fatalf("epoch %d, want 3", l3.Epoch())
	}
	mustRelease(t, l3)
}

func TestBreakLosesHolder(t *testing.T) {
	dir := t.TempDir()
	holder := testManager(t, 0, "holder")
	breaker := testManager(t, 0, "breaker")
	l1 := mustAcquire(t, holder, dir, "sessions/b")
	lockPath, epochPath := leasePaths(dir, "sessions/b")
	l2, err := breaker.Break(context.Background(), "sessions/b", lockPath, epochPath)
	if err != nil {
		t.Fatal(err)
	}
	if l2.Epoch() != l1.Epoch()+1 {
		t.Fatalf("break epoch %d, want %d", l2.Epoch(), l1.Epoch()+1)
	}
	lost := waitLost(t, l1)
	if lost.Reason != storage.LossReplaced || lost.NewEpoch != l2.Epoch() {
		t.Fatalf("cause %+v, want replaced with new epoch %d", lost, l2.Epoch())
	}
	// The old holder's Release neither fails nor frees the breaker.
	mustRelease(t, l1)
	if l1.LostCause().(*storage.LeaseLostError).Reason != storage.LossReplaced {
		t.Fatalf("cause changed by Release: %v", l1.LostCause())
	}
	held := wantHeld(t, holder, dir, "sessions/b", l2.Epoch())
	if held.Holder.Host != "breaker" {
		t.Fatalf("holder %+v, want the breaker", held.Holder)
	}
	notLost(t, l2)
	mustRelease(t, l2)
	l3 := mustAcquire(t, holder, dir, "sessions/b")
	if l3.Epoch() != l2.Epoch()+1 {
		t.Fatalf("epoch %d after break, want %d", l3.Epoch(), l2.Epoch()+1)
	}
	mustRelease(t, l3)
	// No temp lock files are left behind, nor the break's ring in the
	// lease's bell (there when the holder had no inotify: bell.go).
	entries, err := os.ReadDir(filepath.Dir(lockPath))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() == bellsDir {
			rings, err := os.ReadDir(bellPath(lockPath))
			if err != nil || len(rings) != 0 {
				t.Fatalf("the bell holds %v (%v), want nothing", rings, err)
			}
			continue
		}
		if e.Name() != "b.lock" && e.Name() != "b.epoch" {
			t.Fatalf("stray file %s", e.Name())
		}
	}
}

func TestBreakFreeOrNeverUsedName(t *testing.T) {
	dir := t.TempDir()
	m := testManager(t, 0, "")
	lockPath, epochPath := leasePaths(dir, "sessions/new")
	l, err := m.Break(context.Background(), "sessions/new", lockPath, epochPath)
	if err != nil {
		t.Fatal(err)
	}
	if l.Epoch() != 1 {
		t.Fatalf("break of a never used name: epoch %d", l.Epoch())
	}
	wantHeld(t, m, dir, "sessions/new", 1)
	mustRelease(t, l)
	l, err = m.Break(context.Background(), "sessions/new", lockPath, epochPath)
	if err != nil {
		t.Fatal(err)
	}
	if l.Epoch() != 2 {
		t.Fatalf("break of a free name: epoch %d", l.Epoch())
	}
	mustRelease(t, l)
	l = mustAcquire(t, m, dir, "sessions/new")
	if l.Epoch() != 3 {
		t.Fatalf("epoch %d, want 3", l.Epoch())
	}
	mustRelease(t, l)
}

func TestEpochAdvancedByHand(t *testing.T) {
	dir := t.TempDir()
	m := testManager(t, 0, "")
	l := mustAcquire(t, m, dir, "sessions/adv")
	_, epochPath := leasePaths(dir, "sessions/adv")
	writeEpochAtomically(t, epochPath, formatEpochFile(l.Epoch()+5, storage.Holder{PID: 1, Host: "elsewhere"}))
	lost := waitLost(t, l)
	if lost.Reason != storage.LossEpochAdvanced || lost.NewEpoch != l.Epoch()+5 {
		t.Fatalf("cause %+v, want epoch advanced to %d", lost, l.Epoch()+5)
	}
	mustRelease(t, l)
	l2 := mustAcquire(t, m, dir, "sessions/adv")
	if l2.Epoch() != l.Epoch()+6 {
		t.Fatalf("epoch %d, want %d", l2.Epoch(), l.Epoch()+6)
	}
	mustRelease(t, l2)
}

func TestLockFileRemovedIsLoss(t *testing.T) {
	dir := t.TempDir()
	m := testManager(t, 0, "")
	l := mustAcquire(t, m, dir, "sessions/rm")
	lockPath, _ := leasePaths(dir, "sessions/rm")
	if err := os.Remove(lockPath); err != nil {
		t.Fatal(err)
	}
	if lost := waitLost(t, l); lost.Reason != storage.LossReplaced {
		t.Fatalf("cause %+v, want replaced", lost)
	}
	mustRelease(t, l)
}

// Break running against a loop of Acquires never yields one epoch twice,
// and every epoch consumed is a grant: the set of granted epochs is exactly
// 1..n.
func TestBreakDuringAcquireLoopNoDuplicateEpochs(t *testing.T) {
	dir := t.TempDir()
	acq := testManager(t, 0, "acquirer")
	brk := testManager(t, 0, "breaker")
	lockPath, epochPath := leasePaths(dir, "sessions/race")
	ctx := context.Background()
	var (
		mu     sync.Mutex
		epochs []uint64
	)
	record := func(e uint64) {
		mu.Lock()
		epochs = append(epochs, e)
		mu.Unlock()
	}
	errc := make(chan error, 3)
	var wg sync.WaitGroup
	for g := 0; g < 2; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for got := 0; got < 100; {
				l, err := acq.Acquire(ctx, "sessions/race", lockPath, epochPath)
				var held *storage.LeaseHeldError
				if errors.As(err, &held) {
					time.Sleep(50 * time.Microsecond)
					continue
				}
				if err != nil {
					errc <- err
					return
				}
				record(l.Epoch())
				got++
				l.Release(ctx)
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < 40; i++ {
			l, err := brk.Break(ctx, "sessions/race", lockPath, epochPath)
			if err != nil {
				errc <- err
				return
			}
			record(l.Epoch())
			time.Sleep(100 * time.Microsecond)
			l.Release(ctx)
		}
	}()
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	sort.Slice(epochs, func(i, j int) bool { return epochs[i] < epochs[j] })
	for i, e := range epochs {
		if e != uint64(i+1) {
			t.Fatalf("granted epochs are not exactly 1..%d: position %d holds %d (duplicates or gaps)", len(epochs), i, e)
		}
	}
	if got := readEpoch(t, dir, "sessions/race"); got != uint64(len(epochs)) {
		t.Fatalf("epoch file %d, %d grants", got, len(epochs))
	}
}

func TestCorruptEpochFileRefused(t *testing.T) {
	cases := map[string][]byte{
		"garbage":   []byte("garbage\x00\xff"),
		"truncated": []byte(`{"epoch":7,"pid":12`),
		"empty":     {},
		"zero":      []byte(`{"epoch":0}`),
		"negative":  []byte(`{"epoch":-3}`),
		"overflow":  []byte(`{"epoch":18446744073709551616}`),
		"float":     []byte(`{"epoch":7.5}`),
		"string":    []byte(`{"epoch":"7"}`),
		"no epoch":  []byte(`{"pid":1}`),
		"trailing":  []byte(`{"epoch":7} {"epoch":8}`),
		"max":       []byte(`{"epoch":18446744073709551615}`), // cannot advance
		"huge":      append([]byte(`{"epoch":7,"host":"`), append(bytes.Repeat([]byte("x"), 5000), `"}`...)...),
		"huge ws":   append([]byte(`{"epoch":7}`), bytes.Repeat([]byte(" "), MaxEpochFileSize)...),
	}
	for label, content := range cases {
		t.Run(label, func(t *testing.T) {
			dir := t.TempDir()
			m := testManager(t, 0, "")
			name := "sessions/c"
			lockPath, epochPath := leasePaths(dir, name)
			if err := os.MkdirAll(filepath.Dir(epochPath), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(epochPath, content, 0o600); err != nil {
				t.Fatal(err)
			}
			for _, op := range []string{"acquire", "acquire again", "break"} {
				var err error
				var l *Lease
				if op == "break" {
					l, err = m.Break(context.Background(), name, lockPath, epochPath)
				} else {
					l, err = m.Acquire(context.Background(), name, lockPath, epochPath)
				}
				if err == nil {
					l.Release(context.Background())
					t.Fatalf("%s succeeded at epoch %d over %q", op, l.Epoch(), content)
				}
				// "acquire again" proves the first attempt dropped its lock:
				// it gets CorruptError, not LeaseHeldError.
				var ce *storage.CorruptError
				if !errors.As(err, &ce) {
					t.Fatalf("%s: %v, want *storage.CorruptError", op, err)
				}
				if ce.Name != name || ce.Path != epochPath {
					t.Fatalf("%s: CorruptError %+v", op, ce)
				}
				got, err := os.ReadFile(epochPath)
				if err != nil || !bytes.Equal(got, content) {
					t.Fatalf("%s changed the epoch file: %q (%v)", op, got, err)
				}
			}
			st, err := m.Probe(context.Background(), name, lockPath, epochPath)
			if label == "max" { // readable, just exhausted
				if err != nil || st.Held || st.Epoch != 1<<64-1 {
					t.Fatalf("Probe: %+v, %v", st, err)
				}
			} else if ce := (*storage.CorruptError)(nil); !errors.As(err, &ce) {
				t.Fatalf("Probe: %+v, %v, want *storage.CorruptError", st, err)
			}
			entries, _ := os.ReadDir(filepath.Dir(epochPath))
			for _, e := range entries {
				if e.Name() != "c.lock" && e.Name() != "c.epoch" {
					t.Fatalf("stray file %s", e.Name())
				}
			}
		})
	}
}

func TestEpochFileNotRegularRefused(t *testing.T) {
	dir := t.TempDir()
	m := testManager(t, 0, "")
	lockPath, epochPath := leasePaths(dir, "sessions/fifo")
	if err := os.MkdirAll(filepath.Dir(epochPath), 0o700); err != nil {
		t.Fatal(err)
	}
	// A FIFO must neither block the read nor be accepted.
	if err := unix.Mkfifo(epochPath, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := m.Acquire(context.Background(), "sessions/fifo", lockPath, epochPath)
	var ce *storage.CorruptError
	if !errors.As(err, &ce) {
		t.Fatalf("Acquire: %v, want *storage.CorruptError", err)
	}
}

func TestSymlinkLockPathRefused(t *testing.T) {
	dir := t.TempDir()
	m := testManager(t, 0, "")
	target := filepath.Join(dir, "precious")
	if err := os.WriteFile(target, []byte("do not touch"), 0o644); err != nil {
		t.Fatal(err)
	}
	before, _ := os.Stat(target)
	lockPath, epochPath := leasePaths(dir, "sessions/sym")
	if err := os.MkdirAll(filepath.Dir(lockPath), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, lockPath); err != nil {
		t.Fatal(err)
	}
	if l, err := m.Acquire(context.Background(), "sessions/sym", lockPath, epochPath); !errors.Is(err, ErrUnsafeFile) {
		if err == nil {
			l.Release(context.Background())
		}
		t.Fatalf("Acquire through a symlink: %v, want ErrUnsafeFile", err)
	}
	if l, err := m.Break(context.Background(), "sessions/sym", lockPath, epochPath); !errors.Is(err, ErrUnsafeFile) {
		if err == nil {
			l.Release(context.Background())
		}
		t.Fatalf("Break over a symlink: %v, want ErrUnsafeFile", err)
	}
	st, err := m.Probe(context.Background(), "sessions/sym", lockPath, epochPath)
	if err != nil || st.Held || st.Epoch != 0 {
		t.Fatalf("Probe: %+v, %v", st, err)
	}
	checkUntouched := func() {
		t.Helper()
		got, err := os.ReadFile(target)
		after, _ := os.Stat(target)
		if err != nil || string(got) != "do not touch" || after.Mode() != before.Mode() || !after.ModTime().Equal(before.ModTime()) {
			t.Fatalf("symlink target changed: %q %v %v", got, after.Mode(), err)
		}
		if fi, err := os.Lstat(lockPath); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			t.Fatalf("symlink replaced: %v %v", fi, err)
		}
		if _, err := os.Lstat(epochPath); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("epoch file written: %v", err)
		}
	}
	checkUntouched()

	// A symlinked epoch file is refused as corrupt and not written through.
	lock2, epoch2 := leasePaths(dir, "sessions/sym2")
	if err := os.Symlink(target, epoch2); err != nil {
		t.Fatal(err)
	}
	_, err = m.Acquire(context.Background(), "sessions/sym2", lock2, epoch2)
	var ce *storage.CorruptError
	if !errors.As(err, &ce) {
		t.Fatalf("Acquire with a symlinked epoch file: %v, want *storage.CorruptError", err)
	}
	if got, _ := os.ReadFile(target); string(got) != "do not touch" {
		t.Fatalf("target written: %q", got)
	}
}

func TestPermissions(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "store")
	m := testManager(t, 0, "")
	l := mustAcquire(t, m, dir, "sessions/deep/perm")
	lockPath, epochPath := leasePaths(dir, "sessions/deep/perm")
	for _, d := range []string{dir, filepath.Join(dir, "leases"), filepath.Join(dir, "leases", "sessions"), filepath.Dir(lockPath)} {
		fi, err := os.Stat(d)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o700 {
			t.Fatalf("%s mode %v, want 0700", d, fi.Mode().Perm())
		}
	}
	for _, f := range []string{lockPath, epochPath} {
		fi, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 || !fi.Mode().IsRegular() {
			t.Fatalf("%s mode %v, want 0600", f, fi.Mode())
		}
	}
	// Break's replacement lock file too.
	l2, err := m.Break(context.Background(), "sessions/deep/perm", lockPath, epochPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{lockPath, epochPath} {
		if fi, err := os.Stat(f); err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("after break %s: %v %v", f, fi, err)
		}
	}
	mustRelease(t, l)
	mustRelease(t, l2)
}

func TestCloseStopsWatchdogLeasesStayHeld(t *testing.T) {
	dir := t.TempDir()
	m := NewManager(Options{Watchdog: 10 * time.Millisecond})
	l := mustAcquire(t, m, dir, "sessions/close")
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	lockPath, epochPath := leasePaths(dir, "sessions/close")
	if _, err := m.Acquire(context.Background(), "sessions/other", lockPath+"x", epochPath+"x"); !errors.Is(err, ErrClosed) {
		t.Fatalf("Acquire after Close: %v", err)
	}
	if _, err := m.Break(context.Background(), "sessions/close", lockPath, epochPath); !errors.Is(err, ErrClosed) {
		t.Fatalf("Break after Close: %v", err)
	}
	other := testManager(t, 0, "")
	wantHeld(t, other, dir, "sessions/close", 1)
	notLost(t, l)
	mustRelease(t, l)
	mustRelease(t, mustAcquire(t, other, dir, "sessions/close"))
}

func TestWatchdogExitsWhenIdle(t *testing.T) {
	dir := t.TempDir()
	m := testManager(t, 0, "")
	running := func() bool {
		m.mu.Lock()
		defer m.mu.Unlock()
		return m.running
	}
	l := mustAcquire(t, m, dir, "sessions/idle")
	if !running() {
		t.Fatal("no watchdog with a live lease")
	}
	mustRelease(t, l)
	deadline := time.Now().Add(lossTimeout)
	for running() {
		if time.Now().After(deadline) {
			t.Fatal("watchdog still running with no live lease")
		}
		time.Sleep(5 * time.Millisecond)
	}
	// And it comes back for the next grant.
	l = mustAcquire(t, m, dir, "sessions/idle")
	if !running() {
		t.Fatal("no watchdog after a new grant")
	}
	mustRelease(t, l)
}

func TestAcquireHonoursContext(t *testing.T) {
	dir := t.TempDir()
	m := testManager(t, 0, "")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	lockPath, epochPath := leasePaths(dir, "sessions/ctx")
	if _, err := m.Acquire(ctx, "sessions/ctx", lockPath, epochPath); !errors.Is(err, context.Canceled) {
		t.Fatalf("Acquire: %v", err)
	}
	// The directory guard wait honours the context too.
	g, err := lockDir(context.Background(), filepath.Dir(lockPath))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel = context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err = m.Break(ctx, "sessions/ctx", lockPath, epochPath)
	g.unlock()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Break while the guard is held: %v", err)
	}
	mustRelease(t, mustAcquire(t, m, dir, "sessions/ctx"))
}

// The directory guard excludes another descriptor even inside one process
// (what another process would see), not just the in-process semaphore.
func TestDirGuardIsAFlock(t *testing.T) {
	dir := t.TempDir()
	g, err := lockDir(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); err != unix.EWOULDBLOCK {
		t.Fatalf("flock under the guard: %v, want EWOULDBLOCK", err)
	}
	g.unlock()
	if err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		t.Fatalf("flock after the guard: %v", err)
	}
}

func TestPathNamesLock(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "x.lock")
	fl, held, err := tryLockFile(p, lockFlags)
	if err != nil || held {
		t.Fatal(held, err)
	}
	defer fl.Close()
	if _, held, err := tryLockFile(p, lockFlags); err != nil || !held {
		t.Fatalf("second lock in the same process: held %v, %v; want held", held, err)
	}
	if _, same, err := pathNamesLock(fl, p); err != nil || !same {
		t.Fatalf("fresh file: %v %v", same, err)
	}
	other := filepath.Join(dir, "y")
	if err := os.WriteFile(other, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(other, p); err != nil {
		t.Fatal(err)
	}
	if _, same, err := pathNamesLock(fl, p); err != nil || same {
		t.Fatalf("replaced file: %v %v", same, err)
	}
	os.Remove(p)
	if _, same, err := pathNamesLock(fl, p); err != nil || same {
		t.Fatalf("removed file: %v %v", same, err)
	}
}
