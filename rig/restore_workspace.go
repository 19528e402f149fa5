// A restore's workspace: planned before the fence (planWorkspace, writing
// nothing), written after it (writeWorkspace, materializeCheckpoint).

package rig

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"looprig/rig/checkpoint"
	"looprig/rig/storage"
)

// planWorkspace decides what a restore does with the workspace of the
// session, from the live profile (whose drift from the record was just
// checked), writing nothing: a session workspace (or an exclusive root
// whose profile checkpoints) that is missing is to be materialized from
// the session's last checkpoint (checkpoint.Materialize: every chunk
// verified, nothing half-written left in its place); without a checkpoint
// a missing session workspace fails the restore rather than coming back
// empty: the files a session worked on are part of what it restores. A
// workspace that exists is reconciled with the last checkpoint
// (reconcile.go): used, brought up to date, kept with its changes, or
// refused as diverged (*WorkspaceDivergedError) unless choice says
// otherwise. A workspace that accepted drift moves elsewhere is a
// directory met for the first time (moved.go).
//
// An exclusive root's lease is taken before anything there is looked at
// (*WorkspaceRootBusyError when another session holds it) and held from
// here on (s.ws; abortRestore releases it): a restore refused for a busy
// root leaves the root as it was. A root or shared directory that exists
// is placed at once; what is to be materialized, and a session
// workspace, are placed by writeWorkspace. The plan's found is nil
// without a checkpoint to compare with (or a new, empty directory to
// report).
//
// check, when not nil, makes it a check that takes nothing (CheckRestore):
// the root's lease is probed, not taken, and nothing is placed.
func (r *Rig) planWorkspace(ctx context.Context, s *Session, rep *replayed, choice WorkspaceChoice, check *restoreCheck) (*wsPlan, error) {
	id := s.id.String()
	ptr := rep.state.Checkpoint
	dir := ""
	switch r.profile.Placement {
	case PlacementSession:
		dir = filepath.Join(r.workspaces, id)
	case PlacementExclusive:
		if s.ws.root == "" { // placed already when the checks run again after the fence
			root, err := canonicalPath(r.profile.Root)
			if err != nil {
				return nil, fmt.Errorf("workspace root %s: %w", r.profile.Root, err)
			}
			if check != nil {
				if err := check.rootFree(ctx, r, root); err != nil {
					return nil, err
				}
				s.ws = &workspace{placement: PlacementExclusive, root: root}
				break
			}
			l, err := r.acquireRoot(ctx, root)
			if err != nil {
				return nil, err
			}
			s.ws = &workspace{placement: PlacementExclusive, root: root, lease: l}
		}
		if r.profile.checkpointMode() != CheckpointOff {
			dir = s.ws.root // canonical: a root given as a link is its target
		}
	}
	plan := &wsPlan{dir: dir}
	was, moved := r.workspaceMoved(rep.baseline) // accepted drift moves it (moved.go)
	if moved {
		s.forgetIndex() // of the directory it worked in before
	}
	if dir != "" {
		fi, err := os.Lstat(dir) // not Stat: a link would take the session's turns elsewhere
		if moved && ptr != nil && err == nil && fi.IsDir() && isEmptyDir(dir) {
			err = fs.ErrNotExist // an empty directory it moves into: the checkpoint goes there
			plan.intoEmpty = true
		}
		switch {
		case errors.Is(err, fs.ErrNotExist) && check != nil && check.holder != nil:
			check.fromHandOff = true // the checkpoint the holder takes as it hands over brings it
		case errors.Is(err, fs.ErrNotExist) && ptr != nil:
			plan.materialize = ptr
			plan.found = &WorkspaceFound{Materialized: true, Files: ptr.Files, Bytes: ptr.Bytes}
		case err != nil && r.profile.Placement == PlacementSession && moved:
			plan.found = &WorkspaceFound{New: true, MovedFrom: was} // placeWorkspace makes it
		case err != nil && r.profile.Placement == PlacementSession:
			return nil, fmt.Errorf("session workspace %s is missing (%w) and the session has no checkpoint to bring it back from; recreate the directory to restore the session with an empty workspace", dir, err)
		case err != nil:
		case fi.Mode()&os.ModeSymlink != 0:
			return nil, fmt.Errorf("workspace %s is a symbolic link, not a directory; replace it with the directory itself to restore the session", dir)
		case !fi.IsDir():
			return nil, fmt.Errorf("workspace %s is not a directory; replace it with a directory to restore the session", dir)
		case ptr != nil && len(rep.checkpoints) > 0:
			p, err := r.reconcile(ctx, s, dir, rep, choice)
			if err != nil {
				return nil, err
			}
			p.dir = dir
			plan = p
		}
	}
	if check != nil {
		if r.profile.Placement != PlacementSession && plan.materialize == nil && !check.fromHandOff {
			if _, err := r.resolveRoot(); err != nil {
				return nil, err
			}
		}
		return plan, nil
	}
	if r.profile.Placement != PlacementSession && plan.materialize == nil && s.ws.dir == "" {
		ws, err := r.placeWorkspace(ctx, id, s.ws.lease)
		if err != nil {
			return nil, err
		}
		s.ws = ws
	}
	return plan, nil
}

