package lease

import (
	"errors"
	"os"
	"testing"
	"time"

	"looprig/fsstore/internal/fsutil"
	"looprig/rig/storage"
)

// A watchdog check of a lease whose epoch file has not changed since it
// last named the lease's epoch reads nothing (a host woken by each of its
// neighbours' grants, with dnotify, gathered the garbage of a read and a
// parse for each); one written in place since, with its inode and size
// unchanged, is read all the same.
func TestCheckOfStillEpochFileReadsNothing(t *testing.T) {
	dir := t.TempDir()
	m := NewManager(Options{Watchdog: time.Hour})
	l := mustAcquire(t, m, dir, "sessions/still")
	defer mustRelease(t, l)
	m.Close() // the watchdog stops: the test's checks are the only ones
	time.Sleep(2 * fsutil.ChangeSettle)
	stop := make(chan struct{})
	l.check(stop)
	if allocs := testing.AllocsPerRun(20, func() { l.check(stop) }); allocs > 2 {
		t.Errorf("a check of a still epoch file allocates %v times, want at most 2, the paths of the two stats (a read and parse takes 16)", allocs)
	}
	notLost(t, l)

	_, epochPath := leasePaths(dir, "sessions/still")
	next := formatEpochFile(l.Epoch()+1, l.Holder())
	if len(next) != len(formatEpochFile(l.Epoch(), l.Holder())) {
		t.Fatalf("epochs %d and %d format to different lengths", l.Epoch(), l.Epoch()+1)
	}
	f, err := os.OpenFile(epochPath, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(next); err != nil {
		t.Fatal(err)
	}
	f.Close()
	time.Sleep(2 * fsutil.ChangeSettle) // settled: only its change time tells
	l.check(stop)
	var lost *storage.LeaseLostError
	if err := l.LostCause(); !errors.As(err, &lost) || lost.Reason != storage.LossEpochAdvanced || lost.NewEpoch != l.Epoch()+1 {
		t.Fatalf("after the epoch file was written in place with epoch %d: LostCause = %v, want epoch advanced", l.Epoch()+1, err)
	}
}
