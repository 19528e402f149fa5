package cli

// A worktree per session: new --worktree [BRANCH] gives the session a git
// worktree of its own, made by the user's git (internal/gitwt), and rm
// removes it when it holds nothing that would be lost
// (docs/ARCHITECTURE.md, "A worktree per session").

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"looprig/internal/gitwt"
	"looprig/internal/textsafe"
	"looprig/rig"
	"looprig/rig/fault"
)

// gitTimeout bounds the git work of one command (a worktree add checks out
// the tree).
const gitTimeout = 5 * time.Minute

// worktreeFlag is --worktree: alone, a worktree on the branch named after
// the session (looprig/<short id>); --worktree=BRANCH, or --worktree
// followed by new's one argument, on BRANCH.
type worktreeFlag struct {
	on     bool
	branch string
}

func (w *worktreeFlag) IsBoolFlag() bool { return true }

func (w *worktreeFlag) String() string {
	if w == nil || !w.on {
		return ""
	}
	return w.branch
}

func (w *worktreeFlag) Set(v string) error {
	switch v {
	case "true":
		w.on, w.branch = true, ""
	case "false":
		w.on, w.branch = false, ""
	default:
		w.on, w.branch = true, v
	}
	return nil
}

// args are the flags that ask a host for the same worktree.
func (w worktreeFlag) args() []string {
	switch {
	case !w.on:
		return nil
	case w.branch == "":
		return []string{"--worktree"}
	}
	return []string{"--worktree=" + w.branch}
}

// newArgs is new's argument rule: none, but the branch after --worktree.
func newArgs(c *call) error {
	if c.profile.worktree.on && c.profile.worktree.branch == "" && len(c.args) > 0 {
		c.profile.worktree.branch, c.args = c.args[0], c.args[1:]
	}
	return noArgs(c)
}

// WorktreeError: a session's git worktree could not be made, or removed.
// Err is gitwt's error (*gitwt.NotRepoError, *gitwt.BranchExistsError,
// ...).
type WorktreeError struct {
	Dir string
	Err error
}

func (e *WorktreeError) Error() string { return "--worktree: " + e.Err.Error() }
func (e *WorktreeError) Unwrap() error { return e.Err }

// describe says how a worktree that could not be made is reported: its
// kind is gitwt's error's, with a hint for each.
func (e *WorktreeError) describe(g string) described {
	d := described{code: exitError, typ: "WorktreeError", kind: "git_failed", message: e.Error(),
		fields: []fault.Field{fault.Fact("dir", e.Dir)}}
	var (
		notRepo *gitwt.NotRepoError
		noGit   *gitwt.NoGitError
		exists  *gitwt.BranchExistsError
		bad     *gitwt.BadBranchError
		taken   *gitwt.PathExistsError
	)
	switch {
	case errors.As(e.Err, &notRepo):
		d.code, d.kind = exitUsage, "not_a_repository"
		d.hint = "run 'looprig " + g + "new --worktree' inside a git work tree, or without --worktree"
	case errors.As(e.Err, &noGit):
		d.kind, d.hint = "git_not_found", "install git, or leave out --worktree"
	case errors.As(e.Err, &exists):
		d.code, d.kind = exitUsage, "branch_exists"
		d.hint = "name a new branch: looprig " + g + "new --worktree BRANCH"
	case errors.As(e.Err, &bad):
		d.code, d.kind, d.hint = exitUsage, "bad_branch", "name a branch git takes (git check-ref-format --branch NAME)"
	case errors.As(e.Err, &taken):
		d.kind, d.hint = "worktree_exists", "remove that directory, or name another branch: looprig "+g+"new --worktree BRANCH"
	default:
		d.hint = "see what git said above"
	}
	return d
}

