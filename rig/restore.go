package rig

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"time"

	"github.com/google/uuid"

	"looprig/rig/checkpoint"
	"looprig/rig/event"
	"looprig/rig/journal"
	"looprig/rig/storage"
)

// replayed is what a full replay of a journal yields: enough to rebuild the
// session, never the whole history.
type replayed struct {
	records   uint64
	started   *event.SessionStarted
	created   time.Time
	loop      *event.LoopStarted
	lastFence uint64
	// state is the journal's events folded: the turns and gates a crash
	// left open, the turn count, the last end.
	state State

	// baseline is the configuration the next restore compares against:
	// SessionStarted's, then that of each committed adoption. pending is
	// an adoption whose restore has not (yet) committed with RestoreDone.
	baseline baseline
	pending  *event.ConfigurationAdopted
}

// baseline is a session's recorded configuration: its manifest (nil for a
// fingerprint-only session) and fingerprint.
type baseline struct {
	manifest    Manifest
	fingerprint string
}

// adopt makes the configuration a committed ConfigurationAdopted accepted
// the new baseline. Records that carry the adopted manifest give it
// whole; older ones carry only the changes, which are applied to the
// previous baseline (their Live values are what was adopted).
func (b baseline) adopt(ca *event.ConfigurationAdopted) baseline {
	if len(ca.Manifest) > 0 {
		m := Manifest(maps.Clone(ca.Manifest))
		fp := ca.Fingerprint
		if fp == "" {
			fp = m.Fingerprint()
		}
		return baseline{manifest: m, fingerprint: fp}
	}
	if b.manifest == nil {
		return b // nothing to apply the changes to: keep the fingerprint
	}
	m := maps.Clone(b.manifest)
	for _, c := range ca.Changes {
		m[c.Field] = c.Live
	}
	return baseline{manifest: m, fingerprint: m.Fingerprint()}
}

