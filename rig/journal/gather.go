package journal

import (
	"runtime"
	"time"
)

// Group-commit gathering.
//
// A leader that flushed whatever was queued the moment it took over would,
// with N writers each waiting for its own record, alternate between two
// half batches: the writers acknowledged by one flush re-queue a few
// microseconds after the next flush has already left with the others. So
// when the last flush carried more than one record and ended moments ago,
// the next leader first lets those writers run — yielding the processor,
// for at most half as long as the last flush took (within [gatherMin,
// gatherMax]: waiting W for a batch to fill pays off when the flush, which
// costs about the same for one record or many, takes 2W or more), and only
// until all but one in eight of them are queued again besides the records
// already waiting (the last one to wake up would cost the others more than
// it adds). A lone writer never waits: its flushes carry one record.
//
// The leader yields (runtime.Gosched) rather than sleeping: the writers it
// waits for are runnable already, and a sleeping leader would add its own
// wake-up, which on a virtual machine costs about as much as the wait.

const (
	// gatherMin and gatherMax bound the wait.
	gatherMin = 50 * time.Microsecond
	gatherMax = time.Millisecond
	// gatherWindow: a leader waits only if the last flush ended this
	// recently (its writers are still appending).
	gatherWindow = 2 * time.Millisecond
)

// gather waits for the writers of the last flush to re-queue. It is called
// by lead with j.mu held and returns with it held.
func (j *SessionJournal) gather() {
	if j.lastBatch <= 1 || time.Since(j.lastEnd) > gatherWindow {
		return
	}
	// A promoted leader queued during the last flush, so none of the
	// records waiting is from it; a leader that found no flush in flight
	// is itself one of its writers, back first.
	want := j.lastBatch
	if len(j.queue) > 0 && j.queue[0].state == stPromoted {
		want += len(j.queue)
	}
	want = min(want-want/8, maxBatch)
	if len(j.queue) >= want {
		return
	}
	deadline := time.Now().Add(min(max(j.lastFlush/2, gatherMin), gatherMax))
	// Watch the arrivals without the lock, which the writers need.
	target := j.arrivals.Load() + uint64(want-len(j.queue))
	j.mu.Unlock()
	for j.arrivals.Load() < target && time.Now().Before(deadline) {
		runtime.Gosched()
	}
	j.mu.Lock()
}
