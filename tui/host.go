package tui

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/google/uuid"

	"looprig/rig"
	"looprig/rig/hub"
	"looprig/rig/storage"
)

// host is what commands share with Update: the store, the rig cache, the
// hosted sessions (so Run can shut them down whatever happens) and the
// context that ends every reader at quit. Its fields are safe for
// concurrent use.
type host struct {
	opts   Options
	store  storage.Store
	log    *slog.Logger
	ctx    context.Context
	cancel context.CancelFunc
	// readTimeout bounds each read of a journal (historyTimeout; tests
	// shorten it).
	readTimeout time.Duration

	mu   sync.Mutex
	rigs map[string]*rig.Rig
	live map[string]*rig.Session
}

// profileNamed returns the profile a new session is created with: the
// one named (the create dialog offers only configured ones), else the
// default profile. key is the name it is configured under, "" for the
// built-in default when none is configured.
func (h *host) profileNamed(name string) (p rig.Profile, key string) {
	if p, ok := h.opts.Profiles[name]; ok {
		return p, name
	}
	if p, ok := h.opts.Profiles[h.opts.DefaultProfile]; ok {
		return p, h.opts.DefaultProfile
	}
	return rig.DefaultProfile(), ""
}

// profileFor returns the profile session id restores with
// (rig.ProfileFor: the one it recorded, a *rig.ProfileGoneError when that
// is not configured any more, the built-in default when it recorded none),
// and the name it is configured under ("" for the built-in default).
func (h *host) profileFor(ctx context.Context, id uuid.UUID) (p rig.Profile, key string, err error) {
	lookup := func(name string) (rig.Profile, bool) {
		p, ok := h.opts.Profiles[name]
		if ok {
			key = name
		}
		return p, ok
	}
	p, err = rig.ProfileFor(ctx, h.store, id, lookup, h.profileNames())
	if err != nil {
		return rig.Profile{}, "", err
	}
	return p, key, nil
}

// profileNames are the configured profiles: the default first, then by
// name.
func (h *host) profileNames() []string {
	names := make([]string, 0, len(h.opts.Profiles))
	for n := range h.opts.Profiles {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool {
		if (names[i] == h.opts.DefaultProfile) != (names[j] == h.opts.DefaultProfile) {
			return names[i] == h.opts.DefaultProfile
		}
		return names[i] < names[j]
	})
	return names
}

// rigFor returns the rig of profile p, cached under key (the name p is
// configured under; "" is not cached); accept builds a fresh one that
// accepts any drift (the TUI's confirm).
func (h *host) rigFor(p rig.Profile, key string, accept bool) (*rig.Rig, error) {
	cache := key != "" && !accept
	h.mu.Lock()
	defer h.mu.Unlock()
	if r := h.rigs[key]; r != nil && cache {
		return r, nil
	}
	opts := []rig.Option{rig.WithStore(h.store), rig.WithProfile(p), rig.WithLogger(h.log)}
	if h.opts.Workspaces != "" {
		opts = append(opts, rig.WithWorkspaces(h.opts.Workspaces))
	}
	opts = append(opts, h.opts.RigOptions...)
	if accept {
		opts = append(opts, rig.WithDecider(rig.AcceptAll("tui confirm")))
	}
	r, err := rig.Define(opts...)
	if err != nil {
		return nil, err
	}
	if cache {
		h.rigs[key] = r
	}
	return r, nil
}

func (h *host) hold(id string, s *rig.Session) {
	h.mu.Lock()
	h.live[id] = s
	h.mu.Unlock()
}

func (h *host) drop(id string, s *rig.Session) {
	h.mu.Lock()
	if h.live[id] == s {
		delete(h.live, id)
	}
	h.mu.Unlock()
}

func (h *host) hosted() []*rig.Session {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]*rig.Session, 0, len(h.live))
	for _, s := range h.live {
		out = append(out, s)
	}
	return out
}

// restore restores session id here under the profile it recorded
// (profileFor) and holds it. It has its own timeout.
func (h *host) restore(id string, accept bool) (hostedMsg, error) {
	ctx, cancel := context.WithTimeout(h.ctx, restoreTimeout)
	defer cancel()
	uid, err := rig.FindSession(ctx, h.store, id)
	if err != nil {
		return hostedMsg{}, err
	}
	p, key, err := h.profileFor(ctx, uid)
	if err != nil {
		return hostedMsg{}, err
	}
	r, err := h.rigFor(p, key, accept)
	if err != nil {
		return hostedMsg{}, err
	}
	s, err := r.RestoreSession(ctx, uid)
	if err != nil {
		return hostedMsg{}, err
	}
	h.hold(id, s)
	sub := s.Subscribe(hub.Filter{AllLoops: true})
	return hostedMsg{id: id, sess: s, sub: sub, status: s.Status(), outcome: s.Restored()}, nil
}

// shutdownAll shuts every hosted session down in parallel, waiting at most
// bound.
func (h *host) shutdownAll(bound time.Duration) error {
	ss := h.hosted()
	if len(ss) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	errs := make(chan error, len(ss))
	for _, s := range ss {
		go func() {
			err := s.Shutdown(ctx)
			if err != nil {
				h.log.Warn("shutdown at quit", "session", s.SessionID(), "err", err)
			}
			h.drop(s.SessionID().String(), s)
			errs <- err
		}()
	}
	var first error
	for range ss {
		select {
		case err := <-errs:
			if err != nil && first == nil {
				first = err
			}
		case <-ctx.Done():
			return fmt.Errorf("shutting sessions down took longer than %s", bound)
		}
	}
	return first
}