// RestoreSession restores session id from its journal, as one transaction:
// it takes the session lease, appends a fence, refuses to go on while a
// turn of an earlier holder still runs on this machine
// (RestoreError{turn_running} wrapping *TurnRunningError: its processes
// would work in the workspace beside this session's; BreakLease stops it)
// and claims the session's process record, replays the whole journal,
// discovers SessionStarted and the root LoopStarted, checks the
// configuration against the baseline (the one the session was created
// with, or the last adopted one), materializes the workspace (taking an
// exclusive root's lease), appends RestoreStarted, closes open gates
// (GateResolved{restore_unavailable}) and open turns
// (TurnInterrupted{crash}), records adopted drift, rebuilds the root loop
// with its old id and commits with RestoreDone. A failure before
// RestoreDone appends RestoreErrored (when the journal can still be
// written), releases ownership and returns no session: *RestoreError with
// the stage, or *RestoreRejectedError / *ConfigMismatchError for
// configuration drift. A busy exclusive root is RestoreError{lease_failed}
// wrapping *WorkspaceRootBusyError, with nothing but RestoreErrored
// written after the fence.
//
// An id with no journal fails with discovery_failed before anything is
// written: restoring never creates a session.
func (r *Rig) RestoreSession(ctx context.Context, id uuid.UUID, opts ...RestoreOption) (_ *Session, err error) {
	var o restoreOptions
	for _, opt := range opts {
		opt(&o)
	}
	name := storage.SessionName(id.String())
	fail := func(kind RestoreErrorKind, cause error) error {
		if ctx.Err() != nil && kind != RestoreContextDone {
			kind, cause = RestoreContextDone, fmt.Errorf("%w (during %s)", ctx.Err(), kind)
		}
		return &RestoreError{Kind: kind, Session: id, Cause: cause}
	}
	if err := ctx.Err(); err != nil {
		return nil, fail(RestoreContextDone, err)
	}
	if id == uuid.Nil {
		return nil, fail(RestoreDiscoveryFailed, errors.New("the nil session id names no session"))
	}
	// Discovery before any write: no journal, no session. A journal the
	// store refuses as corrupt exists but cannot be replayed: that is
	// replay_failed, recorded (under the lease) in the catalog entry.
	tip, err := r.store.Tip(ctx, name)
	var corrupt *storage.CorruptError
	damaged := errors.As(err, &corrupt)
	switch {
	case damaged:
	case err != nil:
		return nil, fail(RestoreDiscoveryFailed, err)
	case tip == 0:
		return nil, fail(RestoreDiscoveryFailed, fmt.Errorf("session %s has no journal in this store", id))
	}
	journalErr := err

	lease, err := r.store.Acquire(ctx, name)
	if err != nil {
		return nil, fail(RestoreLeaseFailed, err)
	}
	if !damaged {
		// Look again under the lease: DeleteSession, which holds it while
		// it works, may have removed the journal since the discovery. Then
		// nothing may be written, or the deleted session would come back.
		if tip, err = r.store.Tip(ctx, name); err != nil || tip == 0 {
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.releaseTimeout)
			defer cancel()
			if rerr := lease.Release(rctx); rerr != nil {
				r.log.Warn("release after a vanished journal", "session", id, "err", rerr)
			}
			if err == nil {
				err = fmt.Errorf("session %s has no journal in this store (it was deleted)", id)
			}
			return nil, fail(RestoreDiscoveryFailed, err)
		}
	}
	if o.onlyCrashed {
		// Under the lease: a session another process restored and shut
		// down since it was listed crashed is not restored again.
		if c, err := ReadCatalog(ctx, r.store, id.String()); err == nil && c.State == CatalogStopped {
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.releaseTimeout)
			defer cancel()
			if rerr := lease.Release(rctx); rerr != nil {
				r.log.Warn("release of a session that is not crashed", "session", id, "err", rerr)
			}
			return nil, &NotCrashedError{Session: id}
		}
	}
	s := newSession(r, id, lease)
	s.ws = &workspace{placement: r.profile.Placement}
	defer func() {
		if err != nil {
			s.abortRestore(err)
		}
	}()
	if damaged {
		return nil, fail(RestoreReplayFailed, fmt.Errorf("the journal is damaged; nothing was modified: %w", journalErr))
	}

	s.journal, err = journal.Open(ctx, r.store, name, lease, journal.WithClock(r.now))
	if err != nil {
		return nil, fail(RestoreJournalFailed, err)
	}
	// No turn of an earlier holder may run beside this one on this
	// machine; and from here on none can start: the process record is
	// claimed at this epoch.
	s.procRev, err = claimProcess(ctx, r.store, id, lease.Epoch(), func(p processRecord) error {
		left, err := earlierTurnHere(ctx, id, p, lease.Epoch())
		if left != nil {
			return left
		}
		return err
	})
	var running *TurnRunningError
	switch {
	case errors.As(err, &running):
		return nil, fail(RestoreTurnRunning, err)
	case err != nil:
		return nil, fail(RestoreLeaseFailed, err)
	}
	rep, err := r.replay(ctx, s)
	if err != nil {
		return nil, fail(RestoreReplayFailed, err)
	}
	if rep.started == nil {
		return nil, fail(RestoreDiscoveryFailed, fmt.Errorf("journal of %s has no SessionStarted", id))
	}
	if rep.loop == nil {
		return nil, fail(RestoreDiscoveryFailed, fmt.Errorf("journal of %s has no root LoopStarted", id))
	}
	s.title, s.created, s.loopID = rep.started.Title, rep.created, rep.loop.LoopID
	s.state = rep.state
	s.hub = s.newHub()

	// The configuration check, then the workspace (an exclusive root's
	// lease), both before the first restore mutation: drift or a busy root
	// leave nothing in the journal but RestoreErrored.
	adopted, err := r.checkConfig(ctx, id, rep.baseline)
	if err != nil {
		return nil, err
	}
	var found *WorkspaceFound
	if s.ws, found, err = r.materialize(ctx, id.String(), rep.state.Checkpoint); err != nil {
		s.ws = &workspace{placement: r.profile.Placement}
		var busy *WorkspaceRootBusyError
		if errors.As(err, &busy) {
			return nil, fail(RestoreLeaseFailed, err)
		}
		return nil, fail(RestoreMaterializeFailed, err)
	}

	info := &RestoreInfo{Epoch: lease.Epoch(), Adopted: adopted.Changes, AdoptedBy: adopted.source, Records: rep.records, Workspace: found}
	publish := func(loopID string, ev event.Event) error {
		if _, err := s.hub.Publish(ctx, loopID, ev); err != nil {
			return fail(RestoreAppendFailed, s.mutationErr(err))
		}
		return nil
	}
	if err := publish("", event.RestoreStarted{Epoch: lease.Epoch()}); err != nil {
		return nil, err
	}
	for _, g := range rep.state.Gates {
		if err := publish(s.loopID, event.GateResolved{GateID: g.ID, Action: event.ActionClose, Reason: "restore_unavailable"}); err != nil {
			return nil, err
		}
		info.GatesClosed = append(info.GatesClosed, g.ID)
	}
	for _, t := range rep.state.Open {
		if err := publish(s.loopID, event.TurnInterrupted{TurnID: t.ID, Index: t.Index, Reason: event.ReasonCrash}); err != nil {
			return nil, err
		}
		info.Interrupted = append(info.Interrupted, t.ID)
	}
	if adopted.Drifted() {
		ca := event.ConfigurationAdopted{Changes: adopted.Changes, Source: adopted.source,
			Fingerprint: adopted.live.Fingerprint(), Manifest: adopted.live}
		if err := publish("", ca); err != nil {
			return nil, err
		}
	}

	// The root loop, with its old id.
	if err := r.engineKnown(); err != nil {
		return nil, fail(RestoreLoopFailed, err)
	}
	if s.eng, err = r.newEngine(); err != nil {
		return nil, fail(RestoreRuntimeFailed, err)
	}
	if err := ctx.Err(); err != nil {
		return nil, fail(RestoreContextDone, err)
	}
	// The commit point.
	if err := publish("", event.RestoreDone{Epoch: lease.Epoch(), Interrupted: info.Interrupted, GatesClosed: info.GatesClosed}); err != nil {
		return nil, err
	}
	s.restore = info
	go s.watch()
	s.updateCatalog()
	return s, nil
}

