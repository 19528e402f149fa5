package cli_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// gitRepo makes h's project directory a git repository with one commit,
// and commits made in tests carry an identity of their own.
func (h *harness) gitRepo() string {
	h.t.Helper()
	h.env = append(h.env, "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
	h.git(h.cwd, "init", "--quiet", "--initial-branch=main")
	if err := os.WriteFile(filepath.Join(h.cwd, "README"), []byte("hello\n"), 0o644); err != nil {
		h.t.Fatal(err)
	}
	h.git(h.cwd, "add", ".")
	h.git(h.cwd, "commit", "--quiet", "-m", "first")
	canon, err := filepath.EvalSymlinks(h.cwd)
	if err != nil {
		h.t.Fatal(err)
	}
	return canon
}

// git runs git in dir with h's environment.
func (h *harness) git(dir string, args ...string) string {
	h.t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(append(os.Environ(), "HOME="+h.home), h.env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		h.t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

type newWorktreeJSON struct {
	ID        string `json:"id"`
	ShortID   string `json:"short_id"`
	Workspace string `json:"workspace"`
	Branch    string `json:"branch"`
}

type lsDirRow struct {
	ID     string `json:"id"`
	Dir    string `json:"dir"`
	Branch string `json:"branch"`
}

// The test: two sessions in one repository, the second refused
// with the worktree hint; with --worktree both run, each in its tree (the
// default branch looprig/<short id>, or the one named, detached too);
// ls shows each one's directory and branch; rm removes a clean worktree
// and its branch, and keeps a dirty one and one with a commit nothing
// else has, saying so.
func TestWorktreeTwoSessionsInOneRepo(t *testing.T) {
	h := newHarness(t)
	repo := h.gitRepo()
	first := decode[newWorktreeJSON](t, h.must(0, "new", "--detach", "--json").stdout)
	if first.Workspace != repo || first.Branch != "" {
		t.Fatalf("the first session: %+v, want the repository %s itself", first, repo)
	}
	r := h.must(1, "new")
	if !strings.Contains(r.stderr, "is busy") || !strings.Contains(r.stderr, "new --worktree' (a new branch beside the repository)") {
		t.Fatalf("the second session in the repository: %s; want the worktree hint", r.stderr)
	}

	second := decode[newWorktreeJSON](t, h.must(0, "new", "--worktree", "--json", "--title", "second").stdout)
	wantPath := filepath.Join(filepath.Dir(repo), filepath.Base(repo)+".worktrees", "looprig", second.ShortID)
	if second.Workspace != wantPath || second.Branch != "looprig/"+second.ShortID {
		t.Fatalf("new --worktree: %+v; want workspace %s on branch looprig/%s", second, wantPath, second.ShortID)
	}
	third := decode[newWorktreeJSON](t, h.must(0, "new", "--worktree", "feature-x", "--detach", "--json").stdout)
	thirdPath := filepath.Join(filepath.Dir(repo), filepath.Base(repo)+".worktrees", "feature-x")
	if third.Workspace != thirdPath || third.Branch != "feature-x" {
		t.Fatalf("new --worktree feature-x --detach: %+v; want %s on feature-x", third, thirdPath)
	}
	// Each runs in its tree, on its branch.
	for _, s := range []struct{ id, dir, branch string }{{first.ID, repo, "main"}, {second.ID, wantPath, second.Branch}, {third.ID, thirdPath, "feature-x"}} {
		r := h.must(0, "run", s.id, "--", "pwd; git rev-parse --abbrev-ref HEAD; cat README")
		if want := s.dir + "\n" + s.branch + "\nhello\n"; !strings.Contains(r.stdout, want) {
			t.Errorf("a turn of %s printed %q, want %q", s.id, r.stdout, want)
		}
	}
	rows := map[string]lsDirRow{}
	for _, row := range decode[[]lsDirRow](t, h.must(0, "ls", "--json").stdout) {
		rows[row.ID] = row
	}
	if rows[first.ID] != (lsDirRow{first.ID, repo, ""}) || rows[second.ID] != (lsDirRow{second.ID, wantPath, second.Branch}) ||
		rows[third.ID] != (lsDirRow{third.ID, thirdPath, "feature-x"}) {
		t.Fatalf("ls --json dirs and branches: %+v", rows)
	}
	if out := h.must(0, "ls", "-l").stdout; !strings.Contains(out, "BRANCH") || !strings.Contains(out, wantPath) || !strings.Contains(out, "feature-x") {
		t.Fatalf("ls -l does not show directories and branches:\n%s", out)
	}

	// rm: the clean one goes with its branch; the dirty one is kept.
	for _, id := range []string{first.ID, second.ID, third.ID} {
		h.must(0, "stop", id) // run left them live in hosts
	}
	if err := os.WriteFile(filepath.Join(thirdPath, "notes.txt"), []byte("work\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r = h.must(0, "rm", second.ID, "--yes")
	if !strings.Contains(r.stdout, "removed its worktree "+wantPath+" and branch "+second.Branch) {
		t.Fatalf("rm of a clean worktree session: %s", r.stdout)
	}
	if _, err := os.Stat(wantPath); !os.IsNotExist(err) {
		t.Fatalf("the clean worktree is still there: %v", err)
	}
	if out := h.git(repo, "branch", "--list", second.Branch); out != "" {
		t.Fatalf("its branch is still there: %q", out)
	}
	r = h.must(0, "rm", third.ID, "--yes")
	if !strings.Contains(r.stdout, "kept its worktree "+thirdPath+" and branch feature-x: 1 change not committed") ||
		!strings.Contains(r.stdout, "notes.txt") {
		t.Fatalf("rm of a dirty worktree session: %s", r.stdout)
	}
	if _, err := os.Stat(filepath.Join(thirdPath, "notes.txt")); err != nil {
		t.Fatalf("the dirty worktree was touched: %v", err)
	}
	if h.git(repo, "branch", "--list", "feature-x") == "" {
		t.Fatal("the dirty worktree's branch was removed")
	}
	// The first session's directory is the repository: rm never touches it.
	if r := h.must(0, "rm", first.ID, "--yes"); strings.Contains(r.stdout, "worktree") {
		t.Fatalf("rm of a session in the repository itself spoke of a worktree: %s", r.stdout)
	}
}

// A worktree whose work is committed but on no other branch is kept, and
// rm --json says why; once the branch is merged, nothing holds it.
func TestWorktreeRmKeepsUnpushed(t *testing.T) {
	h := newHarness(t)
	repo := h.gitRepo()
	s := decode[newWorktreeJSON](t, h.must(0, "new", "--worktree", "--json").stdout)
	h.must(0, "run", s.ID, "--", "echo more >> README && git commit --quiet -am more")
	h.must(0, "stop", s.ID)
	type rmOut struct {
		Worktree *struct {
			Path, Branch string
			Removed      bool
			Kept         string
		}
	}
	out := decode[rmOut](t, h.must(0, "rm", s.ID, "--yes", "--json").stdout)
	if w := out.Worktree; w == nil || w.Removed || !strings.Contains(w.Kept, "1 commit on no other branch nor remote") || w.Path != s.Workspace {
		t.Fatalf("rm --json of a worktree with an unpushed commit: %+v", out.Worktree)
	}
	h.git(repo, "merge", "--quiet", "--ff-only", s.Branch)
	s2 := decode[newWorktreeJSON](t, h.must(0, "new", "--worktree", "--json").stdout)
	out = decode[rmOut](t, h.must(0, "rm", s2.ID, "--yes", "--json").stdout)
	if w := out.Worktree; w == nil || !w.Removed || w.Kept != "" {
		t.Fatalf("rm --json of a clean worktree: %+v", out.Worktree)
	}
}

// --worktree outside a git work tree, on a branch that exists, or on a
// name git refuses: a usage error (exit 2) that says so, and nothing is
// created.
func TestWorktreeRefusals(t *testing.T) {
	h := newHarness(t)
	r := h.must(2, "new", "--worktree", "--json")
	e := decode[errorShape](t, r.stdout)
	if e.Error.Type != "WorktreeError" || e.Error.Kind != "not_a_repository" {
		t.Fatalf("new --worktree outside a repository: %s", r.stdout)
	}
	if r := h.must(2, "new", "--worktree"); !strings.Contains(r.stderr, "not inside a git work tree") {
		t.Fatalf("new --worktree outside a repository: %s", r.stderr)
	}
	h.gitRepo()
	for _, c := range []struct{ branch, kind string }{{"main", "branch_exists"}, {"a..b", "bad_branch"}} {
		r := h.must(2, "new", "--worktree="+c.branch, "--json")
		if e := decode[errorShape](t, r.stdout); e.Error.Kind != c.kind {
			t.Errorf("new --worktree=%s: %s, want kind %s", c.branch, r.stdout, c.kind)
		}
	}
	if r := h.must(2, "new", "--worktree", "x", "y"); !strings.Contains(r.stderr, `unexpected argument "y"`) {
		t.Fatalf("new --worktree with two arguments: %s", r.stderr)
	}
	if n := len(h.ls()); n != 0 {
		t.Fatalf("%d sessions after the refusals, want none", n)
	}
}

// A session in a worktree forks into a new worktree of its own: a new
// branch looprig/<short id> beside the repository, made at the source's
// branch, with the files as after the turn forked (what differs from the
// branch shows as changes), and its own git: the source's worktree, index
// and branch are untouched. rm of the fork keeps its worktree, which holds
// changes, and says so.
func TestForkOfAWorktreeSession(t *testing.T) {
	h := newHarness(t)
	repo := h.gitRepo()
	src := decode[newWorktreeJSON](t, h.must(0, "new", "--worktree", "--json").stdout)
	h.must(0, "run", "--in-process", src.ID, "--", "echo one > a.txt")
	h.must(0, "run", "--in-process", src.ID, "--", "echo two > a.txt; echo x > b.txt")
	before := h.git(src.Workspace, "status", "--porcelain")

	fk := decode[struct {
		ID        string `json:"id"`
		Workspace string `json:"workspace"`
	}](t, h.must(0, "fork", src.ID, "--turn", "0", "--json").stdout)
	wantBranch := "looprig/" + fk.ID[:8]
	if want := filepath.Join(filepath.Dir(repo), filepath.Base(repo)+".worktrees", "looprig", fk.ID[:8]); fk.Workspace != want {
		t.Fatalf("the fork works in %s, want a new worktree %s", fk.Workspace, want)
	}
	if b, err := os.ReadFile(filepath.Join(fk.Workspace, "a.txt")); err != nil || string(b) != "one\n" {
		t.Fatalf("the fork's a.txt: %q, %v; want one (as after turn 0)", b, err)
	}
	if _, err := os.Stat(filepath.Join(fk.Workspace, "b.txt")); !os.IsNotExist(err) {
		t.Fatalf("the fork has b.txt, made after turn 0: %v", err)
	}
	if got := h.git(fk.Workspace, "rev-parse", "--abbrev-ref", "HEAD"); got != wantBranch {
		t.Fatalf("the fork's branch is %q, want %q", got, wantBranch)
	}
	if got := h.git(fk.Workspace, "status", "--porcelain"); got != "?? a.txt" {
		t.Fatalf("the fork's git status: %q, want its file as a change (?? a.txt)", got)
	}
	if h.git(fk.Workspace, "rev-parse", "--git-dir") == h.git(src.Workspace, "rev-parse", "--git-dir") {
		t.Fatal("the fork's git is its source's")
	}
	if after := h.git(src.Workspace, "status", "--porcelain"); after != before {
		t.Fatalf("the source's git status went from %q to %q", before, after)
	}
	if r := h.must(0, "run", "--in-process", fk.ID, "--", "pwd; cat a.txt"); !strings.Contains(r.stdout, fk.Workspace) || !strings.Contains(r.stdout, "one") {
		t.Fatalf("a turn in the fork:\n%s", r.stdout)
	}
	if r := h.must(0, "rm", fk.ID, "--yes"); !strings.Contains(r.stdout+r.stderr, "kept its worktree") {
		t.Fatalf("rm of the fork: %s%s", r.stdout, r.stderr)
	}
}
