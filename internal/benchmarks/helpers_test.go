package benchmarks

import (
	"context"
	"runtime"
	"runtime/metrics"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"looprig/fsstore"
)

// quick reports whether the quick schedule was asked for (go test -short).
func quick() bool { return testing.Short() }

// pick returns q in quick mode and f otherwise.
func pick[T any](q, f T) T {
	if quick() {
		return q
	}
	return f
}

// openStore opens (creating) an fsstore in dir.
func openStore(tb testing.TB, dir string) *fsstore.Store {
	tb.Helper()
	st, err := fsstore.Open(dir)
	if err != nil {
		tb.Fatalf("fsstore.Open(%s): %v", dir, err)
	}
	return st
}

// side accumulates the timings of one side of a comparison.
type side struct {
	ops  int
	busy time.Duration
	lat  []time.Duration // per-operation latencies, when recorded
}

func (s *side) add(ops int, d time.Duration) {
	s.ops += ops
	s.busy += d
}

// perOp is the mean time of one operation, in microseconds.
func (s *side) perOp() float64 {
	if s.ops == 0 {
		return 0
	}
	return float64(s.busy.Nanoseconds()) / float64(s.ops) / 1e3
}

// rate is operations per second.
func (s *side) rate() float64 {
	if s.busy <= 0 {
		return 0
	}
	return float64(s.ops) / s.busy.Seconds()
}

// pct returns the q-quantile of the recorded latencies in microseconds.
func (s *side) pct(q float64) float64 {
	if len(s.lat) == 0 {
		return 0
	}
	l := slices.Clone(s.lat)
	slices.Sort(l)
	return float64(l[min(len(l)-1, int(q*float64(len(l))))].Nanoseconds()) / 1e3
}

// interleave runs rounds rounds of every fn in turn, rotating which goes
// first each round, so slow phases of a shared machine hit every side.
func interleave(rounds int, fns ...func()) {
	for r := range rounds {
		for i := range fns {
			fns[(r+i)%len(fns)]()
		}
	}
}

// heapSampler tracks, while it runs, the peak of the heap's objects (live
// and dead ones the collector has not freed yet: what the process's memory
// follows) and the peak of the live heap as the collector last measured it
// (/gc/heap/live), each above where it started.
type heapSampler struct {
	stop           chan struct{}
	done           chan struct{}
	base, baseLive uint64
	peak, peakLive atomic.Uint64
}

var heapSamples = []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/gc/heap/live:bytes"}}
var heapSampleMu sync.Mutex

func heapNow() (objects, live uint64) {
	heapSampleMu.Lock()
	defer heapSampleMu.Unlock()
	metrics.Read(heapSamples)
	return heapSamples[0].Value.Uint64(), heapSamples[1].Value.Uint64()
}

func (h *heapSampler) sample() {
	o, l := heapNow()
	if o > h.peak.Load() {
		h.peak.Store(o)
	}
	if l > h.peakLive.Load() {
		h.peakLive.Store(l)
	}
}

// startHeap collects garbage, notes the heap, and samples it every
// millisecond until Stop.
func startHeap() *heapSampler {
	runtime.GC()
	h := &heapSampler{stop: make(chan struct{}), done: make(chan struct{})}
	h.base, h.baseLive = heapNow()
	h.peak.Store(h.base)
	h.peakLive.Store(h.baseLive)
	go func() {
		defer close(h.done)
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-h.stop:
				return
			case <-t.C:
				h.sample()
			}
		}
	}()
	return h
}

// Stop ends sampling and returns the peaks above the starting point, in
// bytes: of the heap's objects, and of the live heap.
func (h *heapSampler) Stop() (objects, live uint64) {
	h.sample()
	close(h.stop)
	<-h.done
	p, pl := h.peak.Load(), h.peakLive.Load()
	return p - min(h.base, p), pl - min(h.baseLive, pl)
}

// allocBytes returns the bytes allocated so far by the process.
func allocBytes() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.TotalAlloc
}

var bg = context.Background()

// settle writes back every dirty page of the machine (sync(2)) before an
// fsync-bound benchmark, so it does not pay for the writeback of whatever
// ran before it.
func settle() { unix.Sync() }