// workspaceErrorKind is the restore stage a failure to plan the
// workspace fails: a root another session holds is lease_failed, a
// diverged directory workspace_diverged, anything else
// materialize_failed.
func workspaceErrorKind(err error) RestoreErrorKind {
	var busy *WorkspaceRootBusyError
	var diverged *WorkspaceDivergedError
	switch {
	case errors.As(err, &busy):
		return RestoreLeaseFailed
	case errors.As(err, &diverged):
		return RestoreWorkspaceDiverged
	}
	return RestoreMaterializeFailed
}

// writeWorkspace carries out plan once the journal is fenced: it
// materializes a missing workspace from its checkpoint, places what
// planWorkspace left unplaced, and brings a directory found up to date or
// moves it aside (what it writes, it writes once the workspace is placed:
// an exclusive root's lease held).
func (r *Rig) writeWorkspace(ctx context.Context, s *Session, rep *replayed, plan *wsPlan) error {
	if plan.materialize != nil {
		if plan.intoEmpty && !removeIfEmpty(plan.dir) {
			return fmt.Errorf("workspace %s is no longer empty; restore again to compare it with the checkpoint", plan.dir)
		}
		if err := r.materializeCheckpoint(ctx, s, plan.materialize, plan.dir); err != nil {
			return err
		}
	}
	if r.profile.Placement == PlacementSession || s.ws.dir == "" {
		ws, err := r.placeWorkspace(ctx, s.id.String(), s.ws.lease)
		if err != nil {
			return err
		}
		s.ws = ws
	}
	if plan.update || plan.moveAside || !plan.lineage.IsZero() {
		return r.apply(ctx, s, plan, plan.dir, rep.checkpoints[len(rep.checkpoints)-1])
	}
	return nil
}

// materializeCheckpoint writes checkpoint ptr of session s as dir, and
// makes the stat index of what it wrote the session's (the next
// checkpoint reads only what changed since).
func (r *Rig) materializeCheckpoint(ctx context.Context, s *Session, ptr *Checkpoint, dir string) error {
	id := s.id.String()
	d, err := storage.ParseDigest(ptr.Manifest)
	if err != nil {
		return fmt.Errorf("the checkpoint journaled at %d: %w", ptr.Seq, err)
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		return fmt.Errorf("materialize the workspace of %s: %w", id, err)
	}
	start := r.now()
	ix, err := checkpoint.MaterializeIndexed(ctx, r.store, d, dir, r.materializeProgress)
	if err != nil {
		return fmt.Errorf("materialize the workspace of %s from its checkpoint (journaled at %d): %w", id, ptr.Seq, err)
	}
	if filepath.Dir(filepath.Clean(dir)) == filepath.Clean(r.workspaces) {
		// A private workspace in the store: the store's rule wins over the
		// root mode the checkpoint recorded (another machine's, a project
		// directory a fork came from): 0700, as placeWorkspace makes it.
		// What is inside keeps its modes; an exclusive root keeps its own.
		if err := os.Chmod(dir, 0o700); err != nil {
			return fmt.Errorf("materialize the workspace of %s: %w", id, err)
		}
	}
	s.ckpt.loaded = true
	s.keepIndex(ix)
	r.log.Info("workspace materialized from its checkpoint", "session", id, "dir", dir,
		"files", ptr.Files, "bytes", ptr.Bytes, "took", r.now().Sub(start))
	return nil
}
