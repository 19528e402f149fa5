package rig

import (
	"context"
	"strings"
	"sync"

	"looprig/rig/storage"
)

// ListOption changes what ListSessions does.
type ListOption func(*listConfig)

type listConfig struct {
	serving func(ctx context.Context, id string, holder storage.Holder) bool
}

// WithServing lists as live a held session that serving says a process on
// this machine serves (the command line asks the session's socket for its
// peer's pid, host.ServingPID, and compares it with the holder's): it can
// be attached to, as a session this process holds can. serving is asked
// only of sessions whose holder names this machine, concurrently. A store
// that takes a vouch (storage.WithVouch; fsstore) then need not ask its
// lock table about those sessions at all.
func WithServing(serving func(ctx context.Context, id string, holder storage.Holder) bool) ListOption {
	return func(c *listConfig) { c.serving = serving }
}

// servedSet is what serving said of the sessions of one listing: asked
// first as the store's vouch, then, for held sessions the store did not
// ask about (a store that takes no vouch), by askRest.
type servedSet struct {
	serving func(ctx context.Context, id string, holder storage.Holder) bool
	host    string
	pid     int // this process's, whose own sessions are live without asking

	mu     sync.Mutex
	asked  map[string]bool // lease name: what serving said
	served map[string]bool
}

func newServedSet(serving func(context.Context, string, storage.Holder) bool, host string, pid int) *servedSet {
	return &servedSet{serving: serving, host: host, pid: pid, asked: map[string]bool{}, served: map[string]bool{}}
}

// vouch is the store's vouch: whether the holder of lease name serves it.
func (s *servedSet) vouch(ctx context.Context, name string, h storage.Holder) bool {
	if s.serving == nil || h.PID <= 0 || h.PID == s.pid || h.Host != s.host {
		return false
	}
	id, ok := strings.CutPrefix(name, sessionsPrefix)
	if !ok {
		return false
	}
	yes := s.serving(ctx, id, h)
	s.mu.Lock()
	s.asked[name] = true
	s.served[name] = yes
	s.mu.Unlock()
	return yes
}

// servingWorkers bounds how many sessions askRest asks about at once.
const servingWorkers = 16

// askRest asks serving about each held lease of probes the store did not
// ask it about.
func (s *servedSet) askRest(ctx context.Context, probes []storage.LeaseStatus) {
	if s.serving == nil {
		return
	}
	var rest []storage.LeaseStatus
	s.mu.Lock()
	for _, p := range probes {
		if p.Held && !s.asked[p.Name] {
			rest = append(rest, p)
		}
	}
	s.mu.Unlock()
	next := make(chan storage.LeaseStatus)
	var wg sync.WaitGroup
	for range min(servingWorkers, len(rest)) {
		wg.Go(func() {
			for p := range next {
				s.vouch(ctx, p.Name, p.Holder)
			}
		})
	}
	for _, p := range rest {
		next <- p
	}
	close(next)
	wg.Wait()
}

// has reports whether serving said lease name's holder serves it.
func (s *servedSet) has(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.served[name]
}
