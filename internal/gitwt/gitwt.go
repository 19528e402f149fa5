// Package gitwt gives a session a git worktree of its own by running the
// user's git (never a shell, each run bounded by its context and Timeout):
// it finds the repository around a directory, adds a worktree on a new
// branch beside the repository (Place), says what a worktree holds that
// removing it would lose (Check), and removes it and its branch (Remove).
// It reimplements nothing of git's (docs/ARCHITECTURE.md, "A worktree per
// session").
package gitwt

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Timeout bounds each git command (a worktree add checks out the whole
// tree).
var Timeout = 5 * time.Minute

// Program is the git looprig runs: the user's, found on $PATH.
var Program = "git"

// NotRepoError: the directory is not inside a git work tree.
type NotRepoError struct {
	Dir string
}

func (e *NotRepoError) Error() string {
	return fmt.Sprintf("%s is not inside a git work tree", e.Dir)
}

// NoGitError: git is not installed (not on $PATH).
type NoGitError struct {
	Err error
}

func (e *NoGitError) Error() string { return fmt.Sprintf("git is not installed: %v", e.Err) }
func (e *NoGitError) Unwrap() error { return e.Err }

// BranchExistsError: the branch a new worktree would make exists already.
type BranchExistsError struct {
	Repo, Branch string
}

func (e *BranchExistsError) Error() string {
	return fmt.Sprintf("branch %s exists already in %s", e.Branch, e.Repo)
}

// BadBranchError: the name is not a valid branch name (git check-ref-format).
type BadBranchError struct {
	Branch string
}

func (e *BadBranchError) Error() string {
	return fmt.Sprintf("%q is not a valid git branch name", e.Branch)
}

// PathExistsError: the place of a new worktree is taken.
type PathExistsError struct {
	Path string
}

func (e *PathExistsError) Error() string {
	return fmt.Sprintf("%s exists already", e.Path)
}

// CommandError: a git command failed; Stderr is what git said.
type CommandError struct {
	Dir    string
	Args   []string
	Stderr string
	Err    error
}

func (e *CommandError) Error() string {
	msg := strings.TrimSpace(e.Stderr)
	if msg == "" {
		msg = e.Err.Error()
	}
	return fmt.Sprintf("git %s (in %s): %s", strings.Join(e.Args, " "), e.Dir, msg)
}

func (e *CommandError) Unwrap() error { return e.Err }

// run runs git with args in dir and returns its standard output. The
// variables that would point git at another repository than dir's are
// removed from its environment.
func run(ctx context.Context, dir string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, Program, append([]string{"-C", dir}, args...)...)
	cmd.Env = append(environ(), "GIT_TERMINAL_PROMPT=0")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if errors.Is(err, exec.ErrNotFound) {
			return nil, &NoGitError{Err: err}
		}
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (%w)", err, ctx.Err())
		}
		return nil, &CommandError{Dir: dir, Args: args, Stderr: stderr.String(), Err: err}
	}
	return stdout.Bytes(), nil
}

// environ is this process's environment without the variables that
// choose a repository for git (GIT_DIR and the like): -C decides.
func environ() []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR", "GIT_OBJECT_DIRECTORY", "GIT_TERMINAL_PROMPT":
			continue
		}
		env = append(env, kv)
	}
	return env
}

// Repo is the repository around a directory.
type Repo struct {
	// Top is the work tree the directory is in (a linked worktree's own).
	Top string
	// Main is the repository's main work tree: where new worktrees are
	// placed beside (Place) and added from.
	Main string
}

// Find returns the repository around dir; *NotRepoError when dir is in
// no git work tree.
func Find(ctx context.Context, dir string) (Repo, error) {
	out, err := run(ctx, dir, "rev-parse", "--show-toplevel")
	if err != nil {
		var ce *CommandError
		if errors.As(err, &ce) {
			return Repo{}, &NotRepoError{Dir: dir}
		}
		return Repo{}, err
	}
	top := strings.TrimSpace(string(out))
	if top == "" {
		return Repo{}, &NotRepoError{Dir: dir}
	}
	out, err = run(ctx, top, "worktree", "list", "--porcelain")
	if err != nil {
		return Repo{}, err
	}
	r := Repo{Top: top, Main: top}
	first, _, _ := strings.Cut(string(out), "\n\n")
	for line := range strings.SplitSeq(first, "\n") {
		if p, ok := strings.CutPrefix(line, "worktree "); ok {
			r.Main = p
		}
		if line == "bare" {
			r.Main = top // a bare repository has no work tree to sit beside
		}
	}
	return r, nil
}

// Place is where the worktree of branch goes: beside the repository's
// main work tree main, in <main>.worktrees/<branch>
// (/src/app.worktrees/looprig/1a2b3c4d for /src/app).
func Place(main, branch string) string {
	return filepath.Join(filepath.Dir(main), filepath.Base(main)+".worktrees", filepath.FromSlash(branch))
}

// CheckBranch refuses a name git would not take for a new branch
// (*BadBranchError) or one that exists in the repository at top
// (*BranchExistsError).
func CheckBranch(ctx context.Context, top, branch string) error {
	if branch == "" || strings.HasPrefix(branch, "-") {
		return &BadBranchError{Branch: branch}
	}
	if _, err := run(ctx, top, "check-ref-format", "--branch", branch); err != nil {
		var ce *CommandError
		if errors.As(err, &ce) {
			return &BadBranchError{Branch: branch}
		}
		return err
	}
	if exists, err := branchExists(ctx, top, branch); err != nil || exists {
		if err == nil {
			err = &BranchExistsError{Repo: top, Branch: branch}
		}
		return err
	}
	return nil
}

