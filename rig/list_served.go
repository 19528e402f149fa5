package rig

import (
	"context"
	"strconv"
	"strings"
	"sync"

	"looprig/rig/storage"
)

// ListOption changes what ListSessions does.
type ListOption func(*listConfig)

type listConfig struct {
	liveness func(ctx context.Context, id string, holder storage.Holder) Liveness
}

func listConfigOf(opts []ListOption) listConfig {
	var cfg listConfig
	for _, o := range opts {
		o(&cfg)
	}
	return cfg
}

// Liveness is what a presenter on the holder's machine can tell of a held
// session's holder without asking the store (host.HolderLiveness).
type Liveness int

const (
	// LivenessUnknown: nothing is known; the store decides whether the
	// session is held.
	LivenessUnknown Liveness = iota
	// LivenessServing: the holder runs and serves the session's socket:
	// the session is live (attachable).
	LivenessServing
	// LivenessStopped: the holder runs but is stopped (SIGSTOP, a
	// debugger): it holds the lease and answers nobody. Listed held, with
	// NotAnsweringReason.
	LivenessStopped
	// LivenessGone: the holder's process is gone (no such process, or its
	// pid now another process's): its lease's lock went with it, and a store that takes a vouch lists the session free
	// without asking its lock table (storage.VouchGone, which says what a
	// grant in progress then looks like).
	LivenessGone
)

// NotAnsweringReason is the Reason of a held session whose holder on this
// machine is stopped.
func NotAnsweringReason(pid int) string {
	return "not answering: its holder, pid " + strconv.Itoa(pid) + ", is stopped (kill -CONT " + strconv.Itoa(pid) + " resumes it)"
}

// WithServing lists as live a held session that serving says a process on
// this machine serves: WithLiveness with serving's yes as LivenessServing.
func WithServing(serving func(ctx context.Context, id string, holder storage.Holder) bool) ListOption {
	if serving == nil {
		return func(*listConfig) {}
	}
	return WithLiveness(func(ctx context.Context, id string, h storage.Holder) Liveness {
		if serving(ctx, id, h) {
			return LivenessServing
		}
		return LivenessUnknown
	})
}

// WithLiveness lists as live a held session whose holder liveness says
// serves it (host.HolderLiveness: on Linux from /proc and the socket
// directory, without a connection to any host): it can be attached to,
// as a session this process holds can; and a held session whose holder
// liveness says is stopped with NotAnsweringReason. liveness is asked
// only of sessions whose holder names this machine, concurrently. A store
// that takes a vouch (storage.WithVouch; fsstore) then need not ask its
// lock table about the served sessions at all.
func WithLiveness(liveness func(ctx context.Context, id string, holder storage.Holder) Liveness) ListOption {
	return func(c *listConfig) { c.liveness = liveness }
}

// servedSet is what serving said of the sessions of one listing: asked
// first as the store's vouch, then, for held sessions the store did not
// ask about (a store that takes no vouch), by askRest.
type servedSet struct {
	serving func(ctx context.Context, id string, holder storage.Holder) Liveness
	host    string
	pid     int // this process's, whose own sessions are live without asking

	mu    sync.Mutex
	asked map[string]Liveness // lease name: what serving said
}

func newServedSet(serving func(context.Context, string, storage.Holder) Liveness, host string, pid int) *servedSet {
	return &servedSet{serving: serving, host: host, pid: pid, asked: map[string]Liveness{}}
}

// vouch is the store's vouch: the holder of lease name serves it (held),
// or its process is gone (free). A stopped holder is not vouched for: the
// store's lock table says whether it still holds the lease.
func (s *servedSet) vouch(ctx context.Context, name string, h storage.Holder) storage.Vouched {
	if s.serving == nil || h.PID <= 0 || h.PID == s.pid || h.Host != s.host {
		return storage.VouchNothing
	}
	id, ok := strings.CutPrefix(name, sessionsPrefix)
	if !ok {
		return storage.VouchNothing
	}
	l := s.serving(ctx, id, h)
	s.mu.Lock()
	s.asked[name] = l
	s.mu.Unlock()
	switch l {
	case LivenessServing:
		return storage.VouchHeld
	case LivenessGone:
		return storage.VouchGone
	}
	return storage.VouchNothing
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
		if _, asked := s.asked[p.Name]; p.Held && !asked {
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

// liveness is what serving said of lease name's holder.
func (s *servedSet) liveness(name string) Liveness {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.asked[name]
}
