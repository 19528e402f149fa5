package benchmarks

import (
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"
	"golang.org/x/sys/unix"

	"looprig/rig/storage"
)

// BenchmarkLease: fsstore Acquire+Release of a session lease (flock, inode
// checks, directory guard, epoch read, durable epoch write: temp file,
// fsync, rename, directory fsync; then unlock) against the raw floor: open
// and flock a lock file, write a small epoch file and fsync it, unlock,
// close. Target (docs/ARCHITECTURE.md, "Performance figures"): ≤ 3 × the
// raw floor.
//
// Metrics: ours-us, base-us (per acquire+release), x-raw (ours/base).
func BenchmarkLease(b *testing.B) {
	rounds, perRound := pick(8, 12), pick(60, 150)
	for range b.N {
		settle()
		dir := b.TempDir()
		st := openStore(b, filepath.Join(dir, "store"))
		defer st.Close()
		name := storage.SessionName(uuid.NewString())
		rawDir := filepath.Join(dir, "store", "leases", "raw")
		if err := unix.Mkdir(rawDir, 0o700); err != nil {
			b.Fatal(err)
		}
		lockPath, epochPath := filepath.Join(rawDir, "x.lock"), filepath.Join(rawDir, "x.epoch")
		payload, _ := json.Marshal(map[string]any{"epoch": 1, "pid": 1234, "host": "devbox", "acquired": time.Now().UTC()})
		var ours, base side
		// One grant of each side in turn (the order swapped every time), so
		// a burst of someone else's I/O hits both alike.
		interleave(rounds*perRound, func() {
			t0 := time.Now()
			l, err := st.Acquire(bg, name)
			if err != nil {
				b.Fatal(err)
			}
			if err := l.Release(bg); err != nil {
				b.Fatal(err)
			}
			ours.add(1, time.Since(t0))
		}, func() {
			t0 := time.Now()
			lfd, err := unix.Open(lockPath, unix.O_RDWR|unix.O_CREAT|unix.O_CLOEXEC, 0o600)
			if err != nil {
				b.Fatal(err)
			}
			if err := unix.Flock(lfd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
				b.Fatal(err)
			}
			dfd, err := unix.Open(epochPath, unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC|unix.O_CLOEXEC, 0o600)
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
			base.add(1, time.Since(t0))
		})
		b.ReportMetric(ours.perOp(), "ours-us")
		b.ReportMetric(base.perOp(), "base-us")
		b.ReportMetric(ours.perOp()/base.perOp(), "x-raw")
	}
}
