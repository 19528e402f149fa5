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
	read := func(i int) {
		r := reqs[i]
		f := &out[i]
		f.epoch, f.holder, f.epochErr = readEpochFile(r.Name, r.EpochPath)
		if f.epochErr == nil {
			f.lockErr = unix.Lstat(r.LockPath, &f.lock)
		}
	}
	workers := min(4, len(reqs)/128)
	if workers <= 1 {
		for i := range reqs {
			read(i)
		}
		return out
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(reqs) || (i%64 == 0 && ctx.Err() != nil) {
					return
				}
				read(i)
			}
		})
	}
	wg.Wait()
	return out
}