// branchExists says whether refs/heads/branch exists in the repository
// at dir.
func branchExists(ctx context.Context, dir, branch string) (bool, error) {
	_, err := run(ctx, dir, "rev-parse", "--verify", "--quiet", "refs/heads/"+branch)
	var ce *CommandError
	if errors.As(err, &ce) {
		return false, nil
	}
	return err == nil, err
}

// Add adds a worktree at path on a new branch made at the commit checked
// out in the work tree top (git worktree add -b branch path HEAD): the
// place must not exist (*PathExistsError), the branch must be new
// (CheckBranch).
func Add(ctx context.Context, top, path, branch string) error {
	return add(ctx, top, path, branch, "HEAD")
}

// add runs git worktree add on a new branch at start, with more flags
// (--no-checkout), after the checks Add and AddEmpty share.
func add(ctx context.Context, top, path, branch, start string, flags ...string) error {
	if err := CheckBranch(ctx, top, branch); err != nil {
		return err
	}
	if _, err := os.Lstat(path); err == nil {
		return &PathExistsError{Path: path}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("worktree place: %w", err)
	}
	args := append(append([]string{"worktree", "add", "--quiet"}, flags...), "-b", branch, path, start)
	_, err := run(ctx, top, args...)
	return err
}

// Held is what a worktree holds that removing it and its branch would
// lose.
type Held struct {
	// Changes are git status --porcelain's lines: files modified, staged
	// or untracked (ignored files are not held: git worktree remove
	// deletes them).
	Changes []string
	// Unpushed counts the commits of the branch on no other branch and
	// no remote-tracking branch.
	Unpushed int
	// Gone: the worktree's directory is not there any more.
	Gone bool
	// NoBranch: the branch is not there any more.
	NoBranch bool
}

// Empty says whether nothing would be lost.
func (h Held) Empty() bool { return len(h.Changes) == 0 && h.Unpushed == 0 }

// Check says what the worktree at path on branch of the repository whose
// main work tree is main holds (Held).
func Check(ctx context.Context, main, path, branch string) (Held, error) {
	var h Held
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		h.Gone = true
	} else {
		out, err := run(ctx, path, "status", "--porcelain", "--untracked-files=normal")
		if err != nil {
			return h, err
		}
		for line := range strings.SplitSeq(strings.TrimRight(string(out), "\n"), "\n") {
			if line != "" {
				h.Changes = append(h.Changes, line)
			}
		}
	}
	exists, err := branchExists(ctx, main, branch)
	if err != nil {
		return h, err
	}
	if !exists {
		h.NoBranch = true
		return h, nil
	}
	// --exclude takes the name without refs/heads/ before --branches.
	out, err := run(ctx, main, "rev-list", "--count", "refs/heads/"+branch, "--not",
		"--exclude="+branch, "--branches", "--remotes")
	if err != nil {
		return h, err
	}
	if h.Unpushed, err = strconv.Atoi(strings.TrimSpace(string(out))); err != nil {
		return h, fmt.Errorf("git rev-list --count said %q: %w", out, err)
	}
	return h, nil
}

// Remove removes the worktree at path (git worktree remove, which refuses
// one with changes; git worktree prune when its directory is gone) and
// then its branch (git branch -D: Check said every commit of it is on
// another branch, so -d's narrower test, merged into HEAD, is not asked).
// Call it only when Check found it Empty.
func Remove(ctx context.Context, main, path, branch string) error {
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		if _, err := run(ctx, main, "worktree", "prune"); err != nil {
			return err
		}
	} else if _, err := run(ctx, main, "worktree", "remove", path); err != nil {
		return err
	}
	removeEmptyParents(path, filepath.Join(filepath.Dir(main), filepath.Base(main)+".worktrees"))
	exists, err := branchExists(ctx, main, branch)
	if err != nil || !exists {
		return err
	}
	_, err = run(ctx, main, "branch", "-D", branch)
	return err
}

// removeEmptyParents removes the directories between path and top (top
// included) that are empty: what Place made for a branch with slashes.
func removeEmptyParents(path, top string) {
	for dir := filepath.Dir(path); ; dir = filepath.Dir(dir) {
		rel, err := filepath.Rel(top, dir)
		if err != nil || strings.HasPrefix(rel, "..") || os.Remove(dir) != nil || rel == "." {
			return
		}
	}
}

// AddEmpty adds a worktree at path on a new branch made at start (a
// commit or branch of the repository at top) without checking its files
// out (git worktree add --no-checkout): path then holds only its ".git"
// file, for files that come from elsewhere (a fork's, from a checkpoint),
// and Reset makes its index the branch's afterwards.
func AddEmpty(ctx context.Context, top, path, branch, start string) error {
	return add(ctx, top, path, branch, start, "--no-checkout")
}

// Reset makes the index of the worktree at path its branch's commit,
// leaving its files as they are (git reset, mixed): what differs from the
// commit then shows as changes.
func Reset(ctx context.Context, path string) error {
	_, err := run(ctx, path, "reset", "--quiet")
	return err
}
