package rig

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"time"

	"github.com/google/uuid"

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
	// checkpoints are the workspace checkpoints the journal records, in
	// order; turnIndex the index of every turn, by id.
	checkpoints []Checkpoint
	turnIndex   map[string]int

	// tenure is how the session's latest holder (since SessionStarted or
	// the last RestoreDone) let it go, as far as the journal says.
	tenure tenure
	// tip is the sequence of the last record replayed.
	tip uint64
}

// tenure is a holder's time with the session, as its journal records it.
type tenure struct {
	live        bool   // it went live (SessionStarted, RestoreDone)
	epoch       uint64 // its fence epoch
	handedOffTo string // HandedOff.to, when it handed the session over
	stopped     bool   // SessionStopped
}

// previous says how the tenure ended, for RestoreInfo.Previous.
func (t tenure) previous() string {
	switch {
	case !t.live:
		return ""
	case t.handedOffTo != "":
		return PreviousHandedOff
	case t.stopped:
		return PreviousStopped
	}
	return PreviousCrashed
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
	rr := &restoreRun{r: r, ctx: ctx, id: id, name: storage.SessionName(id.String())}
	for _, opt := range opts {
		opt(&rr.o)
	}
	damaged, journalErr, err := rr.discover()
	if err != nil {
		return nil, err
	}
	s := newSession(r, id, rr.lease)
	s.ws = &workspace{placement: r.profile.Placement}
	rr.s = s
	defer func() {
		if err != nil {
			journaled := s.abortRestore(err)
			var re *RestoreError
			var rejected *RestoreRejectedError
			var mismatch *ConfigMismatchError
			switch {
			case errors.As(err, &re):
				re.Journaled = journaled
			case errors.As(err, &rejected):
				rejected.Journaled = journaled
			case errors.As(err, &mismatch):
				mismatch.Journaled = journaled
			}
		}
	}()
	if damaged {
		return nil, rr.fail(RestoreReplayFailed, fmt.Errorf("the journal is damaged; nothing was modified: %w", journalErr))
	}

	// Before the fence, writing nothing to the journal: every check that
	// refuses a restore. Then the fence (the checks again when the journal
	// grew meanwhile) and the claim of the process record.
	rep, adopted, plan, err := rr.check()
	if err != nil {
		return nil, err
	}
	if rep, adopted, plan, err = rr.fence(rep, adopted, plan); err != nil {
		return nil, err
	}
	if err := rr.claim(); err != nil {
		return nil, err
	}
	rr.load(rep)

	// The workspace's writes, before the first restore mutation: a
	// missing one materialized, one found brought up to date or moved
	// aside.
	if err := r.writeWorkspace(ctx, s, rep, plan); err != nil {
		return nil, rr.fail(RestoreMaterializeFailed, err)
	}
	// The restore's records, the root loop, the commit point.
	info, err := rr.journalRestore(rep, adopted, plan)
	if err != nil {
		return nil, err
	}
	if err := rr.rebuildLoop(); err != nil {
		return nil, err
	}
	if err := rr.commit(info); err != nil {
		return nil, err
	}
	return s, nil
}

// restoreRun is one RestoreSession under way: what it was asked, the
// session lease once discover took it, and the session it builds.
type restoreRun struct {
	r     *Rig
	ctx   context.Context
	id    uuid.UUID
	o     restoreOptions
	name  string // storage name of the lease and the journal
	lease storage.Lease
	s     *Session
}

// fail is the *RestoreError of a failure at stage kind; once ctx is done,
// any failure is context_done.
func (rr *restoreRun) fail(kind RestoreErrorKind, cause error) error {
	if rr.ctx.Err() != nil && kind != RestoreContextDone {
		kind, cause = RestoreContextDone, fmt.Errorf("%w (during %s)", rr.ctx.Err(), kind)
	}
	return &RestoreError{Kind: kind, Session: rr.id, Cause: cause}
}

