package rig

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/google/uuid"

	"looprig/rig/storage"
)

// deleteReleaseTimeout bounds the release of the lease DeleteSession took.
const deleteReleaseTimeout = 5 * time.Second

// DeletedSession is what DeleteSession removed.
type DeletedSession struct {
	ID string
	// Epoch is the lease epoch the deletion ran under.
	Epoch uint64
	// Workspace is the session's own workspace directory that was removed,
	// "" when it had none (an exclusive or shared root is never removed).
	Workspace string
	// Journal and Catalog report whether there was a journal and a catalog
	// entry to remove.
	Journal, Catalog bool
	// Blobs are the blobs the session's journal referenced (its
	// checkpoints, its agent transcript), and LastCheckpoint when it last
	// journaled one: FreeSessionBlobs deletes those no other session
	// references.
	Blobs          []storage.Digest
	LastCheckpoint time.Time
}

// DeleteSession removes session id for good: its journal, its keys in the
// store (the catalog entry) and its own workspace directory
// (<workspaces>/<id>, the directory of session placement; the root of an
// exclusive or shared placement belongs to the user and is never touched).
//
// It takes the session's lease first, so a session held by any process,
// this one included, is refused with *storage.LeaseHeldError and nothing
// can restore the session while it is being removed. The catalog entry goes
// last: a deletion that stops midway (a crash, a full disk) leaves the
// session listed, and DeleteSession again finishes the job. A session with
// neither journal nor catalog entry is *storage.NotFoundError. The lease's
// own files stay behind (a few bytes): its epochs must never repeat.
//
// workspaces is the directory of session-placement workspaces (the one
// given to Define with WithWorkspaces); "" removes no directory.
func DeleteSession(ctx context.Context, store storage.Store, workspaces string, id uuid.UUID) (_ DeletedSession, err error) {
	out := DeletedSession{ID: id.String()}
	if id == uuid.Nil {
		return out, &storage.InvalidNameError{Name: id.String(), Reason: "the nil session id"}
	}
	name := storage.SessionName(id.String())
	// An unknown id takes no lease. What exists is looked at again under
	// the lease: a holder may have written until the moment it released.
	keys, journal, err := sessionRecords(ctx, store, id)
	if err != nil {
		return out, err
	}
	if len(keys) == 0 && !journal {
		return out, &storage.NotFoundError{Key: name}
	}

	lease, err := acquireAfterExit(ctx, store, name)
	if err != nil {
		return out, fmt.Errorf("delete session %s: %w", id, err)
	}
	out.Epoch = lease.Epoch()
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), deleteReleaseTimeout)
		defer cancel()
		if rerr := lease.Release(rctx); rerr != nil && err == nil {
			err = fmt.Errorf("delete session %s: done, but releasing its lease failed: %w", id, rerr)
		}
	}()
	if keys, out.Journal, err = sessionRecords(ctx, store, id); err != nil {
		return out, err
	}

	if workspaces != "" {
		dir := filepath.Join(workspaces, id.String())
		if fi, err := os.Lstat(dir); err == nil {
			if !fi.IsDir() {
				return out, fmt.Errorf("delete session %s: its workspace %s is not a directory; remove it by hand", id, dir)
			}
			if err := removeTree(dir); err != nil {
				return out, fmt.Errorf("delete session %s: remove its workspace: %w", id, err)
			}
			out.Workspace = dir
		} else if !errors.Is(err, os.ErrNotExist) {
			return out, fmt.Errorf("delete session %s: its workspace: %w", id, err)
		}
		os.Remove(indexPath(workspaces, id.String())) // its checkpoints' stat index (checkpoint_take.go)
	}
	if out.Journal {
		// What it referenced, while the journal can still say: what can
		// be read of it (a damaged journal or manifest frees less).
		out.Blobs, out.LastCheckpoint, _ = sessionBlobs(ctx, store, id, true)
	}
	if err := store.Delete(ctx, name); err != nil {
		return out, fmt.Errorf("delete session %s: remove its journal: %w", id, err)
	}
	// The catalog entry last: until it is gone the session stays listed.
	catalog := storage.CatalogKey(id.String())
	for _, k := range keys {
		if k == catalog {
			out.Catalog = true
			continue
		}
		if err := store.DeleteKey(ctx, k, storage.AnyRevision); err != nil {
			return out, fmt.Errorf("delete session %s: remove key %s: %w", id, k, err)
		}
	}
	if out.Catalog {
		if err := store.DeleteKey(ctx, catalog, storage.AnyRevision); err != nil {
			return out, fmt.Errorf("delete session %s: remove its catalog entry: %w", id, err)
		}
	}
	return out, nil
}

// sessionRecords lists the store keys of session id and reports whether it
// has a journal (an empty one counts as none; a damaged one is a journal).
func sessionRecords(ctx context.Context, store storage.Store, id uuid.UUID) (keys []string, journal bool, err error) {
	keys, err = store.Keys(ctx, sessionsPrefix+id.String()+"/")
	if err != nil {
		return nil, false, fmt.Errorf("delete session %s: list its keys: %w", id, err)
	}
	tip, err := store.Tip(ctx, storage.SessionName(id.String()))
	var corrupt *storage.CorruptError
	switch {
	case errors.As(err, &corrupt): // removed like any other
		return keys, true, nil
	case IsNotFound(err):
		return keys, false, nil
	case err != nil:
		return nil, false, fmt.Errorf("delete session %s: read its journal: %w", id, err)
	}
	return keys, tip > 0, nil
}

// removeTree removes dir and everything in it, like os.RemoveAll, also
// when turns left directories without write permission (a Go module cache
// is 0555 throughout): on a permission error it gives the owner write
// access to every directory in the tree (symbolic links are not followed)
// and tries again.
func removeTree(dir string) error {
	err := os.RemoveAll(dir)
	if err == nil || !errors.Is(err, fs.ErrPermission) {
		return err
	}
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, werr error) error {
		if werr == nil && d.IsDir() {
			if info, err := d.Info(); err == nil && info.Mode().Perm()&0o700 != 0o700 {
				_ = os.Chmod(path, info.Mode().Perm()|0o700)
			}
		}
		return nil
	})
	return os.RemoveAll(dir)
}
