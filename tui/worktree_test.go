package tui

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"

	"looprig/rig"
	"looprig/rig/storage"
)

// n in a busy directory of a git work tree is told to try the create
// dialog's worktree option, which the dialog offers as a field of its own
// (space toggles it) and passes on to the host it starts.
func TestWorktreeChoice(t *testing.T) {
	repo := filepath.Join(t.TempDir(), "app")
	if err := os.MkdirAll(filepath.Join(repo, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	held := &storage.LeaseHeldError{Name: "workspace-roots/5f0c", HolderEpoch: 9, Holder: storage.Holder{PID: 4242, Host: "devbox"}}
	busy := func(root string) string {
		return diagnose(&rig.LifecycleError{Stage: rig.StagePlacement, Cause: &rig.WorkspaceRootBusyError{Root: root, HolderEpoch: 9, Cause: held}}).remedy
	}
	if r := busy(filepath.Join(repo, "src")); !strings.Contains(r, "n again with the worktree option") {
		t.Fatalf("busy directory in a git work tree: remedy %q", r)
	}
	if r := busy(t.TempDir()); strings.Contains(r, "worktree") {
		t.Fatalf("busy directory outside any git work tree: remedy %q", r)
	}

	d := newCreateDialog([]profileChoice{{name: "default"}}, repo)
	if a := d.accept(); a.worktree {
		t.Fatal("the worktree option is on by default")
	}
	var c common
	for d.field != fieldWorktree {
		d.key(c, tea.KeyMsg{Type: tea.KeyDown}, dialogArea{})
	}
	d.key(c, tea.KeyMsg{Type: tea.KeySpace, Runes: []rune{' '}}, dialogArea{})
	if a := d.accept(); !a.worktree || a.dir != repo {
		t.Fatalf("after space on the worktree field: %+v", a)
	}
}
