package host

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// idleLog stands for the process's memory policy: what betweenTurns did,
// in order.
type idleLog struct {
	mu  sync.Mutex
	ops []string
}

func (l *idleLog) add(op string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ops = append(l.ops, op)
}

func (l *idleLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := ""
	for _, op := range l.ops {
		s += op + " "
	}
	return s
}

// withIdleMemory makes Serve manage a stand-in of the process's memory
// after d of idleness.
func withIdleMemory(d time.Duration, l *idleLog) Option {
	m := &idleMemory{
		trim: func() { l.add("trim") },
		setGC: func(p int) int {
			l.add("gc" + map[bool]string{true: "-off", false: "-on"}[p < 0])
			return 100
		},
		setLimit: func(n int64) int64 {
			if n == MemoryLimit {
				l.add("limit-back")
			} else {
				l.add(fmt.Sprintf("limit=%dKiB", n>>10))
			}
			return MemoryLimit
		},
		held:      func() int64 { return 5 << 20 },
		collected: func(func() bool) {},
	}
	return func(c *config) { c.idleMemory, c.idleTrimAfter = m, d }
}

// A host sleeps (trims, the collector's clock off, a memory limit 256 KiB
// above what it holds) once per spell with no
// turn and no client, and wakes when a client comes or a turn runs: after
// it starts (a restore's garbage); never while a client is connected or a
// turn runs; again once the client has gone and the turn ended.
func TestIdleMemoryPerSpell(t *testing.T) {
	var l idleLog
	f := start(t, withIdleMemory(50*time.Millisecond, &l))
	eventually(t, "the first sleep, after the host started", func() bool { return l.String() == "trim gc-off limit=5376KiB " })

	c := f.dial()
	eventually(t, "the wake when a client came", func() bool { return l.String() == "trim gc-off limit=5376KiB limit-back gc-on " })
	runTurn(t, c, "sleep 0.3")
	time.Sleep(300 * time.Millisecond) // six delays with the client still there
	if got := l.String(); got != "trim gc-off limit=5376KiB limit-back gc-on " {
		t.Fatalf("with a client connected: %q; want no sleep", got)
	}
	c.Close()
	eventually(t, "the sleep once the client left", func() bool {
		return l.String() == "trim gc-off limit=5376KiB limit-back gc-on trim gc-off limit=5376KiB "
	})
	time.Sleep(300 * time.Millisecond)
	if got := l.String(); got != "trim gc-off limit=5376KiB limit-back gc-on trim gc-off limit=5376KiB " {
		t.Fatalf("one idle spell: %q; want one sleep", got)
	}
}

// An asleep host's limit follows what it holds after each collection of
// its spell (a stack grown, a thread added: memory no collection frees),
// and a collection after the spell ended, or in a later spell, changes
// nothing.
func TestIdleMemoryRebasesAfterCollections(t *testing.T) {
	var l idleLog
	held := int64(5 << 20)
	var collected []func() bool // the collection hooks, one per sleep
	m := &idleMemory{
		trim:      func() {},
		setGC:     func(int) int { return 100 },
		setLimit:  func(n int64) int64 { l.add(fmt.Sprintf("limit=%dKiB", n>>10)); return MemoryLimit },
		held:      func() int64 { return held },
		collected: func(fn func() bool) { collected = append(collected, fn) },
	}
	m.sleep()
	held = 6 << 20
	if !collected[0]() {
		t.Fatal("a collection while asleep ended the spell's rebasing")
	}
	held = 6<<20 + 100<<10
	collected[0]()
	m.wake()
	if collected[0]() {
		t.Fatal("a collection after the wake kept rebasing")
	}
	m.sleep()
	if collected[0]() {
		t.Fatal("a collection hook of the first spell rebased in the second")
	}
	want := "limit=5376KiB limit=6400KiB limit=6500KiB limit=114688KiB limit=6500KiB "
	if got := l.String(); got != want {
		t.Fatalf("the limits set: %q, want %q", got, want)
	}
}

// afterEachCollection calls its function after each collection of the
// real runtime until it returns false.
func TestAfterEachCollection(t *testing.T) {
	var calls atomic.Int32
	afterEachCollection(func() bool { return calls.Add(1) < 3 })
	deadline := time.Now().Add(10 * time.Second)
	for calls.Load() < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("called %d times in 10 s of collections, want 3", calls.Load())
		}
		runtime.GC()
		time.Sleep(time.Millisecond)
	}
	for range 5 {
		runtime.GC()
		time.Sleep(time.Millisecond)
	}
	if n := calls.Load(); n != 3 {
		t.Fatalf("called %d times, want 3: it went on after returning false", n)
	}
}

