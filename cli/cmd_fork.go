package cli

import (
	"context"
	"flag"
	"fmt"
	"path/filepath"
	"time"

	"github.com/google/uuid"

	"looprig/config"
	"looprig/internal/gitwt"
	"looprig/internal/textsafe"
	"looprig/rig"
)

// forkTimeout bounds a fork: the wait for the checkpoint of a turn that
// just ended, and the materialization of its files.
const forkTimeout = 10 * time.Minute

var cmdFork = &command{
	name: "fork", brief: "create a session that begins where another was after a turn", help: helpFork,
	json: true, args: oneID, needs: needsStore, interrupts: true, timeout: forkTimeout,
	flags: func(fs *flag.FlagSet, o *opts) {
		fs.StringVar(&o.diffTurn, "turn", "", "the turn: its number (as ls and the TUI show it) or a prefix of its id (default: the last turn that ended)")
		fs.StringVar(&o.title, "title", "", "the fork's title (default: the source's, with \" (fork)\")")
		fs.StringVar(&o.profile.root, "root", "", "the fork's workspace: DIR, empty or missing, one session at a time (default: a new directory in the store)")
		fs.BoolVar(&o.detach, "detach", false, "leave the fork live in a background host")
	},
	run: runFork,
}

// forkJSON is what fork --json prints.
type forkJSON struct {
	newJSON
	ForkedFrom         *forkedFromJSON `json:"forked_from"`
	Files              int             `json:"files"`
	Bytes              int64           `json:"bytes"`
	Conversation       string          `json:"conversation,omitempty"`
	ConversationForked bool            `json:"conversation_forked"`
	Fresh              string          `json:"conversation_fresh,omitempty"`
}

// forked is a fork made, shut down cleanly (idle): its id, the profile
// it was made with, its title and what rig.ForkSession said.
type forked struct {
	id, title, ws, shell string
	epoch                uint64
	p                    rig.Profile
	f                    *rig.Fork
}

// forkIt forks session id at turn (rig.ForkSession: "" for the last
// ended turn) with the profile it recorded, placed in a new directory of
// the store or, with root, in an exclusive root, titled title (default:
// the source's with " (fork)"), and shuts the fork down cleanly; it only
// reads the source, live or not. fork and the TUI's fork use it.
func (e *env) forkIt(ctx context.Context, cfg *config.Config, st *openedStore, id uuid.UUID, turn, title, root string) (forked, error) {
	lookup := func(name string) (rig.Profile, bool) {
		p, err := cfg.Profile(name)
		return p, err == nil
	}
	p, err := rig.ProfileFor(ctx, st, id, lookup, cfg.Names())
	if err != nil {
		return forked{}, err
	}
	// A fork lives where fork puts it, not where its source lives: a new
	// directory in the store, --root, or, for a source in a worktree, a
	// new worktree of its own (forkWorktree).
	p.Placement, p.Root, p.PlacementPinned = rig.PlacementSession, "", false
	cat, _ := rig.ReadCatalog(ctx, st, id.String())
	var opts []rig.SessionOption
	var done func(ok bool) error
	switch {
	case root != "":
		abs, err := filepath.Abs(root)
		if err != nil {
			return forked{}, usageErr(e.cmd, fmt.Sprintf("--root %s: %v", root, err))
		}
		p.Placement, p.Root = rig.PlacementExclusive, abs
	case cat.Worktree != nil:
		if p, opts, done, err = e.forkWorktree(ctx, p, cat.Worktree); err != nil {
			return forked{}, err
		}
	}
	if title == "" && cat.Title != "" {
		title = cat.Title + " (fork)"
	}
	s, f, err := e.forkIn(ctx, st, p, id, turn, append(opts, rig.WithTitle(title))...)
	if done != nil {
		if derr := done(err == nil); err == nil && derr != nil {
			err = derr
		}
	}
	if err != nil {
		return forked{}, err
	}
	out := forked{id: s.SessionID().String(), title: title, ws: s.Workspace(), shell: s.Status().Shell, epoch: s.Epoch(), p: p, f: f}
	sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.Shutdown(sctx); err != nil {
		return forked{}, fmt.Errorf("fork %s was created but did not shut down cleanly: %w", out.id, err)
	}
	return out, nil
}

// forkIn defines the rig of profile p and forks session id at turn in it.
func (e *env) forkIn(ctx context.Context, st *openedStore, p rig.Profile, id uuid.UUID, turn string, opts ...rig.SessionOption) (*rig.Session, *rig.Fork, error) {
	r, err := defineRig(st, p, nil)
	if err != nil {
		return nil, nil, err
	}
	return r.ForkSession(ctx, id, turn, opts...)
}

