package tui

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"looprig/rig"
	"looprig/rig/storage/memstore"
)

// turnAndStop runs input as a turn of session s, waits for it and its
// checkpoint, and shuts s down.
func turnAndStop(t *testing.T, s *rig.Session, input string) {
	t.Helper()
	ctx := context.Background()
	if _, err := s.Submit(ctx, input); err != nil {
		t.Fatal(err)
	}
	if err := s.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestFlowWorkspaceDiverged: a session that moved on on another machine
// while its directory here got work of its own fails r as
// workspace_diverged; r again asks, and "Keep this directory" restores it
// with the directory as it is (the host is started with the choice).
func TestFlowWorkspaceDiverged(t *testing.T) {
	st := memstore.New()
	opts := flowOptions(t, st)
	ctx := context.Background()
	s, err := testRig(t, st, opts).NewSession(ctx, rig.WithTitle("travelling"))
	if err != nil {
		t.Fatal(err)
	}
	id := s.SessionID()
	turnAndStop(t, s, "printf 'a\\n' > a.txt")
	other := opts
	other.Workspaces = t.TempDir() // another machine
	sB, err := testRig(t, st, other).RestoreSession(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	turnAndStop(t, sB, "printf 'from the other machine\\n' > a.txt")
	mine := filepath.Join(opts.Workspaces, id.String(), "mine.txt")
	if err := os.WriteFile(mine, []byte("written here meanwhile\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	f := startFlow(t, st, opts)
	f.waitView("travelling", "idle")
	f.typeText("r")
	f.waitView("workspace_diverged")
	f.typeText("r")
	f.waitView("Workspace diverged", "Keep this directory", "Take the checkpoint", "mine.txt")
	f.key("right")
	f.key("enter")
	f.selectedLive()
	f.waitView("workspace with changes no checkpoint had, kept")
	if b, err := os.ReadFile(mine); err != nil || string(b) != "written here meanwhile\n" {
		t.Errorf("mine.txt after keeping the directory: %q, %v", b, err)
	}
	f.quit()
}