// discover looks for the session's journal, takes the session lease
// (rr.lease) and looks again under it. Nothing is written, and a failure
// holds no lease. damaged: the store refuses the journal as corrupt
// (journalErr), which exists but cannot be replayed: that is
// replay_failed, recorded (under the lease) in the catalog entry.
func (rr *restoreRun) discover() (damaged bool, journalErr error, err error) {
	r, ctx, id, name := rr.r, rr.ctx, rr.id, rr.name
	if err := ctx.Err(); err != nil {
		return false, nil, rr.fail(RestoreContextDone, err)
	}
	if id == uuid.Nil {
		return false, nil, rr.fail(RestoreDiscoveryFailed, errors.New("the nil session id names no session"))
	}
	// Discovery before any write: no journal, no session.
	tip, err := r.store.Tip(ctx, name)
	var corrupt *storage.CorruptError
	damaged = errors.As(err, &corrupt)
	switch {
	case damaged:
	case err != nil:
		return false, nil, rr.fail(RestoreDiscoveryFailed, err)
	case tip == 0:
		return false, nil, rr.fail(RestoreDiscoveryFailed, fmt.Errorf("session %s has no journal in this store", id))
	}
	journalErr = err

	lease, err := r.acquire(ctx, name)
	if err != nil {
		return false, nil, rr.fail(RestoreLeaseFailed, err)
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
			return false, nil, rr.fail(RestoreDiscoveryFailed, err)
		}
	}
	if rr.o.onlyCrashed {
		// Under the lease: a session another process restored and shut
		// down since it was listed crashed is not restored again.
		if c, err := ReadCatalog(ctx, r.store, id.String()); err == nil && c.State == CatalogStopped {
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.releaseTimeout)
			defer cancel()
			if rerr := lease.Release(rctx); rerr != nil {
				r.log.Warn("release of a session that is not crashed", "session", id, "err", rerr)
			}
			return false, nil, &NotCrashedError{Session: id}
		}
	}
	rr.lease = lease
	return damaged, journalErr, nil
}

// check is what comes before the fence: it reads the journal and makes
// every check that refuses a restore, writing nothing to it. A refusal a
// user meets again and again (drift, a busy root, a diverged or missing
// workspace, a turn of an earlier holder still here, a journal that
// cannot be replayed) thus never grows the journal by more than one
// record of it (recordRestoreErrored). The fence runs it again when the
// journal grew meanwhile.
func (rr *restoreRun) check() (*replayed, adoption, *wsPlan, error) {
	r, ctx, id, s := rr.r, rr.ctx, rr.id, rr.s
	rep, err := r.replay(ctx, s)
	if err != nil {
		return nil, adoption{}, nil, rr.fail(RestoreReplayFailed, err)
	}
	if rep.started == nil {
		return nil, adoption{}, nil, rr.fail(RestoreDiscoveryFailed, fmt.Errorf("journal of %s has no SessionStarted", id))
	}
	if rep.loop == nil {
		return nil, adoption{}, nil, rr.fail(RestoreDiscoveryFailed, fmt.Errorf("journal of %s has no root LoopStarted", id))
	}
	// No turn of an earlier holder may run beside this one on this
	// machine (claimed for good after the fence).
	p, _, err := readProcess(ctx, r.store, id)
	if err != nil {
		return nil, adoption{}, nil, rr.fail(RestoreLeaseFailed, err)
	}
	if left, err := earlierTurnHere(ctx, id, p, rr.lease.Epoch()); left != nil || err != nil {
		if left != nil {
			return nil, adoption{}, nil, rr.fail(RestoreTurnRunning, left)
		}
		return nil, adoption{}, nil, rr.fail(RestoreLeaseFailed, err)
	}
	// The configuration, then the workspace (an exclusive root's
	// lease held from here on).
	adopted, err := r.checkConfig(ctx, id, rep.baseline)
	if err != nil {
		return nil, adoption{}, nil, err
	}
	plan, err := r.planWorkspace(ctx, s, rep, rr.o.onDiverged, nil)
	if err != nil {
		return nil, adoption{}, nil, rr.fail(workspaceErrorKind(err), err)
	}
	return rep, adopted, plan, nil
}

