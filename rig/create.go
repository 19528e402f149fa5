package rig

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/google/uuid"

	"looprig/rig/event"
	"looprig/rig/hub"
	"looprig/rig/journal"
	"looprig/rig/storage"
)

// SessionOption configures NewSession.
type SessionOption func(*sessionConfig)

type sessionConfig struct {
	seed  string
	title string
}

// WithSeedSnapshot copies the directory dir into the new session's
// workspace before the root loop starts. The workspace must be empty and
// not shared; entries that escape dir (absolute or escaping symlinks) and
// special files refuse the seed.
func WithSeedSnapshot(dir string) SessionOption { return func(c *sessionConfig) { c.seed = dir } }

// WithTitle sets the session's title.
func WithTitle(title string) SessionOption { return func(c *sessionConfig) { c.title = title } }

func newID() string { return uuid.NewString() }

// NewSession creates a session. The order guarantees that nothing
// reachable writes without ownership: the session lease is taken first,
// the journal opens with a fence at the lease epoch, the workspace is
// placed (and an exclusive root leased) and seeded, the root loop built,
// and SessionStarted and LoopStarted committed before the session is
// returned. A failure at any stage returns *LifecycleError and releases
// everything taken, root lease before session lease.
func (r *Rig) NewSession(ctx context.Context, opts ...SessionOption) (_ *Session, err error) {
	var cfg sessionConfig
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.seed == "" {
		cfg.seed = r.profile.Seed
	}
	fail := func(stage LifecycleStage, cause error) error { return &LifecycleError{Stage: stage, Cause: cause} }

	// 1. The caller's context and the rig's requirements.
	if err := ctx.Err(); err != nil {
		return nil, fail(StageValidate, err)
	}
	if cfg.seed != "" && r.profile.Placement == PlacementShared {
		return nil, fail(StageValidate, &SeedError{Path: cfg.seed, Reason: "a shared workspace cannot be seeded"})
	}
	// 2. A non-zero id.
	id, err := uuid.NewRandom()
	if err != nil || id == uuid.Nil {
		return nil, fail(StageMint, fmt.Errorf("mint session id: %v", err))
	}
	// 3. The session lease.
	name := storage.SessionName(id.String())
	lease, err := r.store.Acquire(ctx, name)
	if err != nil {
		return nil, fail(StageLease, err)
	}
	s := newSession(r, id, lease)
	s.title = cfg.title
	s.created = r.now().UTC()
	s.ws = &workspace{placement: r.profile.Placement}
	createdDir := false
	defer func() {
		if err != nil {
			s.abortConstruction(createdDir)
		}
	}()

	// 4. The journal, opened with a fence at the lease epoch. The catalog
	// entry goes first so that even a creation that crashes here is listed.
	if err := writeCatalog(ctx, r.store, s.catalogSeed(CatalogCreating)); err != nil {
		return nil, fail(StageJournal, fmt.Errorf("catalog: %w", err))
	}
	s.journal, err = journal.Open(ctx, r.store, name, lease, journal.WithClock(r.now))
	if err != nil {
		return nil, fail(StageJournal, err)
	}
	// 5. The checked appenders: the hub's durable tap over the journal.
	s.hub = hub.New(id.String(), s.journal, hub.WithClock(r.now), hub.WithFaultHandler(s.faultWith))

	// 6. Placement, seed, root loop.
	ws, err := r.placeWorkspace(ctx, id.String())
	if err != nil {
		return nil, fail(StagePlacement, err)
	}
	s.ws = ws
	createdDir = ws.placement == PlacementSession
	if cfg.seed != "" {
		if err := copySeed(cfg.seed, ws.dir); err != nil {
			return nil, fail(StageSeed, err)
		}
	}
	s.eng, err = r.newEngine()
	if err != nil {
		return nil, fail(StageLoop, err)
	}
	s.loopID = newID()

	// 7. SessionStarted and the root LoopStarted, durable.
	started := event.SessionStarted{Title: cfg.title, Rig: r.profile.Name, Placement: string(ws.placement), Root: ws.root}
	m := r.profile.manifest(ws.root)
	started.Fingerprint = m.Fingerprint()
	if !r.legacy {
		started.Manifest = m
	}
	if _, err := s.hub.Publish(ctx, "", started); err != nil {
		return nil, fail(StageCommit, s.mutationErr(err))
	}
	if _, err := s.hub.Publish(ctx, s.loopID, event.LoopStarted{LoopID: s.loopID, Name: "root", Engine: r.profile.Engine}); err != nil {
		return nil, fail(StageCommit, s.mutationErr(err))
	}

	// 8. Live: the session owns its leases from here.
	go s.watch()
	s.updateCatalog()
	return s, nil
}

// catalogSeed is the entry of a session before it has a journal.
func (s *Session) catalogSeed(state CatalogState) CatalogEntry {
	return CatalogEntry{
		ID: s.id.String(), Title: s.title, Profile: s.rig.profile.Name, Engine: s.rig.profile.Engine,
		Placement: s.rig.profile.Placement, State: state, Epoch: s.lease.Epoch(),
		Created: s.created, Updated: s.rig.now().UTC(),
	}
}

// abortConstruction undoes a NewSession that failed after the lease: the
// hub is sealed, the half-made session's journal, catalog entry and
// workspace directory are removed (nothing of value was recorded yet), and
// the root lease, then the session lease, are released.
func (s *Session) abortConstruction(removeDir bool) {
	if s.hub != nil {
		s.hub.Abort()
	}
	s.cancel(ErrSessionClosed)
	ctx, cancel := s.bg()
	defer cancel()
	select {
	case <-s.lease.Lost():
	default:
		if err := s.rig.store.Delete(ctx, s.name); err != nil {
			s.rig.log.Warn("remove journal of failed session", "session", s.id, "err", err)
		}
		if err := s.rig.store.DeleteKey(ctx, storage.CatalogKey(s.id.String()), storage.AnyRevision); err != nil {
			s.rig.log.Warn("remove catalog of failed session", "session", s.id, "err", err)
		}
	}
	if removeDir && s.ws.dir != "" {
		if err := removeTree(s.ws.dir); err != nil && !errors.Is(err, os.ErrNotExist) {
			s.rig.log.Warn("remove workspace of failed session", "dir", s.ws.dir, "err", err)
		}
	}
	s.releaseLeases()
}
