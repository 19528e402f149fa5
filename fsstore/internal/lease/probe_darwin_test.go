package lease

// Tests of the probing through F_GETLK (probe_darwin.go). Compiled for
// Darwin in CI; they run only on a Mac.

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// F_GETLK sees a flock taken through another open file description of
// this very process, and the probe leaves no lock behind.
func TestLockFileHeldSeesFlock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if held, err := lockFileHeld(path); err != nil || held {
		t.Fatalf("unlocked file: held=%v err=%v", held, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	if held, err := lockFileHeld(path); err != nil || !held {
		t.Fatalf("flocked file: held=%v err=%v", held, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_UN); err != nil {
		t.Fatal(err)
	}
	if held, err := lockFileHeld(path); err != nil || held {
		t.Fatalf("unlocked again: held=%v err=%v", held, err)
	}
	// Probing took nothing: another description locks at once.
	g, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if err := unix.Flock(int(g.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		t.Fatalf("flock after probes: %v", err)
	}
}

func TestLockFileHeldOddPaths(t *testing.T) {
	dir := t.TempDir()
	if held, err := lockFileHeld(filepath.Join(dir, "missing")); err != nil || held {
		t.Fatalf("missing: held=%v err=%v", held, err)
	}
	if err := os.Symlink("elsewhere", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if held, err := lockFileHeld(filepath.Join(dir, "link")); err != nil || held {
		t.Fatalf("symlink: held=%v err=%v", held, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "link")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("probing a dangling link created its target: %v", err)
	}
}

func TestLockTableStampUnsupported(t *testing.T) {
	m := testManager(t, 0, "")
	if _, err := m.LockTableStamp(); !errors.Is(err, ErrProbeUnsupported) {
		t.Fatalf("LockTableStamp: %v, want ErrProbeUnsupported", err)
	}
}