// The work given WithBetweenTurns runs once after each turn, before the
// host sleeps, and not at all before the first turn.
func TestBetweenTurnsOncePerTurn(t *testing.T) {
	var l idleLog
	work := WithBetweenTurns(func(context.Context) { l.add("work") })
	f := start(t, withIdleMemory(50*time.Millisecond, &l), work)
	eventually(t, "the first sleep, after the host started", func() bool { return l.String() == "trim gc-off limit=5376KiB " })

	c := f.dial()
	for i := range 2 {
		runTurn(t, c, "true")
		// Before the next turn: two turns that both end before the host
		// looks are one spell, and one work (TestBetweenTurnsWithClientsComing).
		eventually(t, fmt.Sprintf("the work after turn %d", i+1), func() bool { return strings.Count(l.String(), "work") == i+1 })
	}
	c.Close()
	want := "trim gc-off limit=5376KiB limit-back gc-on work work trim gc-off limit=5376KiB "
	eventually(t, "the sleep after the work", func() bool { return l.String() == want })
	time.Sleep(300 * time.Millisecond)
	if got := l.String(); got != want {
		t.Fatalf("after the spell began: %q; want %q", got, want)
	}
}

// The work's context ends when the next turn begins.
func TestBetweenTurnsStoppedByTurn(t *testing.T) {
	running := make(chan struct{}, 4)
	stopped := make(chan struct{}, 4)
	work := WithBetweenTurns(func(ctx context.Context) {
		running <- struct{}{}
		<-ctx.Done()
		stopped <- struct{}{}
	})
	f := start(t, work)
	c := f.dial()
	runTurn(t, c, "true")
	select {
	case <-running:
	case <-time.After(10 * time.Second):
		t.Fatal("the work did not start after the turn")
	}
	select {
	case <-stopped:
		t.Fatal("the work was stopped with no turn begun")
	case <-time.After(200 * time.Millisecond):
	}
	if _, err := c.Submit(wctx(t), "true"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("the work went on after the next turn began")
	}
}

// A turn that began and ended before the work's goroutine first ran is
// still one to work after. (It was not: the goroutine took the spell after
// that turn for its first, and CI's race pass once waited 10 s for the
// work of TestBetweenTurnsStoppedByTurn.)
func TestBetweenTurnsAfterAnEarlyTurn(t *testing.T) {
	release := make(chan struct{})
	var once sync.Once
	hold := func() { <-release }
	betweenTurnsHook.Store(&hold)
	t.Cleanup(func() { betweenTurnsHook.Store(nil) })
	ran := make(chan struct{}, 4)
	f := start(t, WithBetweenTurns(func(context.Context) { ran <- struct{}{} }))
	t.Cleanup(func() { once.Do(func() { close(release) }) }) // before start's: Serve waits for the goroutine
	c := f.dial()
	runTurn(t, c, "true")
	once.Do(func() { close(release) })
	select {
	case <-ran:
	case <-time.After(10 * time.Second):
		t.Fatal("no work after a turn that ended before the host first looked")
	}
}

// Clients that come and go as turns begin do not hide a turn from the
// work: each of these turns begins as its client's coming is told. Each
// turn waits for the work of the one before: two turns that both end
// before the host looks are one spell between turns, and one work (the
// promise of WithBetweenTurns), which is not what this test is about.
func TestBetweenTurnsWithClientsComing(t *testing.T) {
	var works atomic.Int32
	f := start(t, WithBetweenTurns(func(context.Context) { works.Add(1) }))
	const turns = 30
	for i := range turns {
		c := f.dial()
		runTurn(t, c, "true")
		c.Close()
		eventually(t, fmt.Sprintf("the work after turn %d", i+1), func() bool { return works.Load() >= int32(i+1) })
		if n := works.Load(); n != int32(i+1) {
			t.Fatalf("the work ran %d times after %d turns", n, i+1)
		}
	}
	time.Sleep(50 * time.Millisecond)
	if n := works.Load(); n != turns {
		t.Fatalf("the work ran %d times after %d turns", n, turns)
	}
}

// runTurn runs input as a turn through c and waits for its end.
func runTurn(t *testing.T, c *Client, input string) {
	t.Helper()
	ti, err := c.Submit(wctx(t), input)
	if err != nil {
		t.Fatal(err)
	}
	st, err := c.Subscribe(wctx(t), 0)
	if err != nil {
		t.Fatal(err)
	}
	readUntil(t, st, turnEnd(ti.ID))
}
