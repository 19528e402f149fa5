package lease

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"looprig/rig/storage"
)

// BenchmarkAcquireRelease is one full grant and release of a name: open,
// flock, inode checks, directory guard, epoch read, durable epoch write
// (temp, fsync, rename, directory fsync), unlock, close.
func BenchmarkAcquireRelease(b *testing.B) {
	dir := b.TempDir()
	m := NewManager(Options{})
	defer m.Close()
	lockPath, epochPath := leasePaths(dir, "sessions/bench")
	ctx := context.Background()
	for b.Loop() {
		l, err := m.Acquire(ctx, "sessions/bench", lockPath, epochPath)
		if err != nil {
			b.Fatal(err)
		}
		if err := l.Release(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRawFlockEpochWrite is the floor Acquire+Release is compared
// with: open+flock a lock file, write a small file and fsync it, unlock,
// close. No rename, no directory fsync, no checks.
func BenchmarkRawFlockEpochWrite(b *testing.B) {
	dir := b.TempDir()
	lockPath := filepath.Join(dir, "raw.lock")
	dataPath := filepath.Join(dir, "raw.epoch")
	payload := formatEpochFile(1, storage.Holder{PID: 1, Host: "h", Acquired: time.Now()})
	for b.Loop() {
		lfd, err := unix.Open(lockPath, unix.O_RDWR|unix.O_CREAT|unix.O_CLOEXEC, 0o600)
		if err != nil {
			b.Fatal(err)
		}
		if err := unix.Flock(lfd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
			b.Fatal(err)
		}
		dfd, err := unix.Open(dataPath, unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC|unix.O_CLOEXEC, 0o600)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := unix.Write(dfd, payload); err != nil {
			b.Fatal(err)
		}
		if err := unix.Fsync(dfd); err != nil {
			b.Fatal(err)
		}
		unix.Close(dfd)
		unix.Flock(lfd, unix.LOCK_UN)
		unix.Close(lfd)
	}
}

// BenchmarkProbe probes one held name (epoch file read, lstat, one read of
// /proc/locks).
func BenchmarkProbe(b *testing.B) {
	dir := b.TempDir()
	m := NewManager(Options{})
	defer m.Close()
	lockPath, epochPath := leasePaths(dir, "sessions/bench")
	ctx := context.Background()
	l, err := m.Acquire(ctx, "sessions/bench", lockPath, epochPath)
	if err != nil {
		b.Fatal(err)
	}
	defer l.Release(ctx)
	for b.Loop() {
		st, err := m.Probe(ctx, "sessions/bench", lockPath, epochPath)
		if err != nil || !st.Held {
			b.Fatal(st, err)
		}
	}
}

// BenchmarkProbeMany1000 probes 1000 names (every other one held) in one
// call; reported per call.
func BenchmarkProbeMany1000(b *testing.B) {
	dir := b.TempDir()
	m := NewManager(Options{})
	defer m.Close()
	ctx := context.Background()
	var reqs []ProbeRequest
	for i := 0; i < 1000; i++ {
		name := fmt.Sprintf("sessions/s%04d", i)
		lockPath, epochPath := leasePaths(dir, name)
		l, err := m.Acquire(ctx, name, lockPath, epochPath)
		if err != nil {
			b.Fatal(err)
		}
		if i%2 == 0 {
			defer l.Release(ctx)
		} else {
			l.Release(ctx)
		}
		reqs = append(reqs, ProbeRequest{Name: name, LockPath: lockPath, EpochPath: epochPath})
	}
	for b.Loop() {
		if _, err := m.ProbeMany(ctx, reqs, nil); err != nil {
			b.Fatal(err)
		}
	}
}