// forkWorktree makes the git worktree of a fork whose source works in
// worktree src: beside the repository, on a new branch looprig/<short id>
// made at the source's branch, without its files (they come from the
// checkpoint: rig's placeFork keeps the worktree's .git). It returns p
// placed there, the options that create the fork with that id and record
// the worktree, and done, which after the fork makes the worktree's index
// its branch's (the fork's files then show as changes), or, when the fork
// failed, removes the worktree and branch again.
func (e *env) forkWorktree(ctx context.Context, p rig.Profile, src *rig.CatalogWorktree) (rig.Profile, []rig.SessionOption, func(bool) error, error) {
	gctx, cancel := context.WithTimeout(ctx, gitTimeout)
	defer cancel()
	fid := uuid.New()
	branch := "looprig/" + rig.ShortID(fid.String())
	path := gitwt.Place(src.Repo, branch)
	if err := gitwt.AddEmpty(gctx, src.Repo, path, branch, src.Branch); err != nil {
		return p, nil, nil, &WorktreeError{Dir: src.Repo, Err: err}
	}
	done := func(ok bool) error {
		ctx, cancel := context.WithTimeout(context.Background(), gitTimeout)
		defer cancel()
		if ok {
			return gitwt.Reset(ctx, path)
		}
		return gitwt.Remove(ctx, src.Repo, path, branch)
	}
	p.Placement, p.Root = rig.PlacementExclusive, path
	return p, []rig.SessionOption{rig.WithSessionID(fid), rig.WithWorktree(src.Repo, branch)}, done, nil
}

// runFork forks the session (forkIt), and with --detach starts a host
// that keeps the fork live.
func runFork(c *call) int {
	id, _, err := c.findExisting(c.args[0])
	if err != nil {
		return c.fail(err)
	}
	fk, err := c.forkIt(c.ctx, c.cfg, c.st, id, c.diffTurn, c.title, c.profile.root)
	if err != nil {
		return c.fail(err)
	}
	fid, p, f, ws, title := fk.id, fk.p, fk.f, fk.ws, fk.title
	out := forkJSON{newJSON: newJSON{ID: fid, Epoch: fk.epoch, ShortID: rig.ShortID(fid), Title: title, Profile: p.Name, Shell: fk.shell, Workspace: ws},
		ForkedFrom: newForkedFromJSON(&f.From), Files: f.Files, Bytes: f.Bytes, Conversation: f.Conversation, ConversationForked: f.ConversationForked, Fresh: f.Fresh}
	if c.detach {
		rd, err := c.startHost(c.ctx, c.st, append(placeArgs(p), fid)...)
		if err != nil {
			return c.fail(fmt.Errorf("fork %s was created, but its host did not start (restore it with 'looprig %srestore %s --detach'): %w",
				rig.ShortID(fid), c.globalArgs(), rig.ShortID(fid), err))
		}
		out.Epoch, out.PID, out.Detached = rd.Epoch, rd.PID, true
	}
	if c.json {
		c.writeJSON(out)
		return exitOK
	}
	fmt.Fprintln(c.stdout, fid)
	fmt.Fprintf(c.stderr, "forked session %s from %s at turn %d (files as after turn %d: %s, %s; workspace %s)\n",
		rig.ShortID(fid), rig.ShortID(id.String()), f.From.TurnIndex, f.From.TurnIndex, plural(f.Files, "file"), byteSize(f.Bytes), textsafe.Line(ws))
	switch {
	case f.ConversationForked:
		fmt.Fprintf(c.stderr, "its %s conversation %s continues the source's (%s) as it was after turn %d; the source's goes on unchanged\n",
			textsafe.Line(p.Engine), f.Conversation, f.From.Conversation, f.From.TurnIndex)
	case f.Fresh != "":
		fmt.Fprintf(c.stderr, "its conversation starts fresh: %s\n", textsafe.Line(f.Fresh))
	}
	short := rig.ShortID(fid)
	if out.Detached {
		fmt.Fprintf(c.stderr, "live in host pid %d; run a turn in it: looprig %srun %s -- INPUT; shut it down: looprig %sstop %s\n",
			out.PID, c.globalArgs(), short, c.globalArgs(), short)
		return exitOK
	}
	fmt.Fprintf(c.stderr, "run a turn in it: looprig %srun %s -- INPUT\n", c.globalArgs(), short)
	return exitOK
}

// placeArgs are the host flags that place a session as p: one a host
// restores (fork --detach, the TUI's fork), or one host --new creates
// (new --detach).
func placeArgs(p rig.Profile) []string {
	if p.Placement == rig.PlacementSession {
		return []string{"--placement", "session"}
	}
	return []string{"--placement", string(p.Placement), "--root", p.Root}
}
