package rigtest

import (
	"slices"
	"sync"
	"testing"
	"time"

	"looprig/rig/event"
	"looprig/rig/hub"
)

// collector drains a subscription into memory, so a slow test never makes
// the hub close it, and lets the test wait for events.
type collector struct {
	mu     sync.Mutex
	envs   []event.Envelope
	change chan struct{} // closed and replaced on every change
	closed bool
	err    error
}

// collect starts draining sub. hook, when not nil, runs in the draining
// goroutine on every envelope, before it is recorded.
func collect(t testing.TB, sub *hub.Subscription, hook func(event.Envelope)) *collector {
	c := &collector{change: make(chan struct{})}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for env := range sub.C() {
			if hook != nil {
				hook(env)
			}
			c.mu.Lock()
			c.envs = append(c.envs, env)
			close(c.change)
			c.change = make(chan struct{})
			c.mu.Unlock()
		}
		c.mu.Lock()
		c.closed, c.err = true, sub.Err()
		close(c.change)
		c.change = make(chan struct{})
		c.mu.Unlock()
	}()
	t.Cleanup(func() { sub.Close(); <-done })
	return c
}

func (c *collector) snapshot() []event.Envelope {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.envs)
}

// wait returns the first envelope satisfying pred, waiting for it.
func (c *collector) wait(t testing.TB, what string, pred func(event.Envelope) bool) event.Envelope {
	t.Helper()
	timeout := time.After(WaitTimeout)
	for {
		c.mu.Lock()
		for _, env := range c.envs {
			if pred(env) {
				c.mu.Unlock()
				return env
			}
		}
		closed, err, ch := c.closed, c.err, c.change
		c.mu.Unlock()
		if closed {
			t.Fatalf("subscription ended (err %v) before %s", err, what)
		}
		select {
		case <-ch:
		case <-timeout:
			t.Fatalf("timed out waiting for %s on the subscription", what)
		}
	}
}

func isType[E event.Event](env event.Envelope) bool {
	_, ok := env.Event.(E)
	return ok
}
