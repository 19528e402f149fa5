package rig

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/google/uuid"

	"looprig/rig/event"
	"looprig/rig/journal"
	"looprig/rig/storage"
)

// SessionOption configures NewSession.
type SessionOption func(*sessionConfig)

type sessionConfig struct {
	seed     string
	title    string
	id       uuid.UUID
	worktree *event.WorktreeAdded
}

// WithSeedSnapshot copies the directory dir into the new session's
// workspace before the root loop starts. The workspace must be empty and
// not shared; entries that escape dir (absolute or escaping symlinks) and
// special files refuse the seed.
func WithSeedSnapshot(dir string) SessionOption { return func(c *sessionConfig) { c.seed = dir } }

// WithTitle sets the session's title.
func WithTitle(title string) SessionOption { return func(c *sessionConfig) { c.title = title } }

// WithSessionID creates the session with id instead of a fresh one: a
// caller that names something after the session before it exists (a git
// worktree's branch, WithWorktree) mints it first. An id a session of the
// store has is refused.
func WithSessionID(id uuid.UUID) SessionOption { return func(c *sessionConfig) { c.id = id } }

// WithWorktree records that the session's workspace, the profile's
// exclusive root, is a git worktree made for it (event.WorktreeAdded,
// after the root LoopStarted, its Path the canonical root), so that
// deleting the session can remove it.
func WithWorktree(repo, branch string) SessionOption {
	return func(c *sessionConfig) { c.worktree = &event.WorktreeAdded{Repo: repo, Branch: branch} }
}

func newID() string { return uuid.NewString() }

// NewSession creates a session. The order guarantees that nothing
// reachable writes without ownership: the session lease is taken first,
// the journal opens with a fence at the lease epoch, the workspace is
// placed (and an exclusive root leased) and seeded, the root loop built,
// and SessionStarted and LoopStarted committed before the session is
// returned. A failure at any stage returns *LifecycleError and releases
// everything taken, root lease before session lease. What it wrote (journal,
// catalog entry, workspace directory) it removes only while it can show it
// still owns the session; when another process took the session over
// meanwhile (a broken lease), the records are left to it and the
// LifecycleError's cause also holds the lease loss
// (*journal.JournalLeaseLostError).
func (r *Rig) NewSession(ctx context.Context, opts ...SessionOption) (*Session, error) {
	return r.create(ctx, nil, opts...)
}

