package rig

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"looprig/internal/atomicfile"

	"looprig/rig/checkpoint"
	"looprig/rig/event"
	"looprig/rig/storage"
)

// checkpointTimeout bounds one checkpoint of a workspace (a workspace at
// checkpoint_max's default, 1 GiB, takes a few seconds to store).
const checkpointTimeout = 5 * time.Minute

// checkpointer is a session's state of checkpointing: the stat index of
// the last checkpoint, so that files that did not change are not read
// again. It is kept in memory and in indexPath (this machine's: the stat
// data is), so that the first checkpoint after a restore here reads only
// what changed.
type checkpointer struct {
	mu     sync.Mutex
	index  *checkpoint.Index
	loaded bool // index was looked for in its file
	saved  bool // index is what its file holds
	// journaled holds the manifests of the checkpoints the session's
	// journal records (a restore's replay, then each one journaled): an
	// index whose Manifest is one of them names only blobs a checkpoint
	// on record references, which no sweep deletes.
	journaled map[storage.Digest]bool
}

// CheckpointStep is a point in the taking of a checkpoint, after which a
// crash leaves a different state behind (WithCheckpointHook).
type CheckpointStep string

// The steps of a checkpoint, in order.
const (
	// StepStored: the packs, the trees and the snapshot are in the store,
	// nothing is journaled: unreferenced blobs, for a sweep.
	StepStored CheckpointStep = "stored"
	// StepJournaled: WorkspaceCheckpointed is journaled; the stat index
	// on disk still describes the checkpoint before.
	StepJournaled CheckpointStep = "journaled"
	// StepIndexed: the stat index describing the new checkpoint is saved.
	StepIndexed CheckpointStep = "indexed"
)

// WithCheckpointHook has hook called at each step of every checkpoint a
// session takes, on the goroutine taking it: fault-injection tests stop a
// process there (see rigtest's crash-in-every-window cases).
func WithCheckpointHook(hook func(id string, step CheckpointStep)) Option {
	return func(r *Rig) { r.checkpointHook = hook }
}

// step calls the checkpoint hook, if any.
func (s *Session) step(st CheckpointStep) {
	if h := s.rig.checkpointHook; h != nil {
		h(s.id.String(), st)
	}
}

// maxIndexFile bounds the index file a session reads (about 1 KiB a file:
// 10k files take about 2 MB).
const maxIndexFile = 64 << 20

// indexPath is where session id keeps its checkpoints' stat index: beside
// the session workspaces, never inside one (it is not the workspace's);
// "" without a workspaces directory.
func (r *Rig) indexPath(id string) string { return indexPath(r.workspaces, id) }

// indexPath is the index file of session id in workspaces ("" for none).
func indexPath(workspaces, id string) string {
	if workspaces == "" {
		return ""
	}
	return filepath.Join(workspaces, "."+id+".index")
}

// loadIndex reads the index file once; a missing, oversized or unreadable
// one is no index (every file is read).
func (s *Session) loadIndex() {
	if s.ckpt.loaded {
		return
	}
	s.ckpt.loaded = true
	path := s.rig.indexPath(s.id.String())
	if path == "" {
		return
	}
	f, err := os.Open(path)
	if err != nil {
		return
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxIndexFile+1))
	if err != nil || len(b) > maxIndexFile {
		return
	}
	if ix, err := checkpoint.UnmarshalIndex(b); err == nil {
		s.ckpt.index, s.ckpt.saved = ix, true
	}
}

// indexTrusted reports whether the session's index names a checkpoint its
// journal records (see checkpointer.journaled).
func (s *Session) indexTrusted() bool {
	return s.ckpt.index != nil && s.ckpt.journaled[s.ckpt.index.Manifest]
}

// checkpointJournaled records that the journal holds checkpoint d.
func (s *Session) checkpointJournaled(d storage.Digest) {
	if s.ckpt.journaled == nil {
		s.ckpt.journaled = make(map[storage.Digest]bool)
	}
	s.ckpt.journaled[d] = true
}

// saveIndex keeps ix in the index file (0600, replaced atomically) and
// reports whether it did; a failure only costs the next restore's first
// checkpoint a full read.
func (s *Session) saveIndex(ix *checkpoint.Index) bool {
	path := s.rig.indexPath(s.id.String())
	if path == "" {
		return false
	}
	b, err := checkpoint.MarshalIndex(ix)
	if err == nil {
		err = atomicfile.WriteFile(path, b)
	}
	if err != nil {
		s.rig.log.Warn("checkpoint index not saved", "session", s.id, "err", err)
		return false
	}
	return true
}