// fence opens the journal: a fence at the lease's epoch. A record
// appended between the replay and the fence (an earlier holder that has
// not noticed it lost its lease) is not in what was checked: everything
// is read and checked again, now that nothing more can come in; else
// what check found stands.
func (rr *restoreRun) fence(rep *replayed, adopted adoption, plan *wsPlan) (*replayed, adoption, *wsPlan, error) {
	s := rr.s
	var err error
	s.journal, err = journal.Open(rr.ctx, rr.r.store, rr.name, rr.lease, journal.WithClock(rr.r.now))
	if err != nil {
		return nil, adoption{}, nil, rr.fail(RestoreJournalFailed, err)
	}
	if s.journal.FenceSeq() != rep.tip+1 {
		rr.r.log.Info("the journal grew between the replay and the fence: reading it again", "session", rr.id,
			"replayed", rep.tip, "fence", s.journal.FenceSeq())
		return rr.check()
	}
	return rep, adopted, plan, nil
}

// claim claims the process record at the lease's epoch (checked again
// under the claim): from here on no turn of an earlier holder can start.
func (rr *restoreRun) claim() error {
	ctx, id, epoch := rr.ctx, rr.id, rr.lease.Epoch()
	var err error
	rr.s.procRev, err = claimProcess(ctx, rr.r.store, id, epoch, func(p processRecord) error {
		left, err := earlierTurnHere(ctx, id, p, epoch)
		if left != nil {
			return left
		}
		return err
	})
	var running *TurnRunningError
	switch {
	case errors.As(err, &running):
		return rr.fail(RestoreTurnRunning, err)
	case err != nil:
		return rr.fail(RestoreLeaseFailed, err)
	}
	return nil
}

// load makes the session what its journal says: its title, creation and
// root loop id, its folded state, the checkpoints on record, and a hub
// over the fenced journal.
func (rr *restoreRun) load(rep *replayed) {
	s := rr.s
	s.title, s.created, s.loopID = rep.started.Title, rep.created, rep.loop.LoopID
	s.state = rep.state
	for _, c := range rep.checkpoints {
		if d, err := storage.ParseDigest(c.Manifest); err == nil {
			s.checkpointJournaled(d)
		}
	}
	s.hub = s.newHub()
}

// publish journals ev through the session's hub; a failure is
// append_failed.
func (rr *restoreRun) publish(loopID string, ev event.Event) error {
	if _, err := rr.s.hub.Publish(rr.ctx, loopID, ev); err != nil {
		return rr.fail(RestoreAppendFailed, rr.s.mutationErr(err))
	}
	return nil
}

// journalRestore journals the restore's mutations, in order:
// RestoreStarted, the open gates closed (GateResolved{restore_unavailable})
// and the open turns (TurnInterrupted{crash}), the drift adopted, the
// workspace's record. It returns the RestoreInfo RestoreDone commits.
func (rr *restoreRun) journalRestore(rep *replayed, adopted adoption, plan *wsPlan) (*RestoreInfo, error) {
	s, epoch := rr.s, rr.lease.Epoch()
	info := &RestoreInfo{Epoch: epoch, Adopted: adopted.Changes, AdoptedBy: adopted.source, Records: s.journal.FenceSeq(), Workspace: plan.found,
		Previous: rep.tenure.previous(), PreviousEpoch: rep.tenure.epoch, HandedOffTo: rep.tenure.handedOffTo,
		Holder: fmt.Sprintf("%d@%s", os.Getpid(), hostname())}
	if err := rr.publish("", event.RestoreStarted{Epoch: epoch}); err != nil {
		return nil, err
	}
	for _, g := range rep.state.Gates {
		if err := rr.publish(s.loopID, event.GateResolved{GateID: g.ID, Action: event.ActionClose, Reason: "restore_unavailable"}); err != nil {
			return nil, err
		}
		info.GatesClosed = append(info.GatesClosed, g.ID)
	}
	for _, t := range rep.state.Open {
		if err := rr.publish(s.loopID, event.TurnInterrupted{TurnID: t.ID, Index: t.Index, Reason: event.ReasonCrash}); err != nil {
			return nil, err
		}
		info.Interrupted = append(info.Interrupted, t.ID)
	}
	if adopted.Drifted() {
		ca := event.ConfigurationAdopted{Changes: adopted.Changes, Source: adopted.source,
			Fingerprint: adopted.live.Fingerprint(), Manifest: adopted.live}
		if err := rr.publish("", ca); err != nil {
			return nil, err
		}
	}
	if plan != nil && plan.record != nil {
		if err := rr.publish("", *plan.record); err != nil {
			return nil, err
		}
	}
	return info, nil
}

