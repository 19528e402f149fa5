package gitwt

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// gitIn runs git in dir for a test, with an identity of its own.
func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com", "GIT_CONFIG_GLOBAL=/dev/null")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// newRepo makes a repository with one commit in a fresh directory and
// returns its work tree.
func newRepo(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	repo := filepath.Join(t.TempDir(), "app")
	if err := os.MkdirAll(filepath.Join(repo, "src"), 0o755); err != nil {
		t.Fatal(err)
	}
	gitIn(t, repo, "init", "--quiet", "--initial-branch=main")
	os.WriteFile(filepath.Join(repo, "src", "a.txt"), []byte("a\n"), 0o644)
	os.WriteFile(filepath.Join(repo, ".gitignore"), []byte("*.o\n"), 0o644)
	gitIn(t, repo, "add", ".")
	gitIn(t, repo, "commit", "--quiet", "-m", "first")
	return repo
}

func TestFind(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t)
	r, err := Find(ctx, filepath.Join(repo, "src"))
	if err != nil || r.Top != repo || r.Main != repo {
		t.Fatalf("Find(src) = %+v, %v; want top and main %s", r, err, repo)
	}
	path := Place(repo, "looprig/x")
	if want := filepath.Join(filepath.Dir(repo), "app.worktrees", "looprig", "x"); path != want {
		t.Fatalf("Place = %s, want %s", path, want)
	}
	if err := Add(ctx, repo, path, "looprig/x"); err != nil {
		t.Fatal(err)
	}
	// From inside a linked worktree, the main work tree is still the
	// repository's: a worktree made from there sits beside it too.
	r, err = Find(ctx, path)
	if err != nil || r.Top != path || r.Main != repo {
		t.Fatalf("Find(worktree) = %+v, %v; want top %s, main %s", r, err, path, repo)
	}
	_, err = Find(ctx, t.TempDir())
	if nr := (*NotRepoError)(nil); !errors.As(err, &nr) {
		t.Fatalf("Find(not a repo) = %v, want *NotRepoError", err)
	}
}

func TestAddRefuses(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t)
	path := Place(repo, "feature")
	if err := Add(ctx, repo, path, "feature"); err != nil {
		t.Fatal(err)
	}
	if got := gitIn(t, path, "rev-parse", "--abbrev-ref", "HEAD"); got != "feature" {
		t.Fatalf("worktree on %q, want feature", got)
	}
	if _, err := os.Stat(filepath.Join(path, "src", "a.txt")); err != nil {
		t.Fatalf("worktree not checked out: %v", err)
	}
	if err := Add(ctx, repo, Place(repo, "other"), "feature"); !errors.As(err, new(*BranchExistsError)) {
		t.Fatalf("Add(existing branch) = %v, want *BranchExistsError", err)
	}
	if err := Add(ctx, repo, path, "fresh"); !errors.As(err, new(*PathExistsError)) {
		t.Fatalf("Add(taken place) = %v, want *PathExistsError", err)
	}
	for _, bad := range []string{"a..b", "-x", "", "x y", "end/"} {
		if err := Add(ctx, repo, Place(repo, "ok"), bad); !errors.As(err, new(*BadBranchError)) {
			t.Errorf("Add(branch %q) = %v, want *BadBranchError", bad, err)
		}
	}
}

// Check finds changes and commits no other branch has, and Remove leaves
// nothing behind (the place's empty directories included).
func TestCheckAndRemove(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t)
	path := Place(repo, "looprig/s1")
	if err := Add(ctx, repo, path, "looprig/s1"); err != nil {
		t.Fatal(err)
	}
	h, err := Check(ctx, repo, path, "looprig/s1")
	if err != nil || !h.Empty() || h.Gone || h.NoBranch {
		t.Fatalf("fresh worktree: %+v, %v; want empty", h, err)
	}
	os.WriteFile(filepath.Join(path, "build.o"), []byte("x"), 0o644) // ignored: not held
	if h, _ := Check(ctx, repo, path, "looprig/s1"); !h.Empty() {
		t.Fatalf("ignored file held: %+v", h)
	}
	os.WriteFile(filepath.Join(path, "new.txt"), []byte("x"), 0o644)
	if h, _ := Check(ctx, repo, path, "looprig/s1"); len(h.Changes) != 1 || !strings.Contains(h.Changes[0], "new.txt") {
		t.Fatalf("untracked file: %+v, want one change", h)
	}
	if err := Remove(ctx, repo, path, "looprig/s1"); err == nil {
		t.Fatal("Remove removed a worktree with an untracked file")
	}
	gitIn(t, path, "add", "new.txt")
	gitIn(t, path, "commit", "--quiet", "-m", "work")
	if h, _ := Check(ctx, repo, path, "looprig/s1"); len(h.Changes) != 0 || h.Unpushed != 1 {
		t.Fatalf("committed work: %+v, want 1 unpushed and no change", h)
	}
	gitIn(t, repo, "branch", "keep", "looprig/s1") // now on another branch too
	if h, _ := Check(ctx, repo, path, "looprig/s1"); !h.Empty() {
		t.Fatalf("work on another branch: %+v, want empty", h)
	}
	if err := Remove(ctx, repo, path, "looprig/s1"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(repo), "app.worktrees")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the place's directories are left: %v", err)
	}
	if out := gitIn(t, repo, "branch", "--list", "looprig/s1"); out != "" {
		t.Fatalf("branch left: %q", out)
	}
}

// A worktree whose directory was deleted by hand is pruned, and its
// branch removed.
func TestRemoveGone(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t)
	path := Place(repo, "gone")
	if err := Add(ctx, repo, path, "gone"); err != nil {
		t.Fatal(err)
	}
	os.RemoveAll(path)
	h, err := Check(ctx, repo, path, "gone")
	if err != nil || !h.Gone || !h.Empty() {
		t.Fatalf("Check(gone) = %+v, %v", h, err)
	}
	if err := Remove(ctx, repo, path, "gone"); err != nil {
		t.Fatal(err)
	}
	if out := gitIn(t, repo, "worktree", "list"); strings.Contains(out, "gone") {
		t.Fatalf("worktree still listed:\n%s", out)
	}
}
