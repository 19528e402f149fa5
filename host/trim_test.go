package host

import (
	"fmt"
	"sync"
	"testing"
	"time"
)

// idleLog stands for the process's memory policy: what trimWhenIdle did,
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
				l.add(fmt.Sprintf("limit=%dMiB", n>>20))
			}
			return MemoryLimit
		},
		inUse: func() int64 { return 5 << 20 },
	}
	return func(c *config) { c.idleMemory, c.idleTrimAfter = m, d }
}

// A host sleeps (trims, the collector's clock off, a memory limit 1 MiB
// above what it uses) once per spell with no
// turn and no client, and wakes when a client comes or a turn runs: after
// it starts (a restore's garbage); never while a client is connected or a
// turn runs; again once the client has gone and the turn ended.
func TestIdleMemoryPerSpell(t *testing.T) {
	var l idleLog
	f := start(t, withIdleMemory(50*time.Millisecond, &l))
	eventually(t, "the first sleep, after the host started", func() bool { return l.String() == "trim gc-off limit=6MiB " })

	c := f.dial()
	eventually(t, "the wake when a client came", func() bool { return l.String() == "trim gc-off limit=6MiB limit-back gc-on " })
	ti, err := c.Submit(wctx(t), "sleep 0.3")
	if err != nil {
		t.Fatal(err)
	}
	st, err := c.Subscribe(wctx(t), 0)
	if err != nil {
		t.Fatal(err)
	}
	readUntil(t, st, turnEnd(ti.ID))
	time.Sleep(300 * time.Millisecond) // six delays with the client still there
	if got := l.String(); got != "trim gc-off limit=6MiB limit-back gc-on " {
		t.Fatalf("with a client connected: %q; want no sleep", got)
	}
	c.Close()
	eventually(t, "the sleep once the client left", func() bool { return l.String() == "trim gc-off limit=6MiB limit-back gc-on trim gc-off limit=6MiB " })
	time.Sleep(300 * time.Millisecond)
	if got := l.String(); got != "trim gc-off limit=6MiB limit-back gc-on trim gc-off limit=6MiB " {
		t.Fatalf("one idle spell: %q; want one sleep", got)
	}
}
