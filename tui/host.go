package tui

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

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

	mu   sync.Mutex
	rigs map[string]*rig.Rig
	live map[string]*rig.Session
}

// rigFor returns the cached rig of a profile; accept builds a fresh one
// that accepts any drift (the TUI's confirm).
func (h *host) rigFor(name string, accept bool) (*rig.Rig, error) {
	p, ok := h.opts.Profiles[name]
	if !ok {
		p, ok = h.opts.Profiles[h.opts.DefaultProfile]
		if !ok {
			p = rig.DefaultProfile()
		}
	}
	key := p.Name
	h.mu.Lock()
	defer h.mu.Unlock()
	if r := h.rigs[key]; r != nil && !accept {
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
	if !accept {
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

// restore restores session id under profile here and holds it.
func (h *host) restore(id, profile string, accept bool) (hostedMsg, error) {
	r, err := h.rigFor(profile, accept)
	if err != nil {
		return hostedMsg{}, err
	}
	ctx, cancel := context.WithTimeout(h.ctx, restoreTimeout)
	defer cancel()
	uid, err := rig.FindSession(ctx, h.store, id)
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