// replay folds the journal from the start into what a rebuild needs.
func (r *Rig) replay(ctx context.Context, s *Session) (*replayed, error) {
	rp, err := journal.NewReplayer(ctx, r.store, s.name, 0)
	if err != nil {
		return nil, err
	}
	defer rp.Close()
	rep := &replayed{}
	for rp.Next() {
		rec := rp.Record()
		rep.records++
		switch rec.Kind {
		case journal.KindFence:
			rep.pending = nil // a restore that was cut short adopted nothing
			// An owner may fence twice at its epoch (a restore that
			// re-opens its journal to record RestoreErrored); a lower
			// epoch after a higher one means overlapping owners.
			if rec.Epoch < rep.lastFence {
				return nil, fmt.Errorf("record %d: fence epoch %d after epoch %d: the journal was written by overlapping owners", rec.Seq, rec.Epoch, rep.lastFence)
			}
			rep.lastFence = rec.Epoch
			continue
		case journal.KindCommand:
			continue
		}
		rep.state.Apply(event.Envelope{Seq: rec.Seq, LoopID: rec.LoopID, At: rec.At, Event: rec.Event})
		switch ev := rec.Event.(type) {
		case event.SessionStarted:
			if rep.started == nil {
				rep.started = &ev
				rep.created = rec.At
				rep.baseline = baseline{manifest: Manifest(ev.Manifest), fingerprint: ev.Fingerprint}
			}
		case event.RestoreStarted:
			rep.pending = nil
		case event.ConfigurationAdopted:
			rep.pending = &ev
		case event.RestoreDone:
			if rep.pending != nil {
				rep.baseline = rep.baseline.adopt(rep.pending)
				rep.pending = nil
			}
		case event.LoopStarted:
			if rep.loop == nil {
				rep.loop = &ev
			}
		}
	}
	if err := rp.Err(); err != nil {
		return nil, err
	}
	return rep, nil
}

// adoption is accepted drift, who accepted it, and the live configuration
// it adopts.
type adoption struct {
	Assessment
	source string
	live   Manifest
}

// checkConfig compares the session's baseline configuration with the live
// rig's. Sessions with a manifest go through the decider; fingerprint-only
// ones must match exactly.
func (r *Rig) checkConfig(ctx context.Context, id uuid.UUID, base baseline) (adoption, error) {
	live := r.profile.manifest(r.liveRoot())
	if base.manifest == nil {
		if !live.fingerprintMatches(base.fingerprint) {
			return adoption{}, &ConfigMismatchError{Session: id, Persisted: base.fingerprint, Live: live.Fingerprint()}
		}
		return adoption{}, nil
	}
	a := Assess(base.manifest, live)
	if !a.Drifted() {
		return adoption{}, nil
	}
	d, err := r.decider.Decide(ctx, a)
	if err != nil {
		return adoption{}, &RestoreRejectedError{Session: id, Assessment: a, Source: d.Source, Cause: err}
	}
	if !d.Accept {
		var cause error
		if d.Reason != "" {
			cause = errors.New(d.Reason)
		}
		return adoption{}, &RestoreRejectedError{Session: id, Assessment: a, Source: d.Source, Cause: cause}
	}
	return adoption{Assessment: a, source: d.Source, live: live}, nil
}