// create is NewSession, and with fork ForkSession: the fork's workspace
// is its checkpoint rather than a seed, and its first records say where
// it came from (fork.go).
func (r *Rig) create(ctx context.Context, fork *forkPlan, opts ...SessionOption) (_ *Session, err error) {
	fail := func(stage LifecycleStage, cause error) error { return &LifecycleError{Stage: stage, Cause: cause} }
	var cfg sessionConfig
	for i, o := range opts {
		if o == nil {
			return nil, fail(StageValidate, fmt.Errorf("rig: NewSession: option %d is nil", i))
		}
		o(&cfg)
	}
	switch {
	case fork != nil && cfg.seed != "":
		return nil, fail(StageValidate, &SeedError{Path: cfg.seed, Reason: "a fork begins with its source's files, not a seed"})
	case fork != nil && r.profile.Placement == PlacementShared:
		return nil, fail(StageValidate, fork.refuse("a shared workspace cannot hold a fork: it needs a directory of its own (a new one in the store, or --root DIR)"))
	case cfg.seed == "" && fork == nil:
		cfg.seed = r.profile.Seed
	}

	// 1. The caller's context, the options and the rig's requirements.
	if err := ctx.Err(); err != nil {
		return nil, fail(StageValidate, err)
	}
	if cfg.seed != "" && r.profile.Placement == PlacementShared {
		return nil, fail(StageValidate, &SeedError{Path: cfg.seed, Reason: "a shared workspace cannot be seeded"})
	}
	if cfg.worktree != nil && r.profile.Placement != PlacementExclusive {
		return nil, fail(StageValidate, fmt.Errorf("rig: NewSession: a worktree is an exclusive root, not placement %s", r.profile.Placement))
	}
	// 2. A non-zero id: the caller's (a session of the store must not
	// have it: checked before the lease, whose failure removes records),
	// else a fresh one.
	id := cfg.id
	if id != uuid.Nil {
		if _, cerr := ReadCatalog(ctx, r.store, id.String()); !IsNotFound(cerr) {
			return nil, fail(StageMint, fmt.Errorf("session id %s: exists or cannot be checked (%v)", id, cerr))
		}
	} else if id, err = uuid.NewRandom(); err != nil || id == uuid.Nil {
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
		if err == nil {
			return
		}
		lost := s.abortConstruction(createdDir)
		var le *LifecycleError
		if lost != nil && errors.As(err, &le) && !errors.As(le.Cause, new(*journal.JournalLeaseLostError)) {
			le.Cause = fmt.Errorf("%w; meanwhile the session was taken over, its records are left to the new holder: %w", le.Cause, lost)
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
	s.hub = s.newHub()

	// 6. Placement, seed, root loop.
	var ws *workspace
	if fork != nil {
		ws, err = r.placeFork(ctx, s, fork)
	} else {
		ws, err = r.placeWorkspace(ctx, id.String(), nil)
	}
	if err != nil {
		return nil, fail(StagePlacement, err)
	}
	s.ws = ws
	createdDir = ws.placement == PlacementSession || fork != nil
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
	if err := r.commitStart(ctx, s, &cfg, fork); err != nil {
		return nil, fail(StageCommit, s.mutationErr(err))
	}

	// 8. Live: the session owns its leases from here.
	go s.watch()
	s.updateCatalog()
	return s, nil
}

// commitStart journals what starts session s, durably: SessionStarted and
// the root LoopStarted, then for a fork where it came from, for an agent
// its conversation, for a worktree the worktree (cfg.worktree).
func (r *Rig) commitStart(ctx context.Context, s *Session, cfg *sessionConfig, fork *forkPlan) error {
	ws := s.ws
	started := event.SessionStarted{Title: cfg.title, Rig: r.profile.Name, Placement: string(ws.placement), Root: ws.root}
	m := r.profile.manifest(ws.root)
	started.Fingerprint = m.Fingerprint()
	if fork != nil {
		started.ForkedFrom = &fork.from
	}
	if !r.legacy {
		started.Manifest = m
	}
	if _, err := s.hub.Publish(ctx, "", started); err != nil {
		return err
	}
	if _, err := s.hub.Publish(ctx, s.loopID, event.LoopStarted{LoopID: s.loopID, Name: "root", Engine: r.profile.Engine}); err != nil {
		return err
	}
	if fork != nil {
		if err := r.journalFork(ctx, s, fork); err != nil {
			return err
		}
	}
	if err := s.startConversation(ctx); err != nil {
		return err
	}
	if w := cfg.worktree; w != nil {
		w.Path = ws.root
		if _, err := s.hub.Publish(ctx, "", *w); err != nil {
			return err
		}
	}
	return nil
}

// catalogSeed is the entry of a session before it has a journal.
func (s *Session) catalogSeed(state CatalogState) CatalogEntry {
	return CatalogEntry{
		ID: s.id.String(), Title: s.title, Profile: s.rig.profile.Name, Engine: s.rig.profile.Engine,
		Shell: s.rig.profile.shell(), Placement: s.rig.profile.Placement, State: state, Epoch: s.lease.Epoch(),
		Created: s.created, Updated: s.rig.now().UTC(),
	}
}

// abortConstruction undoes a NewSession that failed after the lease: the
// hub is sealed, the root lease, then the session lease, are released, and
// the half-made session's journal, catalog entry and workspace directory
// are removed (nothing of value was recorded yet) — but only while this
// creator is provably still their owner (see ownsRecords). A creation whose
// lease was broken while it ran (a slow seed copy) must not delete the
// breaker's fence and records: they are left, and the lease loss is
// returned.
func (s *Session) abortConstruction(removeDir bool) (lost error) {
	if s.hub != nil {
		s.hub.Abort()
	}
	s.cancel(ErrSessionClosed)
	ctx, cancel := s.bg()
	defer cancel()
	owned, rev, lost := s.ownsRecords(ctx)
	if owned {
		if err := s.rig.store.Delete(ctx, s.name); err != nil {
			s.rig.log.Warn("remove journal of failed session", "session", s.id, "err", err)
		}
		if rev != 0 {
			// Conditional: an entry rewritten since it was read is not ours.
			if err := s.rig.store.DeleteKey(ctx, storage.CatalogKey(s.id.String()), rev); err != nil {
				s.rig.log.Warn("remove catalog of failed session", "session", s.id, "err", err)
			}
		}
		if removeDir && s.ws.dir != "" {
			if err := removeTree(s.ws.dir); err != nil && !errors.Is(err, os.ErrNotExist) {
				s.rig.log.Warn("remove workspace of failed session", "dir", s.ws.dir, "err", err)
			}
		}
	} else {
		s.rig.log.Warn("failed session's records left in place: not provably its own", "session", s.id, "lost", lost)
	}
	s.releaseLeases()
	return lost
}

// ownsRecords reports whether this creator is still the only writer of the
// session's journal and catalog entry, so that removing them removes only
// what it wrote: its lease has not reported loss, its journal latched no
// fence or loss, no later grant of the session lease exists (a probe, for a
// break whose loss the lease has not noticed yet), the ledger holds no
// fence of another epoch, and the catalog entry (if any) is at its epoch.
// rev is the catalog entry's revision (0: none). lost is the lease loss
// when some check shows another holder; owned is false without lost when
// a check could not be made (the records are then left too).
//
// A break landing between these checks and the removal can still lose its
// records: storage has no conditional ledger delete. The checks shrink that
// window from the whole creation (a seed copy of any size) to a few store
// calls.
func (s *Session) ownsRecords(ctx context.Context) (owned bool, rev uint64, lost error) {
	epoch := s.lease.Epoch()
	lostErr := func(cause error) error {
		return &journal.JournalLeaseLostError{Name: s.name, Epoch: epoch, Cause: cause}
	}
	unknown := func(what string, err error) (bool, uint64, error) {
		s.rig.log.Warn("cannot tell whether a failed session's records are its own", "session", s.id, "check", what, "err", err)
		return false, 0, nil
	}
	select {
	case <-s.lease.Lost():
		return false, 0, lostErr(storage.LostCause(s.name, s.lease))
	default:
	}
	var mine uint64 // this creator's records are 1..mine
	if s.journal != nil {
		var jl *journal.JournalLeaseLostError
		var fenced *journal.FencedError
		switch jerr := s.journal.Err(); {
		case errors.As(jerr, &jl):
			return false, 0, jl
		case errors.As(jerr, &fenced):
			return false, 0, lostErr(fenced)
		}
		if f := s.journal.FenceSeq(); f != 1 {
			return unknown("journal", fmt.Errorf("the journal had %d record(s) before this creator's fence", f-1))
		}
		mine = s.journal.Tip()
	}
	st, err := s.rig.store.Probe(ctx, s.name)
	switch {
	case err != nil: // the other checks still apply
		s.rig.log.Warn("probe lease of failed session", "session", s.id, "err", err)
	case st.Epoch > epoch:
		return false, 0, lostErr(&storage.LeaseLostError{Name: s.name, Epoch: epoch, Reason: storage.LossEpochAdvanced, NewEpoch: st.Epoch})
	}
	tip, err := s.rig.store.Tip(ctx, s.name)
	if err != nil && !IsNotFound(err) {
		return unknown("journal tip", err)
	}
	switch {
	case tip < mine:
		return unknown("journal tip", fmt.Errorf("the journal ends at %d, before this creator's record %d", tip, mine))
	case tip > mine:
		// Records this creator did not see commit: its own (an append that
		// failed after it landed) or another writer's, which starts with
		// that writer's fence.
		foreign, err := s.foreignFence(ctx, mine)
		if err != nil {
			return unknown("journal", err)
		}
		if foreign != 0 {
			return false, 0, lostErr(&journal.FencedError{Name: s.name, Epoch: epoch, Expected: mine, Actual: tip,
				Err: fmt.Errorf("the journal holds a fence at epoch %d", foreign)})
		}
	}
	e, err := s.rig.store.Get(ctx, storage.CatalogKey(s.id.String()))
	switch {
	case IsNotFound(err):
		return true, 0, nil
	case err != nil:
		return unknown("catalog", err)
	}
	c, err := DecodeCatalog(s.id.String(), e.Value)
	switch {
	case err != nil:
		return unknown("catalog", err)
	case c.Epoch > epoch:
		return false, 0, lostErr(&storage.LeaseLostError{Name: s.name, Epoch: epoch, Reason: storage.LossEpochAdvanced, NewEpoch: c.Epoch})
	case c.Epoch != epoch:
		return unknown("catalog", fmt.Errorf("the catalog entry is at epoch %d", c.Epoch))
	}
	return true, e.Revision, nil
}

// foreignFence returns the epoch of the first fence of another epoch after
// record after, 0 if there is none.
func (s *Session) foreignFence(ctx context.Context, after uint64) (uint64, error) {
	cur, err := s.rig.store.Read(ctx, s.name, after)
	if err != nil {
		return 0, err
	}
	defer cur.Close()
	for cur.Next() {
		r := cur.Record()
		rec, err := journal.DecodeRecord(r.Seq, r.Payload)
		if err != nil {
			return 0, err
		}
		if rec.Kind == journal.KindFence && rec.Epoch != s.lease.Epoch() {
			return rec.Epoch, nil
		}
	}
	return 0, cur.Err()
}
