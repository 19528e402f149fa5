package rig

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"looprig/rig/storage"
)

// restoreCheck is a restore that takes nothing (CheckRestore): holder is
// the process that holds the session now, nil when nobody does.
type restoreCheck struct {
	holder *storage.Holder
	// fromHandOff: the workspace is missing here, and the checkpoint the
	// holder takes as it hands the session over is to bring it.
	fromHandOff bool
}

// rootFree refuses, as a restore would (*WorkspaceRootBusyError), an
// exclusive root whose lease a process holds other than the session's
// holder (whose root lease is released with the session's at a
// hand-over).
func (c *restoreCheck) rootFree(ctx context.Context, r *Rig, root string) error {
	st, err := r.store.Probe(ctx, rootLeaseName(root))
	if err != nil {
		return fmt.Errorf("workspace root %s: %w", root, err)
	}
	if !st.Held || (c.holder != nil && st.Holder.PID == c.holder.PID && st.Holder.Host == c.holder.Host) {
		return nil
	}
	return &WorkspaceRootBusyError{Root: root, HolderEpoch: st.Epoch,
		Cause: &storage.LeaseHeldError{Name: rootLeaseName(root), HolderEpoch: st.Epoch, Holder: st.Holder}}
}

// CheckRestore makes, without the session's lease and writing nothing
// anywhere, the checks RestoreSession makes before it writes: the
// journal can be replayed, the configuration against its baseline (drift
// goes to the rig's decider), the workspace (a missing one without a
// checkpoint, a root that is not a directory, an exclusive root another
// session holds, a directory diverged from the last checkpoint unless
// OnDiverged says otherwise). holder is the process that holds the
// session now (nil: nobody), whose own root lease is no obstacle, and
// whose checkpoint at the hand-over brings a workspace missing here. It
// returns the error RestoreSession would return (*RestoreError,
// *RestoreRejectedError, *ConfigMismatchError), with nothing journaled.
//
// take runs it before it asks a holder to hand a session over, so that a
// session is handed over only to a process that can restore it. What the
// holder does between the check and the hand-over (the checkpoint it
// takes then) may still make the restore fail: RestoreSession's checks
// are the word.
func (r *Rig) CheckRestore(ctx context.Context, id uuid.UUID, holder *storage.Holder, opts ...RestoreOption) error {
	var o restoreOptions
	for _, opt := range opts {
		opt(&o)
	}
	fail := func(kind RestoreErrorKind, cause error) error {
		if ctx.Err() != nil {
			kind, cause = RestoreContextDone, fmt.Errorf("%w (during %s)", ctx.Err(), kind)
		}
		return &RestoreError{Kind: kind, Session: id, Cause: cause}
	}
	name := storage.SessionName(id.String())
	tip, err := r.store.Tip(ctx, name)
	var corrupt *storage.CorruptError
	switch {
	case errors.As(err, &corrupt):
		return fail(RestoreReplayFailed, fmt.Errorf("the journal is damaged: %w", err))
	case err != nil:
		return fail(RestoreDiscoveryFailed, err)
	case tip == 0:
		return fail(RestoreDiscoveryFailed, fmt.Errorf("session %s has no journal in this store", id))
	}
	s := newSession(r, id, nil)
	defer s.cancel(ErrSessionClosed)
	s.ws = &workspace{placement: r.profile.Placement}
	rep, err := r.replay(ctx, s)
	if err != nil {
		return fail(RestoreReplayFailed, err)
	}
	if rep.started == nil {
		return fail(RestoreDiscoveryFailed, fmt.Errorf("journal of %s has no SessionStarted", id))
	}
	if rep.loop == nil {
		return fail(RestoreDiscoveryFailed, fmt.Errorf("journal of %s has no root LoopStarted", id))
	}
	if _, err := r.checkConfig(ctx, id, rep.baseline); err != nil {
		return err
	}
	if _, err := r.planWorkspace(ctx, s, rep, o.onDiverged, &restoreCheck{holder: holder}); err != nil {
		return fail(workspaceErrorKind(err), err)
	}
	return nil
}