// materialize resolves the workspace a restored session runs in, from the
// live profile (whose drift from the record was just checked). A session
// workspace (or an exclusive root whose profile checkpoints) that is
// missing is materialized from ptr, the session's latest checkpoint
// (checkpoint.Materialize: every blob verified, nothing half-written left
// in its place); without a checkpoint a missing session workspace fails
// the restore rather than coming back empty: the files a session worked on
// are part of what it restores. A workspace that exists is used as it is.
func (r *Rig) materialize(ctx context.Context, id string, ptr *Checkpoint) (*workspace, *WorkspaceFound, error) {
	var found *WorkspaceFound
	dir := ""
	switch {
	case r.profile.Placement == PlacementSession:
		dir = filepath.Join(r.workspaces, id)
	case r.profile.Placement == PlacementExclusive && r.profile.checkpointMode() != CheckpointOff:
		dir = r.profile.Root
	}
	if dir != "" {
		fi, err := os.Lstat(dir) // not Stat: a link would take the session's turns elsewhere
		switch {
		case errors.Is(err, fs.ErrNotExist) && ptr != nil:
			if err := r.materializeCheckpoint(ctx, id, ptr, dir); err != nil {
				return nil, nil, err
			}
			found = &WorkspaceFound{Materialized: true, Files: ptr.Files, Bytes: ptr.Bytes}
		case err != nil && r.profile.Placement == PlacementSession:
			return nil, nil, fmt.Errorf("session workspace %s is missing (%w) and the session has no checkpoint to bring it back from; recreate the directory to restore the session with an empty workspace", dir, err)
		case err != nil:
		case fi.Mode()&os.ModeSymlink != 0:
			return nil, nil, fmt.Errorf("workspace %s is a symbolic link, not a directory; replace it with the directory itself to restore the session", dir)
		case !fi.IsDir():
			return nil, nil, fmt.Errorf("workspace %s is not a directory; replace it with a directory to restore the session", dir)
		case ptr != nil:
			found = r.compareWorkspace(ctx, ptr, dir)
		}
	}
	ws, err := r.placeWorkspace(ctx, id)
	return ws, found, err
}

// maxFoundPaths bounds the paths WorkspaceFound names.
const maxFoundPaths = 5

// compareWorkspace says how dir differs from checkpoint ptr, by stat
// alone (checkpoint.StatDifferences); it never fails the restore.
func (r *Rig) compareWorkspace(ctx context.Context, ptr *Checkpoint, dir string) *WorkspaceFound {
	found := &WorkspaceFound{Files: ptr.Files, Bytes: ptr.Bytes}
	d, err := storage.ParseDigest(ptr.Manifest)
	var changes []checkpoint.FileChange
	if err == nil {
		changes, err = checkpoint.StatDifferences(ctx, r.store, d, dir, checkpoint.Options{Exclude: r.profile.CheckpointExclude})
	}
	if err != nil {
		found.Err = err.Error()
		return found
	}
	found.Differs = len(changes)
	for _, c := range changes[:min(len(changes), maxFoundPaths)] {
		found.Paths = append(found.Paths, c.Path)
	}
	return found
}

// materializeCheckpoint writes checkpoint ptr of session id as dir.
func (r *Rig) materializeCheckpoint(ctx context.Context, id string, ptr *Checkpoint, dir string) error {
	d, err := storage.ParseDigest(ptr.Manifest)
	if err != nil {
		return fmt.Errorf("the checkpoint journaled at %d: %w", ptr.Seq, err)
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		return fmt.Errorf("materialize the workspace of %s: %w", id, err)
	}
	start := r.now()
	if err := checkpoint.Materialize(ctx, r.store, d, dir, r.materializeProgress); err != nil {
		return fmt.Errorf("materialize the workspace of %s from its checkpoint (journaled at %d): %w", id, ptr.Seq, err)
	}
	r.log.Info("workspace materialized from its checkpoint", "session", id, "dir", dir,
		"files", ptr.Files, "bytes", ptr.Bytes, "took", r.now().Sub(start))
	return nil
}

