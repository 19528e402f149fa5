package lease

import (
	"context"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"looprig/rig/storage"
)

// probeFiles is what ProbeMany reads of one lease: its epoch file and the
// lstat of its lock file.
type probeFiles struct {
	epoch    uint64
	holder   storage.Holder
	epochErr error
	lock     unix.Stat_t
	lockErr  error
}

// readProbeFiles reads the files of every request, on a few goroutines
// when there are many (each read is a handful of system calls: listing
// 10k sessions probes 10k leases). It stops early once ctx is done, leaving
// the rest unread; ProbeMany checks ctx before it uses them.
func readProbeFiles(ctx context.Context, reqs []ProbeRequest) []probeFiles {
	out := make([]probeFiles, len(reqs))
	inParallel(ctx, len(reqs), func(i int) {
		r := reqs[i]
		f := &out[i]
		f.epoch, f.holder, f.epochErr = readEpochFile(r.Name, r.EpochPath)
		if f.epochErr == nil {
			f.lockErr = unix.Lstat(r.LockPath, &f.lock)
		}
	})
	return out
}

// inParallel calls do(i) for every i in [0, n), on up to 4 goroutines when
// n is large (one per 128 calls), else on this one. Once ctx is done it
// stops early, leaving some i undone: callers check ctx afterwards.
func inParallel(ctx context.Context, n int, do func(i int)) {
	workers := min(4, n/128)
	if workers <= 1 {
		for i := range n {
			do(i)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n || (i%64 == 0 && ctx.Err() != nil) {
					return
				}
				do(i)
			}
		})
	}
	wg.Wait()
}
