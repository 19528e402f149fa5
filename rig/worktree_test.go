package rig_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/google/uuid"

	"looprig/rig"
	"looprig/rig/storage/memstore"
)

// A session created with an id of the caller's and a worktree records
// the worktree (WorktreeAdded, folded into its catalog entry, read back by
// RecordedWorktree) at its canonical root; the id cannot be taken twice,
// and a worktree is an exclusive root or nothing.
func TestNewSessionWithWorktree(t *testing.T) {
	mem := memstore.New()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	p := rig.DemoProfile()
	p.Placement, p.Root, p.PlacementPinned = rig.PlacementExclusive, root, false
	r, err := rig.Define(rig.WithStore(mem), rig.WithWorkspaces(t.TempDir()), rig.WithProfile(p))
	if err != nil {
		t.Fatal(err)
	}
	id := uuid.New()
	s, err := r.NewSession(t.Context(), rig.WithSessionID(id), rig.WithWorktree("/src/app", "looprig/x"))
	if err != nil {
		t.Fatal(err)
	}
	if s.SessionID() != id {
		t.Fatalf("session id %s, want %s", s.SessionID(), id)
	}
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := rig.CatalogWorktree{Repo: "/src/app", Branch: "looprig/x", Path: root}
	c, err := rig.ReadCatalog(t.Context(), mem, id.String())
	if err != nil || c.Worktree == nil || *c.Worktree != want {
		t.Fatalf("catalog worktree %+v (%v), want %+v", c.Worktree, err, want)
	}
	if w := rig.RecordedWorktree(t.Context(), mem, id); w == nil || *w != want {
		t.Fatalf("RecordedWorktree = %+v, want %+v", w, want)
	}
	if _, err := r.NewSession(t.Context(), rig.WithSessionID(id)); err == nil {
		t.Fatal("a second session took an id the store has")
	}
	if c, _ := rig.ReadCatalog(t.Context(), mem, id.String()); c.Worktree == nil || c.Epoch != 1 {
		t.Fatalf("the refused creation touched the session: %+v", c)
	}

	scratch, err := rig.Define(rig.WithStore(mem), rig.WithWorkspaces(t.TempDir()), rig.WithProfile(rig.DemoProfile()))
	if err != nil {
		t.Fatal(err)
	}
	_, err = scratch.NewSession(t.Context(), rig.WithWorktree("/src/app", "b"))
	if le := (*rig.LifecycleError)(nil); !errors.As(err, &le) || le.Stage != rig.StageValidate {
		t.Fatalf("a worktree for a private directory in the store: %v, want refused at validate", err)
	}
}
