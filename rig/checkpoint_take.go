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
		s.ckpt.index = ix
	}
}

// saveIndex keeps ix in the index file (0600, replaced atomically); a
// failure only costs the next restore's first checkpoint a full read.
func (s *Session) saveIndex(ix *checkpoint.Index) {
	path := s.rig.indexPath(s.id.String())
	if path == "" {
		return
	}
	b, err := checkpoint.MarshalIndex(ix)
	if err == nil {
		err = atomicfile.WriteFile(path, b)
	}
	if err != nil {
		s.rig.log.Warn("checkpoint index not saved", "session", s.id, "err", err)
	}
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
	s.loadIndex()
	ctx, cancel := context.WithTimeout(s.ctx, checkpointTimeout)
	defer cancel()
	res, err := checkpoint.Take(ctx, s.rig.store, s.ws.dir, checkpoint.Options{
		Exclude:  s.rig.profile.CheckpointExclude,
		Index:    s.ckpt.index,
		MaxBytes: s.rig.profile.checkpointMax(),
	})
	bg, bgCancel := s.bg()
	defer bgCancel()
	if err != nil {
		skip := event.WorkspaceCheckpointSkipped{TurnID: turnID, Trigger: trigger, Reason: "checkpoint failed: " + err.Error()}
		var tl *checkpoint.TooLargeError
		if errors.As(err, &tl) {
			skip.Reason = fmt.Sprintf("the workspace holds %d bytes, over checkpoint_max (%d bytes): raise checkpoint_max in the profile, or leave files out with checkpoint_exclude or .looprigignore", tl.Size, tl.Limit)
			skip.Bytes, skip.Limit = tl.Size, tl.Limit
		}
		if s.ctx.Err() != nil {
			return // the session is closing on a fault: nothing can be journaled
		}
		s.rig.log.Warn("workspace checkpoint skipped", "session", s.id, "reason", skip.Reason)
		s.hub.Publish(bg, "", skip) // a failure faults the session
		return
	}
	s.ckpt.index = res.Index
	s.saveIndex(res.Index)
	if trigger == event.TriggerStop {
		// Each turn has its record (FindTurnCheckpoints pairs them); a
		// shutdown's is journaled only when it is news.
		s.mu.Lock()
		same := s.state.Checkpoint != nil && s.state.Checkpoint.Manifest == res.Manifest.String() && s.state.CheckpointSkipped == nil
		s.mu.Unlock()
		if same {
			return
		}
	}
	s.hub.Publish(bg, "", event.WorkspaceCheckpointed{
		Manifest: res.Manifest.String(), Files: res.Files, Bytes: res.Bytes, Read: res.BytesRead,
		Skipped: len(res.Skipped), TurnID: turnID, Trigger: trigger,
	})
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