// checkpointWorkspace takes a checkpoint of the session's workspace when
// the profile's mode asks for one at trigger (the end of turn turnID, or
// the shutdown), and journals WorkspaceCheckpointed; when it cannot be
// taken (over checkpoint_max, a store error, a workspace that cannot be
// read) it journals WorkspaceCheckpointSkipped with the reason instead,
// so a pointer older than the workspace is never silent. Every turn's
// checkpoint is journaled, so that each turn's changes are known; a
// shutdown's only when its manifest is not the pointer already. It runs
// while nothing else writes the workspace on the session's behalf: after
// the turn's end is journaled and before the next turn can start, or
// after the last turn at shutdown (which then takes the turn's place).
func (s *Session) checkpointWorkspace(trigger, turnID string) {
	mode := s.rig.profile.checkpointMode()
	if mode == CheckpointOff || (mode == CheckpointStop && trigger == event.TriggerTurn) {
		return
	}
	if trigger == event.TriggerTurn {
		// Once Shutdown began, its own checkpoint follows the turn's end:
		// taking one here too would only make Shutdown wait for it.
		s.mu.Lock()
		closing := s.closed
		s.mu.Unlock()
		if closing {
			return
		}
	}
	s.ckpt.mu.Lock()
	defer s.ckpt.mu.Unlock()
	run := s.beginCheckpoint(trigger, turnID) // see checkpoint_busy.go
	defer s.endCheckpoint(run)
	s.loadIndex()
	ctx, cancel := context.WithTimeout(s.ctx, checkpointTimeout)
	defer cancel()
	res, err := checkpoint.Take(ctx, s.rig.store, s.ws.dir, s.takeOptions(run))
	if err != nil {
		skip := skipped(turnID, trigger, err)
		if s.ctx.Err() != nil {
			return // the session is closing on a fault: nothing can be journaled
		}
		s.rig.log.Warn("workspace checkpoint skipped", "session", s.id, "reason", skip.Reason)
		bg, cancel := s.bg()
		s.hub.Publish(bg, "", skip) // a failure faults the session
		cancel()
		return
	}
	s.step(StepStored)
	if trigger == event.TriggerStop {
		// Each turn has its record (FindTurnCheckpoints pairs them); a
		// shutdown's is journaled only when it is news.
		s.mu.Lock()
		same := s.state.Checkpoint != nil && s.state.Checkpoint.Manifest == res.Manifest.String() && s.state.CheckpointSkipped == nil
		s.mu.Unlock()
		if same {
			s.keepIndex(res.Index)
			return
		}
	}
	bg, cancel := s.bg() // after the step: a hook holding it does not eat the append's time
	_, err = s.hub.Publish(bg, "", event.WorkspaceCheckpointed{
		Manifest: res.Manifest.String(), Files: res.Files, Bytes: res.Bytes, Read: res.BytesRead,
		Skipped: len(res.Skipped), TurnID: turnID, Trigger: trigger, Host: hostname(),
	})
	cancel()
	if err != nil {
		// Not on record (the session faults): the index on disk stays the
		// one of the checkpoint before.
		s.rig.log.Warn("workspace checkpoint not journaled", "session", s.id, "err", err)
		return
	}
	s.checkpointJournaled(res.Manifest)
	s.step(StepJournaled)
	s.keepIndex(res.Index)
	s.step(StepIndexed)
}

// keepIndex makes ix, whose Manifest is journaled, the session's index,
// in memory and in its file. Saved only once its checkpoint is on record,
// an index never vouches for blobs no journal references.
func (s *Session) keepIndex(ix *checkpoint.Index) {
	if ix == s.ckpt.index && s.ckpt.saved {
		return // the same, saved already
	}
	s.ckpt.index = ix
	s.ckpt.saved = s.saveIndex(ix)
}

// lastTurnID is the id of the last turn that ended, "" before any.
func (s *Session) lastTurnID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state.LastEnd == nil {
		return ""
	}
	return s.state.LastEnd.TurnID
}

// takeOptions are the options of a checkpoint of the session's workspace
// that reports its progress to run. s.ckpt.mu is held.
func (s *Session) takeOptions(run *checkpointRun) checkpoint.Options {
	return checkpoint.Options{
		Exclude:      s.rig.profile.CheckpointExclude,
		Include:      s.rig.profile.CheckpointInclude,
		Index:        s.ckpt.index,
		IndexTrusted: s.indexTrusted(),
		MaxBytes:     s.rig.profile.checkpointMax(),
		Progress:     run.report,
	}
}

// skipped is the record of a checkpoint (trigger, after turnID) that
// failed with err: over checkpoint_max, said with the way out.
func skipped(turnID, trigger string, err error) event.WorkspaceCheckpointSkipped {
	skip := event.WorkspaceCheckpointSkipped{TurnID: turnID, Trigger: trigger, Reason: "checkpoint failed: " + err.Error()}
	var tl *checkpoint.TooLargeError
	if errors.As(err, &tl) {
		skip.Reason = fmt.Sprintf("the workspace holds %d bytes, over checkpoint_max (%d bytes): raise checkpoint_max in the profile, or leave files out with checkpoint_exclude or .looprigignore", tl.Size, tl.Limit)
		skip.Bytes, skip.Limit = tl.Size, tl.Limit
	}
	return skip
}
