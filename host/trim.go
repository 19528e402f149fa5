package host

import (
	"context"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"time"
)

// Between turns and clients a host costs nothing it can give back. Two
// things of the Go runtime cost an idle process: it keeps the pages a
// collection freed up to its heap goal (at least 4 MiB), so a host whose
// turn printed a few megabytes or whose restore read a long journal stayed
// 4–6 MB resident; and it collects every two minutes whatever the heap
// did, about a millisecond of CPU each time, which was most of what a
// thousand idle hosts cost together (about 1 % of a core). So once the
// session has had no turn and no client for idleTrimAfter, the host
// collects and returns the free pages (debug.FreeOSMemory), and switches
// the collector's clock off (GOGC off), collecting by memory instead: the
// soft memory limit is set sleepHeadroom above what it holds, again after
// each collection. A client admitted or a turn begun puts both back at
// once.
//
// It is the process's policy, so only a process that serves this one
// session asks for it (WithOwnProcess: `looprig host`); tests replace the
// calls (withIdleMemory).

// idleTrimAfter is how long a session has no turn and no client before its
// host sleeps.
const idleTrimAfter = 2 * time.Second

// idleMemory switches a process between its idle and its working memory
// policy.
type idleMemory struct {
	trim      func()               // return free pages: debug.FreeOSMemory
	setGC     func(int) int        // debug.SetGCPercent
	setLimit  func(int64) int64    // debug.SetMemoryLimit
	held      func() int64         // the memory the limit counts that a collection cannot free, now
	collected func(fn func() bool) // call fn after each collection until it returns false
	mu        sync.Mutex
	asleep    bool
	spell     uint64 // counts the sleeps: a collection of an earlier spell is not this one's
	gc        int    // the percent before sleep
	limit     int64  // the limit before sleep
}

func newIdleMemory() *idleMemory {
	return &idleMemory{trim: debug.FreeOSMemory, setGC: debug.SetGCPercent,
		setLimit: debug.SetMemoryLimit, held: goMemoryHeld, collected: afterEachCollection}
}

// sleepHeadroom is the garbage an asleep host may gather before it
// collects. A host asleep still wakes now and then (its lease watchdog,
// its neighbours' grants where it has only dnotify), and each wake leaves
// a little garbage, a few hundred bytes: with the collector off and no
// lower limit, a thousand hosts that woke at each other's start kept 6 MB
// each, and with a limit 1 MiB above what each held once asleep, the
// hosts woken most kept 3.3 MB against 2.4 for those woken least.
//
// After each collection while asleep the limit is set again above what
// the process then holds (rebase): what grew that no collection frees (a
// goroutine's stack, a thread the runtime added) moves the limit with it,
// so a limit this close never makes the collector run again and again.
const sleepHeadroom = 256 << 10

// sleep trims and switches the collector's clock off, once per spell; it
// then collects when what it uses has grown by sleepHeadroom (a soft
// memory limit just above it), not by the clock.
func (m *idleMemory) sleep() {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.asleep {
		return
	}
	m.trim()
	m.gc = m.setGC(-1)
	m.limit = m.setLimit(m.held() + sleepHeadroom)
	m.asleep = true
	m.spell++
	spell := m.spell
	m.collected(func() bool { return m.rebase(spell) })
}

// rebase sets the limit sleepHeadroom above what the process holds after
// a collection of spell; false once that spell ended.
func (m *idleMemory) rebase(spell uint64) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.asleep || m.spell != spell {
		return false
	}
	m.setLimit(m.held() + sleepHeadroom)
	return true
}

// wake puts the collector and the limit back as they were.
func (m *idleMemory) wake() {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.asleep {
		m.setLimit(m.limit)
		m.setGC(m.gc)
		m.asleep = false
	}
}

// goMemoryHeld is the part of the memory the Go runtime's soft limit
// counts (all it mapped less what it returned to the system) that a
// collection does not free: less the heap's free pages, which the runtime
// returns to the system to stay under a limit.
func goMemoryHeld() int64 {
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"},
		{Name: "/memory/classes/heap/free:bytes"}}
	metrics.Read(s)
	for _, v := range s {
		if v.Value.Kind() != metrics.KindUint64 {
			return MemoryLimit // unknown here: the limit a working host has
		}
	}
	return int64(s[0].Value.Uint64() - s[1].Value.Uint64() - s[2].Value.Uint64())
}

// afterEachCollection calls fn after each collection of the garbage, from
// the runtime's cleanup goroutine, until fn returns false: a sentinel
// unreachable from the start is freed by the next collection, whose
// cleanup calls fn and, unless it returned false, leaves another.
func afterEachCollection(fn func() bool) {
	s := new(collectionSentinel)
	runtime.AddCleanup(s, func(fn func() bool) {
		if fn() {
			afterEachCollection(fn)
		}
	}, fn)
}

