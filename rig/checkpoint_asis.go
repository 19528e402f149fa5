package rig

import (
	"context"
	"maps"
	"slices"

	"looprig/rig/checkpoint"
	"looprig/rig/event"
	"looprig/rig/storage"
)

// checkpointAsItIs checkpoints the workspace as it is (the stat index
// makes an unchanged one a walk) and journals it (trigger: TriggerRevert,
// TriggerTurnStart) when it is not the pointer; it returns the workspace's
// manifest and digest (none for TriggerTurnStart when the content is the
// pointer's). s.ckpt.mu is held.
func (s *Session) checkpointAsItIs(ctx context.Context, trigger string) (*checkpoint.Manifest, storage.Digest, error) {
	turnID := s.lastTurnID()
	run := s.beginCheckpoint(trigger, turnID)
	defer s.endCheckpoint(run)
	s.loadIndex()
	res, err := checkpoint.Take(ctx, s.rig.store, s.ws.dir, s.takeOptions(run))
	if err != nil {
		return nil, storage.Digest{}, err
	}
	s.mu.Lock()
	var ptr string
	if s.state.Checkpoint != nil && s.state.CheckpointSkipped == nil {
		ptr = s.state.Checkpoint.Manifest
	}
	s.mu.Unlock()
	same := ptr == res.Manifest.String()
	if !same && trigger == event.TriggerTurnStart && ptr != "" && sameContent(ctx, s.rig.store, ptr, res.Manifest) {
		// Unchanged but for where its content is stored (files a revert
		// wrote, read again): nothing to record before the turn. The
		// index is not kept: it names the new packs, which no record
		// does (gc takes them).
		return nil, storage.Digest{}, nil
	}
	if !same {
		bg, cancel := s.bg()
		_, err = s.hub.Publish(bg, "", event.WorkspaceCheckpointed{
			Manifest: res.Manifest.String(), Files: res.Files, Bytes: res.Bytes, Read: res.BytesRead,
			Skipped: len(res.Skipped), TurnID: turnID, Trigger: trigger, Host: hostname(),
		})
		cancel()
		if err != nil {
			return nil, storage.Digest{}, s.mutationErr(err)
		}
		s.checkpointJournaled(res.Manifest)
	}
	s.keepIndex(res.Index)
	have, err := checkpoint.Load(ctx, s.rig.store, res.Manifest)
	if err != nil {
		return nil, storage.Digest{}, err
	}
	return have, res.Manifest, nil
}

// checkpointBeforeTurn checkpoints the workspace before a turn starts
// when it changed since the workspace pointer (edits by hand between
// turns; TriggerTurnStart), so that the turn's diff and a revert of it
// start from what the turn found. Unchanged, it costs a walk of the stat
// index and journals nothing. Before the first checkpoint (the first
// turn) it does nothing: the session's first turn has no state before it
// in the store. It never fails the turn: a failure is journaled as a skip
// (WorkspaceCheckpointSkipped), and a revert of the turn then says it
// cannot know the workspace before it.
func (s *Session) checkpointBeforeTurn(ctx context.Context) {
	if s.rig.profile.checkpointMode() != CheckpointTurn || s.ws == nil || s.ws.dir == "" {
		return
	}
	s.mu.Lock()
	none := s.state.Checkpoint == nil
	s.mu.Unlock()
	if none {
		return
	}
	s.ckpt.mu.Lock()
	defer s.ckpt.mu.Unlock()
	if _, _, err := s.checkpointAsItIs(ctx, event.TriggerTurnStart); err != nil {
		skip := skipped(s.lastTurnID(), event.TriggerTurnStart, err)
		if _, perr := s.hub.Publish(ctx, "", skip); perr != nil {
			s.rig.log.Warn("checkpoint before a turn: not journaled", "err", perr)
		}
	}
}

// sameContent says whether checkpoint ptr (hex) holds what manifest does:
// the same digest, or the same entries, directories and exclusions stored
// in other packs (content read again after a revert wrote it, with new
// times, is stored anew; its manifest then names other pack locations).
func sameContent(ctx context.Context, store storage.Store, ptr string, manifest storage.Digest) bool {
	if ptr == manifest.String() {
		return true
	}
	d, err := storage.ParseDigest(ptr)
	if err != nil {
		return false
	}
	changes, err := checkpoint.Diff(ctx, store, d, manifest, checkpoint.DiffOptions{NoPatch: true})
	if err != nil || len(changes) != 0 {
		return false
	}
	a, err := checkpoint.Load(ctx, store, d)
	if err != nil {
		return false
	}
	b, err := checkpoint.Load(ctx, store, manifest)
	if err != nil {
		return false
	}
	return a.RootMode == b.RootMode && maps.Equal(a.Dirs, b.Dirs) && slices.Equal(a.Excluded, b.Excluded)
}
