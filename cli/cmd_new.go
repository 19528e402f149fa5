package cli

import (
	"context"
	"flag"
	"fmt"
	"path/filepath"
	"time"

	"looprig/internal/textsafe"
	"looprig/rig"
)

var cmdNew = &command{
	name: "new", brief: "create a session and print its id", help: helpNew,
	json: true, args: noArgs, needs: needsConfig, interrupts: true,
	flags: func(fs *flag.FlagSet, o *opts) {
		o.profile.add(fs)
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
	if p, err = c.profile.apply(c.cmd, p); err != nil {
		return c.fail(err)
	}
	// The store is opened once the profile is known to be good: a mistake
	// in it creates no store.
	st, err := c.openStore()
	if err != nil {
		return c.fail(err)
	}
	defer st.Close()
	if c.detach {
		return newDetached(c, st, p)
	}
	r, err := defineRig(st, p, nil)
	if err != nil {
		return c.fail(err)
	}
	opts := []rig.SessionOption{rig.WithTitle(c.title)}
	if c.seed != "" {
		abs, err := filepath.Abs(c.seed)
		if err != nil {
			return c.fail(usageErr(c.cmd, fmt.Sprintf("--seed %s: %v", c.seed, err)))
		}
		opts = append(opts, rig.WithSeedSnapshot(abs))
	}
	s, err := r.NewSession(c.ctx, opts...)
	if err != nil {
		return c.fail(err)
	}
	id, epoch, ws, shell := s.SessionID().String(), s.Epoch(), s.Workspace(), r.Profile().Shell
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		return c.fail(fmt.Errorf("session %s was created but did not shut down cleanly: %w", id, err))
	}
	if c.json {
		c.writeJSON(newJSON{ID: id, Epoch: epoch, ShortID: rig.ShortID(id), Title: c.title, Profile: p.Name, Shell: shell, Workspace: ws})
		return exitOK
	}
	fmt.Fprintln(c.stdout, id)
	fmt.Fprintf(c.stderr, "created session %s (profile %s, shell %s, workspace %s)\nrun a turn in it: looprig %srun %s -- echo hello\n",
		rig.ShortID(id), textsafe.Line(p.Name), textsafe.Line(shell), textsafe.Line(ws), c.globalArgs(), rig.ShortID(id))
	return exitOK
}

// newDetached creates the session in a new background host, which keeps
// it live.
func newDetached(c *call, st *openedStore, p rig.Profile) int {
	args := append([]string{"--new", "--title", c.title, "--rig", p.Name}, c.placementArgs()...)
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
	if c.json {
		c.writeJSON(newJSON{ID: id, Epoch: rd.Epoch, ShortID: rig.ShortID(id), Title: c.title, Profile: p.Name, Shell: rd.Shell,
			Workspace: rd.Workspace, PID: rd.PID, Detached: true})
		return exitOK
	}
	fmt.Fprintln(c.stdout, id)
	short := rig.ShortID(id)
	fmt.Fprintf(c.stderr, "created session %s (profile %s, shell %s, workspace %s), live in host pid %d\nrun a turn in it: looprig %srun %s -- echo hello; shut it down: looprig %sstop %s\n",
		short, textsafe.Line(p.Name), textsafe.Line(rd.Shell), textsafe.Line(rd.Workspace), rd.PID, c.globalArgs(), short, c.globalArgs(), short)
	return exitOK
}