// rebuildLoop rebuilds the root loop, with its old id: its engine.
func (rr *restoreRun) rebuildLoop() error {
	if err := rr.r.engineKnown(); err != nil {
		return rr.fail(RestoreLoopFailed, err)
	}
	var err error
	if rr.s.eng, err = rr.r.newEngine(); err != nil {
		return rr.fail(RestoreRuntimeFailed, err)
	}
	return nil
}

// commit journals RestoreDone, the commit point, and makes the session
// live: its watcher, its catalog entry, and a checkpoint of a workspace
// whose changes the restore adopted.
func (rr *restoreRun) commit(info *RestoreInfo) error {
	s := rr.s
	if err := rr.ctx.Err(); err != nil {
		return rr.fail(RestoreContextDone, err)
	}
	if err := rr.publish("", event.RestoreDone{Epoch: rr.lease.Epoch(), Interrupted: info.Interrupted, GatesClosed: info.GatesClosed, Holder: info.Holder}); err != nil {
		return err
	}
	s.restore = info
	go s.watch()
	s.updateCatalog()
	if found := info.Workspace; found != nil && found.Adopted {
		// The directory kept is the workspace from now on: on record at
		// once, so that the next restore finds it the last checkpoint.
		s.checkpointWorkspace(event.TriggerRestore, s.lastTurnID())
	}
	return nil
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
		rep.tip = rec.Seq
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
			rep.tenure = tenure{live: true, epoch: rep.lastFence}
		case event.RestoreStarted:
			rep.pending = nil
		case event.ConfigurationAdopted:
			rep.pending = &ev
		case event.RestoreDone:
			if rep.pending != nil {
				rep.baseline = rep.baseline.adopt(rep.pending)
				rep.pending = nil
			}
			rep.tenure = tenure{live: true, epoch: rep.lastFence}
		case event.HandedOff:
			rep.tenure.handedOffTo = ev.To
		case event.SessionStopped:
			rep.tenure.stopped = true
		case event.LoopStarted:
			if rep.loop == nil {
				rep.loop = &ev
			}
		case event.WorkspaceCheckpointed:
			rep.checkpoints = append(rep.checkpoints, Checkpoint{WorkspaceCheckpointed: ev, Seq: rec.Seq, At: rec.At})
		case event.WorkspaceReverted:
			rep.checkpoints = append(rep.checkpoints, *revertedCheckpoint(ev, rec.Seq, rec.At))
		case event.TurnStarted:
			if rep.turnIndex == nil {
				rep.turnIndex = make(map[string]int)
			}
			rep.turnIndex[ev.TurnID] = ev.Index
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

// abortRestore undoes a restore that failed before RestoreDone: it records
// RestoreErrored, seals the hub and releases the root lease, then the
// session lease. It reports whether the restore appended anything to the
// journal.
func (s *Session) abortRestore(cause error) (journaled bool) {
	journaled = s.recordRestoreErrored(cause)
	if s.hub != nil {
		s.hub.Abort()
	}
	s.cancel(ErrSessionClosed)
	s.releaseLeases()
	return journaled
}

// recordRestoreErrored appends RestoreErrored and reports whether the
// restore appended anything to the journal (its fence, RestoreErrored).
//
// A restore refused before its fence (the checks that refuse come first:
// see RestoreSession) opens the journal to record the refusal — unless
// the journal's last record is that very refusal (RestoreErrored of the
// same kind and message): then it writes nothing, so that retrying a
// refused restore does not grow the journal. When the journal latched a
// failed append, or could not be opened at all (a transient store error),
// it (re-)opens the journal — a new fence at the same epoch, at the tip as
// it really is — so the failure is still on record. It writes nothing once
// the lease is lost or a successor fenced the journal, nor to a journal
// the store refuses as corrupt.
func (s *Session) recordRestoreErrored(cause error) (journaled bool) {
	journaled = s.journal != nil // its fence is there
	select {
	case <-s.lease.Lost():
		return journaled
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
	} else if c, err := ReadCatalog(ctx, s.rig.store, s.id.String()); err == nil && c.State != CatalogBroken {
		// Listings say why the session is served by nobody (a take whose
		// restore failed after the hand-over, a refused restore) until a
		// restore succeeds (a live session's entry has no reason).
		if reason := LastRestoreFailed + " (" + kind + "): " + cause.Error(); c.Reason != reason {
			c.Reason, c.Updated = reason, s.rig.now().UTC()
			if err := writeCatalog(ctx, s.rig.store, c); err != nil {
				s.rig.log.Warn("cannot mark the catalog entry with the failed restore", "session", s.id, "err", err)
			}
		}
	}
	msg := cause.Error()
	var fenced *journal.FencedError
	var lost *journal.JournalLeaseLostError
	var corrupt *storage.CorruptError
	j := s.journal
	switch {
	case j == nil && errors.As(cause, &corrupt):
		return false // the store refuses the journal: nothing can be appended
	case j == nil && s.rig.refusalRecorded(ctx, s.name, kind, msg):
		return false
	case j != nil && j.Err() == nil:
	case j != nil && (errors.As(j.Err(), &fenced) || errors.As(j.Err(), &lost) || errors.As(j.Err(), &corrupt)):
		return journaled // nothing may, or can, be appended
	default:
		var err error
		if j, err = journal.Open(ctx, s.rig.store, s.name, s.lease, journal.WithClock(s.rig.now)); err != nil {
			s.rig.log.Warn("cannot record RestoreErrored", "session", s.id, "err", err)
			return journaled
		}
		journaled = true
	}
	if _, err := j.AppendEvent(ctx, "", event.RestoreErrored{Kind: kind, Message: msg}); err != nil {
		s.rig.log.Warn("cannot record RestoreErrored", "session", s.id, "err", err)
	}
	return journaled
}

// refusalRecorded reports whether the last record of journal name is
// RestoreErrored{kind, message}: a restore refused for the same reason is
// on record already. A journal whose last record cannot be read says no.
func (r *Rig) refusalRecorded(ctx context.Context, name, kind, message string) bool {
	tip, err := r.store.Tip(ctx, name)
	if err != nil || tip == 0 {
		return false
	}
	rp, err := journal.NewReplayer(ctx, r.store, name, tip-1)
	if err != nil {
		return false
	}
	defer rp.Close()
	if !rp.Next() {
		return false
	}
	rec := rp.Record()
	ev, ok := rec.Event.(event.RestoreErrored)
	return ok && rec.Kind == journal.KindEvent && ev.Kind == kind && ev.Message == message
}

// RestoreOption adjusts RestoreSession.
type RestoreOption func(*restoreOptions)

type restoreOptions struct {
	onlyCrashed bool
	onDiverged  WorkspaceChoice
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
