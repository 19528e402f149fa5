package rigtest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"looprig/rig"
	"looprig/rig/journal"
	"looprig/rig/storage"
)

var deleteCases = []testCase{
	{"Stopped", testDeleteStopped},
	{"Crashed", testDeleteCrashed},
	{"HeldRefused", testDeleteHeld},
	{"ExclusiveRootUntouched", testDeleteExclusiveRoot},
	{"UnfinishedCreation", testDeleteUnfinished},
	{"Unknown", testDeleteUnknown},
	{"DeletedBetweenRestoreDiscoveryAndLease", testDeleteDuringRestore},
	{"WorkspaceSymlinkRefused", testDeleteWorkspaceSymlink},
}

// checkGone checks nothing of session id is left but its lease files: no
// journal, no keys, no workspace, not listed; its lease is free at a
// higher epoch than before; restoring it is discovery_failed; and a second
// DeleteSession is *storage.NotFoundError.
func checkGone(t *testing.T, e *env, r *rig.Rig, id uuid.UUID, lastEpoch uint64) {
	t.Helper()
	ctx := t.Context()
	if n := tip(t, e.raw, id); n != 0 {
		t.Errorf("deleted session's journal has tip %d", n)
	}
	if keys, err := e.raw.Keys(ctx, "sessions/"+id.String()+"/"); err != nil || len(keys) != 0 {
		t.Errorf("deleted session's keys: %v, %v", keys, err)
	}
	if info, ok := listed(t, e.raw, id); ok {
		t.Errorf("deleted session is listed: %+v", info)
	}
	if _, err := os.Lstat(filepath.Join(e.ws, id.String())); !os.IsNotExist(err) {
		t.Errorf("deleted session's workspace: %v, want it gone", err)
	}
	name := storage.SessionName(id.String())
	l, err := e.raw.Acquire(ctx, name)
	if err != nil {
		t.Fatalf("lease of the deleted session: %v", err)
	}
	if l.Epoch() <= lastEpoch {
		t.Errorf("lease epoch after the deletion %d, want above %d (epochs never repeat)", l.Epoch(), lastEpoch)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if s, err := r.RestoreSession(ctx, id); err == nil {
		shutdownAtCleanup(t, s)
		t.Errorf("a deleted session restored")
	} else {
		checkRestoreKind(t, err, id, rig.RestoreDiscoveryFailed)
	}
	_, err = rig.DeleteSession(ctx, e.fs, e.ws, id)
	as[*storage.NotFoundError](t, err, "second DeleteSession")
}

// A stopped session with a turn behind it: journal, catalog entry and its
// workspace (with the file its turn wrote) go; the lease is released.
func testDeleteStopped(t *testing.T, e *env) {
	r := e.define()
	s := e.newSession(r, rig.WithTitle("doomed"))
	id := s.SessionID()
	// A read-only directory tree, as a Go module cache leaves behind
	// (run as root, permissions do not stop the removal; as anyone else
	// this is the case that needs rig's removeTree).
	runTurn(t, s, "echo kept > file.txt; mkdir -p ro/sub && echo x > ro/sub/f && chmod 555 ro/sub ro")
	ws := s.Workspace()
	shutdown(t, s)
	if _, err := os.Stat(filepath.Join(ws, "file.txt")); err != nil {
		t.Fatalf("the turn's file: %v", err)
	}
	d, err := rig.DeleteSession(t.Context(), e.fs, e.ws, id)
	if err != nil {
		t.Fatalf("DeleteSession: %v", err)
	}
	if d.ID != id.String() || !d.Journal || !d.Catalog || d.Workspace != filepath.Join(e.ws, id.String()) || d.Epoch <= s.Epoch() {
		t.Errorf("DeleteSession = %+v", d)
	}
	checkGone(t, e, r, id, d.Epoch)
	checkLeaseFree(t, e, storage.SessionName(id.String()))
}

// A crashed session (its holder gone without a shutdown) is deleted like a
// stopped one.
func testDeleteCrashed(t *testing.T, e *env) {
	r := e.define()
	s := e.newSession(r)
	id := s.SessionID()
	runTurn(t, s, "echo before")
	e.fs.crash(t, storage.SessionName(id.String()))
	select {
	case <-s.Done():
	case <-time.After(WaitTimeout):
		t.Fatalf("the session did not notice the loss of its lease")
	}
	if info, ok := listed(t, e.raw, id); !ok || info.State != rig.StateCrashed {
		t.Fatalf("crashed session listed as %+v (listed %v)", info, ok)
	}
	d, err := rig.DeleteSession(t.Context(), e.fs, e.ws, id)
	if err != nil {
		t.Fatalf("DeleteSession of a crashed session: %v", err)
	}
	checkGone(t, e, r, id, d.Epoch)
}

// A session held by a live owner (in this process here) is refused with
// *storage.LeaseHeldError and nothing of it is touched; the owner goes on.
func testDeleteHeld(t *testing.T, e *env) {
	r := e.define()
	s := e.newSession(r, rig.WithTitle("busy"))
	id := s.SessionID()
	runTurn(t, s, "echo one > one.txt")
	before := tip(t, e.raw, id)
	_, err := rig.DeleteSession(t.Context(), e.fs, e.ws, id)
	held := as[*storage.LeaseHeldError](t, err, "DeleteSession of a live session")
	if held.HolderEpoch != s.Epoch() {
		t.Errorf("LeaseHeldError.HolderEpoch = %d, want %d", held.HolderEpoch, s.Epoch())
	}
	if n := tip(t, e.raw, id); n != before {
		t.Errorf("journal tip %d after a refused deletion, was %d", n, before)
	}
	if _, err := os.Stat(filepath.Join(s.Workspace(), "one.txt")); err != nil {
		t.Errorf("workspace after a refused deletion: %v", err)
	}
	if info, ok := listed(t, e.raw, id); !ok || info.State != rig.StateLive {
		t.Errorf("session after a refused deletion listed as %+v (listed %v), want live", info, ok)
	}
	runTurn(t, s, "echo two")
	if s.Err() != nil {
		t.Errorf("the owner faulted after a refused deletion: %v", s.Err())
	}
	shutdown(t, s)
}

// The root of an exclusive placement is the user's: deleting the session
// removes its records and leaves the root and its files alone.
func testDeleteExclusiveRoot(t *testing.T, e *env) {
	root := canonical(t, t.TempDir())
	writeFile(t, filepath.Join(root, "mine.txt"), "user data")
	r := e.define(rig.WithProfile(exclusiveProfile(root)))
	s := e.newSession(r)
	id := s.SessionID()
	runTurn(t, s, "echo made > made.txt")
	shutdown(t, s)
	d, err := rig.DeleteSession(t.Context(), e.fs, e.ws, id)
	if err != nil {
		t.Fatalf("DeleteSession: %v", err)
	}
	if d.Workspace != "" {
		t.Errorf("DeleteSession removed workspace %q of an exclusive session", d.Workspace)
	}
	for _, f := range []string{"mine.txt", "made.txt"} {
		if _, err := os.Stat(filepath.Join(root, f)); err != nil {
			t.Errorf("exclusive root's %s after the deletion: %v", f, err)
		}
	}
	checkGone(t, e, r, id, d.Epoch)
	// The root's lease is untouched and free: a new session takes it.
	s2 := e.newSession(r)
	shutdown(t, s2)
}

// A creation that stopped after the fence (listed broken) can be deleted.
func testDeleteUnfinished(t *testing.T, e *env) {
	id := uuid.New()
	name := storage.SessionName(id.String())
	ctx := t.Context()
	l, err := e.raw.Acquire(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := journal.Open(ctx, e.raw, name, l); err != nil {
		t.Fatal(err)
	}
	epoch := l.Epoch()
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	r := e.define()
	d, err := rig.DeleteSession(ctx, e.fs, e.ws, id)
	if err != nil {
		t.Fatalf("DeleteSession of a fence-only journal: %v", err)
	}
	if !d.Journal || d.Catalog || d.Workspace != "" {
		t.Errorf("DeleteSession = %+v, want the journal only", d)
	}
	checkGone(t, e, r, id, max(d.Epoch, epoch))
}

// An id the store has never seen is *storage.NotFoundError, and no lease is
// taken for it.
func testDeleteUnknown(t *testing.T, e *env) {
	id := uuid.New()
	_, err := rig.DeleteSession(t.Context(), e.fs, e.ws, id)
	as[*storage.NotFoundError](t, err, "DeleteSession of an unknown id")
	if names := e.fs.names(storage.SessionName(id.String())); len(names) != 0 {
		t.Errorf("DeleteSession of an unknown id took its lease: %v", names)
	}
	_, err = rig.DeleteSession(t.Context(), e.fs, e.ws, uuid.Nil)
	as[*storage.InvalidNameError](t, err, "DeleteSession of the nil id")
}

// A restore that found the journal, then waited for the lease while
// another process deleted the session, fails with discovery_failed and
// writes nothing: the deleted session does not come back as broken.
func testDeleteDuringRestore(t *testing.T, e *env) {
	r := e.define()
	s := e.newSession(r, rig.WithTitle("raced"))
	id := s.SessionID()
	shutdown(t, s)
	name := storage.SessionName(id.String())
	var once sync.Once
	e.fs.setAcquireFault(func(n string) error {
		if n == name {
			once.Do(func() {
				if _, err := rig.DeleteSession(context.Background(), e.raw, e.ws, id); err != nil {
					t.Errorf("DeleteSession in the race: %v", err)
				}
			})
		}
		return nil
	})
	s2, err := r.RestoreSession(t.Context(), id)
	if err == nil {
		shutdownAtCleanup(t, s2)
		t.Fatal("a session deleted during its restore was restored")
	}
	checkRestoreKind(t, err, id, rig.RestoreDiscoveryFailed)
	e.fs.setAcquireFault(nil)
	if n := tip(t, e.raw, id); n != 0 {
		t.Errorf("the restore wrote a journal for the deleted session (tip %d)", n)
	}
	if keys, err := e.raw.Keys(t.Context(), "sessions/"+id.String()+"/"); err != nil || len(keys) != 0 {
		t.Errorf("the restore left keys for the deleted session: %v, %v", keys, err)
	}
	checkLeaseFree(t, e, name)
}

// A session workspace that was replaced by a symbolic link is refused, not
// followed: the link's target and the session's records stay.
func testDeleteWorkspaceSymlink(t *testing.T, e *env) {
	r := e.define()
	s := e.newSession(r)
	id := s.SessionID()
	shutdown(t, s)
	ws := filepath.Join(e.ws, id.String())
	target := t.TempDir()
	writeFile(t, filepath.Join(target, "precious.txt"), "keep me")
	if err := os.RemoveAll(ws); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, ws); err != nil {
		t.Fatal(err)
	}
	before := tip(t, e.raw, id)
	_, err := rig.DeleteSession(t.Context(), e.fs, e.ws, id)
	if err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Fatalf("DeleteSession with a symlinked workspace = %v, want a refusal naming it", err)
	}
	if _, err := os.Stat(filepath.Join(target, "precious.txt")); err != nil {
		t.Errorf("the link's target lost its file: %v", err)
	}
	if n := tip(t, e.raw, id); n != before {
		t.Errorf("journal tip %d after a refused deletion, was %d", n, before)
	}
	if _, ok := listed(t, e.raw, id); !ok {
		t.Errorf("the session is no longer listed after a refused deletion")
	}
	checkLeaseFree(t, e, storage.SessionName(id.String()))
}
