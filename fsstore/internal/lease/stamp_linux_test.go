package lease

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestStampProcLocks(t *testing.T) {
	const (
		a       = "1: FLOCK  ADVISORY  WRITE 2306 fd:00:100 0 EOF\n"
		b       = "2: FLOCK  ADVISORY  WRITE 2310 fd:00:200 0 EOF\n"
		waiter  = "3: -> FLOCK  ADVISORY  WRITE 2311 fd:00:200 0 EOF\n"
		posix   = "4: POSIX  ADVISORY  WRITE 2312 fd:00:100 0 EOF\n"
		foreign = "5: FLOCK  ADVISORY  WRITE 999 fd:00:300 0 EOF\n"
	)
	stamp := func(table string, watched map[uint64]struct{}) uint64 {
		t.Helper()
		s, err := stampProcLocks(strings.NewReader(table), watched)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	all := map[uint64]struct{}{100: {}, 200: {}}
	base := stamp(a+b, all)
	if got := stamp(b+a, all); got != base {
		t.Errorf("the order of the table moved the stamp")
	}
	if got := stamp(a+b+waiter+posix+foreign, all); got != base {
		t.Errorf("a waiter, a POSIX lock or a lock on an unwatched file moved the stamp")
	}
	if got := stamp(a, all); got == base {
		t.Errorf("a dropped lock did not move the stamp")
	}
	if got := stamp(a+strings.Replace(b, "2310", "2400", 1), all); got == base {
		t.Errorf("a lock taken by another process did not move the stamp")
	}
	if stamp(a+b, nil) == stamp(a+b+foreign, nil) {
		t.Errorf("with nothing to watch yet, every lock counts")
	}
	if stamp("", map[uint64]struct{}{}) != stamp(foreign, map[uint64]struct{}{}) {
		t.Errorf("watching no file, a foreign lock moved the stamp")
	}
}

// TestLockTableStampWhileProbesAddInodes reads the lock table while probes
// add the lock files they saw: the set LockTableStamp reads is never the
// one being written (go test -race found a TUI listing crash here).
func TestLockTableStampWhileProbesAddInodes(t *testing.T) {
	// A lock in the table, so that its entries are looked up in the set.
	f, err := os.Create(filepath.Join(t.TempDir(), "lock"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	m := NewManager(Options{})
	m.WatchLockFiles(map[uint64]struct{}{1: {}})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := uint64(2); i < 2000; i++ {
			m.WatchLockFiles(map[uint64]struct{}{i: {}})
		}
	}()
	for {
		select {
		case <-done:
			return
		default:
		}
		if _, err := m.LockTableStamp(); err != nil {
			t.Fatal(err)
		}
	}
}

// A read of the lock table torn by other processes' locking (an entry
// read twice or skipped, as the kernel pages the table by position) does
// not move the stamp: it is of the entries of two reads together, each
// counted once. A lock dropped for good does move it.
func TestLockTableStampTornRead(t *testing.T) {
	const (
		a = "1: FLOCK  ADVISORY  WRITE 2306 fd:00:100 0 EOF\n"
		b = "2: FLOCK  ADVISORY  WRITE 2310 fd:00:200 0 EOF\n"
	)
	path := filepath.Join(t.TempDir(), "locks")
	orig := procLocksPath
	procLocksPath = path
	t.Cleanup(func() { procLocksPath, readProcLocksHook = orig, nil })
	var tables []string
	readProcLocksHook = func() {
		next := tables[0]
		if len(tables) > 1 {
			tables = tables[1:]
		}
		if err := os.WriteFile(path, []byte(next), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	m := NewManager(Options{})
	defer m.Close()
	stamp := func(reads ...string) uint64 {
		t.Helper()
		tables = reads
		s, err := m.LockTableStamp()
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	steady := stamp(a + b)
	if got := stamp(a+b+b, a+b); got != steady {
		t.Errorf("an entry read twice moved the stamp")
	}
	if got := stamp(a, a+b); got != steady {
		t.Errorf("an entry skipped by one read moved the stamp")
	}
	if got := stamp(b, a+b); got != steady {
		t.Errorf("an entry skipped by the other read moved the stamp")
	}
	if got := stamp(a); got == steady {
		t.Errorf("a lock dropped for good did not move the stamp")
	}
}