// abortRestore undoes a restore that failed before RestoreDone: it records
// RestoreErrored, seals the hub and releases the root lease, then the
// session lease.
func (s *Session) abortRestore(cause error) {
	s.recordRestoreErrored(cause)
	if s.hub != nil {
		s.hub.Abort()
	}
	s.cancel(ErrSessionClosed)
	s.releaseLeases()
}

// recordRestoreErrored appends RestoreErrored. When the journal latched a
// failed append, or could not be opened at all (a transient store error),
// it (re-)opens the journal — a new fence at the same epoch, at the tip as
// it really is — so the failure is still on record. It writes nothing once
// the lease is lost or a successor fenced the journal.
func (s *Session) recordRestoreErrored(cause error) {
	select {
	case <-s.lease.Lost():
		return
	default:
	}
	kind := "restore_failed"
	var re *RestoreError
	var rejected *RestoreRejectedError
	var mismatch *ConfigMismatchError
	switch {
	case errors.As(cause, &re):
		kind = string(re.Kind)
	case errors.As(cause, &rejected):
		kind = "config_rejected"
	case errors.As(cause, &mismatch):
		kind = "config_mismatch"
	}
	ctx, cancel := s.bg()
	defer cancel()
	// A journal that cannot be replayed, or has no session in it, makes
	// the session broken until someone repairs it; say so in the catalog
	// so listings show it without reading the journal.
	if re != nil && (re.Kind == RestoreReplayFailed || re.Kind == RestoreDiscoveryFailed) {
		c, err := ReadCatalog(ctx, s.rig.store, s.id.String())
		if err != nil {
			c = s.catalogSeed(CatalogBroken)
		}
		c.State, c.Reason, c.Epoch, c.Updated = CatalogBroken, string(re.Kind)+": "+re.Cause.Error(), s.lease.Epoch(), s.rig.now().UTC()
		if err := writeCatalog(ctx, s.rig.store, c); err != nil {
			s.rig.log.Warn("cannot mark the catalog entry broken", "session", s.id, "err", err)
		}
	}
	j := s.journal
	jerr := cause // no journal: its Open failed with the cause
	if j != nil {
		jerr = j.Err()
	}
	if jerr != nil {
		var fenced *journal.FencedError
		var lost *journal.JournalLeaseLostError
		var corrupt *storage.CorruptError
		if errors.As(jerr, &fenced) || errors.As(jerr, &lost) || errors.As(jerr, &corrupt) {
			return // nothing may, or can, be appended
		}
		var err error
		if j, err = journal.Open(ctx, s.rig.store, s.name, s.lease, journal.WithClock(s.rig.now)); err != nil {
			s.rig.log.Warn("cannot record RestoreErrored", "session", s.id, "err", err)
			return
		}
	}
	if _, err := j.AppendEvent(ctx, "", event.RestoreErrored{Kind: kind, Message: cause.Error()}); err != nil {
		s.rig.log.Warn("cannot record RestoreErrored", "session", s.id, "err", err)
	}
}

// RestoreOption adjusts RestoreSession.
type RestoreOption func(*restoreOptions)

type restoreOptions struct {
	onlyCrashed bool
}

// OnlyIfCrashed makes RestoreSession restore the session only if it is
// still crashed once its lease is held: a session shut down cleanly in the
// meantime (another process restored it) is *NotCrashedError, and nothing
// is written. Restoring many crashed sessions at once from several
// processes restores each once.
func OnlyIfCrashed() RestoreOption { return func(o *restoreOptions) { o.onlyCrashed = true } }

// RestoreAllWorkers is how many sessions are restored side by side when
// every crashed session is restored (looprig restore --all-crashed, the
// TUI's R), each with OnlyIfCrashed. Each restore waits mostly on its own
// fsyncs, and on a host process starting when it runs in one, so a few at
// once go much faster than one after the other, without crowding a small
// machine.
const RestoreAllWorkers = 4

// NotCrashedError: OnlyIfCrashed found the session shut down cleanly.
type NotCrashedError struct {
	Session uuid.UUID
}

func (e *NotCrashedError) Error() string {
	return fmt.Sprintf("session %s is not crashed any more (it was restored and shut down meanwhile); nothing was done", ShortID(e.Session.String()))
}
