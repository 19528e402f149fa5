package cli

import (
	"context"
	"flag"
	"fmt"
	"path/filepath"
	"time"

	"github.com/google/uuid"

	"looprig/internal/textsafe"
	"looprig/rig"
)

var cmdNew = &command{
	name: "new", brief: "create a session and print its id", help: helpNew,
	json: true, args: newArgs, needs: needsConfig, interrupts: true,
	flags: func(fs *flag.FlagSet, o *opts) {
		o.profile.addNew(fs)
		fs.StringVar(&o.title, "title", "", "session title")
		fs.StringVar(&o.seed, "seed", "", "directory copied into the new workspace")
		fs.BoolVar(&o.detach, "detach", false, "leave the session live in a background host")
	},
	run: runNew,
}

func runNew(c *call) int {
	p, err := c.cfg.Profile(c.profile.rig)
	if err != nil {
		return c.fail(err)
	}
	if p, err = c.profile.placeNew(c.cmd, p, ""); err != nil {
		return c.fail(err)
	}
	// The store is opened once the profile is known to be good: a mistake
	// in it creates no store.
	st, err := c.openStore()
	if err != nil {
		return c.fail(err)
	}
	defer st.Close()
	c.st = st // createSession's
	if c.detach {
		return newDetached(c, st, p)
	}
	r, s, err := c.createSession(p)
	if err != nil {
		return c.fail(err)
	}
	id, epoch, ws, shell := s.SessionID().String(), s.Epoch(), s.Workspace(), r.Profile().Shell
	branch := c.sessionBranch(id)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		return c.fail(fmt.Errorf("session %s was created but did not shut down cleanly: %w", id, err))
	}
	if c.json {
		c.writeJSON(newJSON{ID: id, Epoch: epoch, ShortID: rig.ShortID(id), Title: c.title, Profile: p.Name, Shell: shell, Workspace: ws, Branch: branch})
		return exitOK
	}
	fmt.Fprintln(c.stdout, id)
	fmt.Fprintf(c.stderr, "created session %s (profile %s, shell %s, workspace %s%s)\nrun a turn in it: looprig %srun %s -- echo hello\n",
		rig.ShortID(id), textsafe.Line(p.Name), textsafe.Line(shell), textsafe.Line(ws), onBranch(branch), c.globalArgs(), rig.ShortID(id))
	return exitOK
}

// newDetached creates the session in a new background host, which keeps
// it live.
func newDetached(c *call, st *openedStore, p rig.Profile) int {
	args := append([]string{"--new", "--title", c.title, "--rig", p.Name}, placeArgs(p)...)
	args = append(args, c.profile.worktree.args()...)
	if c.seed != "" {
		abs, err := filepath.Abs(c.seed)
		if err != nil {
			return c.fail(usageErr(c.cmd, fmt.Sprintf("--seed %s: %v", c.seed, err)))
		}
		args = append(args, "--seed", abs)
	}
	rd, err := c.startHost(c.ctx, st, args...)
	if err != nil {
		return c.fail(err)
	}
	id := rd.Session
	branch := c.sessionBranch(id)
	if c.json {
		c.writeJSON(newJSON{ID: id, Epoch: rd.Epoch, ShortID: rig.ShortID(id), Title: c.title, Profile: p.Name, Shell: rd.Shell,
			Workspace: rd.Workspace, Branch: branch, PID: rd.PID, Detached: true})
		return exitOK
	}
	fmt.Fprintln(c.stdout, id)
	short := rig.ShortID(id)
	fmt.Fprintf(c.stderr, "created session %s (profile %s, shell %s, workspace %s%s), live in host pid %d\nrun a turn in it: looprig %srun %s -- echo hello; shut it down: looprig %sstop %s\n",
		short, textsafe.Line(p.Name), textsafe.Line(rd.Shell), textsafe.Line(rd.Workspace), onBranch(branch), rd.PID, c.globalArgs(), short, c.globalArgs(), short)
	return exitOK
}

// sessionBranch is the branch of session id's worktree (new --worktree),
// "" for none.
func (c *call) sessionBranch(id string) string {
	if !c.profile.worktree.on {
		return ""
	}
	uid, err := uuid.Parse(id)
	if err != nil {
		return ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if w := rig.RecordedWorktree(ctx, c.st, uid); w != nil {
		return w.Branch
	}
	return ""
}

// onBranch words a worktree's branch after its directory.
func onBranch(branch string) string {
	if branch == "" {
		return ""
	}
	return ", a git worktree on branch " + textsafe.Line(branch)
}