// collectionSentinel holds a pointer so that it is not one of the tiny
// objects the runtime packs together (whose cleanups may never run).
type collectionSentinel struct{ _ *byte }

// betweenTurns does the host's work between turns until ctx ends
// (Serve's end): after each turn, the work given WithBetweenTurns; then,
// once a spell of no turn and no client has lasted the trim delay, it
// puts the process to sleep (idleMemory), and wakes it when the spell
// ends. seen is the session's busy channel when Serve began.
func (srv *server) betweenTurns(ctx context.Context, seen <-chan struct{}) {
	defer srv.wg.Done()
	defer srv.idle.wake()
	if h := betweenTurnsHook.Load(); h != nil {
		(*h)()
	}
	after := srv.cfg.idleTrimAfter
	if after <= 0 {
		after = idleTrimAfter
	}
	// seen is the busy channel of the last spell between turns: closed,
	// a turn began since. (A select with several ready cases picks one at
	// random, so whether a turn began is asked of the channel itself.) It
	// starts as Serve's: a client's first turn may have begun and ended
	// before this goroutine first ran, and is still a turn to work after.
	for {
		if srv.s.WaitIdle(ctx) != nil {
			return // ctx ended, or the session takes no more turns: Serve is ending
		}
		busy := srv.s.Busy()
		if closed(busy) {
			continue // a turn began since WaitIdle returned: this is not between turns yet
		}
		if closed(seen) && srv.cfg.betweenTurns != nil {
			srv.afterTurn(ctx, busy)
		}
		seen = busy
		if srv.clients() > 0 {
			select { // a turn is the clients' to begin; their leaving is told
			case <-srv.connsChanged:
			case <-busy:
			case <-ctx.Done():
				return
			}
			continue
		}
		t := time.NewTimer(after)
		select {
		case <-t.C:
			if srv.clients() > 0 {
				continue
			}
			srv.idle.sleep()
			select { // the spell ends with a turn or a client (admit wakes at once)
			case <-busy:
			case <-srv.connsChanged:
			case <-ctx.Done():
				return
			}
			srv.idle.wake()
		case <-busy:
			t.Stop()
		case <-srv.connsChanged:
			t.Stop()
		case <-ctx.Done():
			t.Stop()
			return
		}
	}
}

// betweenTurnsHook, when set, runs as betweenTurns begins. Tests hold it
// back with it, as a busy machine's scheduler may.
var betweenTurnsHook atomic.Pointer[func()]

// closed reports whether ch is closed (false for nil).
func closed(ch <-chan struct{}) bool {
	if ch == nil {
		return false
	}
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// afterTurn runs the work given WithBetweenTurns, with a context that
// ends when busy is closed (a turn began), ctx ends, or the session is
// being shut down (betweenWork.stop).
func (srv *server) afterTurn(ctx context.Context, busy <-chan struct{}) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if !srv.work.begin(cancel) {
		return // the session is being shut down
	}
	defer srv.work.end()
	go func() { // ends with ctx, at the latest when afterTurn returns
		select {
		case <-busy:
			cancel()
		case <-ctx.Done():
		}
	}()
	srv.cfg.betweenTurns(ctx)
}

// betweenWork is the work between turns while it runs, so that a
// shutdown stops it first: nothing the host started (an indexing process)
// outlives the session's shutdown, whose caller may remove the store.
type betweenWork struct {
	mu      sync.Mutex
	cancel  context.CancelFunc // nil when no work runs
	done    chan struct{}      // closed when the running work returns
	stopped bool               // no more work: the session is being shut down
}

// begin registers work that runs until end; false once stop was called.
func (w *betweenWork) begin(cancel context.CancelFunc) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped {
		return false
	}
	w.cancel, w.done = cancel, make(chan struct{})
	return true
}

func (w *betweenWork) end() {
	w.mu.Lock()
	defer w.mu.Unlock()
	close(w.done)
	w.cancel, w.done = nil, nil
}

// stop stops the running work, waits for it to return, and refuses more.
func (w *betweenWork) stop() {
	w.mu.Lock()
	w.stopped = true
	cancel, done := w.cancel, w.done
	w.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

// clients is the number of connections being served.
func (srv *server) clients() int {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	return len(srv.conns)
}

// connsChange tells betweenTurns that a connection came or went.
func (srv *server) connsChange() {
	select {
	case srv.connsChanged <- struct{}{}:
	default:
	}
}