// newWorktree makes the git worktree of a new session whose profile p
// places it in a directory (p.Root: where new ran, or --root): beside the
// repository, on a new branch (the one given, else looprig/<short id> of
// an id minted here for the session). It returns p placed there, the
// session options that create it with that id and record the worktree,
// and undo, which removes the worktree and branch again (the session was
// not created).
func (c *call) newWorktree(p rig.Profile) (rig.Profile, []rig.SessionOption, func(), error) {
	if p.Placement != rig.PlacementExclusive || p.Root == "" {
		return p, nil, nil, usageErr(c.cmd, fmt.Sprintf("--worktree needs a session in a directory of its own, not placement %s", p.Placement))
	}
	ctx, cancel := context.WithTimeout(c.ctx, gitTimeout)
	defer cancel()
	wrap := func(err error) error { return &WorktreeError{Dir: p.Root, Err: err} }
	repo, err := gitwt.Find(ctx, p.Root)
	if err != nil {
		return p, nil, nil, wrap(err)
	}
	id := uuid.New()
	branch := c.profile.worktree.branch
	if branch == "" {
		branch = "looprig/" + rig.ShortID(id.String())
	}
	path := gitwt.Place(repo.Main, branch)
	if err := gitwt.Add(ctx, repo.Top, path, branch); err != nil {
		return p, nil, nil, wrap(err)
	}
	undo := func() {
		ctx, cancel := context.WithTimeout(context.Background(), gitTimeout)
		defer cancel()
		if err := gitwt.Remove(ctx, repo.Main, path, branch); err != nil {
			fmt.Fprintf(c.stderr, "looprig: the session was not created; its worktree %s (branch %s) was not removed: %s\n",
				textsafe.Line(path), textsafe.Line(branch), textsafe.Line(err.Error()))
		}
	}
	p.Placement, p.Root = rig.PlacementExclusive, path
	return p, []rig.SessionOption{rig.WithSessionID(id), rig.WithWorktree(repo.Main, branch)}, undo, nil
}

// createSession creates the session new (or host --new) asks for, in p's
// place or, with --worktree, in a worktree of its own.
func (c *call) createSession(p rig.Profile) (*rig.Rig, *rig.Session, error) {
	opts := []rig.SessionOption{rig.WithTitle(c.title)}
	if c.seed != "" {
		if c.profile.worktree.on {
			return nil, nil, usageErr(c.cmd, "--seed does not go with --worktree (a worktree holds its branch's files)")
		}
		abs, err := filepath.Abs(c.seed)
		if err != nil {
			return nil, nil, usageErr(c.cmd, fmt.Sprintf("--seed %s: %v", c.seed, err))
		}
		opts = append(opts, rig.WithSeedSnapshot(abs))
	}
	undo := func() {}
	if c.profile.worktree.on {
		var wopts []rig.SessionOption
		var err error
		if p, wopts, undo, err = c.newWorktree(p); err != nil {
			return nil, nil, err
		}
		opts = append(opts, wopts...)
	}
	r, err := defineRig(c.st, p, nil)
	if err != nil {
		undo()
		return nil, nil, err
	}
	s, err := r.NewSession(c.ctx, opts...)
	if err != nil {
		undo()
		return nil, nil, err
	}
	return r, s, nil
}

// inGitWorkTree says whether dir is inside a git work tree (for a hint).
func inGitWorkTree(dir string) bool {
	if dir == "" {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := gitwt.Find(ctx, dir)
	return err == nil
}

// rmWorktree removes the git worktree and branch of a deleted session
// when they hold nothing that would be lost, else keeps them and says
// what it keeps and why (to out). It reports whether it removed them.
func rmWorktree(out io.Writer, w *rig.CatalogWorktree) (bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), gitTimeout)
	defer cancel()
	h, err := gitwt.Check(ctx, w.Repo, w.Path, w.Branch)
	if err != nil {
		return false, fmt.Errorf("check worktree %s: %w", w.Path, err)
	}
	if !h.Empty() {
		fmt.Fprintf(out, "kept its worktree %s and branch %s: %s\n", textsafe.Line(w.Path), textsafe.Line(w.Branch), heldText(h))
		return false, nil
	}
	if err := gitwt.Remove(ctx, w.Repo, w.Path, w.Branch); err != nil {
		return false, fmt.Errorf("remove worktree %s: %w", w.Path, err)
	}
	fmt.Fprintf(out, "removed its worktree %s and branch %s\n", textsafe.Line(w.Path), textsafe.Line(w.Branch))
	return true, nil
}

// heldText says what a worktree holds that removing it would lose.
func heldText(h gitwt.Held) string {
	var why []string
	if n := len(h.Changes); n > 0 {
		shown := make([]string, 0, 3)
		for _, l := range h.Changes[:min(n, 3)] {
			shown = append(shown, strconv.Quote(strings.TrimSpace(l)))
		}
		more := ""
		if n > 3 {
			more = ", ..."
		}
		why = append(why, fmt.Sprintf("%s not committed (%s%s)", plural(n, "change"), strings.Join(shown, ", "), more))
	}
	if h.Unpushed > 0 {
		why = append(why, fmt.Sprintf("%s on no other branch nor remote", plural(h.Unpushed, "commit")))
	}
	return strings.Join(why, "; ") + "; commit and push or merge them, then remove them with git worktree remove and git branch -d"
}
