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
	id, epoch, ws := s.SessionID().String(), s.Epoch(), s.Workspace()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		return c.fail(fmt.Errorf("session %s was created but did not shut down cleanly: %w", id, err))
	}
	if c.json {
		c.writeJSON(newJSON{ID: id, Epoch: epoch, ShortID: rig.ShortID(id), Title: c.title, Profile: p.Name, Workspace: ws})
		return exitOK
	}
	fmt.Fprintln(c.stdout, id)
	fmt.Fprintf(c.stderr, "created session %s (profile %s, workspace %s)\nrun a turn in it: looprig %srun %s -- echo hello\n",
		rig.ShortID(id), textsafe.Line(p.Name), textsafe.Line(ws), c.globalArgs(), rig.ShortID(id))
	return exitOK
}
